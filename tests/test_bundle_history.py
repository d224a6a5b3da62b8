"""One history per bundle, and a bundle checked against checkpoints a grader kept.

A log that signs two histories (same origin and key, two roots at one size) must never have a bundle
"hold" across them: every inclusion proof is against the bundle's own checkpoint or provably consistent
with it, by a consistency proof that travels in the bundle; a checkpoint the grader kept must be the
bundle's or consistent with it; and a fork is named as Go's sumdb client names it, with both notes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.keys import SigningKey
from g6.ledger.note import Checkpoint, sign_checkpoint, verifier_key
from g6.prove.bundle import build_bundle, verify_bundle
from g6.prove.proofs import checkpoint, prove
from g6.prove.verify_since import record_verified
from tests.conftest import validate
from tests.test_bundle_trust import failed

Site = Callable[..., LocalSite]
MISBEHAVIOR = "misbehavior detected: the log shows two histories"
PAGES = {"/a": "The first page says one thing worth citing.", "/b": "The second page says another thing.",
         "/c": "A third page that only the forked history read.", "/d": "A fourth page read later on."}


def read(ev: EvidenceHome, url: str) -> str:
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(ev, c, url)
    assert r.outcome.value == "ok", r
    return r.receipt_id


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def hist(site: Site, tmp_path: Path) -> dict[str, Any]:
    """A home that read /a (checkpoint of size 1 kept aside), then /b; a copy of it (same key, same
    log id) that read /c instead: two histories of one log, both of size 2, both signed by its key."""
    s = site({**{p: Reply(body=f"<html><body><p>{t}</p></body></html>".encode()) for p, t in PAGES.items()},
              "/robots.txt": Reply(404, b"")})
    root, fork_root = tmp_path / "home", tmp_path / "fork"
    ev = EvidenceHome(root, fsync=False)
    ev.keys.init()
    ra = read(ev, s.url("/a"))
    _, kept1 = checkpoint(ev)
    old_proof_a, _ = prove(ev, ra)  # against the checkpoint of size 1
    ev.close()
    shutil.copytree(root, fork_root)
    ev = EvidenceHome(root, fsync=False)
    rb = read(ev, s.url("/b"))
    fork = EvidenceHome(fork_root, fsync=False)
    read(fork, s.url("/c"))
    _, fork2 = checkpoint(fork)
    fork_proof_a, _ = prove(fork, ra)  # against the forked checkpoint of size 2
    m = Manifest.new().with_citation(cite_web(ev, ra, quote="one thing worth citing"))
    m = m.with_citation(cite_web(ev, rb, quote="says another thing")).signed(ev.signing_key())
    save_manifest(m, tmp_path / "m.json")
    build_bundle(ev, tmp_path / "m.json", tmp_path / "b.zip")  # signs the checkpoint of size 2
    notes = {"kept1": kept1, "fork2": fork2}
    for name, note in notes.items():
        (tmp_path / f"{name}.note").write_text(note)
    out = {"ev": ev, "fork": fork, "site": s, "ra": ra, "rb": rb, "zip": tmp_path / "b.zip", "tmp": tmp_path,
           "key": ev.signing_key().public, "vkey": verifier_key(ev.ledger.origin, ev.signing_key().public),
           "old_proof_a": old_proof_a.text(), "fork_proof_a": fork_proof_a.text(), "notes": notes,
           "kept1": tmp_path / "kept1.note", "fork2": tmp_path / "fork2.note"}
    yield out
    fork.close()
    ev.close()


def repack(src: Path, dst: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """Change the members and declare them in bundle.json as the publisher would (same manifest id and
    origin), so what catches the change is the check under test, not the index."""
    with zipfile.ZipFile(src) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    index = json.loads(files.pop("bundle.json"))
    change(files)
    index["files"] = {n: {"sha256": "sha256:" + hashlib.sha256(d).hexdigest(), "size": len(d)}
                      for n, d in sorted(files.items())}
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("bundle.json", json.dumps(index))
        for name, data in files.items():
            z.writestr(name, data)
    return dst


def names(zpath: Path) -> set[str]:
    with zipfile.ZipFile(zpath) as z:
        return set(z.namelist())


def check_of(report: Any, name: str) -> Any:
    found = [c for c in report.bundle_checks if c.check == name]
    assert found, [c.check for c in report.bundle_checks]
    return found[0]


# -- 1. one history per bundle ---------------------------------------------------------------------------
def test_an_honest_bundle_carries_consistency_from_each_checkpoint_the_log_issued(hist: dict[str, Any]) -> None:
    assert "proofs/consistency/1-2.tlog-consistency" in names(hist["zip"])
    index = json.loads(zipfile.ZipFile(hist["zip"]).read("bundle.json"))
    assert "proofs/consistency/1-2.tlog-consistency" in index["files"]
    report = verify_bundle(hist["zip"], (hist["key"],))
    assert report.ok, failed(report)
    history = check_of(report, "history")
    assert history.ok and "size 2" in history.detail and "1" in history.detail
    assert report.to_json()["misbehavior"] is False
    validate(report.to_json(), "bundle-verify.v1")


def test_a_proof_against_a_checkpoint_of_another_history_fails(hist: dict[str, Any]) -> None:
    """The fork's checkpoint is signed by the log's own key, and the receipt really is in it: the proof
    verifies on its own. It is still against another history than the bundle's checkpoint."""
    ra = hist["ra"]
    forked = repack(hist["zip"], hist["tmp"] / "mixed.zip",
                    lambda f: f.__setitem__(f"proofs/{ra}.tlog-proof", hist["fork_proof_a"].encode()))
    report = verify_bundle(forked, (hist["key"],))
    assert not report.ok
    bad = failed(report)
    assert f"proofs/{ra}.tlog-proof" in bad["inclusion"] and "size 2" in bad["inclusion"]
    assert MISBEHAVIOR in bad["history"]
    j = report.to_json()
    assert j["misbehavior"] is True
    notes = {c["note"] for f in j["forks"] for c in f["checkpoints"]}
    assert hist["notes"]["fork2"] in notes and zipfile.ZipFile(hist["zip"]).read("checkpoint.note").decode() in notes
    validate(j, "bundle-verify.v1")
    # the holding citation is still shown; the forked one by its position only
    held = [v for v in report.citations if v.ok]
    assert [v.receipt_id for v in held] == [hist["rb"]]


