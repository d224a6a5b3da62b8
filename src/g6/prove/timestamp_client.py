"""Ask an RFC 3161 time-stamping authority (TSA) for a token over a checkpoint, and keep it beside it.

The request (``g6.ledger.transparency.timestamp.make_request``) carries the SHA-256 of the checkpoint's note body
(its signed text, without signature lines), a fresh nonce and certReq. It is POSTed as
``application/timestamp-query`` (RFC 3161 s3.4); the answer must be HTTP 200,
``application/timestamp-reply``, at most ``MAX_REPLY`` bytes, status granted, and its token must hold
for this note body and this nonce in every check but the chain to a root (that one needs the roots a
verifier pins: ``g6 ledger verify --tsa-root``; pass ``roots`` here to check it now too). Anything else is
a ``TimestampAuthorityError`` naming the TSA, and nothing is kept.

A good token is kept beside the checkpoint in the ledger (kind ``rfc3161``, name the TSA's name or URL,
value the DER token in base64): kept, not trusted; verify checks it again.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
from cryptography import x509

from g6.errors import TimestampAuthorityError
from g6.home import EvidenceHome
from g6.ledger.chain import RECEIPT_COLUMNS
from g6.ledger.note import Checkpoint, parse_note
from g6.ledger.transparency.timestamp import (
    KIND,
    MAX_TOKEN,
    TimestampTokenError,
    TokenReport,
    make_request,
    token_from_reply,
    verify_token,
)
from g6.ledger.transparency.timestamped import backdated

SEQ, RID, AT = (RECEIPT_COLUMNS.index(c) for c in ("seq", "receipt_id", "fetched_at"))
MAX_REPLY = MAX_TOKEN  # a reply is a few KiB; one past this is cut off and refused
QUERY_TYPE = "application/timestamp-query"
REPLY_TYPE = "application/timestamp-reply"
TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class Stamp:
    """A token a TSA gave for a checkpoint: who gave it, the DER token, what it was checked for."""

    name: str
    url: str
    token: bytes
    report: TokenReport

    @property
    def value(self) -> str:
        """As the ledger keeps it: the DER token in base64."""
        return base64.b64encode(self.token).decode()


def note_body(note: str) -> bytes:
    """The bytes a token is over: the signed note's text without its signature lines."""
    return parse_note(note)[0].encode("utf-8")


def ask_tsa(url: str, body: bytes, *, name: str | None = None, roots: Sequence[x509.Certificate] = (),
            transport: httpx.BaseTransport | None = None, timeout: float = TIMEOUT,
            max_reply: int = MAX_REPLY) -> Stamp:
    """Ask the TSA at ``url`` for a token over ``body``; ``TimestampAuthorityError`` unless it gives one
    that holds (see the module). ``transport`` replaces httpx's (tests)."""
    name = name or url
    query, nonce = make_request(body)
    reply = _post(url, name, query, transport, timeout, max_reply)
    try:
        token = token_from_reply(reply)
    except TimestampTokenError as e:  # a rejection, or bytes that are no TimeStampResp
        raise TimestampAuthorityError(name, f"no token: {e}") from None
    report = verify_token(token, body, roots, nonce=nonce)
    bad = [c for c in report.failed() if roots or c.check != "chain"]
    if bad:
        raise TimestampAuthorityError(name, "the token does not hold: "
                                      + "; ".join(f"{c.check}: {c.detail}" for c in bad[:3]))
    return Stamp(name, url, token, report)


def _post(url: str, name: str, query: bytes, transport: httpx.BaseTransport | None, timeout: float,
          max_reply: int) -> bytes:
    if not url.startswith(("http://", "https://")):
        raise TimestampAuthorityError(name, f"not an http(s) URL: {url[:200]!r}")
    try:
        with httpx.Client(transport=transport, timeout=timeout, follow_redirects=False) as client, \
                client.stream("POST", url, content=query, headers={"Content-Type": QUERY_TYPE,
                                                                    "Accept": REPLY_TYPE}) as r:
            if r.status_code != 200:
                raise TimestampAuthorityError(name, f"answered HTTP {r.status_code}, not 200")
            ctype = r.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != REPLY_TYPE:
                raise TimestampAuthorityError(name, f"answered with Content-Type {ctype[:80] or 'none'!r}, "
                                              f"not {REPLY_TYPE}")
            declared = r.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_reply:
                raise TimestampAuthorityError(name, f"a reply of {declared} bytes (at most {max_reply})")
            got = bytearray()
            for chunk in r.iter_bytes():
                got += chunk
                if len(got) > max_reply:
                    raise TimestampAuthorityError(name, f"a reply of more than {max_reply} bytes")
            return bytes(got)
    except httpx.HTTPError as e:
        raise TimestampAuthorityError(name, f"could not be asked ({type(e).__name__}: {str(e)[:200] or 'no detail'})") \
            from None


def stamp_checkpoint(home: EvidenceHome, cp: Checkpoint, note: str, url: str, *, name: str | None = None,
                     transport: httpx.BaseTransport | None = None, timeout: float = TIMEOUT) -> Stamp:
    """Ask the TSA at ``url`` for a token over checkpoint ``cp`` (signed ``note``) and keep it beside the
    checkpoint in the home's ledger. A token whose genTime (plus its accuracy) is earlier than a receipt the
    checkpoint covers is refused, ``TimestampAuthorityError``, and not kept: it would fail ``ledger verify
    --tsa-root`` (``fetched_at``) for as long as it is kept."""
    stamp = ask_tsa(url, note_body(note), name=name, transport=transport, timeout=timeout)
    # the rows' lookup columns, not each receipt parsed: verify holds the columns to the signed receipts
    covered = ((r[SEQ], r[RID], r[AT]) for r in home.ledger.rows.rows_between(None, cp.size))
    why = backdated(stamp.report, covered)
    if why is not None:
        raise TimestampAuthorityError(stamp.name, f"{why}; the token would fail `ledger verify --tsa-root` "
                                                  "(fetched_at), so it is not kept")
    home.ledger.keep_beside(cp, KIND, stamp.name, stamp.value)
    return stamp
