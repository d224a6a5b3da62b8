"""A quiet log checkpointed again and again, as a cron job does: three real litewitness instances
(tests/peers/litewitness.py) cosign the same checkpoint every round, each time with a new timestamp.

At most one cosignature per witness key is kept beside a checkpoint and shown on its note (the newest that
holds), so after 100 rounds the note still carries one line per witness, Go's ``note.Open`` (torchwood's
cosigcheck) opens it, and ``ledger prove``, ``g6 bundle``, ``ledger verify --policy``, ``verify-proof
--policy`` and ``bundle verify --policy`` all hold. A home the old code wrote, with every cosignature any
witness ever returned kept beside the checkpoint, heals: the notes g6 emits from it carry one line per key,
and the next submission keeps only the newest.

**What the rounds cost.** A witness dates its cosignature to the second, and a cosignature of the same
checkpoint within the same second is byte for byte the one before (Ed25519 is deterministic), so only
rounds a second apart pile up. The first ``PACED`` rounds each wait until the clock has passed the
witnesses' last timestamp (a condition, not a sleep: each of their answers is new); 34 is the fewest after
which the old code's note passed 100 signature lines (3 x 34 + the log's) and `ledger checkpoint --policy`
exited 1. The other rounds follow at once. A round is what the command does (``witness_checkpoint``); the
first, the 34th and the last run the command itself, as a cron job would. Measured on the 2-core machine
shared with other jobs (2026-12-06, load average 6): 44 s for the 100 rounds and the commands after them,
13 s for the home that heals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.note import Checkpoint, parse_note
from g6.ledger.transparency.cosignature import sign_cosignature
from g6.ledger.transparency.policy import read_policy
from g6.prove.proofs import checkpoint, note_verifier_key
from g6.prove.witness import COSIGNATURE, witness_checkpoint
from tests.conftest import validate
from tests.peers.go_tools import go_tool
from tests.peers.litewitness import Litewitness, started_litewitness

ROUNDS = 100
PACED = 34
TEXT = "A sentence on a quiet day: the log is checkpointed again with nothing new in it."
Site = Callable[..., LocalSite]


@pytest.fixture(scope="module")
def witnesses(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Litewitness]]:
    d = tmp_path_factory.mktemp("three")
    with started_litewitness(d / "1", "example.com/w1") as a, started_litewitness(d / "2", "example.org/w2") as b, \
            started_litewitness(d / "3", "example.net/w3") as c:
        yield [a, b, c]


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home)
    r = subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=env, timeout=120, text=True)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def note_open(note: str, lw: Litewitness) -> str:
    """Go's note.Open and torchwood's cosignature/v1 check, by one witness's key: what it printed."""
    r = subprocess.run([str(go_tool("cosigcheck")), "-vkey", lw.vkey], input=note.encode(), capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def signature_lines(note: str) -> list[str]:
    return note.split("\n\n", 1)[1].splitlines()


@pytest.fixture
def cited(home: EvidenceHome, site: Site, witnesses: list[Litewitness], tmp_path: Path) -> dict[str, object]:
    """A home with one page read and cited (its manifest signed), known to the three witnesses, and a
    policy that needs all three."""
    s = site({"/a": Reply(body=f"<html><body><p>{TEXT}</p></body></html>".encode()), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/a"))
    m = Manifest.new().with_citation(cite_web(home, r.receipt_id, quote="checkpointed again with nothing new"))
    save_manifest(m.signed(home.signing_key()), tmp_path / "m.json")
    for lw in witnesses:
        lw.register(home)
    log_vkey = note_verifier_key(home)
    policy = tmp_path / "three.policy"
    policy.write_text(f"log {log_vkey}\n" + "".join(f"witness w{i} {lw.vkey} {lw.url}\n"
                                                    for i, lw in enumerate(witnesses, 1))
                      + "group all3 all w1 w2 w3\nquorum all3\n")
    return {"rid": r.receipt_id, "manifest": tmp_path / "m.json", "policy": policy, "log_vkey": log_vkey}


def _after_the_rounds(home: EvidenceHome, cited: dict[str, object], witnesses: list[Litewitness],
                      tmp_path: Path) -> None:
    """prove, bundle and the three verifies hold, and each note g6 wrote opens with Go's note.Open."""
    policy, log_vkey, rid = str(cited["policy"]), str(cited["log_vkey"]), str(cited["rid"])
    r = g6(home.root, "ledger", "verify", "--policy", policy, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    validate(out, "ledger-verify.v1")
    assert out["checks"]["witnesses"]["ok"] and out["checks"]["witnesses"]["failed"] == 0

    proof = tmp_path / "proof"
    r = g6(home.root, "ledger", "prove", rid, "-o", str(proof))
    assert r.returncode == 0, r.stderr
    receipt = tmp_path / "r.json"
    receipt.write_text(g6(home.root, "receipt", "show", rid).stdout)
    r = g6(home.root, "verify-proof", str(proof), "--receipt", str(receipt), "--key", log_vkey, "--policy", policy)
    assert r.returncode == 0, r.stdout + r.stderr
    r = g6(home.root, "verify-proof", str(proof), "--receipt", str(receipt), "--key", log_vkey)
    assert r.returncode == 0, r.stdout + r.stderr

    z = tmp_path / "b.zip"
    r = g6(home.root, "bundle", str(cited["manifest"]), "-o", str(z))
    assert r.returncode == 0, r.stderr
    for extra in ([], ["--policy", policy]):
        r = g6(home.root, "bundle", "verify", str(z), "--key", log_vkey, *extra)
        assert r.returncode == 0, r.stdout + r.stderr

    import zipfile

    with zipfile.ZipFile(z) as zf:
        bundled = zf.read("checkpoint.note").decode()
    proof_note = proof.read_text().split("\n\n", 1)[1]  # the proof's checkpoint note follows its header
    for note in (bundled, proof_note):
        sigs = signature_lines(note)
        assert len(sigs) == 4, note  # the log's own signature and one line per witness
        for lw in witnesses:
            (said,) = note_open(note, lw).splitlines()
            assert said.startswith(f"ok {lw.name} ")


def _round_by_command(home: EvidenceHome, policy: str) -> tuple[str, list[dict[str, object]]]:
    r = g6(home.root, "ledger", "checkpoint", "--policy", policy, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    assert out["witnesses"]["ok"] and out["witnesses"]["quorum"]["signed"] == ["w1", "w2", "w3"]
    return out["cosigned_note"], out["witnesses"]["submissions"]


def _round_by_library(home: EvidenceHome, policy: str) -> tuple[str, list[dict[str, object]]]:
    cp, note = checkpoint(home)
    report = witness_checkpoint(home, cp, note, read_policy(Path(policy)))
    assert report.ok, report.to_json()
    return report.cosigned_note, report.to_json()["submissions"]


def test_100_quiet_rounds_with_three_witnesses_then_prove_bundle_and_both_verifies(
        home: EvidenceHome, cited: dict[str, object], witnesses: list[Litewitness], tmp_path: Path) -> None:
    """Each round is what `g6 ledger checkpoint --policy` does; the first, the PACED-th (where the old code's
    note first passed 100 lines and the command exited 1) and the last run the command itself."""
    policy = str(cited["policy"])
    last = 0
    notes = []
    for n in range(ROUNDS):
        if n < PACED:
            while time.time() < last + 1:  # each witness answers with a new timestamp this round
                time.sleep(0.05)
        by_command = n in (0, PACED - 1, ROUNDS - 1)
        note, subs = (_round_by_command if by_command else _round_by_library)(home, policy)
        assert [s["ok"] for s in subs] == [True] * 3, (n, subs)
        assert all(s["old"] == (0 if n == 0 else 1) and not s["retried"] for s in subs), (n, subs)
        last = max(int(str(s["timestamp"])) for s in subs)
        # the log's signature, then one line per witness: the one it returned this round
        sigs = signature_lines(note)
        assert len(sigs) == 4 and sorted(sigs[1:]) == sorted(str(s["cosignature"]) for s in subs), (n, note)
        notes.append(note)
    assert len(set(notes[:PACED])) == PACED  # every paced round's cosignatures were new ones
    cp = Checkpoint.parse(parse_note(notes[-1])[0])
    kept = home.ledger.kept_beside(cp, COSIGNATURE)
    assert sorted(n for _, n, _ in kept) == sorted(lw.name for lw in witnesses)  # one kept per witness key
    for lw in witnesses:
        (said,) = note_open(notes[-1], lw).splitlines()
        assert said.startswith(f"ok {lw.name} ")
    _after_the_rounds(home, cited, witnesses, tmp_path)


def test_a_home_with_piled_up_cosignatures_heals(home: EvidenceHome, cited: dict[str, object],
                                                 witnesses: list[Litewitness], tmp_path: Path) -> None:
    """What the old code left behind: every cosignature each witness ever gave for the checkpoint (here 40
    each, signed with the witnesses' own keys at 40 earlier seconds, as they would have answered then).
    What g6 emits from that home carries one line per key; the next submission keeps only the newest."""
    cp, note = checkpoint(home)
    report = witness_checkpoint(home, cp, note, None, [lw.witness(f"w{i}") for i, lw in enumerate(witnesses, 1)])
    assert report.ok
    now = int(time.time())
    for lw in witnesses:
        key = lw.signing_key()
        for back in range(1, 41):
            home.ledger.keep_beside(cp, COSIGNATURE, lw.name, sign_cosignature(cp.text(), lw.name, key, now - back))
    assert len(home.ledger.kept_beside(cp, COSIGNATURE)) >= 3 * 40  # as the old code kept them
    _after_the_rounds(home, cited, witnesses, tmp_path)  # read and emitted: one line per key
    r = g6(home.root, "ledger", "checkpoint", "--policy", str(cited["policy"]), "--json")
    assert r.returncode == 0, r.stderr
    assert len(signature_lines(json.loads(r.stdout)["cosigned_note"])) == 4
    assert len(home.ledger.kept_beside(cp, COSIGNATURE)) == 3  # the store healed on the next submission
    _after_the_rounds(home, cited, witnesses, tmp_path)
