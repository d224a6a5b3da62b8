"""A bundle made after a key rotation, of citations made before it (issue 36, "Keys over time").

The steps of the issue, as a user runs them: fetch, cite, `manifest sign`, `keys rotate`, one more fetch,
`ledger checkpoint`, `g6 bundle`. The bundle then holds with the log key current now alone (the rotation's
handover, signed by the new key, vouches for the old one's rows), with the old key alone (the entry that
added the new key, signed by the old one), and with both, in either order. What no signed entry proves
still fails: a rotation written without a handover, a handover taken out of the bundle, a receipt or a
manifest signed by the old key after it was retired.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import prepare_fetch
from g6.home import EvidenceHome
from g6.ledger import SigningKey
from g6.ledger.note import Checkpoint, parse_note, sign_checkpoint
from g6.ledger.proofs import parse_inclusion
from g6.prove.bundle import PinnedKey, build_bundle, verify_bundle
from tests.test_bundle_trust import failed, repack

Site = Callable[..., LocalSite]
BEFORE = "The first page was read before the key rotation, and cited then."
AFTER = "The second page was read after the rotation, with the new key."


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=120,
                          cwd=home.parent)


def ok(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def pages(site: Site) -> LocalSite:
    return site({"/before": Reply(body=f"<html><body><p>{BEFORE}</p></body></html>".encode()),
                 "/after": Reply(body=f"<html><body><p>{AFTER}</p></body></html>".encode()),
                 "/robots.txt": Reply(404, b"")})


def test_a_bundle_after_a_rotation_holds_with_the_current_key_the_old_key_or_both(site: Site, tmp_path: Path) -> None:
    s = pages(site)
    home = tmp_path / "home"
    rid = json.loads(ok(g6(home, "fetch", s.url("/before"), "--json")))["receipt_id"]
    ok(g6(home, "cite", rid, "--quote", "read before the key rotation", "--manifest", "m.json"))
    shown = json.loads(ok(g6(home, "keys", "show", "--json")))["signing"]
    old, old_id = shown["checkpoint_verifier_key"], shown["key_id"]
    ok(g6(home, "manifest", "sign", "m.json"))
    ok(g6(home, "keys", "rotate"))
    later = json.loads(ok(g6(home, "fetch", s.url("/after"), "--json")))["receipt_id"]
    ok(g6(home, "ledger", "checkpoint"))
    new = json.loads(ok(g6(home, "keys", "show", "--json")))["signing"]["checkpoint_verifier_key"]
    assert new != old
    ok(g6(home, "bundle", "m.json", "-o", "b.zip"))
    for keys in ([new, old], [old, new], [new], [old]):
        r = g6(home, "bundle", "verify", "b.zip", *[a for k in keys for a in ("--key", k)])
        assert r.returncode == 0, (keys == [new], r.stdout)
        assert "holds" in r.stdout.splitlines()[-1]
    alone = ok(g6(home, "bundle", "verify", "b.zip", "--key", new))
    signed_by = next(line for line in alone.splitlines() if line.startswith("manifest_signature"))
    assert f"signed by {old_id} (vouched for by" in signed_by and "its successor (handover at seq 3)" in signed_by
    summary = alone.splitlines()[-1]  # says how the old key is trusted, never that it was pinned
    assert f"manifest signed by {old_id} (vouched for by" in summary and "a pinned key" not in summary, summary
    by_old = ok(g6(home, "bundle", "verify", "b.zip", "--key", old))
    assert "added at seq 2 by" in next(x for x in by_old.splitlines() if x.startswith("checkpoint_signature"))
    # the whole ledger, and each receipt's proof, with the current key alone
    verified = ok(g6(home, "ledger", "verify", "--key", new))
    assert "its successor (handover at seq 3); signs from seq 1, through seq 3" in verified
    for r_id in (rid, later):
        ok(g6(home, "ledger", "prove", r_id, "-o", f"{r_id}.proof"))
        (tmp_path / f"{r_id}.json").write_text(ok(g6(home, "receipt", "show", r_id)))
        for keys in ([new], [old], [old, new]):
            ok(g6(home, "verify-proof", f"{r_id}.proof", "--receipt", str(tmp_path / f"{r_id}.json"),
                  *[a for k in keys for a in ("--key", k)]))


# --- what no signed entry proves still fails ------------------------------------------------------------
def _read(home: EvidenceHome, url: str, key: SigningKey | None = None) -> str:
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        prepared = prepare_fetch(home.store, c, url)
    return home.ledger.append(prepared.receipt, key or home.signing_key()).receipt_id


@pytest.fixture
def rotated(site: Site, tmp_path: Path) -> dict[str, Any]:
    s = pages(site)
    home = EvidenceHome(tmp_path / "h", fsync=False)
    old = home.keys.init()
    rid = _read(home, s.url("/before"))
    m = Manifest.new().with_citation(cite_web(home, rid, quote="read before the key rotation"))
    save_manifest(m.signed(old), tmp_path / "m.json")
    yield {"home": home, "old": old, "rid": rid, "site": s, "tmp": tmp_path, "manifest": m}
    home.close()


def test_a_rotation_without_a_handover_needs_both_keys(rotated: dict[str, Any]) -> None:
    """A rotation recorded before handovers existed (a plain retire entry): the new key vouches for nothing,
    so the old key's receipts hold only when the grader pins it too."""
    home, old, tmp = rotated["home"], rotated["old"], rotated["tmp"]
    new = SigningKey.generate()
    home.ledger.add_key(new.public, old, "rotation")
    home.keys.init(force=True, key=new)
    home._key = new
    home.ledger.retire_key(old.public, new, "rotation")  # no handover
    _read(home, rotated["site"].url("/after"))
    build_bundle(home, tmp / "m.json", tmp / "b.zip")
    alone = verify_bundle(tmp / "b.zip", [new.public])
    assert not alone.ok
    assert "unknown key " + old.key_id in failed(alone)["receipt_signature"]
    assert "unknown key " + old.key_id in failed(alone)["manifest_signature"]
    assert verify_bundle(tmp / "b.zip", [new.public, old.public]).ok
    assert not home.ledger.verify({new.key_id: new.public}, home.store).ok
    assert home.ledger.verify({new.key_id: new.public, old.key_id: old.public}, home.store).ok


