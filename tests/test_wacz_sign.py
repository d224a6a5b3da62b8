"""`g6 export wacz --sign`: datapackage-digest.json with signedData as "WACZ Signing and Verification" 0.1.0 has
it (anonymous ECDSA P-384), the P-384 key bound to the log by a wacz-key entry that the WACZ carries with its
proof, `ledger verify`'s verdicts on those entries, the key file's rules and its rotation. The field's own tools
(py-wacz, authsign, ReplayWeb.page) check the same WACZ in tests/test_wacz_sign_peers.py."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.proofs import verify_inclusion_proof
from g6.ledger.receipts import Receipt
from g6.ledger.wacz_keys import ADD, KIND, RETIRE, WaczPublicKey, WaczSigningKey, wacz_key_entry
from tests.conftest import validate

Site = Callable[..., LocalSite]
SIGNED_FIELDS = {"hash", "created", "software", "version", "signature", "publicKey"}


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home.root)
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def reads(home: EvidenceHome, site: Site) -> list[str]:
    s = site({"/a": Reply(body=b"<html><body><p>First page.</p></body></html>"),
              "/b": Reply(body=b"<html><body><p>Second page.</p></body></html>"),
              "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        return [fetch(home, c, s.url(p)).receipt_id for p in ("/a", "/b")]


def export(home: EvidenceHome, out: Path, *extra: str) -> dict[str, Any]:
    r = g6(home, "export", "wacz", "-o", str(out), "--json", *extra)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    validate(summary, "export-wacz.v1")
    return summary


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i.filename) for i in z.infolist()}


def p1363_verifies(public_key_b64: str, signature_b64: str, message: bytes) -> bool:
    """ECDSA P-384/SHA-256 as WebCrypto checks it (r then s), with pyca's verifier."""
    key = serialization.load_der_public_key(base64.b64decode(public_key_b64))
    assert isinstance(key, ec.EllipticCurvePublicKey) and isinstance(key.curve, ec.SECP384R1)
    raw = base64.b64decode(signature_b64)
    assert len(raw) == 96
    der = encode_dss_signature(int.from_bytes(raw[:48], "big"), int.from_bytes(raw[48:], "big"))
    try:
        key.verify(der, message, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def test_signed_digest_follows_the_spec(home: EvidenceHome, reads: list[str], tmp_path: Path) -> None:
    summary = export(home, tmp_path / "signed.wacz", "--sign")
    m = members(tmp_path / "signed.wacz")
    digest = json.loads(m["datapackage-digest.json"])
    package = m["datapackage.json"]
    assert digest["path"] == "datapackage.json"
    assert digest["hash"] == "sha256:" + hashlib.sha256(package).hexdigest()
    signed = digest["signedData"]
    assert set(signed) == SIGNED_FIELDS  # the anonymous form, nothing the spec does not list
    assert signed["hash"] == digest["hash"]
    assert signed["created"] == json.loads(package)["created"]  # py-wacz requires them equal
    assert signed["version"] == "0.1.0" and signed["software"].startswith("g6-evidence ")
    assert p1363_verifies(signed["publicKey"], signed["signature"], signed["hash"].encode())
    # what the summary says is what the file holds
    sig = summary["signature"]
    assert sig["public_key"] == signed["publicKey"] and sig["created"] == signed["created"]
    assert sig["key_id"] == WaczPublicKey.from_text(signed["publicKey"]).key_id
    assert (sig["tsa"], sig["gen_time"]) == (None, None)


def test_signed_wacz_carries_the_evidence_and_the_key_entry(home: EvidenceHome, reads: list[str],
                                                            tmp_path: Path) -> None:
    summary = export(home, tmp_path / "signed.wacz", "--sign")
    m = members(tmp_path / "signed.wacz")
    signed = json.loads(m["datapackage-digest.json"])["signedData"]
    key = home.signing_key().public
    entries = [e.receipt for e in home.ledger.entries()]
    assert [r.kind for r in entries] == ["fetch", "fetch", KIND]
    binding = entries[-1]
    assert binding.receipt_id == summary["signature"]["key_entry"]
    assert binding.request["action"] == ADD and binding.request["key"] == signed["publicKey"]
    assert binding.signature is not None and binding.signature.key_id == key.key_id  # the log's Ed25519 key signs it
    assert summary["receipts"] == summary["proofs"] == 3
    for r in entries:  # every receipt, the key entry among them, with its proof against the checkpoint inside
        assert json.loads(m[f"receipts/{r.receipt_id}.json"]) == r.to_json()
        proof = m[f"proofs/{r.receipt_id}.tlog-proof"].decode()
        assert m["checkpoint/checkpoint.note"].decode() in proof
        assert verify_inclusion_proof(proof, r.to_json(), key, home.ledger.origin).ok
    assert m["keys/signing.pub"].decode().strip() == key.to_text()
    package = json.loads(m["datapackage.json"])
    listed = {r["path"]: r["hash"] for r in package["resources"]}
    for name, data in m.items():  # every member but the two package files is listed with its sha256
        if name not in ("datapackage.json", "datapackage-digest.json"):
            assert listed[name] == "sha256:" + hashlib.sha256(data).hexdigest(), name


def test_the_key_is_made_once_kept_0600_and_entered_once(home: EvidenceHome, reads: list[str],
                                                         tmp_path: Path) -> None:
    first = export(home, tmp_path / "one.wacz", "--sign")["signature"]
    path = home.root / "keys" / "wacz-signing.key"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"
    second = export(home, tmp_path / "two.wacz", "--sign")["signature"]
    assert second["key_id"] == first["key_id"] and second["key_entry"] == first["key_entry"]
    assert len(list(home.ledger.entries(kind=KIND))) == 1
    # the manifest-filtered export carries the key entry too, though no citation names it
    from g6.cite.cite import cite_web
    from g6.cite.manifest import Manifest

    m = Manifest.new().with_citation(cite_web(home, reads[0], quote="First page."))
    mpath = tmp_path / "m.json"
    mpath.write_text(json.dumps(m.to_json()))
    three = export(home, tmp_path / "three.wacz", "--sign", "--manifest", str(mpath))
    names = members(tmp_path / "three.wacz")
    assert f"receipts/{first['key_entry']}.json" in names and f"receipts/{reads[0]}.json" in names
    assert f"receipts/{reads[1]}.json" not in names and three["receipts"] == 2


@pytest.mark.parametrize("damage", ["mode", "symlink", "fifo"])
def test_a_key_file_others_may_read_or_a_link_is_refused(home: EvidenceHome, reads: list[str], tmp_path: Path,
                                                         damage: str) -> None:
    export(home, tmp_path / "one.wacz", "--sign")
    path = home.root / "keys" / "wacz-signing.key"
    if damage == "mode":
        path.chmod(0o644)
        want = "chmod 600"
    elif damage == "fifo":  # never waited on: refused at once
        path.unlink()
        os.mkfifo(path)
        want = "not a regular file; move it away"
    else:
        real = tmp_path / "elsewhere.key"
        real.write_bytes(path.read_bytes())
        real.chmod(0o600)
        path.unlink()
        path.symlink_to(real)
        want = "symbolic link"
    r = g6(home, "export", "wacz", "-o", str(tmp_path / "two.wacz"), "--sign")
    assert r.returncode == 1 and want in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "two.wacz").exists()


