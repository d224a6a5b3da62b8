"""Witnessing against a real third-party witness: litewitness (filippo.io/torchwood v0.6.1), its key in an
ssh-agent this module starts, on 127.0.0.1 at a port the kernel picked, stopped by PID at the end.

Refusals first: an unknown origin, a forked checkpoint (same size, another root; a bigger inconsistent tree),
then what holds: the first submission (old 0), a stale size (409, then the retry), and the cosignatures it
returns checked by g6 and by torchwood's own verifier (tests/peers/cosigcheck). Then the commands: quorums
1-of-1 and 2-of-2, a tampered cosignature in a proof. No tool is skipped: a missing one fails the test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from g6.errors import WitnessInconsistent, WitnessUnknownLog
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from g6.ledger.transparency.cosignature import check_cosignatures, sign_cosignature
from g6.ledger.transparency.policy import PolicyWitness
from g6.prove.proofs import checkpoint, note_verifier_key
from g6.prove.witness import COSIGNATURE, new_client, submit, witness_checkpoint
from tests.conftest import validate
from tests.peers.go_tools import go_tool
from tests.peers.litewitness import Litewitness, free_port, started_litewitness

WITNESS_NAME = "example.com/g6-test-witness"


@pytest.fixture(scope="module")
def litewitness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Litewitness]:
    with started_litewitness(tmp_path_factory.mktemp("lw"), WITNESS_NAME) as lw:
        yield lw


@pytest.fixture(scope="module")
def cosigcheck() -> Path:
    return go_tool("cosigcheck")


def _home(path: Path) -> EvidenceHome:
    ev = EvidenceHome(path, fsync=False)
    if not (path / "keys" / "signing.key").exists():
        ev.keys.init()
    return ev


def _append(ev: EvidenceHome, n: int, tag: str = "") -> list[Receipt]:
    return [ev.ledger.append(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{tag}{i}"},
                                     outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED"), ev.signing_key())
            for i in range(n)]


def _theirs(cosigcheck: Path, vkey: str, note: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(cosigcheck), "-vkey", vkey], input=note.encode(), capture_output=True, timeout=60)


# -- refusals ---------------------------------------------------------------------------------------------
def test_an_unknown_origin_is_refused_naming_the_witness(litewitness: Litewitness, tmp_path: Path) -> None:
    ev = _home(tmp_path / "home")
    _append(ev, 2)
    cp, note = checkpoint(ev)
    with new_client() as client, pytest.raises(WitnessUnknownLog) as e:
        submit(ev.ledger, cp, note, litewitness.witness(), client)
    assert e.value.status == 403 and e.value.witness == "lw" and litewitness.url in str(e.value)  # v0.6.1: 403
    assert "does not know this log's origin" in str(e.value)
    assert ev.ledger.kept_beside(cp) == []
    ev.close()


def test_a_forked_checkpoint_is_refused_same_size_and_bigger(litewitness: Litewitness, tmp_path: Path) -> None:
    ev = _home(tmp_path / "home")
    litewitness.register(ev)
    _append(ev, 3)
    cp3, note3 = checkpoint(ev)
    w = litewitness.witness()
    with new_client() as client:
        assert submit(ev.ledger, cp3, note3, w, client).ok
        ev.close()
        shutil.copytree(tmp_path / "home", tmp_path / "fork")  # the same log, key and cosigned size 3
        ev, fork = _home(tmp_path / "home"), _home(tmp_path / "fork")
        _append(ev, 2, "a")
        cp5, note5 = checkpoint(ev)
        assert submit(ev.ledger, cp5, note5, w, client).old == 3  # the witness is at 5 now
        _append(fork, 2, "b")  # 5 receipts too, the last two others
        f5, fnote5 = checkpoint(fork)
        assert f5.size == 5 and f5.root != cp5.root
        with pytest.raises(WitnessInconsistent) as e:
            submit(fork.ledger, f5, fnote5, w, client)  # old 3 -> 409 (5) -> old 5, another root -> 422
        assert e.value.status == 422 and e.value.witness == "lw" and "fork" in str(e.value)
        _append(fork, 2, "c")
        f7, fnote7 = checkpoint(fork)
        with pytest.raises(WitnessInconsistent):
            submit(fork.ledger, f7, fnote7, w, client)  # a proof from 5 of the fork's tree: not the witness's 5
        assert fork.ledger.kept_beside(f5) == [] and fork.ledger.kept_beside(f7) == []
    ev.close()
    fork.close()


# -- what holds -------------------------------------------------------------------------------------------
def test_first_submission_then_a_stale_size_409_and_the_retry(litewitness: Litewitness, cosigcheck: Path,
                                                              tmp_path: Path) -> None:
    ev = _home(tmp_path / "home")
    litewitness.register(ev)
    _append(ev, 3)
    cp, note = checkpoint(ev)
    w = litewitness.witness()
    with new_client() as client:
        first = submit(ev.ledger, cp, note, w, client)
        assert first.ok and first.old == 0 and not first.retried and first.line.startswith(f"— {WITNESS_NAME} ")
        assert ev.ledger.kept_beside(cp, COSIGNATURE) == [(COSIGNATURE, WITNESS_NAME, first.line)]
        _append(ev, 4)
        cp7, note7 = checkpoint(ev)
        again = submit(ev.ledger, cp7, note7, w, client, old=0)  # a stale size: 409 says 3, then the proof 3 -> 7
        assert again.ok and again.retried and again.old == 3
    for n, s in ((note, first), (note7, again)):
        full = n + s.line + "\n"
        ours = check_cosignatures(full, [w.cosigner], time.time())
        assert ours.names() == {WITNESS_NAME: s.timestamp} and not ours.failed
        r = _theirs(cosigcheck, litewitness.vkey, full)  # torchwood's cosignature/v1 and Go's note.Open
        assert r.returncode == 0 and r.stdout.decode() == f"ok {WITNESS_NAME} {s.timestamp}\n", r.stderr
    bad = (note + first.line + "\n").replace("\n3\n", "\n4\n", 1)  # another size under the same signatures
    assert _theirs(cosigcheck, litewitness.vkey, bad).returncode == 1  # the Go check does fail
    assert w.cosigner in check_cosignatures(bad, [w.cosigner]).failed
    ev.close()


def test_witness_checkpoint_with_a_second_unreachable_witness_keeps_the_first(litewitness: Litewitness,
                                                                              tmp_path: Path) -> None:
    ev = _home(tmp_path / "home")
    litewitness.register(ev)
    _append(ev, 1)
    cp, note = checkpoint(ev)
    from g6.ledger.keys import SigningKey
    from g6.ledger.transparency.cosignature import CosignerKey
    dead = PolicyWitness("dead", CosignerKey("dead.example", SigningKey.generate().public),
                         f"http://127.0.0.1:{free_port()}")
    report = witness_checkpoint(ev, cp, note, None, [litewitness.witness(), dead])
    assert [s.ok for s in report.submissions] == [True, False]
    assert report.submissions[1].error.code == "G6_E_WITNESS_UNREACHABLE"
    assert not report.ok and report.verdict.signed == ("lw",)  # without a policy: every --witness
    ev.close()


# -- the commands -----------------------------------------------------------------------------------------
def g6(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=env, timeout=120, text=True)


def test_commands_quorum_1_of_1_2_of_2_and_a_tampered_cosignature(litewitness: Litewitness, tmp_path: Path) -> None:
    from g6.ledger.keys import SigningKey
    from g6.ledger.transparency.cosignature import CosignerKey

    home = tmp_path / "home"
    ev = _home(home)
    litewitness.register(ev)
    rid = _append(ev, 3)[1].receipt_id
    log_vkey = note_verifier_key(ev)
    ev.close()
    other = CosignerKey("other.example", SigningKey.generate().public).vkey()
    p1, p2 = tmp_path / "one.policy", tmp_path / "two.policy"
    p1.write_text(f"# litewitness alone\nlog {log_vkey}\nwitness lw {litewitness.vkey} {litewitness.url}\nquorum lw\n")
    p2.write_text(f"witness lw {litewitness.vkey} {litewitness.url}\nwitness other {other}\n"
                  "group both all lw other\nquorum both\n")

    r = g6(home, "ledger", "verify", "--policy", str(p1))
    assert r.returncode == 1 and "no checkpoint to hold to" in r.stdout  # fails closed

    kept = tmp_path / "kept.note"
    r = g6(home, "ledger", "checkpoint", "--policy", str(p1), "--json", "--out", str(kept))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    assert out["witnesses"]["ok"] and out["witnesses"]["quorum"]["signed"] == ["lw"]
    assert out["cosigned_note"].startswith(out["note"]) and f"— {WITNESS_NAME} " in out["cosigned_note"]
    assert "witness lw cosigned size 3 (from size 0)" in r.stderr
    assert kept.read_text() == out["cosigned_note"]
    r = g6(home, "ledger", "verify", "--checkpoint", str(kept))  # the cosigned note is still a kept checkpoint
    assert r.returncode == 0, r.stdout + r.stderr

    r = g6(home, "ledger", "verify", "--policy", str(p1), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    validate(report, "ledger-verify.v1")
    assert report["checks"]["witnesses"]["ok"]
    r = g6(home, "ledger", "verify", "--policy", str(p2))
    assert r.returncode == 1 and "no quorum: cosigned by lw; the quorum is 2 of (lw, other)" in r.stdout

    r = g6(home, "ledger", "checkpoint", "--policy", str(p2))  # submits to lw (the only URL); 2 of 2 not met
    assert r.returncode == 1 and "witnesses FAILED" in r.stderr

    proof = tmp_path / "proof"
    assert g6(home, "ledger", "prove", rid, "-o", str(proof)).returncode == 0
    receipt = tmp_path / "r.json"
    receipt.write_text(g6(home, "receipt", "show", rid).stdout)
    text = proof.read_text()
    assert f"— {WITNESS_NAME} " in text  # the kept cosignature travels in the proof
    r = g6(home, "verify-proof", str(proof), "--receipt", str(receipt), "--key", log_vkey, "--policy", str(p1),
           "--json")
    assert r.returncode == 0, r.stdout
    validate(json.loads(r.stdout), "verify-proof.v1")
    line = next(x for x in text.split("\n") if x.startswith(f"— {WITNESS_NAME} "))
    b64 = line.rsplit(" ", 1)[1]
    flipped = b64[:30] + ("A" if b64[30] != "A" else "B") + b64[31:]
    proof.write_text(text.replace(line, line.replace(b64, flipped)))
    r = g6(home, "verify-proof", str(proof), "--receipt", str(receipt), "--key", log_vkey, "--policy", str(p1))
    assert r.returncode == 1 and "witnesses" in r.stdout and "does not verify" in r.stdout
    assert g6(home, "verify-proof", str(proof), "--receipt", str(receipt), "--key", log_vkey).returncode == 0


def test_commands_refusals_are_one_line(litewitness: Litewitness, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ev = _home(home)  # not registered with the witness
    _append(ev, 1)
    ev.close()
    r = g6(home, "ledger", "checkpoint", "--witness", litewitness.url, "--witness-key", litewitness.vkey)
    assert r.returncode == 1
    err = [x for x in r.stderr.splitlines() if x.startswith(f"g6: witness {WITNESS_NAME} ({litewitness.url})")]
    assert any("does not know this log's origin" in x and "[G6_E_WITNESS_UNKNOWN_LOG]" in x for x in err), r.stderr
    assert "Traceback" not in r.stderr
    r = g6(home, "ledger", "checkpoint", "--witness", litewitness.url)
    assert r.returncode == 2 and "one --witness-key per --witness" in r.stderr
    bad = tmp_path / "bad.policy"
    bad.write_text("# one item short\nwitness a\n")
    r = g6(home, "ledger", "verify", "--policy", str(bad))
    assert r.returncode == 2 and f"policy {bad} line 2: a witness line reads" in r.stderr
    (tmp_path / "b.zip").write_bytes(b"")
    for args in (["verify-proof", str(bad), "--key", litewitness.vkey], ["bundle", "verify", str(tmp_path / "b.zip")],
                 ["ledger", "checkpoint"]):
        r = g6(home, *args, "--policy", str(bad))
        assert r.returncode == 2 and r.stderr.strip() == f"g6: policy {bad} line 2: a witness line reads: witness " \
                                                          "<name> <vkey> [<url>]", (args, r.stderr)
    r = g6(home, "bundle", str(bad), "-o", str(tmp_path / "x.zip"), "--policy", str(bad))
    assert r.returncode == 2 and "--policy is for `g6 bundle verify BUNDLE.zip`" in r.stderr


def test_each_backend_pair_keeps_the_cosignature_and_verify_holds_it(litewitness: Litewitness,
                                                                     pair_home: EvidenceHome, tmp_path: Path) -> None:
    """SQLite and PostgreSQL alike: the cosignature is kept beside the checkpoint, the next submission starts
    from its size, and `ledger verify --policy` in another process finds it."""
    litewitness.register(pair_home)
    _append(pair_home, 2)
    cp, note = checkpoint(pair_home)
    w = litewitness.witness()
    with new_client() as client:
        assert submit(pair_home.ledger, cp, note, w, client).old == 0
        _append(pair_home, 1)
        cp3, note3 = checkpoint(pair_home)
        assert submit(pair_home.ledger, cp3, note3, w, client).old == 2  # from what was kept, no 409
        assert [n for _, n, _ in pair_home.ledger.kept_beside(cp3, COSIGNATURE)] == [WITNESS_NAME]
        # an older cosignature by the same key, kept as g6 did before issue 36: the next submission keeps one
        older = sign_cosignature(cp3.text(), WITNESS_NAME, litewitness.signing_key(), int(time.time()) - 60)
        pair_home.ledger.keep_beside(cp3, COSIGNATURE, WITNESS_NAME, older)
        assert len(pair_home.ledger.kept_beside(cp3, COSIGNATURE)) == 2
        again = submit(pair_home.ledger, cp3, note3, w, client)
        assert again.ok and again.old == 3
        assert [v for _, _, v in pair_home.ledger.kept_beside(cp3, COSIGNATURE)] == [again.line]
    policy = tmp_path / "p"
    policy.write_text(f"witness lw {litewitness.vkey}\nquorum lw\n")
    r = g6(pair_home.root, "ledger", "verify", "--policy", str(policy))
    assert r.returncode == 0 and "witnesses  ok checked=2" in r.stdout, r.stdout + r.stderr


# -- what `ledger checkpoint --json` reports of a submission (issue 36) --------------------------------------
@pytest.fixture(scope="module")
def second(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Litewitness]:
    with started_litewitness(tmp_path_factory.mktemp("lw2"), "example.org/g6-second-witness") as lw:
        yield lw


def test_json_reports_the_size_last_sent_and_the_retry_after_a_409(litewitness: Litewitness,
                                                                   tmp_path: Path) -> None:
    """`old` is the size last sent and `retried` says it was sent again after a 409, whether the resend was
    cosigned or refused (schemas/ledger-checkpoint.v1)."""
    home, fork, stale = tmp_path / "home", tmp_path / "fork", tmp_path / "stale"
    ev = _home(home)
    litewitness.register(ev)
    _append(ev, 3)
    ev.close()
    shutil.copytree(home, stale)  # the same log, before any cosignature was kept
    args = ["ledger", "checkpoint", "--witness", litewitness.url, "--witness-key", litewitness.vkey, "--json"]
    r = g6(home, *args)
    assert r.returncode == 0, r.stderr
    (sub,) = json.loads(r.stdout)["witnesses"]["submissions"]
    assert (sub["ok"], sub["old"], sub["retried"]) == (True, 0, False)
    shutil.copytree(home, fork)  # cosigned at 3, kept

    r = g6(stale, *args)  # sends old 0; the witness is at 3: 409, then old 3, cosigned
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    (sub,) = out["witnesses"]["submissions"]
    assert (sub["ok"], sub["old"], sub["retried"], sub["status"]) == (True, 3, True, 200)
    assert "(from size 3, after a 409)" in r.stderr

    ev = _home(home)
    _append(ev, 2, "a")
    ev.close()
    assert g6(home, *args).returncode == 0  # the witness is at 5 now
    ev = _home(fork)
    _append(ev, 2, "b")  # 5 receipts too, the last two others
    ev.close()
    r = g6(fork, *args)  # sends old 3: 409 (5), then old 5 with the proof 3 -> 5 of another tree: 422
    assert r.returncode == 1
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    (sub,) = out["witnesses"]["submissions"]
    assert (sub["ok"], sub["old"], sub["retried"], sub["status"], sub["code"]) == (
        False, 5, True, 422, "G6_E_WITNESS_INCONSISTENT"), sub
    assert "Traceback" not in r.stderr


def test_a_submission_that_failed_fails_the_run_even_when_kept_cosignatures_meet_the_quorum(
        litewitness: Litewitness, second: Litewitness, tmp_path: Path) -> None:
    """`--witness` given with the wrong key for its URL, on a checkpoint that key's witness cosigned before:
    the cosignature kept meets the quorum, but this run's submission failed, and the run says so (exit 1)."""
    home = tmp_path / "home"
    ev = _home(home)
    litewitness.register(ev)
    second.register(ev)
    _append(ev, 2)
    ev.close()
    both = ["--witness", litewitness.url, "--witness-key", litewitness.vkey,
            "--witness", second.url, "--witness-key", second.vkey]
    assert g6(home, "ledger", "checkpoint", *both).returncode == 0
    r = g6(home, "ledger", "checkpoint", "--witness", litewitness.url, "--witness-key", second.vkey, "--json")
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    w = out["witnesses"]
    assert w["quorum"]["ok"] and not w["ok"]  # the quorum holds by what was kept; the run did not
    (sub,) = w["submissions"]
    assert not sub["ok"] and sub["code"] == "G6_E_WITNESS_BAD_REQUEST" and "no cosignature by its key" in sub["error"]
    err = r.stderr.splitlines()
    assert any(x.startswith(f"g6: witness {second.name} ({litewitness.url}) answered 200 with no cosignature by its "
                            "key") for x in err), r.stderr
    assert err[-1].startswith(f"g6: witnesses FAILED: this run's submission to {second.name} failed"), r.stderr
    assert "witnesses ok" not in r.stderr
    # the same with --policy: a witness of the policy that could not cosign fails the run too
    policy = tmp_path / "p"
    policy.write_text(f"witness a {litewitness.vkey} {litewitness.url}\nwitness b {second.vkey} {litewitness.url}\n"
                      "group g any a b\nquorum g\n")
    r = g6(home, "ledger", "checkpoint", "--policy", str(policy))
    assert r.returncode == 1 and "this run's submission to b failed" in r.stderr, r.stderr