def test_the_handover_taken_out_of_the_bundle_leaves_the_old_key_unknown(rotated: dict[str, Any]) -> None:
    home, old, tmp = rotated["home"], rotated["old"], rotated["tmp"]
    new, _ = home.rotate_key()
    _read(home, rotated["site"].url("/after"))
    build_bundle(home, tmp / "m.json", tmp / "b.zip")
    assert verify_bundle(tmp / "b.zip", [new.public]).ok
    name = f"proofs/{rotated['rid']}.tlog-proof"

    def strip(files: dict[str, bytes]) -> None:
        proof = parse_inclusion(files[name])
        files[name] = replace(proof, extra=rotated["rid"].encode()).text().encode()

    bare = verify_bundle(repack(tmp / "b.zip", tmp / "bare.zip", strip), [new.public])
    assert not bare.ok
    assert "unknown key " + old.key_id in failed(bare)["receipt_signature"]
    assert "unknown key " + old.key_id in failed(bare)["manifest_signature"]


def test_the_old_key_signs_nothing_after_its_handover(rotated: dict[str, Any]) -> None:
    """Whoever still holds the old key after the rotation: a receipt it signs in the log later fails, and
    so does a manifest it signs that cites a receipt made after its retirement."""
    home, old, tmp, s = rotated["home"], rotated["old"], rotated["tmp"], rotated["site"]
    new, _ = home.rotate_key()
    later = _read(home, s.url("/after"))
    # the operator writes a row with the old key behind the ledger's back (the append refuses it)
    from tests.ledger.test_key_holder import append_raw

    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        prepared = prepare_fetch(home.store, c, s.url("/before"))
    seq = len(home.ledger) + 1
    stale = replace(prepared.receipt, log={"origin": home.ledger.origin, "seq": seq}).signed(old)
    append_raw(home.ledger, stale.canonical_bytes(with_signature=True).decode(), stale.receipt_id)
    report = home.ledger.verify({new.key_id: new.public}, home.store)
    assert [c.seq for c in report.failures("signature")] == [seq]
    assert "after it was retired (at seq 3" in report.failures("signature")[0].detail
    m = rotated["manifest"].with_citation(cite_web(home, stale.receipt_id, quote="read before the key rotation"))
    save_manifest(m.signed(new), tmp / "stale.json")
    build_bundle(home, tmp / "stale.json", tmp / "stale.zip")
    v = verify_bundle(tmp / "stale.zip", [new.public])
    bad = [c for c in v.citations if not c.ok]
    assert len(bad) == 1 and "after it was retired (at seq 3" in failed(v)["receipt_signature"]
    # the old key signs the bundle's checkpoint after its handover: not valid at that size, pinned or vouched for
    def resign(files: dict[str, bytes]) -> None:
        cp = Checkpoint.parse(parse_note(files["checkpoint.note"].decode())[0])
        files["checkpoint.note"] = sign_checkpoint(cp, old).encode()

    resigned = repack(tmp / "stale.zip", tmp / "resigned.zip", resign)
    for keys in ([new.public], [old.public]):
        r = verify_bundle(resigned, keys)
        assert not r.ok
        assert f"not valid at size 5 (retired, or not yet added, there): signed by {old.key_id} (" in \
            failed(r)["checkpoint_signature"]
    # a manifest the old key signs after its retirement, citing what was read after it
    m = rotated["manifest"].with_citation(cite_web(home, later, quote="read after the rotation"))
    save_manifest(m.signed(old), tmp / "late.json")
    build_bundle(home, tmp / "late.json", tmp / "late.zip")
    for keys in ([new.public], [PinnedKey(old.public), PinnedKey(new.public)]):
        late = verify_bundle(tmp / "late.zip", keys)
        assert not late.ok and late.manifest_id is None
        assert f"retired at seq 3, yet it cites {later} (seq 4)" in failed(late)["manifest_signature"]


