"""`g6 blob redact|hold|release|expire` and what `blob gc` and `blob verify` do with them, as a user runs them
(a real process, a real home) on both backend pairs: every refusal is one `g6:` line, exit 2, a refusal object
under --json with its code, and nothing appended or removed; a dry run changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from g6.cite.manifest import Citation, Manifest, save_manifest
from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.redactions import BlobNamed, redaction_entry
from g6.schemas import load
from g6.store import BlobRef

Pair = Callable[[str, Path], EvidenceHome]
Made = tuple[Path, list[tuple[str, BlobRef]]]


def g6(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("G6_", "AWS_"))}
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(root), *args], capture_output=True, text=True,
                          env=env, timeout=300)


def read(home: EvidenceHome, i: int, at: str = "2020-05-0{}T00:00:00Z") -> tuple[str, BlobRef]:
    ref = home.store.put(f"page {i}: words someone may want taken down".encode())
    r = home.record(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                            outcome_code="G6_E_KNOWLEDGE_FETCHED", content=ref.to_json(), byte_count=ref.size,
                            fetched_at=at.format(i + 1)))
    return r.receipt_id, ref


@pytest.fixture(params=["sqlite+file", "postgresql+s3"])
def made(request: pytest.FixtureRequest, tmp_path: Path, make_pair_home: Pair) -> Made:
    root = tmp_path / "home"
    with make_pair_home(request.param, root) as home:
        home.keys.init()
        reads = [read(home, i) for i in range(3)]
    return root, reads


def refused(r: subprocess.CompletedProcess[str], code: str) -> None:
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert len([x for x in r.stderr.splitlines() if x.startswith("g6:")]) == 1, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("refusal.v1")).validate(doc)
    assert doc["code"] == code, doc


def rows(root: Path) -> int:
    doc = json.loads(g6(root, "ledger", "verify", "--json").stdout)
    assert doc["ok"], doc
    return int(doc["rows"])


def test_refusals_append_and_remove_nothing(made: Made) -> None:
    root, reads = made
    (rid, ref), (_, other), _ = reads
    refused(g6(root, "blob", "redact", "blake3:" + "0" * 64, "--reason", "x", "--json"), "G6_E_BLOB_UNREFERENCED")
    refused(g6(root, "blob", "redact", "--url", "https://example.org/never", "--reason", "x", "--json"),
            "G6_E_BLOB_UNREFERENCED")
    refused(g6(root, "blob", "redact", "--reason", "x", "--json"), "G6_E_INPUT")
    refused(g6(root, "blob", "release", ref.sha256, "--reason", "x", "--json"), "G6_E_BLOB_NOT_HELD")
    r = g6(root, "blob", "redact", ref.blake3, "--json")  # --reason is required
    assert r.returncode == 2 and "--reason" in r.stderr
    assert rows(root) == 3
    assert g6(root, "blob", "hold", "--receipt", rid, "--reason", "litigation").returncode == 0
    refused(g6(root, "blob", "redact", ref.blake3, other.blake3, "--reason", "x", "--json"), "G6_E_BLOB_ON_HOLD")
    assert g6(root, "blob", "release", "--receipt", rid, "--reason", "settled").returncode == 0
    assert g6(root, "blob", "redact", ref.blake3, "--reason", "court-order").returncode == 0
    refused(g6(root, "blob", "redact", ref.sha256, "--reason", "again", "--json"), "G6_E_BLOB_ALREADY_REDACTED")
    refused(g6(root, "blob", "hold", ref.sha256, "--reason", "late", "--json"), "G6_E_BLOB_ALREADY_REDACTED")
    assert rows(root) == 6
    cat = g6(root, "blob", "cat", ref.sha256)
    assert cat.returncode == 1 and "was redacted at seq 6 (court-order)" in cat.stderr  # never served again
    assert g6(root, "blob", "cat", other.blake3).returncode == 0


def test_dry_runs_change_nothing_and_expire_needs_apply(made: Made, tmp_path: Path) -> None:
    root, reads = made
    (rid, ref), (cited_rid, cited), (_, last) = reads
    r = g6(root, "blob", "redact", ref.blake3, "--reason", "court-order", "--dry-run", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["dry_run"] and json.loads(r.stdout)["entries"] == []
    r = g6(root, "blob", "hold", ref.blake3, "--reason", "litigation", "--dry-run")
    assert r.returncode == 0 and r.stdout == f"would hold {ref.blake3}\n"
    url = "https://example.org/1"
    manifest = Manifest.new().with_citation(Citation("c_0123456789abcdef", "web", cited_rid, url, url,
                                                     cited.to_json(), None, "x", "page 1", 0, 6, "page 1"))
    save_manifest(manifest, tmp_path / "m.json")
    r = g6(root, "blob", "expire", "--older-than", "2020-05-03", "--manifest", str(tmp_path / "m.json"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("blob-expire.v1")).validate(doc)
    assert doc["dry_run"] and [b["blake3"] for b in doc["expiring"]] == [ref.blake3]
    assert doc["skipped"] == {cited.blake3: "cited (--include-cited redacts it too)"} and doc["entries"] == []
    assert rows(root) == 3  # nothing appended by a dry run
    r = g6(root, "blob", "expire", "--older-than", "2020-05-03", "--manifest", str(tmp_path / "m.json"), "--apply",
           "--json")
    doc = json.loads(r.stdout)
    assert not doc["dry_run"] and doc["removed"] == [ref.blake3]
    assert [e["request"]["reason"] for e in doc["entries"]] == ["retention"]
    r = g6(root, "blob", "expire", "--older-than", "2020-05-03", "--include-cited", "--yes", "--json")
    assert json.loads(r.stdout)["removed"] == [cited.blake3]
    assert g6(root, "blob", "cat", last.blake3).returncode == 0  # read after the cut-off: kept
    refused(g6(root, "blob", "expire", "--older-than", "soon", "--json"), "G6_E_INPUT")


def test_gc_finishes_an_interrupted_removal_and_keeps_held_blobs(made: Made) -> None:
    root, reads = made
    (_, a), (_, b), (_, c) = reads
    env_file = root / ".env"
    env = dict(x.split("=", 1) for x in env_file.read_text().splitlines()) if env_file.exists() else {}
    with EvidenceHome(root, fsync=False, ledger_url=env.get("G6_LEDGER_URL"), blob_url=env.get("G6_BLOB_URL"),
                      env=env) as home:  # the entry appended, then a kill before the bytes went
        home.ledger.append(redaction_entry([BlobNamed(a.blake3, a.sha256, a.size)], [], "court-order"),
                           home.signing_key())
    assert g6(root, "blob", "hold", b.blake3, "--reason", "litigation").returncode == 0
    r = g6(root, "blob", "verify", "--json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["pending"] == [a.blake3] and doc["redacted"] == 1
    r = g6(root, "ledger", "verify")
    assert r.returncode == 0 and "1 still in the store (`g6 blob gc` finishes the removal)" in r.stdout
    cat = g6(root, "blob", "cat", a.blake3)  # its bytes are still there, but it is redacted: never served
    assert cat.returncode == 1 and cat.stdout == "" and "was redacted at seq 4" in cat.stderr
    copy = root.parent / "copy"
    r = g6(root, "blob", "copy", "--to", copy.as_uri(), "--json")  # redacted bytes are never copied anywhere
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("blob-copy.v1")).validate(doc)
    assert r.returncode == 0 and doc["copied"] == 2 and doc["skipped"] == 1
    assert not any(p.name.startswith(a.blake3[7:]) for p in (copy / "blake3").rglob("*"))
    r = g6(root, "blob", "gc", "--grace", "0", "--json")
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("blob-gc.v1")).validate(doc)
    assert doc["redactions_finished"] == [a.blake3] and doc["removed"] == []
    assert g6(root, "blob", "cat", b.blake3).returncode == 0 and g6(root, "blob", "cat", c.blake3).returncode == 0
    doc = json.loads(g6(root, "blob", "verify", "--json").stdout)
    assert doc["ok"] and doc["pending"] == [] and doc["redacted"] == 1
    assert json.loads(g6(root, "ledger", "verify", "--json").stdout)["redactions"] == {
        "entries": 1, "redacted": 1, "held": 1, "pending": 0}