def test_without_sign_the_digest_is_unsigned(home: EvidenceHome, reads: list[str], tmp_path: Path) -> None:
    summary = export(home, tmp_path / "plain.wacz")
    digest = json.loads(members(tmp_path / "plain.wacz")["datapackage-digest.json"])
    assert "signedData" not in digest and summary["signature"] is None
    assert not (home.root / "keys" / "wacz-signing.key").exists()
    assert not list(home.ledger.entries(kind=KIND))


@pytest.mark.parametrize(("args", "said"), [
    (["--tsa", "http://127.0.0.1:9/tsa"], "give --sign too"),
    (["--sign", "--tsa-name", "x"], "give --tsa URL too"),
    (["--sign", "--tsa", "ftp://127.0.0.1/tsa"], "an http:// or https:// URL"),
])
def test_bad_tsa_flags_are_refused_before_any_work(home: EvidenceHome, reads: list[str], tmp_path: Path,
                                                   args: list[str], said: str) -> None:
    r = g6(home, "export", "wacz", "-o", str(tmp_path / "x.wacz"), *args)
    assert r.returncode == 2 and said in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "x.wacz").exists() and not list(home.ledger.entries(kind=KIND))


def test_an_unreachable_tsa_fails_and_writes_nothing(home: EvidenceHome, reads: list[str], tmp_path: Path,
                                                     site: Site) -> None:
    s = site({"/tsa": Reply(404, b"no TSA here", content_type="text/plain")})
    r = g6(home, "export", "wacz", "-o", str(tmp_path / "x.wacz"), "--sign", "--tsa", s.url("/tsa"),
           "--tsa-name", "nowhere")
    assert r.returncode == 1 and "TSA nowhere" in r.stderr and "HTTP 404" in r.stderr, r.stderr
    assert not (tmp_path / "x.wacz").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("g6-wacz-")] == []  # no temporary left


