"""Evidence bundles verified offline, every tampering caught; WARC export accepted by warcio."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger import SigningKey
from g6.prove.bundle import build_bundle, verify_bundle

Site = Callable[..., LocalSite]
TEXT = "The cited sentence stays in the stored bytes, and the bundle proves it offline."


@pytest.fixture
def evidence(home: EvidenceHome, site: Site, tmp_path: Path) -> tuple[Path, Path, LocalSite]:
    s = site({"/a": Reply(body=f"<html><body><p>{TEXT}</p><p>Second paragraph.</p></body></html>".encode()),
              "/b": Reply(body=b"<html><body><p>Another page with its own words.</p></body></html>"),
              "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        ra, rb = fetch(home, c, s.url("/a")), fetch(home, c, s.url("/b"))
    m = Manifest.new().with_citation(cite_web(home, ra.receipt_id, quote="stays in the stored bytes"))
    m = m.with_citation(cite_web(home, rb.receipt_id, quote="its own words")).signed(home.signing_key())
    save_manifest(m, tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    return tmp_path / "m.json", tmp_path / "b.zip", s


def rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None], reindex: bool = True) -> Path:
    """Apply ``change`` to every member; ``reindex`` also rewrites bundle.json's declared digests and
    sizes to match, as an attacker who knows the format would, so the deeper checks are what catch it."""
    with zipfile.ZipFile(src) as zin:
        members = {i.filename: zin.read(i) for i in zin.infolist()}
    out = {n: d2 for n, d in members.items() if n != "bundle.json" and (d2 := change(n, d)) is not None}
    index = json.loads(members["bundle.json"])
    if reindex:
        index["files"] = {n: {"sha256": "sha256:" + hashlib.sha256(d).hexdigest(), "size": len(d)}
                          for n, d in sorted(out.items())}
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        zout.writestr("bundle.json", json.dumps(index))
        for name, data in out.items():
            zout.writestr(name, data)
    return dst


def bad_checks(report) -> set[str]:
    out = {c.check for c in report.bundle_checks if not c.ok}
    for v in report.citations:
        out |= {c.check for c in v.checks if not c.ok}
    return out


def test_bundle_holds_with_the_pinned_key(home: EvidenceHome, evidence) -> None:
    _, zpath, _ = evidence
    key = home.signing_key().public
    report = verify_bundle(zpath, (key,))
    assert report.ok, report.to_json()
    assert len(report.citations) == 2
    names = zipfile.ZipFile(zpath).namelist()
    assert {"bundle.json", "manifest.json", "checkpoint.note", "keys/signing.pub", "keys/checkpoint.vkey"} <= set(names)
    assert sum(n.startswith("proofs/") for n in names) == 2 and sum(n.startswith("blobs/") for n in names) == 2


def test_unpinned_and_wrong_keys(home: EvidenceHome, evidence) -> None:
    _, zpath, _ = evidence
    assert bad_checks(verify_bundle(zpath)) == {"key_pinned"}
    assert verify_bundle(zpath, trust_bundle_keys=True).ok
    wrong = verify_bundle(zpath, (SigningKey.generate().public,))
    assert {"checkpoint_signature", "receipt_signature", "inclusion", "manifest_signature"} <= bad_checks(wrong)


def test_tampering_is_caught(home: EvidenceHome, evidence, tmp_path: Path) -> None:
    _, zpath, _ = evidence
    key = (home.signing_key().public,)

    def flip_blob(name: str, data: bytes) -> bytes:
        return data.replace(b"stays", b"stayz") if name.startswith("blobs/") else data
    assert {"blob_digests", "cited_text"} == bad_checks(verify_bundle(rewrite(zpath, tmp_path / "1.zip", flip_blob),
                                                                        key))
    assert {"index", "blob_digests"} <= bad_checks(verify_bundle(rewrite(zpath, tmp_path / "1b.zip", flip_blob,
                                                                         reindex=False), key))

    def edit_receipt(name: str, data: bytes) -> bytes:
        if name.startswith("receipts/"):
            d = json.loads(data)
            d["final_url"] = "https://elsewhere.example/"
            return json.dumps(d).encode()
        return data
    assert {"receipt_signature", "inclusion"} <= bad_checks(verify_bundle(rewrite(zpath, tmp_path / "2.zip",
                                                                                  edit_receipt), key))

    def move_offsets(name: str, data: bytes) -> bytes:
        if name == "manifest.json":
            d = json.loads(data)
            d["citations"][0]["start"] += 3
            d.pop("signature")
            return json.dumps(d).encode()
        return data
    assert "cited_text" in bad_checks(verify_bundle(rewrite(zpath, tmp_path / "3.zip", move_offsets), key))

    def drop_proof(name: str, data: bytes) -> bytes | None:
        return None if name.startswith("proofs/") else data
    assert "inclusion" in bad_checks(verify_bundle(rewrite(zpath, tmp_path / "4.zip", drop_proof), key))

    def forge_checkpoint(name: str, data: bytes) -> bytes:
        return data.replace(b"\n2\n", b"\n3\n", 1) if name == "checkpoint.note" else data
    assert "checkpoint_signature" in bad_checks(verify_bundle(rewrite(zpath, tmp_path / "5.zip", forge_checkpoint),
                                                              key))
    (tmp_path / "junk.zip").write_bytes(b"not a zip at all")
    assert bad_checks(verify_bundle(tmp_path / "junk.zip", key)) == {"zip"}


def test_bundle_cli(home: EvidenceHome, evidence, tmp_path: Path) -> None:
    mpath, zpath, _ = evidence
    env_home = str(home.root)
    key = home.signing_key().public.to_text()
    run = lambda *a: subprocess.run([sys.executable, "-m", "g6", "--home", env_home, *a],  # noqa: E731
                                    capture_output=True, timeout=60)
    out = run("bundle", str(mpath), "-o", str(tmp_path / "cli.zip"))
    assert out.returncode == 0, out.stderr
    ok = run("bundle", "verify", str(tmp_path / "cli.zip"), "--key", key, "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"]
    assert run("bundle", "verify", str(tmp_path / "cli.zip")).returncode == 1
    assert run("bundle", "nothing-here.json").returncode == 2


def test_warc_export_is_accepted_by_warcio(home: EvidenceHome, evidence, tmp_path: Path) -> None:
    mpath, _, s = evidence
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, max_bytes=40)) as c:
        fetch(home, c, s.url("/a"))  # a truncated read
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        from g6.cite.manifest import load_manifest

        recheck(home, c, load_manifest(mpath))  # unchanged bytes: revisit records
        fetch(home, c, "http://127.0.0.1:1/")  # no body: metadata only
    out = tmp_path / "out.warc.gz"
    summary = export_warc(home, out, [e.receipt for e in home.ledger.entries()])
    assert summary.revisits == 2 and summary.responses == 3 and summary.metadata == summary.receipts
    warcio = [sys.executable, "-m", "warcio.cli"] if not shutil.which("warcio") else ["warcio"]
    check = subprocess.run([*warcio, "check", "-v", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout and "fail" not in check.stdout.lower()
    index = subprocess.run([*warcio, "index", str(out)], capture_output=True, text=True)
    assert index.returncode == 0
    types = [json.loads(line)["warc-type"] for line in index.stdout.splitlines()]
    assert {"warcinfo", "request", "response", "revisit", "metadata"} <= set(types)
    with out.open("rb") as f:
        records = [(r.rec_type, dict(r.rec_headers.headers)) for r in ArchiveIterator(f)]
    truncated = [h for t, h in records if t == "response" and h.get("WARC-Truncated") == "length"]
    assert len(truncated) == 1
    receipt_meta = [h for t, h in records if t == "metadata"]
    assert all(h["Content-Type"] == "application/json" for h in receipt_meta)
    resp = next(h for t, h in records if t == "response")
    assert resp["WARC-Payload-Digest"].startswith("sha256:") and resp["WARC-IP-Address"] == "127.0.0.1"