def test_a_proof_against_an_older_checkpoint_needs_a_consistency_proof(hist: dict[str, Any]) -> None:
    ra, tmp = hist["ra"], hist["tmp"]

    def older(f: dict[str, bytes]) -> None:
        f[f"proofs/{ra}.tlog-proof"] = hist["old_proof_a"].encode()
    with_link = repack(hist["zip"], tmp / "older.zip", older)
    report = verify_bundle(with_link, (hist["key"],))
    assert report.ok, failed(report)
    assert "1-2" in check_of(report, "history").detail

    def older_alone(f: dict[str, bytes]) -> None:
        older(f)
        del f["proofs/consistency/1-2.tlog-consistency"]
    report = verify_bundle(repack(hist["zip"], tmp / "older-alone.zip", older_alone), (hist["key"],))
    bad = failed(report)
    assert not report.ok and f"proofs/{ra}.tlog-proof" in bad["inclusion"]
    assert "no consistency proof" in bad["inclusion"] and "size 1" in bad["inclusion"]
    assert report.to_json()["misbehavior"] is False


@pytest.mark.parametrize("edit", ["flip", "other_sizes", "header", "not_the_bundles"])
def test_a_consistency_proof_that_does_not_hold_fails_the_bundle(hist: dict[str, Any], edit: str) -> None:
    name = "proofs/consistency/1-2.tlog-consistency"

    def change(f: dict[str, bytes]) -> None:
        text = f[name].decode()
        if edit == "flip":  # the first path hash, one bit off
            lines = text.split("\n")
            h = bytearray(base64.b64decode(lines[3]))
            h[0] ^= 1
            lines[3] = base64.b64encode(bytes(h)).decode()
            f[name] = "\n".join(lines).encode()
        elif edit == "other_sizes":  # carried under a name that does not involve the bundle's checkpoint
            f["proofs/consistency/1-3.tlog-consistency"] = f.pop(name)
        elif edit == "header":
            f[name] = text.replace("old 1\n", "old 2\n", 1).encode()
        else:  # the newer note is the fork's, not the bundle's checkpoint
            f[name] = (text.split("---\n")[0] + "---\n" + hist["notes"]["fork2"]).encode()
    report = verify_bundle(repack(hist["zip"], hist["tmp"] / f"{edit}.zip", change), (hist["key"],))
    assert not report.ok
    assert not check_of(report, "history").ok
    if edit in ("flip", "not_the_bundles"):
        assert MISBEHAVIOR in check_of(report, "history").detail and report.to_json()["misbehavior"] is True


# -- 2. checkpoints the grader kept ------------------------------------------------------------------------
def test_a_kept_older_checkpoint_is_checked_offline(hist: dict[str, Any]) -> None:
    r = g6(hist["tmp"], "bundle", "verify", str(hist["zip"]), "--key", hist["vkey"], "--checkpoint",
           str(hist["kept1"]))
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("kept_checkpoint"))
    assert "ok" in line and str(hist["kept1"]) in line and "size 1 -> 2: consistent" in line
    report = verify_bundle(hist["zip"], (hist["key"],), kept=[("kept1", hist["notes"]["kept1"])])
    assert report.ok and check_of(report, "kept_checkpoint").ok