def test_a_timestamped_signature_carries_the_tsa_reply_over_the_signature(home: EvidenceHome, reads: list[str],
                                                                          tmp_path: Path) -> None:
    from tests.prove._tsa import openssl_tsa, rfc3161_client_verify

    with openssl_tsa(tmp_path / "tsa") as tsa:
        summary = export(home, tmp_path / "stamped.wacz", "--sign", "--tsa", tsa.url("tsa"), "--tsa-name", "local")
    signed = json.loads(members(tmp_path / "stamped.wacz")["datapackage-digest.json"])["signedData"]
    assert set(signed) == SIGNED_FIELDS | {"timeSignature", "timestampCert"}
    assert summary["signature"]["tsa"] == "local" and summary["signature"]["gen_time"]
    reply = base64.b64decode(signed["timeSignature"])
    from asn1crypto import tsp

    token = tsp.TimeStampResp.load(reply)["time_stamp_token"].dump()
    # rfc3161-client: the token holds for the signature's ASCII text under the TSA's root
    rfc3161_client_verify(token, signed["signature"].encode("ascii"), tsa.root_pem)
    from rfc3161_client import VerificationError

    with pytest.raises(VerificationError):  # over the signature, not over the hash it signs
        rfc3161_client_verify(token, signed["hash"].encode("ascii"), tsa.root_pem)
    from cryptography import x509

    certs = x509.load_pem_x509_certificates(signed["timestampCert"].encode())
    assert certs and "g6 test openssl TSA" in certs[0].subject.rfc4514_string()  # the signer first


def test_ledger_verify_accepts_the_wacz_key_entries(home: EvidenceHome, reads: list[str], tmp_path: Path) -> None:
    export(home, tmp_path / "one.wacz", "--sign")
    r = g6(home, "ledger", "verify", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    validate(report, "ledger-verify.v1")
    assert report["checks"]["wacz_keys"] == {"ok": True, "checked": 1, "failed": 0, "failures": []}
    listed = g6(home, "ledger", "list", "--kind", "wacz-key")
    assert listed.returncode == 0 and " add ecdsa-p384:" in listed.stdout


def _append_raw(home: EvidenceHome, request: dict[str, Any]) -> Receipt:
    """A wacz-key entry with any request, signed by the home's key: what a buggy or hostile writer could append."""
    r = Receipt(kind=KIND, source="g6", request=request, outcome="ok", outcome_code="G6_E_LEDGER_WACZ_KEY_ADDED")
    return home.ledger.append(r, home.signing_key())


def _p256_text() -> str:
    k = ec.generate_private_key(ec.SECP256R1()).public_key()
    return base64.b64encode(k.public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)).decode()


