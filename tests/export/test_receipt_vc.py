"""`g6 receipt export ID --format vc`: a W3C Verifiable Credential 2.0 with an eddsa-jcs-2022 Data Integrity
proof, checked by Digital Bazaar's @digitalbazaar/vc (and its eddsa-jcs-2022 cryptosuite, did:key resolver and
jsonld.js) under node, with only pinned contexts; the cryptosuite as g6 implements it reproduces the W3C test
vector exactly; every field changed fails."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import base58
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from g6.export.vc import CREDENTIALS_V2, G6_CONTEXT_URL, add_proof
from g6.ledger import SigningKey, VerifyKey
from tests.export.conftest import EDGES, ROOT, World

VECTORS = ROOT / "fixtures" / "vc-di-eddsa"
Verify = Callable[..., dict[str, Any]]


def credential_of(world: World, receipt_id: str) -> dict[str, Any]:
    return dict(json.loads(world.exported(receipt_id, "vc")))


# -- the specification's own test vector, without node ----------------------------------------------------------
def _vector_key() -> SigningKey:
    """keyPair.json's secret key: multibase base58btc of the multicodec ed25519-priv (0x1300) and the seed."""
    secret = base58.b58decode(json.loads((VECTORS / "keyPair.json").read_text())["privateKeyMultibase"][1:])
    assert secret[:2] == b"\x80\x26" and len(secret) == 34
    return SigningKey(Ed25519PrivateKey.from_private_bytes(secret[2:]))


def test_the_multikey_and_did_key_are_the_specification_s() -> None:
    key = _vector_key()
    assert key.public.multikey == json.loads((VECTORS / "keyPair.json").read_text())["publicKeyMultibase"]
    assert key.public.did_key == "did:key:z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2"
    assert key.public.did_key_method == f"{key.public.did_key}#{key.public.multikey}"
    assert VerifyKey(bytes(32)).multikey.startswith("z6Mk")  # every Ed25519 Multikey does


def test_add_proof_reproduces_the_w3c_eddsa_jcs_2022_test_vector() -> None:
    """The credential of the specification's appendix, its proof taken off, signed with its key at its time: the
    same proof, proofValue included, byte for byte."""
    signed = json.loads((VECTORS / "signedJCS.json").read_text())
    unsigned = {k: v for k, v in signed.items() if k != "proof"}
    assert add_proof(unsigned, _vector_key(), signed["proof"]["created"]) == signed
    assert "proof" not in unsigned  # the input is left alone


# -- the credential, through Digital Bazaar's verifier -------------------------------------------------------------
def test_a_read_with_a_body_verifies(world: World, vc_verifier: Verify) -> None:
    cred = credential_of(world, world.ok.receipt_id)
    verdict = vc_verifier(cred)
    assert verdict["verified"] and verdict["jsonld"]["ok"], verdict
    assert verdict["versions"] == json.loads((ROOT / "tests/peers/node-vc/package.json").read_text())["dependencies"]
    key = world.home.signing_key().public
    assert cred["@context"] == [CREDENTIALS_V2, G6_CONTEXT_URL]
    assert cred["type"] == ["VerifiableCredential", "ReceiptCredential"]
    assert cred["issuer"] == key.did_key and cred["proof"]["verificationMethod"] == key.did_key_method
    assert cred["validFrom"] == world.ok.fetched_at
    assert cred["id"] == f"urn:g6:receipt:{world.ok.receipt_id}"
    digest = base64.urlsafe_b64encode(hashlib.sha256(world.page).digest()).decode().rstrip("=")
    assert cred["credentialSubject"] == {"id": f"ni:///sha-256;{digest}", "receipt": world.ok.to_json()}
    proof = cred["proof"]
    assert (proof["type"], proof["cryptosuite"], proof["proofPurpose"]) == ("DataIntegrityProof", "eddsa-jcs-2022",
                                                                            "assertionMethod")
    assert proof["@context"] == cred["@context"]  # Create Proof, step 2


def test_a_read_with_no_body_verifies(world: World, vc_verifier: Verify) -> None:
    cred = credential_of(world, world.denied.receipt_id)
    assert vc_verifier(cred)["verified"]
    assert cred["credentialSubject"] == {"receipt": world.denied.to_json()}  # no body: no id


def test_canonical_json_edges_verify(world: World, vc_verifier: Verify) -> None:
    """Escapes, U+2028, a character past U+FFFF and keys that sort by UTF-16 code unit: Python's RFC 8785 and
    the JavaScript one the verifier uses agree, or the signature would fail."""
    cred = credential_of(world, world.edges.receipt_id)
    assert cred["credentialSubject"]["receipt"]["detail"] == EDGES
    assert vc_verifier(cred)["verified"]


