"""A receipt as a W3C Verifiable Credential 2.0 secured with a Data Integrity proof of the ``eddsa-jcs-2022``
cryptosuite (``g6 receipt export --format vc``), so the tools of the VC world (wallets, verifiers) can check it.

**The credential** (VC Data Model 2.0): ``@context`` the base context ``https://www.w3.org/ns/credentials/v2``
then g6's context (:data:`G6_CONTEXT_URL`, shipped as ``g6/schemas/receipt-credential.v1.context.jsonld``: its two
terms); ``id`` ``urn:g6:receipt:ID``; ``type`` ``VerifiableCredential`` and ``ReceiptCredential``; ``issuer`` the
home's signing key as a ``did:key`` (resolved offline from the DID itself); ``validFrom`` the receipt's
``fetched_at``; ``credentialSubject``: ``receipt``, the receipt as signed (its ``signature`` included), a JSON
literal (``@type: @json``: its members are kept as they are, not read as linked data), and, when the read kept a
body, ``id``: the body as an RFC 6920 ``ni:`` URI of its sha-256, so the credential is about those bytes.

g6's context is named by a URL, not written inline: the cryptosuite copies the document's ``@context`` into the
proof, and verifiers compare the two entry by entry (Digital Bazaar's by identity, which only a string passes).
Its host is under ``.invalid`` (RFC 6761), as the $ids of g6's schemas are: it is never fetched, and no one can
serve another document there; a verifier loads the copy g6 ships, as VC Data Model 2.0 asks verifiers to do with
every context (pinned local copies; its sha256 is in docs/commands/receipt.md).

**The proof** (Data Integrity EdDSA Cryptosuites v1.0, section "eddsa-jcs-2022", followed step by step in
:func:`add_proof`): the proof options (``type`` ``DataIntegrityProof``, ``cryptosuite``, ``created``,
``verificationMethod`` the key's did:key URL ``did:key:z6Mk…#z6Mk…``, ``proofPurpose`` ``assertionMethod``) take
the document's ``@context``; ``hashData`` is SHA-256 of the RFC 8785 (JCS) proof options followed by SHA-256 of
the JCS document without its proof; Ed25519 signs ``hashData``; ``proofValue`` is its multibase base58btc
(``z…``). JCS is the canonical JSON g6 signs its receipts with (``g6.ledger.receipts.canonical_json``).
"""

from __future__ import annotations

import base64
import copy
import hashlib
from importlib import resources
from typing import Any

import base58

from g6.errors import InputError
from g6.export.attest import body_digests, receipt_urn
from g6.ledger import Receipt, SigningKey
from g6.ledger.receipts import canonical_json

CREDENTIALS_V2 = "https://www.w3.org/ns/credentials/v2"
MEDIA_TYPE = "application/vc"  # VC Data Model 2.0, section 6.3 (a credential with an embedded proof)
G6_CONTEXT_URL = "https://g6-evidence.invalid/contexts/receipt-credential/v1"
G6_CONTEXT_FILE = "receipt-credential.v1.context.jsonld"  # in g6.schemas
CREDENTIAL_TYPE = "ReceiptCredential"
CRYPTOSUITE = "eddsa-jcs-2022"


def g6_context() -> bytes:
    """The bytes of g6's JSON-LD context (:data:`G6_CONTEXT_URL`), as shipped: what a verifier pins."""
    return (resources.files("g6.schemas") / G6_CONTEXT_FILE).read_bytes()


def credential(receipt: Receipt, issuer: str) -> dict[str, Any]:
    """The unsecured credential of a signed receipt, issued by ``issuer`` (a did:key)."""
    if receipt.signature is None:
        raise InputError(f"receipt {receipt.receipt_id} is not signed: only a signed receipt is issued")
    subject: dict[str, Any] = {}
    if receipt.content is not None:
        sha256 = bytes.fromhex(body_digests(receipt.content)["sha256"])
        subject["id"] = "ni:///sha-256;" + base64.urlsafe_b64encode(sha256).decode("ascii").rstrip("=")
    subject["receipt"] = receipt.to_json()
    return {"@context": [CREDENTIALS_V2, G6_CONTEXT_URL], "id": receipt_urn(receipt.receipt_id),
            "type": ["VerifiableCredential", CREDENTIAL_TYPE], "issuer": issuer, "validFrom": receipt.fetched_at,
            "credentialSubject": subject}


def add_proof(document: dict[str, Any], key: SigningKey, created: str) -> dict[str, Any]:
    """``document`` with an ``eddsa-jcs-2022`` Data Integrity proof by ``key`` made at ``created`` (an XML Schema
    dateTime), as the cryptosuite's Create Proof algorithm says. The document is not changed."""
    if "proof" in document:
        raise InputError("the document already holds a proof: a proof set is not made here")
    # Create Proof, step 1: the proof options; step 2: they take the document's @context
    proof: dict[str, Any] = {"type": "DataIntegrityProof", "cryptosuite": CRYPTOSUITE, "created": created,
                             "verificationMethod": key.public.did_key_method, "proofPurpose": "assertionMethod"}
    if "@context" in document:
        proof["@context"] = copy.deepcopy(document["@context"])
    # step 3, Proof Configuration: JCS of the options; step 4, Transformation: JCS of the unsecured document
    canonical_proof_config = canonical_json(proof)
    transformed = canonical_json(document)
    # step 5, Hashing: SHA-256 of the proof configuration, then SHA-256 of the document, joined in that order
    hash_data = hashlib.sha256(canonical_proof_config).digest() + hashlib.sha256(transformed).digest()
    # step 6, Proof Serialization: Ed25519 (pure EdDSA) over hashData; step 7: multibase base58btc
    proof["proofValue"] = "z" + base58.b58encode(key.sign(hash_data)).decode("ascii")
    return {**copy.deepcopy(document), "proof": proof}


def secured_credential(receipt: Receipt, key: SigningKey, created: str) -> dict[str, Any]:
    """The receipt's credential, issued and secured by ``key``."""
    return add_proof(credential(receipt, key.public.did_key), key, created)
