"""The certificates servers presented over TLS leave the home with the reads they vouch for (issue 40): a WARC
holds each as a ``resource`` record (DER, application/pkix-cert) that warcio reads and pywb indexes without
replaying it as a page; a WACZ validates with them; a bundle carries them and ``bundle verify`` checks each
against the signed receipt, failing a citation whose certificate is missing."""

from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import Reply
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.prove.bundle import build_bundle, verify_bundle
from tests.pywb_server import no_proxy_env, tool
from tests.pywb_server import wayback as pywb_wayback
from tests.test_bundle_trust import failed
from tests.tls_pki import Issued, TestPKI

TEXT = "A page read over TLS, from a server whose certificate the receipt keeps."
PAGE = f"<html><body><p>{TEXT}</p></body></html>".encode()


@pytest.fixture
def world(home: EvidenceHome, tmp_path: Path) -> Iterator[tuple[EvidenceHome, TestPKI, Issued, Issued, dict[str, str]]]:
    """Two https hosts: secure.test redirects to second.test, which serves the page."""
    pki = TestPKI.make(tmp_path / "pki")
    first_leaf, second_leaf = pki.leaf("secure.test"), pki.leaf("second.test")
    second = pki.site({"/page": Reply(body=PAGE), "/robots.txt": Reply(404, b"")}, second_leaf)
    first = pki.site({"/": Reply(301, b"", headers=(("Location", f"https://second.test:{second.port}/page"),)),
                      "/robots.txt": Reply(404, b"")}, first_leaf)
    policy = FetchPolicy(allow_loopback=True, host_pause=0, total_timeout=10, ca_bundle=str(pki.ca_bundle))
    try:
        with CheckedClient(policy, resolver=lambda h, p: ["127.0.0.1"]) as c:
            r = fetch(home, c, f"https://secure.test:{first.port}/")
    finally:
        first.stop()
        second.stop()
    assert r.final_url is not None and r.final_url.endswith("/page")
    yield home, pki, first_leaf, second_leaf, {"receipt_id": r.receipt_id, "final_url": r.final_url}


def _records(path: Path) -> list[tuple[str, dict[str, str], bytes]]:
    with path.open("rb") as f:
        return [(rec.rec_type, dict(rec.rec_headers.headers), rec.content_stream().read())
                for rec in ArchiveIterator(f, check_digests=True)]


