"""A signed WACZ from `g6 export wacz --sign --tsa`, checked by the field's own tools at pinned versions
(tests/peers/wacz_tools.py installs them; CI fails, never skips, when one is missing):

* py-wacz's ``wacz validate`` (0.6.0) accepts it, and refuses it when a byte changed in a WARC record, in
  ``pages/pages.jsonl`` or in ``datapackage.json``. Its ``--verify-auth`` (authsign 0.6.1) checks only the
  domain-certificate form of the spec: it refuses every anonymous signature, ArchiveWeb.page's as ours, before
  looking at it; that is pinned here so the docs' claim stays true;
* authsign's own ``timestamp_verify`` reads the ``timeSignature`` over the signature (and not over another);
* ReplayWeb.page (2.4.6, its bundled wabac.js 2.26.4), served on loopback and opened in the test's Chromium,
  shows the archive as signed (its observer public key ours, created with g6, the package hash ours), and
  wabac.js's own verdict on the signature holds; with a byte changed in the signature that verdict fails. (The
  panel does not show that verdict: it counts the signature as verified either way, see tests/rwp_server.py.)

What each tool does not check is in docs/commands/export.md: ReplayWeb.page never compared a member with its
hash in our runs (``datapackage.json``, ``pages.jsonl``, a WARC record changed: shown as the signed original,
also with its service worker's ``useHashCheck=1``); py-wacz never checks an anonymous signature.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.peers.wacz_tools import pywacz_bin, replaywebpage_dir, version_of
from tests.rwp_server import Shown, open_archive, serve

PAGE = b"<html><head><title>Signed page</title></head><body><p>Evidence kept, signed and replayed.</p></body></html>"


def g6(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(root)
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=300)


def rezip(src: Path, dst: Path, name: str, data: bytes) -> Path:
    """``src`` with member ``name`` replaced by ``data``: same members, order, compression and dates."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, data if info.filename == name else zin.read(info.filename))
    return dst