def test_two_rotations_the_current_key_vouches_back_to_the_first(rotated: dict[str, Any]) -> None:
    home, first, tmp = rotated["home"], rotated["old"], rotated["tmp"]
    second, _ = home.rotate_key()
    _read(home, rotated["site"].url("/after"))
    third, _ = home.rotate_key()
    build_bundle(home, tmp / "m.json", tmp / "b.zip")
    report = verify_bundle(tmp / "b.zip", [third.public])
    assert report.ok, failed(report)
    lives = {k["key_id"]: k for k in home.ledger.verify({third.key_id: third.public}, home.store).keys}
    assert lives[first.key_id]["valid_to"] == 3 and lives[first.key_id]["valid_from"] == 1
    assert (lives[second.key_id]["valid_from"], lives[second.key_id]["valid_to"]) == (3, 6)


def test_a_bundle_after_a_rotation_checks_a_checkpoint_the_grader_kept_before_it(rotated: dict[str, Any]) -> None:
    """The grader kept a checkpoint signed by the old key; after the rotation, with the new key pinned, the
    bundle's consistency proof from it holds: the old key is vouched for at that size."""
    home, tmp = rotated["home"], rotated["tmp"]
    _, kept = home.ledger.checkpoint(rotated["old"])
    new, _ = home.rotate_key()
    _read(home, rotated["site"].url("/after"))
    build_bundle(home, tmp / "m.json", tmp / "b.zip", kept=[("kept", kept)])
    with zipfile.ZipFile(tmp / "b.zip") as z:
        assert "proofs/consistency/1-4.tlog-consistency" in z.namelist()
    report = verify_bundle(tmp / "b.zip", [new.public], kept=[("kept", kept)])
    assert report.ok, failed(report)
    assert any(c.check == "kept_checkpoint" and c.ok and "consistent" in c.detail for c in report.bundle_checks)