def _other_did() -> str:
    return SigningKey.generate().public.did_key


MUTATIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "a receipt field": lambda c: c["credentialSubject"]["receipt"].__setitem__(
        "byte_count", c["credentialSubject"]["receipt"]["byte_count"] + 1),
    "the receipt's final URL": lambda c: c["credentialSubject"]["receipt"].__setitem__(
        "final_url", c["credentialSubject"]["receipt"]["final_url"] + "x"),
    "the subject id": lambda c: c["credentialSubject"].__setitem__("id", c["credentialSubject"]["id"][:-1] + "A"),
    "validFrom": lambda c: c.__setitem__("validFrom", c["validFrom"].replace("Z", "1Z")),
    "the issuer": lambda c: c.__setitem__("issuer", _other_did()),
    "the credential id": lambda c: c.__setitem__("id", c["id"] + "0"),
    "the type": lambda c: c.__setitem__("type", ["VerifiableCredential"]),
    "the proof's created": lambda c: c["proof"].__setitem__("created", c["proof"]["created"].replace("Z", "1Z")),
    "the proof's purpose": lambda c: c["proof"].__setitem__("proofPurpose", "authentication"),
    "one character of the proofValue": lambda c: c["proof"].__setitem__(
        "proofValue", c["proof"]["proofValue"][:-1] + ("2" if c["proof"]["proofValue"][-1] != "2" else "3")),
    "the verification method (another key)": lambda c: c["proof"].__setitem__(
        "verificationMethod", (lambda d: f"{d}#{d.split(':')[2]}")(_other_did())),
    "the document's @context": lambda c: c.__setitem__("@context", [CREDENTIALS_V2]),
}


@pytest.mark.parametrize("what", list(MUTATIONS))
def test_a_changed_field_fails_digital_bazaar_s_verifier(world: World, vc_verifier: Verify, what: str) -> None:
    cred = credential_of(world, world.ok.receipt_id)
    assert vc_verifier(cred)["verified"]
    changed = copy.deepcopy(cred)
    MUTATIONS[what](changed)
    assert changed != cred
    verdict = vc_verifier(changed)
    assert verdict["verified"] is False, verdict


def test_a_changed_byte_in_the_file_fails(world: World, vc_verifier: Verify) -> None:
    """The file as written, one byte of the receipt's sha256 digest changed in the text."""
    text = world.exported(world.ok.receipt_id, "vc")
    i = text.index('"sha256:') + len('"sha256:')
    changed = text[:i] + ("0" if text[i] != "0" else "1") + text[i + 1:]
    assert vc_verifier(text)["verified"] and not vc_verifier(changed)["verified"]


def test_the_contexts_resolve_offline_only_from_the_pinned_copies(world: World, vc_verifier: Verify) -> None:
    """jsonld.js in safe mode (every term defined, nothing dropped) with the pinned contexts accepts the credential;
    without g6's context pinned it cannot load it (nothing is fetched), and an undefined term is refused."""
    cred = credential_of(world, world.ok.receipt_id)
    v2_only = [f"{CREDENTIALS_V2}={ROOT / 'fixtures' / 'jsonld' / 'credentials-v2.jsonld'}"]
    verdict = vc_verifier(cred, contexts=v2_only)
    assert not verdict["jsonld"]["ok"] and G6_CONTEXT_URL in verdict["jsonld"]["error"]
    undefined = {**cred, "credentialSubject": {**cred["credentialSubject"], "note": "not a term"}}
    assert not vc_verifier(undefined)["jsonld"]["ok"]


def test_the_pinned_credentials_context_is_the_w3c_s() -> None:
    """The sha256 VC Data Model 2.0 publishes for https://www.w3.org/ns/credentials/v2."""
    data = (ROOT / "fixtures" / "jsonld" / "credentials-v2.jsonld").read_bytes()
    assert hashlib.sha256(data).hexdigest() == "59955ced6697d61e03f2b2556febe5308ab16842846f5b586d7f1f7adec92734"


def test_g6_s_context_defines_the_terms_the_credential_uses() -> None:
    from g6.export.vc import g6_context

    terms = json.loads(g6_context())["@context"]
    assert set(terms) - {"@version", "@protected"} == {"ReceiptCredential", "receipt"}
    assert terms["receipt"]["@type"] == "@json"
