"""Signed WACZ: ``datapackage-digest.json`` with ``signedData``, as Webrecorder's "WACZ Signing and
Verification" 0.1.0 (https://specs.webrecorder.net/wacz-auth/0.1.0/) has it, in its anonymous form, and
the log entry that says whose key signed it.

``signedData`` holds ``hash`` (``sha256:<hex>`` of ``datapackage.json``, the digest file's ``hash``
too), ``created`` (``datapackage.json``'s own: py-wacz requires them equal), ``software``
(``g6-evidence <version>``), ``version`` (the spec's, ``0.1.0``), ``signature`` (ECDSA P-384 with
SHA-256 over the UTF-8 bytes of ``hash``; r then s, base64: what WebCrypto, and so ReplayWeb.page,
verifies) and ``publicKey`` (base64 SubjectPublicKeyInfo DER). With a TSA (``--tsa URL``) it also holds
``timeSignature``, the TSA's RFC 3161 reply (a DER TimeStampResp, base64) over the ASCII bytes of
``signature``, and ``timestampCert``, the PEM certificates the token carries, its signer first: the two
fields and that encoding of the spec's domain-signature form (authsign's ``timestamp_verify`` reads
them), on the anonymous signature as webrecorder/specs#142 proposes.

The key is ``$G6_HOME/keys/wacz-signing.key`` (PKCS#8 PEM, mode 0600, read under the Ed25519 key's
rules: never through a link, refused when group or others may read it), made by the first ``--sign``.
Before anything is signed with it, the log holds a WACZ key entry (``g6.ledger.wacz_keys``) adding it,
signed by the home's Ed25519 key; that entry is exported with the receipts (``receipts/``, with its
inclusion proof in ``proofs/``), so a grader who trusts the log's key can follow the trust to the
``publicKey``. ``rotate_wacz_key`` (``g6 keys wacz --rotate``) makes a new key and records it: the old
one retired, the new one added. A key the log retired signs nothing more.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from asn1crypto import cms, tsp
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from g6 import TOOL_NAME, __version__
from g6.errors import SigningKeyError, TimestampAuthorityError
from g6.home import EvidenceHome
from g6.ledger.keys import publish_key_file, read_key_file
from g6.ledger.receipts import Receipt
from g6.ledger.transparency.timestamp import iso
from g6.ledger.wacz_keys import ADD, KIND, RETIRE, WaczKeyLife, WaczSigningKey, wacz_key_entry, wacz_key_lives
from g6.prove.timestamp_client import Stamp, ask_tsa

KEY_FILE = "wacz-signing.key"
SPEC_VERSION = "0.1.0"  # wacz-auth, the version signedData follows
STAMP_WINDOW = timedelta(minutes=10)  # the spec's bound between created and the TSA's genTime (its step 7)


@dataclass(frozen=True, slots=True)
class WaczSigner:
    """What signs one export: the P-384 key, the log entry that added it, and the TSA to ask (if any)."""

    key: WaczSigningKey
    entry: Receipt  # the WACZ key entry that added ``key`` (exported with the receipts)
    entry_seq: int
    tsa_url: str | None = None
    tsa_name: str | None = None
    new_entry: bool = False  # the entry was appended for this export (the key's first --sign in this log)


@dataclass(frozen=True, slots=True)
class SignedDigest:
    """``datapackage-digest.json`` as written, and what the summary says of it."""

    digest: dict[str, Any]
    stamp: Stamp | None

    def to_json(self, signer: WaczSigner) -> dict[str, Any]:
        signed = self.digest["signedData"]
        return {"key_id": signer.key.key_id, "public_key": signed["publicKey"], "key_entry": signer.entry.receipt_id,
                "created": signed["created"], "tsa": self.stamp.name if self.stamp else None,
                "gen_time": iso(self.stamp.report.gen_time) if self.stamp and self.stamp.report.gen_time else None}


def key_path(home: EvidenceHome) -> Path:
    return home.keys.path / KEY_FILE


def load_wacz_key(home: EvidenceHome) -> WaczSigningKey | None:
    """The home's WACZ signing key, or None when there is none yet."""
    path = key_path(home)
    if not Path(path).exists() and not Path(path).is_symlink():
        return None
    return WaczSigningKey.from_pem(read_key_file(path, allow_open_key=home.keys.allow_open_key,
                                                 what="WACZ signing key",
                                                 remake="move it away (the next `g6 export wacz --sign` makes "
                                                        "a new key)",
                                                 missing="`g6 export wacz --sign` makes one"))


def key_lives(home: EvidenceHome) -> dict[str, WaczKeyLife]:
    """The WACZ keys the home's log added and retired (its invalid entries change nothing; verify says so)."""
    rows = ((e.seq, e.receipt.receipt_id, e.receipt.to_json()) for e in home.ledger.entries(kind=KIND))
    return wacz_key_lives(rows)[0]


def _bound(home: EvidenceHome, key: WaczSigningKey, reason: str) -> tuple[Receipt, int, bool]:
    """The entry that added ``key`` to the log (appended now, signed by the home's key, when there is
    none); ``SigningKeyError`` when the log retired it."""
    life = key_lives(home).get(key.key_id)
    if life is not None:
        if life.retired_at is not None:
            raise SigningKeyError(f"the WACZ signing key {key.key_id} was retired in the log at seq {life.retired_at}: "
                                  "it signs nothing more; `g6 keys wacz --rotate` makes a new one")
        return home.ledger.get(life.added_by), life.added_at, False
    entry = home.ledger.append(wacz_key_entry(ADD, key.public, reason), home.signing_key())
    return entry, home.ledger.index_of(entry.receipt_id) + 1, True


