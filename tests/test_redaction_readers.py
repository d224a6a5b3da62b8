"""Every reader says "redacted", never "damaged": a home that read two pages from a loopback site, cited both,
bundled them, re-checked them, then had one page taken down (`g6 blob redact --url`).

`g6 serve` answers 451 with the entry (and still serves the receipt); `g6 recheck` gives a `redacted` verdict
without reading the page again; a bundle made before still verifies offline, one made after shows the citation
as redacted (seq and reason) and does not hold; WARC and WACZ exports leave the bytes out and say why; the
published tiles carry the entry and the monitor lists it; the re-check run files lose the words of the page;
`blob verify`, `blob gc` and `ledger verify` pass and count it. Each --json against its schema.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import jsonschema
import pytest
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, load_manifest, save_manifest
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.prove.bundle import build_bundle, verify_bundle
from g6.prove.monitor import monitor
from g6.prove.publish import publish
from g6.prove.publish_dest import FolderDestination
from g6.schemas import load
from tests.prove.tiles_peers import serve_folder
from tests.serve.server import served

TAKEN = "This page holds a person's address, which a court ordered taken down."
KEPT = "This page stays: nothing in it was ever asked to be removed."


def page(text: str) -> bytes:
    return f"<html><head><title>p</title></head><body><p>{text}</p></body></html>".encode()


@dataclass
class World:
    root: Path
    site: LocalSite
    taken_url: str
    kept_url: str
    taken_rid: str
    kept_rid: str
    manifest: Path
    before: Path  # a bundle made before the redaction
    entry: dict  # the redaction entry's receipt, as JSON
    recheck_rid: str  # the re-check read of the taken page (its text changed: a verdict quoting it)


def validate(doc: object, schema: str) -> None:
    jsonschema.Draft202012Validator(load(schema)).validate(doc)


def g6(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(world.root), *args], capture_output=True,
                          text=True, env={**env, "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}, timeout=300)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("readers")
    hits = [0]  # the first read gets the page, the re-check a changed one (a verdict that quotes it)

    def taken(_r: object) -> Reply:
        hits[0] += 1
        return Reply(body=page(TAKEN if hits[0] == 1 else TAKEN.replace("address", "street address")))

    site = LocalSite({"/taken": taken, "/kept": Reply(body=page(KEPT)), "/robots.txt": Reply(404, b"")}).start()
    try:
        root = base / "home"
        with EvidenceHome(root, fsync=False) as home, \
                CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
            home.keys.init()
            taken = fetch(home, client, site.url("/taken")).receipt_id
            kept = fetch(home, client, site.url("/kept")).receipt_id
            m = Manifest.new().with_citation(cite_web(home, taken, quote=TAKEN)).with_citation(
                cite_web(home, kept, quote=KEPT)).signed(home.signing_key())
            save_manifest(m, base / "m.json")
            build_bundle(home, base / "m.json", base / "before.zip")
            report = recheck(home, client, m, run_id="run_first", processes=1)
            by_verdict = {v.verdict: v for v in report.verdicts}
            assert set(by_verdict) == {"changed", "unchanged"}, report.to_json()
            recheck_rid = by_verdict["changed"].receipt_id
            assert recheck_rid is not None
        w = World(root, site, site.url("/taken"), site.url("/kept"), taken, kept, base / "m.json",
                  base / "before.zip", {}, recheck_rid)
        run_file = root / "knowledge" / "rechecks" / f"{m.manifest_id}.run_first.jsonl"
        assert "street address" in run_file.read_text()  # the re-check kept the changed page's words
        r = g6(w, "blob", "redact", "--url", w.taken_url, "--reason", "court-order", "--note", "case 2024-117",
               "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        validate(out, "blob-redact.v1")
        assert len(out["entries"]) == 2 and not out["skipped"]  # the fetch's body, and the re-check's
        assert "street address" not in run_file.read_text() and '"text": "redacted"' in run_file.read_text()
        w.entry = out
        yield w
    finally:
        site.stop()


def test_ledger_verify_and_blob_verify_count_it_and_pass(world: World) -> None:
    r = g6(world, "ledger", "verify")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "redacted   2 blobs by 2 redaction entries; held 0" in r.stdout
    r = g6(world, "ledger", "verify", "--json")
    doc = json.loads(r.stdout)
    validate(doc, "ledger-verify.v1")
    assert doc["redactions"] == {"entries": 2, "redacted": 2, "held": 0, "pending": 0}
    r = g6(world, "blob", "verify", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "blob-verify.v1")
    assert doc["ok"] and doc["redacted"] == 2 and doc["pending"] == [] and not doc["bad"]
    r = g6(world, "blob", "gc", "--dry-run", "--grace", "0", "--json")
    doc = json.loads(r.stdout)
    validate(doc, "blob-gc.v1")
    assert doc["redactions_finished"] == [] and doc["removed"] == []


def test_serve_answers_451_with_the_entry_and_still_serves_the_receipt(world: World) -> None:
    seq = world.entry["entries"][1]["seq"]  # the TimeGate's choice is the newest capture: the re-check's
    entry_id = world.entry["entries"][1]["receipt_id"]
    with served(world.root) as base, httpx.Client(timeout=30) as http:
        gate = http.get(f"{base}web/{world.taken_url}")
        assert gate.status_code == 302
        memento = gate.headers["location"]
        r = http.get(memento, headers={"Accept": "application/json"})
        assert r.status_code == 451
        assert r.headers["link"].endswith(f'<{base}receipt/{entry_id}>; rel="blocked-by"')
        assert f'<{base}receipt/{world.recheck_rid}>; rel="describedby"' in r.headers["link"]
        body = r.json()
        validate(body, "serve-refusal.v1")
        assert body["code"] == "redacted" and body["redaction"]["seq"] == seq
        assert body["see"] == f"{base}receipt/{entry_id}"
        assert body["redaction"]["reason"] == "court-order" and body["redaction"]["note"] == "case 2024-117"
        assert TAKEN not in r.text
        html = http.get(memento)
        assert html.status_code == 451 and "court-order" in html.text and TAKEN not in html.text
        receipt = http.get(f"{base}receipt/{world.taken_rid}")
        assert receipt.status_code == 200 and receipt.json()["receipt_id"] == world.taken_rid
        assert http.get(f"{base}receipt/{entry_id}").json()["kind"] == "redaction"
        capture = http.get(f"{base}api/capture/{world.taken_rid}").json()
        validate(capture, "serve-capture.v1")
        assert capture["text"] is None and capture["redaction"]["seq"] == world.entry["entries"][0]["seq"]
        assert "redacted at seq" in capture["text_status"]
        kept = http.get(http.get(f"{base}web/{world.kept_url}").headers["location"])
        assert kept.status_code == 200 and KEPT in kept.text


def test_recheck_says_redacted_and_never_reads_the_page_again(world: World) -> None:
    asked = len(world.site.requests)
    with EvidenceHome(world.root, fsync=False) as home, \
            CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = recheck(home, client, load_manifest(world.manifest), processes=1)
    doc = report.to_json()
    validate(doc, "recheck-report.v1")
    verdicts = {v.receipt_id or v.source_url: v for v in report.verdicts}
    taken = verdicts[world.taken_url]
    assert taken.verdict == "redacted" and taken.detail["redaction"]["reason"] == "court-order"
    assert "redacted at seq" in taken.detail["reason"]
    assert report.exit_code == 1 and "gone" not in doc["counts"]
    paths = [r.path for r in world.site.requests[asked:]]
    assert "/kept" in paths and "/taken" not in paths  # the taken page was not read again


def test_a_bundle_made_before_still_verifies_offline(world: World) -> None:
    with EvidenceHome(world.root, readonly=True) as home:
        key = home.keys.load_signing().public
    report = verify_bundle(world.before, [key])
    assert report.ok, [c.to_json() for v in report.citations for c in v.checks if not c.ok]


def test_a_bundle_made_after_shows_the_citation_redacted(world: World, tmp_path: Path) -> None:
    with EvidenceHome(world.root, fsync=False) as home:
        build_bundle(home, world.manifest, tmp_path / "after.zip")
        key = home.signing_key().public
    with zipfile.ZipFile(tmp_path / "after.zip") as z:
        names = z.namelist()
    entry_id = world.entry["entries"][0]["receipt_id"]
    assert f"receipts/{entry_id}.json" in names and f"proofs/{entry_id}.tlog-proof" in names
    assert sum(n.startswith("redactions/") for n in names) == 1 and sum(n.startswith("blobs/") for n in names) == 1
    report = verify_bundle(tmp_path / "after.zip", [key])
    doc = report.to_json()
    validate(doc, "bundle-verify.v1")
    assert not report.ok
    taken, kept = report.citations
    assert kept.ok and taken.redaction == {"seq": world.entry["entries"][0]["seq"], "receipt_id": entry_id,
                                           "reason": "court-order", "note": "case 2024-117"}
    bad = {c.check: c.detail for c in taken.checks if not c.ok}
    assert set(bad) == {"redaction", "cited_text"} and bad["redaction"].startswith(
        f"REDACTED at seq {world.entry['entries'][0]['seq']} (court-order)")
    assert all(c.ok for c in taken.checks if c.check in ("receipt_signature", "inclusion", "read"))
    r = g6(world, "bundle", "verify", str(tmp_path / "after.zip"), "--key", key.to_text())
    assert r.returncode == 1 and "REDACTED at seq" in r.stdout and "1 REDACTED" in r.stdout


def test_a_bundle_pointing_at_a_receipt_that_is_no_redaction_says_missing(world: World, tmp_path: Path) -> None:
    with EvidenceHome(world.root, fsync=False) as home:
        build_bundle(home, world.manifest, tmp_path / "after.zip")
        key = home.signing_key().public
    with zipfile.ZipFile(tmp_path / "after.zip") as z:
        files = {n: z.read(n) for n in z.namelist()}
    name = next(n for n in files if n.startswith("redactions/"))
    files[name] = (world.kept_rid + "\n").encode()  # a genuine, signed, included receipt: but no redaction
    index = json.loads(files["bundle.json"])
    index["files"][name] = {"sha256": "sha256:" + hashlib.sha256(files[name]).hexdigest(), "size": len(files[name])}
    files["bundle.json"] = json.dumps(index).encode()
    with zipfile.ZipFile(tmp_path / "forged.zip", "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    taken = verify_bundle(tmp_path / "forged.zip", [key]).citations[0]
    assert taken.redaction is None and not taken.ok
    detail = next(c.detail for c in taken.checks if c.check == "redaction")
    assert "is not a redaction entry naming this body" in detail


def test_warc_export_leaves_the_bytes_out_and_says_why(world: World, tmp_path: Path) -> None:
    with EvidenceHome(world.root, readonly=True) as home:
        summary = export_warc(home, tmp_path / "x.warc.gz", [e.receipt for e in home.ledger.entries()])
    doc = summary.to_json()
    validate(doc, "export-warc.v1")
    assert doc["redacted"] == 2
    with gzip.open(tmp_path / "x.warc.gz", "rb") as f:
        raw = f.read()
    assert TAKEN.encode() not in raw and b"street address" not in raw and KEPT.encode() in raw
    with open(tmp_path / "x.warc.gz", "rb") as f:
        records = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                   for r in ArchiveIterator(f)]
    responses = [uri for kind, uri, _ in records if kind == "response"]
    assert world.kept_url in responses and world.taken_url not in responses
    said = [json.loads(body) for kind, uri, body in records if kind == "resource"]
    assert {s["receipt_id"] for s in said} == {world.taken_rid, world.recheck_rid}
    assert all(s["redaction"]["reason"] == "court-order" and "left out of this export" in s["said"] for s in said)


def test_wacz_export_too(world: World, tmp_path: Path) -> None:
    pytest.importorskip("wacz")
    r = g6(world, "export", "wacz", "-o", str(tmp_path / "x.wacz"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "export-wacz.v1")
    assert doc["warc"]["redacted"] == 2
    with zipfile.ZipFile(tmp_path / "x.wacz") as z:
        warc = gzip.decompress(z.read("archive/data.warc.gz"))
        pages = z.read("pages/pages.jsonl").decode()
    assert TAKEN.encode() not in warc and world.taken_url not in pages and world.kept_url in pages


def test_published_tiles_carry_the_entry_and_the_monitor_lists_it(world: World, tmp_path: Path) -> None:
    with EvidenceHome(world.root, fsync=False) as home:
        publish(home, FolderDestination(tmp_path / "tiles"))
        key, origin = home.signing_key().public, home.ledger.origin
    bundles = b"".join(p.read_bytes() for p in (tmp_path / "tiles" / "tile" / "entries").rglob("*") if p.is_file())
    assert b'"kind":"redaction"' in bundles and b'"reason":"court-order"' in bundles
    with serve_folder(tmp_path / "tiles") as url:
        report = monitor(url, key, tmp_path / "state", origin=origin)
    assert report.ok, report.to_json()
    validate(report.to_json(), "monitor.v1")
    assert [(t["kind"], t["action"], t["reason"], t["seq"]) for t in report.takedowns] == [
        ("redaction", "redact", "court-order", e["seq"]) for e in world.entry["entries"]]



def test_chunk_cite_convert_and_cat_say_redacted(world: World, tmp_path: Path) -> None:
    """Each command that reads a body says the body was redacted (one `g6:` line, exit 1), not that it is gone."""
    with EvidenceHome(world.root, readonly=True) as home:
        digest = home.ledger.get(world.taken_rid).content["sha256"]
    for args in (["chunk", world.taken_rid], ["cite", world.taken_rid, "--quote", TAKEN, "--manifest",
                                               str(tmp_path / "m.json")],
                 ["convert", digest], ["blob", "cat", digest]):
        r = g6(world, *args)
        assert r.returncode == 1 and r.stdout == "", (args, r.stdout)
        assert r.stderr.startswith("g6: blake3:") and "was redacted at seq" in r.stderr and "(court-order)" in \
            r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        r = g6(world, *args, "--json") if args[0] != "blob" else None
        if r is not None:
            assert json.loads(r.stdout)["code"] == "G6_E_STORE_BLOB_REDACTED", (args, r.stdout)