def test_a_kept_checkpoint_of_another_history_is_misbehavior(hist: dict[str, Any]) -> None:
    r = g6(hist["tmp"], "bundle", "verify", str(hist["zip"]), "--key", hist["vkey"], "--checkpoint",
           str(hist["fork2"]))
    assert r.returncode == 1, r.stdout + r.stderr
    assert MISBEHAVIOR in r.stdout
    bundle_note = zipfile.ZipFile(hist["zip"]).read("checkpoint.note").decode()
    for note in (bundle_note, hist["notes"]["fork2"]):  # both notes, each line of each
        for line in note.splitlines():
            assert line in r.stdout
    assert r.stdout.splitlines()[-1].startswith("bundle FAILED") and MISBEHAVIOR in r.stdout.splitlines()[-1]
    j = g6(hist["tmp"], "bundle", "verify", str(hist["zip"]), "--key", hist["vkey"], "--checkpoint",
           str(hist["fork2"]), "--json")
    assert j.returncode == 1
    data = json.loads(j.stdout)
    validate(data, "bundle-verify.v1")
    assert data["misbehavior"] is True
    assert {c["note"] for c in data["forks"][0]["checkpoints"]} == {bundle_note, hist["notes"]["fork2"]}
    assert {c["label"] for c in data["forks"][0]["checkpoints"]} == {"checkpoint.note", str(hist["fork2"])}


def test_a_kept_fork_older_than_the_bundle_is_caught_by_the_carried_checkpoint(hist: dict[str, Any]) -> None:
    """The log read /d after its checkpoint of size 2; the grader kept the fork's size-2 checkpoint. The
    bundle carries the log's own size-2 note (in the consistency proof 2-3): two roots at size 2."""
    ev, tmp = hist["ev"], hist["tmp"]
    rd = read(ev, hist["site"].url("/d"))
    m = Manifest.new().with_citation(cite_web(ev, rd, quote="read later on")).signed(ev.signing_key())
    save_manifest(m, tmp / "m3.json")
    build_bundle(ev, tmp / "m3.json", tmp / "b3.zip")
    assert "proofs/consistency/2-3.tlog-consistency" in names(tmp / "b3.zip")
    report = verify_bundle(tmp / "b3.zip", (hist["key"],), kept=[("fork2", hist["notes"]["fork2"])])
    assert not report.ok and MISBEHAVIOR in check_of(report, "kept_checkpoint").detail
    assert report.to_json()["misbehavior"] is True
    # bundling for a grader who kept the fork's checkpoint refuses: the ledger's tree at 2 is not its root
    r = g6(ev.root, "bundle", str(tmp / "m3.json"), "-o", str(tmp / "never.zip"), "--checkpoint", str(hist["fork2"]))
    assert r.returncode == 1 and MISBEHAVIOR in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    assert not (tmp / "never.zip").exists()


def test_a_kept_checkpoint_newer_than_the_bundle(hist: dict[str, Any]) -> None:
    """Newer than the bundle's checkpoint: without a consistency proof from the bundle's size to the kept
    one it cannot be checked offline (fail closed); bundled with --checkpoint it is carried and checked."""
    ev, tmp = hist["ev"], hist["tmp"]
    read(ev, hist["site"].url("/d"))
    newer = record_verified(ev, 3)  # a signed checkpoint of size 3 the ledger's table does not hold
    assert newer is not None
    r = g6(tmp, "bundle", "verify", str(hist["zip"]), "--key", hist["vkey"], "--checkpoint", str(newer))
    assert r.returncode == 1 and "cannot be checked offline" in r.stdout, r.stdout
    assert MISBEHAVIOR not in r.stdout
    b = g6(ev.root, "bundle", str(tmp / "m.json"), "-o", str(tmp / "for-newer.zip"), "--checkpoint", str(newer))
    assert b.returncode == 0, b.stderr
    assert "proofs/consistency/2-3.tlog-consistency" in names(tmp / "for-newer.zip")
    r = g6(tmp, "bundle", "verify", str(tmp / "for-newer.zip"), "--key", hist["vkey"], "--checkpoint", str(newer))
    assert r.returncode == 0, r.stdout
    assert "size 2 -> 3: consistent" in r.stdout


