"""`g6 receipt export ID --format dsse`, read by the in-toto world's own tools: securesystemslib's DSSE Envelope
verifies the signature over the pre-authentication encoding with the home's Ed25519 key, and in-toto-attestation's
Statement model (its protobuf) parses and validates the payload. Every byte that matters, changed, fails."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import blake3
import pytest

from g6.export.attest import PAYLOAD_TYPE, STATEMENT_TYPE
from g6.ledger.receipts import canonical_json
from g6.schemas import load
from tests.export.conftest import World, require_tool


@pytest.fixture(scope="module")
def intoto() -> Any:
    """securesystemslib's DSSE and in-toto-attestation's Statement, at the versions the test extra pins."""
    try:
        from google.protobuf import json_format
        from in_toto_attestation.v1 import statement_pb2
        from in_toto_attestation.v1.statement import Statement
        from securesystemslib.dsse import Envelope
        from securesystemslib.exceptions import VerificationError as _refused
        from securesystemslib.signer import SSlibKey
    except ImportError as e:
        require_tool(f"the in-toto verifiers ({e.name})", "pip install -e '.[test]' (securesystemslib, "
                                                          "in-toto-attestation)")

    class InToto:
        VerificationError = _refused

        @staticmethod
        def key(world: World) -> Any:
            """The home's public key as securesystemslib holds an Ed25519 key, under g6's key id."""
            public = world.home.signing_key().public
            return SSlibKey(public.key_id, "ed25519", "ed25519", {"public": public.raw.hex()})

        @staticmethod
        def verify(text: str, key: Any) -> Any:
            """securesystemslib's verdict on the envelope (raises VerificationError), then the payload parsed and
            validated as an in-toto Statement v1; returns the Statement's JSON."""
            envelope = Envelope.from_dict(json.loads(text))
            accepted = envelope.verify([key], 1)
            assert list(accepted) == [key.keyid]
            assert envelope.payload_type == PAYLOAD_TYPE
            pb = json_format.Parse(envelope.payload, statement_pb2.Statement())  # refuses unknown fields
            Statement.copy_from_pb(pb).validate()
            return json.loads(envelope.payload)

    return InToto


def test_a_read_with_a_body_is_an_attestation_about_the_body(world: World, intoto: Any) -> None:
    text = world.exported(world.ok.receipt_id, "dsse")
    assert text.endswith("\n") and text.count("\n") == 1  # one line: appended, envelopes make a .intoto.jsonl
    stmt = intoto.verify(text, intoto.key(world))
    assert stmt["_type"] == STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    # the subject is the body: its two digests, as the receipt has them and as the bytes hash
    assert stmt["subject"] == [{"name": world.ok.final_url,
                                "digest": {"sha256": hashlib.sha256(world.page).hexdigest(),
                                           "blake3": blake3.blake3(world.page).hexdigest()}}]
    assert world.ok.content is not None
    assert world.ok.content["sha256"] == "sha256:" + stmt["subject"][0]["digest"]["sha256"]
    # the predicate is the receipt as signed, and its own signature still verifies from it
    assert stmt["predicateType"] == load("receipt.v1")["$id"]
    assert stmt["predicate"] == world.ok.to_json()
    from g6.ledger import Receipt

    assert Receipt.from_json(stmt["predicate"]).verify_signature(world.home.trusted()) == (True, "ok")
    # the payload is the Statement's RFC 8785 bytes
    payload = base64.b64decode(json.loads(text)["payload"])
    assert payload == canonical_json(stmt)


def test_a_read_with_no_body_is_an_attestation_about_the_receipt(world: World, intoto: Any) -> None:
    """in-toto wants a subject with a digest; a refused read has no body, so the subject is the receipt itself:
    urn:g6:receipt:ID and the digests of its canonical JSON (signature included, as the ledger row holds it)."""
    assert world.denied.content is None
    stmt = intoto.verify(world.exported(world.denied.receipt_id, "dsse"), intoto.key(world))
    row = world.denied.canonical_bytes(with_signature=True)
    assert stmt["subject"] == [{"name": f"urn:g6:receipt:{world.denied.receipt_id}",
                                "digest": {"sha256": hashlib.sha256(row).hexdigest(),
                                           "blake3": blake3.blake3(row).hexdigest()}}]
    assert stmt["predicate"]["outcome"] == "policy_denied"


def test_the_predicate_type_is_a_type_uri(world: World) -> None:
    """in-toto's TypeURI: an RFC 3986 URI, scheme and authority in lower case, with a version in it."""
    uri = load("receipt.v1")["$id"]
    scheme, rest = uri.split("://", 1)
    authority = rest.split("/", 1)[0]
    assert scheme == scheme.lower() == "https" and authority == authority.lower() and "v1" in uri


def _tampered(text: str, part: str) -> str:
    env = json.loads(text)
    if part == "payload":  # one byte of the Statement changed (the predicate's byte count), re-encoded
        payload = base64.b64decode(env["payload"])
        i = payload.index(b'"byte_count":') + len(b'"byte_count":')
        env["payload"] = base64.b64encode(payload[:i] + bytes([payload[i] ^ 1]) + payload[i + 1:]).decode()
    elif part == "subject":  # one hex digit of the subject's digest
        stmt = json.loads(base64.b64decode(env["payload"]))
        d = stmt["subject"][0]["digest"]["sha256"]
        stmt["subject"][0]["digest"]["sha256"] = ("1" if d[0] != "1" else "2") + d[1:]
        env["payload"] = base64.b64encode(canonical_json(stmt)).decode()
    elif part == "signature":  # one bit of the signature
        sig = bytearray(base64.b64decode(env["signatures"][0]["sig"]))
        sig[10] ^= 1
        env["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    elif part == "payloadType":  # PAE covers the type too
        env["payloadType"] = "application/vnd.in-toto+jsom"
    return json.dumps(env)


@pytest.mark.parametrize("part", ["payload", "subject", "signature", "payloadType"])
def test_a_changed_byte_fails_securesystemslib(world: World, intoto: Any, part: str) -> None:
    text = world.exported(world.ok.receipt_id, "dsse")
    intoto.verify(text, intoto.key(world))
    with pytest.raises(intoto.VerificationError):
        intoto.verify(_tampered(text, part), intoto.key(world))


def test_another_key_fails_securesystemslib(world: World, intoto: Any) -> None:
    from securesystemslib.signer import SSlibKey

    from g6.ledger import SigningKey

    other = SigningKey.generate().public
    text = world.exported(world.ok.receipt_id, "dsse")
    with pytest.raises(intoto.VerificationError):  # another key under the id the envelope names
        intoto.verify(text, SSlibKey(world.home.signing_key().key_id, "ed25519", "ed25519",
                                     {"public": other.raw.hex()}))


def test_an_edited_statement_fails_the_statement_model(world: World, intoto: Any) -> None:
    """What in-toto-attestation's model refuses, even when signed: no subject, an unknown field."""
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    stmt = json.loads(base64.b64decode(json.loads(world.exported(world.ok.receipt_id, "dsse"))["payload"]))
    with pytest.raises(ValueError, match="subject"):
        Statement.copy_from_pb(json_format.Parse(json.dumps({**stmt, "subject": []}), statement_pb2.Statement())
                               ).validate()
    with pytest.raises(json_format.ParseError):
        json_format.Parse(json.dumps({**stmt, "extra": 1}), statement_pb2.Statement())