@pytest.mark.parametrize("bad", ["p256", "key_id", "use", "add_after_retire", "retire_unknown", "retire_twice"])
def test_ledger_verify_fails_on_a_bad_wacz_key_entry(home: EvidenceHome, reads: list[str], bad: str) -> None:
    key = WaczSigningKey.generate().public
    good = wacz_key_entry(ADD, key).request
    if bad == "p256":
        _append_raw(home, {**good, "key": _p256_text(), "key_id": "ecdsa-p384:" + "0" * 32})
        said = "not an ECDSA P-384 public key"
    elif bad == "key_id":
        _append_raw(home, {**good, "key_id": "ecdsa-p384:" + "0" * 32})
        said = "its key_id is not its key's"
    elif bad == "use":
        _append_raw(home, {**good, "use": "tls"})
        said = "its use is 'tls'"
    elif bad == "add_after_retire":
        for action in (ADD, RETIRE, ADD):
            home.ledger.append(wacz_key_entry(action, key), home.signing_key())
        said = "again after it was retired"
    elif bad == "retire_unknown":
        home.ledger.append(wacz_key_entry(RETIRE, key), home.signing_key())
        said = "which no entry added"
    else:
        for action in (ADD, RETIRE, RETIRE):
            home.ledger.append(wacz_key_entry(action, key), home.signing_key())
        said = "again (retired at seq"
    r = g6(home, "ledger", "verify", "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(r.stdout)
    validate(report, "ledger-verify.v1")
    failures = report["checks"]["wacz_keys"]["failures"]
    assert len(failures) == 1 and said in failures[0]["detail"], failures
    text = g6(home, "ledger", "verify")
    assert text.returncode == 1 and "wacz_keys  FAILED" in text.stdout and said in text.stdout


def test_rotation_retires_the_old_key_and_a_retired_key_signs_nothing(home: EvidenceHome, reads: list[str],
                                                                       tmp_path: Path) -> None:
    old = export(home, tmp_path / "one.wacz", "--sign")["signature"]
    path = home.root / "keys" / "wacz-signing.key"
    old_pem = path.read_bytes()
    r = g6(home, "keys", "wacz", "--rotate", "--json")
    assert r.returncode == 0, r.stderr
    rotated = json.loads(r.stdout)
    validate(rotated, "keys-wacz.v1")
    assert [(e["action"], e["key_id"]) for e in rotated["entries"]] == [("retire", old["key_id"]),
                                                                        ("add", rotated["key_id"])]
    assert rotated["key_id"] != old["key_id"] and oct(path.stat().st_mode & 0o777) == "0o600"
    new = export(home, tmp_path / "two.wacz", "--sign")["signature"]
    assert new["key_id"] == rotated["key_id"] and new["key_entry"] == rotated["entries"][1]["receipt_id"]
    verified = json.loads(g6(home, "ledger", "verify", "--json").stdout)
    assert verified["ok"] and verified["checks"]["wacz_keys"]["ok"]
    # the retired key, put back, is refused: the log says it signs nothing more
    path.write_bytes(old_pem)
    r = g6(home, "export", "wacz", "-o", str(tmp_path / "three.wacz"), "--sign")
    assert r.returncode == 1 and "was retired in the log at seq" in r.stderr and "keys wacz --rotate" in r.stderr
    assert not (tmp_path / "three.wacz").exists()
    shown = g6(home, "keys", "wacz")
    assert shown.returncode == 0 and "retired in the log at seq" in shown.stdout


def test_keys_wacz_without_a_key_says_how_to_make_one(home: EvidenceHome) -> None:
    r = g6(home, "keys", "wacz")
    assert r.returncode == 1 and "the first `g6 export wacz --sign` makes one" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("hours", [-2, 2])
def test_a_tsa_clock_far_from_created_is_refused(home: EvidenceHome, reads: list[str], tmp_path: Path,
                                                 hours: int) -> None:
    """The spec holds genTime to within 10 minutes of created: a token dated outside that is refused, and nothing
    is written (a TSA whose clock is behind, or ahead: certomancer's, told its time by its fake-time header)."""
    from datetime import UTC, datetime, timedelta

    from tests.prove._tsa import backdating_tsa, certomancer_tsa

    gen_time = (datetime.now(UTC) + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S+0000")
    with certomancer_tsa(tmp_path / "tsa") as tsa, backdating_tsa(tsa.url("tsa"), gen_time) as url:
        r = g6(home, "export", "wacz", "-o", str(tmp_path / "x.wacz"), "--sign", "--tsa", url, "--tsa-name", "off")
        ok = export(home, tmp_path / "good.wacz", "--sign", "--tsa", tsa.url("tsa"), "--tsa-name", "right")
    assert r.returncode == 1 and "TSA off: genTime" in r.stderr and "not within 10 minutes" in r.stderr, r.stderr
    assert not (tmp_path / "x.wacz").exists()
    assert ok["signature"]["tsa"] == "right"  # the same TSA with its own clock is taken


def test_wacz_key_entries_on_each_backend(pair_home: EvidenceHome) -> None:
    """The key and its entry are made, found again and judged the same on SQLite and on PostgreSQL."""
    from g6.export.wacz_sign import prepare_signer, rotate_wacz_key

    first = prepare_signer(pair_home)
    again = prepare_signer(pair_home)
    assert first.new_entry and not again.new_entry and again.entry.receipt_id == first.entry.receipt_id
    rotate_wacz_key(pair_home)
    report = pair_home.verify()
    assert report.ok and [c.detail for c in report.of("wacz_keys")] == ["3 WACZ key entries: 2 keys added, 1 retired"]
    pair_home.ledger.append(wacz_key_entry(ADD, first.key.public), pair_home.signing_key())  # retired: final
    bad = pair_home.verify()
    assert not bad.ok and "again after it was retired" in bad.failures("wacz_keys")[0].detail