def test_kept_checkpoint_bad_inputs(hist: dict[str, Any]) -> None:
    tmp, z, vkey = hist["tmp"], str(hist["zip"]), hist["vkey"]
    missing = g6(tmp, "bundle", "verify", z, "--key", vkey, "--checkpoint", str(tmp / "nothing.note"))
    assert missing.returncode == 2 and missing.stderr.startswith("g6: ") and len(missing.stderr.splitlines()) == 1
    folder = g6(tmp, "bundle", "verify", z, "--key", vkey, "--checkpoint", str(tmp))
    assert folder.returncode == 2 and len(folder.stderr.splitlines()) == 1 and "Traceback" not in folder.stderr
    (tmp / "junk.note").write_bytes(b"\xff\x00 not a note")
    junk = g6(tmp, "bundle", "verify", z, "--key", vkey, "--checkpoint", str(tmp / "junk.note"))
    assert junk.returncode == 1 and "kept_checkpoint        FAILED" in junk.stdout and "Traceback" not in junk.stderr
    other = SigningKey.generate()
    cp = Checkpoint(hist["ev"].ledger.origin, 2, hist["ev"].ledger.tree().root(2))
    (tmp / "other.note").write_text(sign_checkpoint(cp, other))
    foreign = g6(tmp, "bundle", "verify", z, "--key", vkey, "--checkpoint", str(tmp / "other.note"))
    assert foreign.returncode == 1 and "not signed by" in foreign.stdout
    assert MISBEHAVIOR not in foreign.stdout
    # bundling: a file that is not a checkpoint of this log is an input error
    nb = g6(hist["ev"].root, "bundle", str(tmp / "m.json"), "-o", str(tmp / "x.zip"), "--checkpoint",
            str(tmp / "other.note"))
    assert nb.returncode == 2 and len(nb.stderr.splitlines()) == 1 and not (tmp / "x.zip").exists(), nb.stderr
    nb = g6(hist["ev"].root, "bundle", str(tmp / "m.json"), "-o", str(tmp / "x.zip"), "--checkpoint",
            str(tmp / "nothing.note"))
    assert nb.returncode == 2 and len(nb.stderr.splitlines()) == 1, nb.stderr


def test_consistency_members_are_read_as_hostile_as_any(hist: dict[str, Any]) -> None:
    """The bundle's zip rules hold for the new members: a name outside the layout (leading zero, another
    folder) fails the index and is never opened; one declared past the record limit is never inflated."""
    name = "proofs/consistency/1-2.tlog-consistency"
    for bad in ("proofs/consistency/01-2.tlog-consistency", "proofs/consistency/1-2.tlog-proof",
                "proofs/consistency/../1-2.tlog-consistency"):
        def rename(f: dict[str, bytes], bad: str = bad) -> None:
            f[bad] = f.pop(name)
        report = verify_bundle(repack(hist["zip"], hist["tmp"] / "renamed.zip", rename), (hist["key"],))
        assert not report.ok and not check_of(report, "index").ok, bad
    big = repack(hist["zip"], hist["tmp"] / "big.zip",
                 lambda f: f.__setitem__(name, f[name] + b"\n" * (2 << 20)))
    report = verify_bundle(big, (hist["key"],))
    assert not report.ok and "over the" in check_of(report, "history").detail
    assert report.inflated_bytes < 1 << 20


def test_the_html_report_shows_both_notes_of_a_fork(hist: dict[str, Any]) -> None:
    import lxml.html

    from g6.export.html_report import render_bundle

    report = verify_bundle(hist["zip"], (hist["key"],), kept=[("fork2.note", hist["notes"]["fork2"])])
    page = render_bundle(report.to_json())
    doc = lxml.html.fromstring(page)
    section = doc.get_element_by_id("misbehavior")
    text = section.text_content()
    assert "the log shows two histories" in text
    for note in (hist["notes"]["fork2"], zipfile.ZipFile(hist["zip"]).read("checkpoint.note").decode()):
        assert note.splitlines()[2] in text  # each root


def test_every_kept_checkpoint_gets_a_verdict_even_when_the_bundle_is_unreadable(hist: dict[str, Any]) -> None:
    (hist["tmp"] / "not.zip").write_bytes(b"not a zip at all")
    report = verify_bundle(hist["tmp"] / "not.zip", (hist["key"],), kept=[("kept1", hist["notes"]["kept1"])])
    assert not report.ok and not check_of(report, "kept_checkpoint").ok
    no_index = repack(hist["zip"], hist["tmp"] / "no-manifest.zip", lambda f: f.pop("manifest.json"))
    report = verify_bundle(no_index, (hist["key"],), kept=[("kept1", hist["notes"]["kept1"])])
    assert not report.ok and check_of(report, "kept_checkpoint").ok  # the checkpoint itself was readable
