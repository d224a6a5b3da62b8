"""A receipt as an in-toto attestation: an in-toto Statement v1 in a DSSE envelope (``g6 receipt export --format
dsse``), so supply-chain tools (in-toto, securesystemslib, sigstore's and SLSA's verifiers) can read it.

* The **Statement** (in-toto Attestation Framework v1, ``spec/v1/statement.md``): ``_type``
  ``https://in-toto.io/Statement/v1``; ``predicateType`` the receipt schema's ``$id``
  (``schemas/receipt.v1.schema.json``), a TypeURI that carries its version; ``predicate`` the receipt, as signed
  (its own ``signature`` included, so the ledger's signature can be checked again from the predicate alone).
* The **subject** is what the receipt is about. A read that kept a body: the body, named by its final URL, with
  the receipt's two digests as a DigestSet, ``sha256`` (one of the spec's algorithms) and ``blake3`` (not in the
  spec's list, which allows other algorithms when their encoding is said: lowercase hex of BLAKE3's 256-bit
  output, as for the listed ones; consumers that do not know it ignore it, as the spec says they must). A read
  with no body (a refusal, a network failure, a key entry): the spec wants at least one subject with a digest,
  so the subject is the receipt itself, named ``urn:g6:receipt:ID`` (the name g6's WARC export gives it), with
  the same two digests of its canonical JSON (RFC 8785, signature included: the text the ledger row holds).
* The **envelope** (DSSE v1, ``envelope.md`` and ``protocol.md``): ``payloadType``
  ``application/vnd.in-toto+json``, the Statement's RFC 8785 bytes as ``payload`` (base64), and one Ed25519
  signature over the pre-authentication encoding (PAE) by the home's signing key, the key that signs its
  receipts; ``keyid`` is g6's key id (``ed25519:`` + 32 hex digits of sha256 of the raw public key).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import blake3

from g6.errors import InputError
from g6.ledger import Receipt, SigningKey
from g6.ledger.receipts import canonical_json
from g6.schemas import load

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
MEDIA_TYPE = "application/vnd.dsse.envelope.v1+json"
_HEX = {"sha256": re.compile(r"sha256:([0-9a-f]{64})"), "blake3": re.compile(r"blake3:([0-9a-f]{64})")}


def predicate_type() -> str:
    """The receipt schema's ``$id``, read from the schema g6 ships, so the two cannot drift apart."""
    return str(load("receipt.v1")["$id"])


def receipt_urn(receipt_id: str) -> str:
    return f"urn:g6:receipt:{receipt_id}"


def body_digests(content: Mapping[str, Any]) -> dict[str, str]:
    """The in-toto DigestSet of a receipt's ``content`` (``sha256:<hex>``, ``blake3:<hex>``): algorithm -> hex."""
    out = {}
    for alg, shape in _HEX.items():
        m = shape.fullmatch(str(content.get(alg, "")))
        if m is None:
            raise InputError(f"the receipt's content.{alg} is not {alg}:<64 lowercase hex digits>")
        out[alg] = m[1]
    return out


def subject(receipt: Receipt) -> dict[str, Any]:
    """The one ResourceDescriptor the Statement is about (see the module's docstring)."""
    if receipt.content is not None:
        return {"name": receipt.final_url or str(receipt.request.get("url") or receipt_urn(receipt.receipt_id)),
                "digest": body_digests(receipt.content)}
    text = receipt.canonical_bytes(with_signature=True)
    return {"name": receipt_urn(receipt.receipt_id),
            "digest": {"sha256": hashlib.sha256(text).hexdigest(), "blake3": blake3.blake3(text).hexdigest()}}


def statement(receipt: Receipt) -> dict[str, Any]:
    """The in-toto Statement v1 of a signed receipt."""
    if receipt.signature is None:
        raise InputError(f"receipt {receipt.receipt_id} is not signed: only a signed receipt is attested")
    return {"_type": STATEMENT_TYPE, "subject": [subject(receipt)], "predicateType": predicate_type(),
            "predicate": receipt.to_json()}


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding: ``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body`` (lengths as
    ASCII decimal byte counts), the bytes the signature covers."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


def envelope(receipt: Receipt, key: SigningKey) -> dict[str, Any]:
    """The DSSE envelope of the receipt's Statement, signed by ``key``."""
    payload = canonical_json(statement(receipt))
    sig = key.sign(pae(PAYLOAD_TYPE, payload))
    return {"payload": base64.b64encode(payload).decode("ascii"), "payloadType": PAYLOAD_TYPE,
            "signatures": [{"keyid": key.key_id, "sig": base64.b64encode(sig).decode("ascii")}]}


def envelope_text(receipt: Receipt, key: SigningKey) -> str:
    """The envelope as one line of JSON and a newline: several of them appended make an in-toto bundle
    (``.intoto.jsonl``, one envelope a line)."""
    return json.dumps(envelope(receipt, key), separators=(",", ":")) + "\n"