def prepare_signer(home: EvidenceHome, *, tsa_url: str | None = None, tsa_name: str | None = None) -> WaczSigner:
    """The signer of a ``--sign`` export: the home's WACZ key (made on first use, mode 0600) and the log
    entry that adds it (appended when the log has none yet)."""
    key = load_wacz_key(home)
    if key is None:
        made = WaczSigningKey.generate()
        try:
            publish_key_file(key_path(home), made.to_pem(), force=False, what="WACZ signing key")
            key = made
        except SigningKeyError:  # another process made it first: use that one
            key = load_wacz_key(home)
            if key is None:
                raise
    entry, seq, new = _bound(home, key, "the home's WACZ signing key")
    return WaczSigner(key, entry, seq, tsa_url, tsa_name, new)


def rotate_wacz_key(home: EvidenceHome) -> tuple[WaczSigningKey, list[Receipt]]:
    """A new WACZ signing key in place of the home's: the file is replaced, then one transaction retires the
    old key in the log (when the log added it and has not retired it) and adds the new one."""
    old = load_wacz_key(home)
    new = WaczSigningKey.generate()
    publish_key_file(key_path(home), new.to_pem(), force=True, what="WACZ signing key")
    entries = []
    if old is not None:
        life = key_lives(home).get(old.key_id)
        if life is not None and life.retired_at is None:
            entries.append(wacz_key_entry(RETIRE, old.public, "rotation"))
    entries.append(wacz_key_entry(ADD, new.public, "rotation"))
    return new, home.ledger.append_many(entries, home.signing_key())


def signed_digest(package: bytes, created: str, signer: WaczSigner) -> SignedDigest:
    """``datapackage-digest.json`` for the ``datapackage.json`` bytes ``package``, signed (see the module);
    with the signer's TSA, time-stamped: ``TimestampAuthorityError`` when the TSA gives no token that holds."""
    digest = "sha256:" + hashlib.sha256(package).hexdigest()
    signature = base64.b64encode(signer.key.sign(digest.encode("utf-8"))).decode("ascii")
    signed: dict[str, Any] = {"hash": digest, "created": created, "software": f"{TOOL_NAME} {__version__}",
                              "version": SPEC_VERSION, "signature": signature,
                              "publicKey": signer.key.public.to_text()}
    stamp = None
    if signer.tsa_url:
        stamp = ask_tsa(signer.tsa_url, signature.encode("ascii"), name=signer.tsa_name)
        _check_window(stamp, created)
        signed["timeSignature"] = base64.b64encode(_granted_reply(stamp.token)).decode("ascii")
        signed["timestampCert"] = _token_certificates_pem(stamp.token)
    return SignedDigest({"path": "datapackage.json", "hash": digest, "signedData": signed}, stamp)


def created_of(package: dict[str, Any], *, now: bool = False) -> str:
    """The package's ``created`` (``wacz create`` sets it), set to this second when it has none or ``now``
    (a signed package: its signature and TSA token are made now, and the spec holds the token's genTime to
    within 10 minutes of ``created``, however long the proofs took)."""
    created = package.get("created")
    if now or not isinstance(created, str) or not created:
        created = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        package["created"] = created
    return created


def _check_window(stamp: Stamp, created: str) -> None:
    """A token whose genTime (with its accuracy) is before ``created`` or more than 10 minutes after it is
    refused (``TimestampAuthorityError``): a verifier that holds the anonymous signature to the spec's rule for
    the domain form would refuse it; the TSA's clock (or this machine's) is wrong."""
    gen = stamp.report.gen_time
    made = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    if gen is None:
        raise TimestampAuthorityError(stamp.name, "the token has no genTime")
    # created is cut to the second; genTime may be cut to the second too, or carry an accuracy
    if gen + stamp.report.margin + timedelta(seconds=1) < made or gen - stamp.report.margin > made + STAMP_WINDOW:
        raise TimestampAuthorityError(stamp.name, f"genTime {iso(gen)} is not within 10 minutes after the WACZ's "
                                                  f"created {created} (the TSA's clock, or this machine's, is off): "
                                                  "nothing was written")


def _granted_reply(token: bytes) -> bytes:
    """The TimeStampResp a TSA grants ``token`` with (status granted, the token): what authsign reads."""
    return tsp.TimeStampResp({"status": {"status": "granted"},
                              "time_stamp_token": cms.ContentInfo.load(token)}).dump()


def _token_certificates_pem(token: bytes) -> str:
    """The certificates inside a checked token as PEM, the signer's first (a verifier takes the first)."""
    sd = cms.ContentInfo.load(token)["content"]
    sid = sd["signer_infos"][0]["sid"]
    certs = [c.chosen for c in sd["certificates"] if c.name == "certificate"]
    signer_first = sorted(certs, key=lambda c: 0 if _is_signer(c, sid) else 1)
    return "".join(x509.load_der_x509_certificate(c.dump()).public_bytes(serialization.Encoding.PEM).decode()
                   for c in signer_first)


def _is_signer(cert: Any, sid: Any) -> bool:
    with contextlib.suppress(KeyError, ValueError, AttributeError):
        if sid.name == "issuer_and_serial_number":
            ias = sid.chosen
            return bool(ias["serial_number"].native == cert.serial_number and ias["issuer"] == cert.issuer)
        return bool(sid.chosen.native == cert.key_identifier)
    return False


__all__ = ["KEY_FILE", "SignedDigest", "WaczSigner", "created_of", "key_path", "load_wacz_key", "prepare_signer",
           "rotate_wacz_key", "signed_digest"]