def test_the_warc_holds_each_certificate_as_a_resource_record(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home, pki, first_leaf, second_leaf, ids = world
    out = tmp_path / "tls.warc.gz"
    summary = export_warc(home, out, [e.receipt for e in home.ledger.entries()])
    # the two leaves and the intermediate they share, and the root the client verified to: each once
    assert summary.certificates == 4
    recs = _records(out)
    by_id = {h["WARC-Record-ID"]: (t, h) for t, h, _ in recs}
    certs = [(h, body) for t, h, body in recs if t == "resource"]
    assert {x509.load_der_x509_certificate(b) for _, b in certs} == {first_leaf.cert, second_leaf.cert,
                                                                     pki.intermediate.cert, pki.root.cert}
    for h, body in certs:
        sha = "sha256:" + hashlib.sha256(body).hexdigest()
        assert h["Content-Type"] == "application/pkix-cert"
        assert h["WARC-Target-URI"] == f"urn:g6:certificate:{sha}" and h["WARC-Payload-Digest"] == sha
        assert by_id[h["WARC-Concurrent-To"]][0] == "response"
    # each leaf is concurrent to the response of the hop whose connection presented it
    hop_of = {by_id[h["WARC-Concurrent-To"]][1]["WARC-Target-URI"]: x509.load_der_x509_certificate(b)
              for h, b in certs if x509.load_der_x509_certificate(b) in (first_leaf.cert, second_leaf.cert)}
    assert hop_of[ids["final_url"]] == second_leaf.cert
    assert [c for u, c in hop_of.items() if u != ids["final_url"]] == [first_leaf.cert]
    # the receipt's metadata record names the same digests
    meta = json.loads(next(b for t, h, b in recs if t == "metadata"))
    assert {h["WARC-Payload-Digest"] for h, _ in certs} == {
        ref["sha256"] for hop in meta["hops"] for ref in (hop["tls"]["certificate"], *hop["tls"]["chain"],
                                                            *hop["tls"]["verified_chain"])}


def test_pywb_indexes_the_warc_and_replays_the_page_not_a_certificate(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    home, _, _, _, ids = world
    out = tmp_path / "tls.warc.gz"
    export_warc(home, out, [e.receipt for e in home.ledger.entries()])
    root = tmp_path / "pywb"
    root.mkdir()
    for args in (["init", "tls"], ["add", "tls", str(out)]):
        r = subprocess.run([tool("wb-manager"), *args], cwd=root, capture_output=True, text=True,
                           env=no_proxy_env(), timeout=120)
        assert r.returncode == 0, r.stderr
    cdx = b"".join(p.read_bytes() for p in (root / "collections" / "tls" / "indexes").iterdir())
    assert b"urn:g6:certificate:sha256:" in cdx  # indexed under its own URI, never a page's
    with pywb_wayback(root, tmp_path / "wayback.log") as url, httpx.Client(trust_env=False, timeout=30) as c:
        got = c.get(f"{url}/tls/2100id_/{ids['final_url']}")
    assert got.status_code == 200 and got.content == PAGE


def test_the_wacz_validates_with_the_certificates(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from g6.export.wacz import export_wacz

    home = world[0]
    out = tmp_path / "tls.wacz"
    summary = export_wacz(home, out, [e.receipt for e in home.ledger.entries()])
    assert summary.warc.certificates == 4
    ok = subprocess.run([tool("wacz"), "validate", "-f", str(out)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "is valid" in ok.stdout, ok.stdout + ok.stderr


def _bundle(world, tmp_path: Path) -> tuple[Path, EvidenceHome, dict[str, str]]:  # type: ignore[no-untyped-def]
    home, _, _, _, ids = world
    m = Manifest.new().with_citation(cite_web(home, ids["receipt_id"], quote=TEXT)).signed(home.signing_key())
    save_manifest(m, tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    return tmp_path / "b.zip", home, ids


def test_the_bundle_carries_the_certificates_and_verify_checks_them(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, home, ids = _bundle(world, tmp_path)
    receipt = home.ledger.get(ids["receipt_id"])
    refs = [ref for what, ref in receipt.blobs() if what != "content"]
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for ref in refs:
            member = "blobs/" + ref["blake3"].split(":", 1)[1]
            assert member in names and z.read(member) == home.store.read_as(ref)
    report = verify_bundle(path, [home.signing_key().public])
    assert report.ok, failed(report)
    checks = {c.check: c for c in report.citations[0].checks}
    assert checks["certificates"].ok and checks["certificates"].detail.startswith(f"{len(refs)} certificate")


def _rewritten(path: Path, out: Path, victim: str, data: bytes | None) -> Path:
    """The bundle with member ``victim`` replaced by ``data`` (None: taken out), bundle.json agreeing."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist() if n != victim}
    index = json.loads(files["bundle.json"])
    del index["files"][victim]
    if data is not None:
        files[victim] = data
        index["files"][victim] = {"sha256": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}
    files["bundle.json"] = json.dumps(index).encode()
    with zipfile.ZipFile(out, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    return out


def test_a_bundle_without_its_certificate_or_with_another_fails_the_citation(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, home, ids = _bundle(world, tmp_path)
    first_leaf = world[2]
    leaf = home.ledger.get(ids["receipt_id"]).hops[-1].tls["certificate"]  # type: ignore[index]
    victim = "blobs/" + leaf["blake3"].split(":", 1)[1]
    key = [home.signing_key().public]
    missing = verify_bundle(_rewritten(path, tmp_path / "cut.zip", victim, None), key)
    assert not missing.ok and failed(missing)["certificates"].startswith(f"hop 1 certificate: {victim!r} is not")
    # another certificate of the same CA under the leaf's name, declared honestly in bundle.json
    other = verify_bundle(_rewritten(path, tmp_path / "other.zip", victim, first_leaf.der), key)
    assert not other.ok and failed(other) == {
        "certificates": "hop 1 certificate: bundle.json declares another digest or size for this blob than the receipt"}