def changed_record(warc: bytes, cdx: bytes, marker: bytes) -> bytes:
    """``warc`` with one byte of the response record holding ``marker`` changed: that gzip member decompressed,
    one letter of ``marker`` swapped, compressed again to the very same length (so every record keeps its offset
    and only that record's bytes differ)."""
    for line in gzip.decompress(cdx).decode().splitlines():
        meta = json.loads(line.split(" ", 2)[2])
        if meta.get("mime") == "warc/revisit":
            continue
        off, length = int(meta["offset"]), int(meta["length"])
        record = zlib.decompress(warc[off:off + length], 31)
        at = record.find(marker)
        if at < 0:
            continue
        for i in range(len(marker)):
            for repl in b"xqzjkXQZJK":
                if record[at + i] == repl:
                    continue
                changed = record[:at + i] + bytes([repl]) + record[at + i + 1:]
                for level in range(1, 10):
                    c = zlib.compressobj(level, zlib.DEFLATED, 31)
                    member = c.compress(changed) + c.flush()
                    if len(member) == length:
                        return warc[:off] + member + warc[off + length:]
    raise AssertionError("no one-byte change of the record keeps its compressed length")


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A home with three reads, exported signed (and time-stamped by the openssl TSA), and copies of that WACZ
    each with one byte changed: in a WARC record, in pages.jsonl, in datapackage.json, in the signature."""
    from tests.prove._tsa import openssl_tsa

    d = tmp_path_factory.mktemp("signed-wacz")
    root = d / "home"
    ev = EvidenceHome(root, fsync=False)
    ev.keys.init()
    site = LocalSite({"/page": Reply(body=PAGE), "/other": Reply(body=b"<html><body><p>Other.</p></body></html>"),
                      "/gone": Reply(404, b"gone", content_type="text/plain"), "/robots.txt": Reply(404, b"")}).start()
    try:
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
            for p in ("/page", "/other", "/gone"):
                fetch(ev, c, site.url(p))
    finally:
        site.stop()
        ev.close()
    out = d / "wacz"
    out.mkdir()
    r = g6(root, "export", "wacz", "-o", str(out / "plain-signed.wacz"), "--sign", "--json")
    assert r.returncode == 0, r.stderr
    with openssl_tsa(d / "tsa") as tsa:
        r = g6(root, "export", "wacz", "-o", str(out / "signed.wacz"), "--sign", "--tsa", tsa.url("tsa"),
               "--tsa-name", "local", "--json")
    assert r.returncode == 0, r.stderr
    signed = out / "signed.wacz"
    with zipfile.ZipFile(signed) as z:
        m = {i.filename: z.read(i.filename) for i in z.infolist()}
    digest = json.loads(m["datapackage-digest.json"])
    raw = bytearray(base64.b64decode(digest["signedData"]["signature"]))
    raw[10] ^= 0x01
    forged = {**digest, "signedData": {**digest["signedData"], "signature": base64.b64encode(raw).decode()}}
    p256 = ec.generate_private_key(ec.SECP256R1())
    r_, s_ = decode_dss_signature(p256.sign(digest["hash"].encode(), ec.ECDSA(hashes.SHA256())))
    on_p256 = {**digest, "signedData": {
        **digest["signedData"], "signature": base64.b64encode(r_.to_bytes(32, "big") + s_.to_bytes(32, "big")).decode(),
        "publicKey": base64.b64encode(p256.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).decode()}}
    variants = {
        "warc": ("archive/data.warc.gz", changed_record(m["archive/data.warc.gz"], m["indexes/index.cdx.gz"],
                                                        b"Evidence kept")),
        "pages": ("pages/pages.jsonl", m["pages/pages.jsonl"].replace(b"(fetch, 200)", b"(fetcH, 200)", 1)),
        "datapackage": ("datapackage.json", m["datapackage.json"].replace(b"Reads recorded", b"Reads recordeD", 1)),
        "signature": ("datapackage-digest.json", json.dumps(forged, indent=2).encode()),
        "p256": ("datapackage-digest.json", json.dumps(on_p256, indent=2).encode()),  # a good signature, on P-256
    }
    paths = {}
    for label, (member, data) in variants.items():
        assert data != m[member], label
        paths[label] = rezip(signed, out / f"changed-{label}.wacz", member, data)
    yield {"root": root, "dir": out, "signed": signed, "digest": digest, "summary": json.loads(r.stdout),
           "changed": paths, "members": m}


# -- py-wacz ------------------------------------------------------------------------------------------------------
def wacz_validate(path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(pywacz_bin() / "wacz"), "validate", "-f", str(path), *extra], capture_output=True,
                          text=True, timeout=300)


def test_pywacz_accepts_the_signed_wacz(archives: dict[str, Any]) -> None:
    for name in ("signed", "plain"):
        path = archives["signed"] if name == "signed" else archives["dir"] / "plain-signed.wacz"
        r = wacz_validate(path)
        # it checked every member's hash, the digest file's hash of datapackage.json, and that signedData.created
        # is the package's; it saw the signature (and, without --verify-auth, says it did not check it)
        assert r.returncode == 0 and "Validation succeeded, the passed WACZ is valid" in r.stdout, r.stdout + r.stderr
        assert "Has signature" in r.stdout, r.stdout


@pytest.mark.parametrize("member", ["warc", "pages", "datapackage"])
def test_pywacz_refuses_a_changed_member(archives: dict[str, Any], member: str) -> None:
    r = wacz_validate(archives["changed"][member])
    assert r.returncode == 1 and "Validation failed, the passed WACZ is invalid" in r.stdout, r.stdout + r.stderr
    # frictionless (inside py-wacz) or py-wacz's own hash check names the member whose hash differs
    said = {"warc": ("'data.warc.gz': [{'type': 'hash-count'", "archive/data.warc.gz's hash does not match"),
            "pages": ("'pages.jsonl': [{'type': 'hash-count'", "pages/pages.jsonl's hash does not match"),
            "datapackage": ("datapackage.json hash mismatch to datapackage-digest.json",)}[member]
    assert any(s in r.stdout for s in said), r.stdout


def test_pywacz_verify_auth_knows_only_the_domain_form(archives: dict[str, Any]) -> None:
    """authsign's Verifier requires domain, domainCert, timeSignature and timestampCert: an anonymous signature,
    good or not, is refused before it is looked at. So py-wacz cannot tell a good anonymous signature from a
    forged one: `wacz validate` without --verify-auth passes the forged one (ReplayWeb.page's check below fails
    it), and with --verify-auth refuses the good one."""
    good = wacz_validate(archives["signed"], "--verify-auth")
    assert good.returncode == 1 and "validation error" in good.stdout + good.stderr
    assert "domainCert" in good.stdout + good.stderr, good.stdout + good.stderr
    forged = wacz_validate(archives["changed"]["signature"])
    assert forged.returncode == 0 and "Has signature" in forged.stdout


# -- authsign's reading of the timeSignature ---------------------------------------------------------------------
AUTHSIGN_TIMESTAMP = """import json, sys
from authsign.verifier import Verifier
d = json.load(sys.stdin)
t = Verifier().timestamp_verify(d["signature"], d["timeSignature"], d["timestampCert"])
print(t.isoformat() if t else "None")
"""


def authsign_timestamp(signed: dict[str, Any]) -> str:
    r = subprocess.run([str(pywacz_bin() / "python"), "-c", AUTHSIGN_TIMESTAMP], input=json.dumps(signed),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_authsign_reads_the_time_signature_over_the_signature(archives: dict[str, Any]) -> None:
    signed = archives["digest"]["signedData"]
    got = authsign_timestamp(signed)
    gen_time = archives["summary"]["signature"]["gen_time"]
    assert got != "None" and got[:19] == gen_time[:19], (got, gen_time)
    forged = json.loads(zipfile.ZipFile(archives["changed"]["signature"]).read("datapackage-digest.json"))
    assert authsign_timestamp(forged["signedData"]) == "None"  # the token is over the signature it came with


# -- ReplayWeb.page ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def rwp(archives: dict[str, Any]) -> Iterator[str]:
    app = replaywebpage_dir()
    assert version_of(app) == "2.4.6"
    with serve(app, archives["dir"]) as base:
        yield base


def test_replaywebpage_shows_the_archive_as_signed(browser: Any, rwp: str, archives: dict[str, Any]) -> None:
    for name in ("signed.wacz", "plain-signed.wacz"):
        shown = open_archive(browser, rwp, name)
        digest = json.loads(zipfile.ZipFile(archives["dir"] / name).read("datapackage-digest.json"))
        signed = digest["signedData"]
        assert shown.field("Observer Public Key", signed["publicKey"]), shown.text
        assert shown.field("Created With", signed["software"]), shown.text
        assert shown.field("Package Hash", digest["hash"]), shown.text
        v = shown.verdicts
        assert v["signature"] == {"expected": True, "matched": True}, v  # wabac.js: crypto.subtle.verify held
        assert v["publicKey"]["expected"] == signed["publicKey"] and v["datapackageHash"]["expected"] == digest["hash"]
        assert v["created"]["expected"] == signed["created"]


def test_replaywebpage_fails_a_changed_signature(browser: Any, rwp: str, archives: dict[str, Any]) -> None:
    shown: Shown = open_archive(browser, rwp, archives["changed"]["signature"].name)
    assert shown.verdicts["signature"] == {"expected": True, "matched": False}, shown.verdicts


def test_replaywebpage_takes_no_p256_key(browser: Any, rwp: str, archives: dict[str, Any]) -> None:
    """Why the key is P-384: a valid signature by a P-256 key gets no signature verdict at all (wabac.js imports
    an anonymous key as P-384 only; the import throws and nothing is kept)."""
    shown = open_archive(browser, rwp, archives["changed"]["p256"].name)
    assert "signature" not in shown.verdicts and "publicKey" not in shown.verdicts, shown.verdicts
    assert shown.field("Observer Public Key", "Not Available"), shown.text


def test_a_missing_tool_fails_in_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.peers import wacz_tools

    monkeypatch.setattr(wacz_tools, "PYWACZ", tmp_path / "no-pywacz")
    monkeypatch.setattr(wacz_tools, "RWP", tmp_path / "no-rwp")
    monkeypatch.setenv("G6_REQUIRE_TOOLS", "1")
    for find in (wacz_tools.pywacz_bin, wacz_tools.replaywebpage_dir):
        with pytest.raises(pytest.fail.Exception, match="run `python3 tests/peers/wacz_tools.py`"):
            find()
    monkeypatch.delenv("G6_REQUIRE_TOOLS")
    for find in (wacz_tools.pywacz_bin, wacz_tools.replaywebpage_dir):
        with pytest.raises(pytest.skip.Exception):
            find()
