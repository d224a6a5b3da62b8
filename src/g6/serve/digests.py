"""RFC 9530 digests on every answer of ``g6 serve``: ``Content-Digest`` and ``Repr-Digest``, SHA-256.

``Content-Digest`` is of the message content, the bytes on the wire after any ``Content-Encoding`` (RFC 9530
§2): the gzip bytes of a compressed tile entry bundle, nothing at all for a ``HEAD`` (the RFC's example B.2
gives the digest of empty content). ``Repr-Digest`` is of the whole selected representation (§3): what a
``GET`` would send, so a ``HEAD`` answer carries the digest of the body it leaves out. A full ``GET`` answer
carries the same value in both. The server answers no ``Range`` request (a ``Range`` header is ignored and the
whole body sent, ``200``, as RFC 9110 §14.2 lets a server do; mementos say ``Accept-Ranges: none``), so no
answer is partial.

:class:`ContentDigest` is the ASGI middleware that adds both fields to every answer whose body Starlette hands
over in one piece (pages, JSON, receipts, proofs, tiles, refusals, redirects). A streamed answer sets its own
(the memento: the receipt's signed sha256 of the kept body, the bytes it streams, checked against the blob's
blake3 before the first byte); an answer that already has ``Content-Digest`` is passed on untouched.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

CONTENT_DIGEST = "Content-Digest"
REPR_DIGEST = "Repr-Digest"


def sha256_field(digest: bytes) -> str:
    """A digest field's value for one SHA-256 digest: ``sha-256=:<base64>:`` (an RFC 8941 byte sequence)."""
    return "sha-256=:" + base64.b64encode(digest).decode("ascii") + ":"


def field_of_hex(hexdigest: str) -> str:
    """The field value of a SHA-256 digest given in hex, bare or as receipts keep it (``sha256:<hex>``)."""
    return sha256_field(bytes.fromhex(hexdigest.removeprefix("sha256:")))


EMPTY = sha256_field(hashlib.sha256(b"").digest())


def memento_fields(sha256_hex: str, *, head: bool) -> dict[str, str]:
    """The two fields of a body served as kept, from the receipt's sha256: for a ``HEAD``, the content is empty."""
    whole = field_of_hex(sha256_hex)
    return {CONTENT_DIGEST: EMPTY if head else whole, REPR_DIGEST: whole}


class ContentDigest:
    """ASGI middleware: ``Content-Digest`` and ``Repr-Digest`` on every answer sent in one body message."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = scope.get("method") == "HEAD"
        held: Message | None = None  # the start message, held until the body is known

        async def digesting(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                if any(k.lower() == b"content-digest" for k, _ in message.get("headers", ())):
                    await send(message)  # the route said it (a streamed memento)
                else:
                    held = message
                return
            if held is not None and message["type"] == "http.response.body":
                start, held = held, None
                if not message.get("more_body", False):
                    body = bytes(message.get("body", b""))
                    whole = sha256_field(hashlib.sha256(body).digest())
                    # Starlette hands a HEAD answer its whole body; the server sends none of it (RFC 9530 B.2)
                    start = {**start, "headers": [*start.get("headers", ()),
                                                  (b"content-digest", (EMPTY if head else whole).encode()),
                                                  (b"repr-digest", whole.encode())]}
                await send(start)
            await send(message)

        await self.app(scope, receive, digesting)
