"""Keys over time (issue 36): a rotation's handover, a retirement of a key the verifier never trusted, and
``verify-proof`` with several keys.

* ``g6 keys rotate`` retires the old key in a *handover*: a retire entry signed by the new key, naming it
  as the successor, after the entry in which the old key added it. A verifier who pins the new key trusts
  the old one through the handover; a plain retire entry, or a handover that does not follow such an add,
  vouches for nothing (retiring a planted key must never make it trusted).
* Retiring a key only takes trust away. A key only the home's trusted-keys table holds is not trusted by a
  verify that pins the log's key: its retirement takes nothing away there, and is no failure; a forged
  retirement (signed by a key not valid where it stands) still is.
* ``verify-proof --key`` is repeatable: each key given is trusted, none dropped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from g6.home import EvidenceHome
from g6.ledger import Receipt, SigningKey, VerifyKey, trust_key
from g6.ledger.keyring import RETIRE, key_entry
from g6.ledger.note import verifier_key
from g6.prove.proofs import prove, prove_at


def receipt(i: int) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=120,
                          cwd=home.parent)


@pytest.fixture
def home(tmp_path: Path) -> EvidenceHome:
    h = EvidenceHome(tmp_path / "h", fsync=False)
    h.keys.init()
    yield h
    h.close()


def sneak(home: EvidenceHome, r: Receipt, key: SigningKey) -> None:
    """A row signed by ``key`` at the next seq, written as an operator with database access writes it."""
    from tests.ledger.test_key_holder import append_raw

    signed = replace(r, log={"origin": home.ledger.origin, "seq": len(home.ledger) + 1}).signed(key)
    append_raw(home.ledger, signed.canonical_bytes(with_signature=True).decode(), signed.receipt_id)


def pin(*keys: SigningKey | VerifyKey) -> dict[str, VerifyKey]:
    out = {}
    for k in keys:
        public = k.public if isinstance(k, SigningKey) else k
        out[public.key_id] = public
    return out


# -- a rotation's handover ---------------------------------------------------------------------------------
def test_the_current_key_alone_verifies_what_the_key_before_a_rotation_signed(home: EvidenceHome) -> None:
    old = home.signing_key()
    home.record(receipt(1))
    new, entries = home.rotate_key()
    assert entries[1].request["successor"] == new.key_id and entries[1].signature.key_id == new.key_id
    home.record(receipt(2))
    report = home.ledger.verify(pin(new), home.store)
    assert report.ok, report.failures()
    lives = {k["key_id"]: k for k in report.keys}
    assert (lives[old.key_id]["valid_from"], lives[old.key_id]["valid_to"]) == (1, 3)
    assert lives[old.key_id]["why"] == f"vouched for by {new.key_id}, its successor (handover at seq 3)"
    assert not lives[old.key_id]["root"]


def test_a_plain_retire_entry_vouches_for_nothing(home: EvidenceHome) -> None:
    """The operator finds a key someone planted in the table, which "added" the log's key in an entry the
    planter wrote, and retires it: a pinned verify must not start trusting the planted key's rows."""
    log_key = home.signing_key()
    planted = SigningKey.generate()
    trust_key(home.ledger, planted.public)
    home.ledger.append(receipt(1), planted)  # the planter's rows, valid while the table trusts its key
    home.ledger.add_key(log_key.public, planted)  # "adds" the log's key: the pair a rotation makes, half of it
    home.ledger.retire_key(planted.public, log_key, "found in the table")  # a plain retirement
    report = home.ledger.verify(pin(log_key), home.store)
    assert [c.seq for c in report.failures("signature")] == [1, 2]
    assert all("unknown key " + planted.key_id in c.detail for c in report.failures("signature"))
    assert planted.key_id not in {k["key_id"] for k in report.keys}


def test_a_handover_that_does_not_follow_an_add_by_the_retired_key_fails_and_vouches_for_nothing(
        home: EvidenceHome) -> None:
    log_key = home.signing_key()
    stranger = SigningKey.generate()
    home.ledger.append(receipt(1), stranger)
    # a handover written by hand: the log's key names itself the stranger's successor, but the stranger never
    # added it
    home.ledger.append(key_entry(RETIRE, stranger.public, "", log_key.public), log_key)
    report = home.ledger.verify(pin(log_key), home.store)
    assert not report.ok
    assert [c.detail for c in report.failures("keys")] == [
        f"hands {stranger.key_id} over to {log_key.key_id}, which {stranger.key_id} never added"]
    assert "unknown key " + stranger.key_id in report.failures("signature")[0].detail


def test_a_handover_naming_another_successor_than_its_signer_fails(home: EvidenceHome) -> None:
    old = home.signing_key()
    new, other = SigningKey.generate(), SigningKey.generate()
    home.record(receipt(1))
    home.ledger.add_key(new.public, old)
    home.ledger.append(key_entry(RETIRE, old.public, "", other.public), new)
    for keys, failing in ((pin(old), [3]), (pin(new), [2, 3])):  # pinned alone, new vouches for nothing
        report = home.ledger.verify(keys, home.store)
        assert [c.seq for c in report.failures("keys")] == failing
        assert f"names {other.key_id} as the successor of {old.key_id}, but {new.key_id} signed it" in \
            report.failures("keys")[-1].detail


def test_copy_with_the_current_key_pinned_carries_a_rotated_ledger(home: EvidenceHome, tmp_path: Path) -> None:
    from g6.ledger import Ledger

    home.record(receipt(1))
    new, _ = home.rotate_key()
    home.record(receipt(2))
    home.close()
    r = g6(home.root, "ledger", "copy", "--to", f"sqlite:///{tmp_path / 'copy.sqlite'}", "--key", new.public.to_text(),
           "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["copied"] == 4
    with Ledger(tmp_path / "copy.sqlite") as dst:
        assert dst.verify(pin(new), None).ok
    home.ledger = Ledger(home.root / "knowledge" / "ledger.sqlite")  # for the fixture's teardown


# -- retiring a key the verifier never trusted -------------------------------------------------------------
def test_retiring_a_table_trusted_key_passes_a_pinned_verify(tmp_path: Path) -> None:
    """The issue's steps: keys init, a fetch (here a receipt), keys trust p.pub, keys retire p.pub, then a
    verify that pins the log's key."""
    root = tmp_path / "home"
    assert g6(root, "keys", "init").returncode == 0
    with EvidenceHome(root, fsync=False) as h:
        h.record(receipt(1))
        log_vkey = verifier_key(h.ledger.origin, h.signing_key().public)
    p = SigningKey.generate()
    (tmp_path / "p.pub").write_text(p.public.to_text() + "\n")
    assert g6(root, "keys", "trust", str(tmp_path / "p.pub")).returncode == 0
    assert g6(root, "keys", "retire", str(tmp_path / "p.pub")).returncode == 0
    r = g6(root, "ledger", "verify", "--key", log_vkey)
    assert r.returncode == 0, r.stdout
    assert "seq=2 " in r.stdout and f"retires {p.key_id}, a key this verify does not trust" in r.stdout
    assert "FAILED" not in r.stdout
    # the home's own verify (no pin) trusted p: for it, p's window closes at the entry
    plain = g6(root, "ledger", "verify", "--json")
    assert plain.returncode == 0, plain.stdout
    lives = {k["key_id"]: k for k in json.loads(plain.stdout)["keys"]}
    assert lives[p.key_id]["valid_to"] == 2


def test_after_such_a_retirement_the_key_signs_nothing_and_cannot_be_added(home: EvidenceHome) -> None:
    log_key = home.signing_key()
    p = SigningKey.generate()
    home.record(receipt(1))
    trust_key(home.ledger, p.public)
    home.ledger.retire_key(p.public, log_key)
    home.ledger.append(key_entry("add", p.public), log_key)  # a retirement is final: this adds nobody
    sneak(home, receipt(4), p)  # the append refuses a retired key: written behind the ledger's back
    for keys in (pin(log_key), None):
        report = home.ledger.verify(keys, home.store) if keys else home.verify()
        assert [c.seq for c in report.failures("keys")] == [3]
        assert "adds " + p.key_id + " again after it was retired at seq 2" in report.failures("keys")[0].detail
        assert [c.seq for c in report.failures("signature")] == [4]


def test_a_forged_retirement_still_fails_a_pinned_verify(home: EvidenceHome) -> None:
    log_key = home.signing_key()
    p, forger = SigningKey.generate(), SigningKey.generate()
    home.record(receipt(1))
    trust_key(home.ledger, p.public)
    home.ledger.append(key_entry(RETIRE, p.public), forger)  # signed by a key not valid here
    sneak(home, key_entry(RETIRE, log_key.public), p)  # the planted key "retires" the log's key
    report = home.ledger.verify(pin(log_key), home.store)
    assert [c.seq for c in report.failures("keys")] == [2, 3]
    assert "key entry not valid: signed by unknown key " + forger.key_id in report.failures("keys")[0].detail
    assert "key entry not valid: signed by unknown key " + p.key_id in report.failures("keys")[1].detail


# -- verify-proof with several keys ------------------------------------------------------------------------
def test_verify_proof_takes_every_key_given(home: EvidenceHome, tmp_path: Path) -> None:
    """A receipt signed by one trusted key, its checkpoint by another, no key entry between them: the proof
    holds only with both keys, as `ledger verify --key A --key B` would have it."""
    a = home.signing_key()
    b = SigningKey.generate()
    trust_key(home.ledger, b.public)
    r = home.record(receipt(1))
    cp, note = home.ledger.checkpoint(b)  # signed by b: the proof is against it
    (tmp_path / "p").write_text(prove_at(home, r.receipt_id, 0, cp, note).text())
    (tmp_path / "r.json").write_text(json.dumps(r.to_json()))
    va, vb = verifier_key(home.ledger.origin, a.public), verifier_key(home.ledger.origin, b.public)
    args = ["verify-proof", str(tmp_path / "p"), "--receipt", str(tmp_path / "r.json")]
    assert g6(home.root, *args, "--key", va).returncode == 1
    assert g6(home.root, *args, "--key", vb).returncode == 1
    for keys in ((va, vb), (vb, va)):
        out = g6(home.root, *args, "--key", keys[0], "--key", keys[1])
        assert out.returncode == 0, out.stdout
        assert f"signed by {b.public.key_id} (given with --key)" in out.stdout
    # and a consistency proof whose old checkpoint the one key signed, the new one the other
    home.ledger.checkpoint(a)
    home.record(receipt(2))
    home.ledger.checkpoint(b)
    cons = g6(home.root, "ledger", "consistency", "1", "2", "-o", str(tmp_path / "c"))
    assert cons.returncode == 0, cons.stderr
    c_args = ["verify-proof", str(tmp_path / "c")]
    assert g6(home.root, *c_args, "--key", vb).returncode == 1
    assert g6(home.root, *c_args, "--key", va, "--key", vb).returncode == 0


def test_verify_proof_refuses_keys_of_two_logs(home: EvidenceHome, tmp_path: Path) -> None:
    r = home.record(receipt(1))
    proof, _ = prove(home, r.receipt_id)
    (tmp_path / "p").write_text(proof.text())
    (tmp_path / "r.json").write_text(json.dumps(r.to_json()))
    key = home.signing_key().public
    mine = verifier_key(home.ledger.origin, key)
    other = verifier_key("g6-evidence/0000000000000000", key)
    out = g6(home.root, "verify-proof", str(tmp_path / "p"), "--receipt", str(tmp_path / "r.json"), "--key", mine,
             "--key", other)
    assert out.returncode == 2 and "more than one log" in out.stderr
    assert "Traceback" not in out.stderr


# -- a handover copied into a forged log -------------------------------------------------------------------
def test_a_handover_copied_further_down_a_forged_log_stretches_nothing(home: EvidenceHome, tmp_path: Path) -> None:
    """Whoever stole the old key after a rotation copies the genuine add entry and handover (public, in every
    proof) to the end of a log they forge under the same origin, after receipts the old key signs now, and
    signs its checkpoint with the old key. Each entry signs its place: moved, it vouches for nothing."""
    from g6.ledger import Ledger
    from g6.ledger.proofs import InclusionProof, key_proof_extra, verify_inclusion_proof
    from tests.ledger.test_key_holder import append_raw, stored_text

    old = home.signing_key()
    home.record(receipt(1))
    new, entries = home.rotate_key()
    origin = home.ledger.origin
    genuine = [stored_text(home.ledger, e.log["seq"]) for e in entries]  # the add entry, then the handover
    fake = Ledger(tmp_path / "fake.sqlite")
    with fake.rows.write():
        fake.rows.set_log_id(origin.removeprefix("g6-evidence/"))
    assert fake.origin == origin
    forged = [fake.append(receipt(i), old) for i in range(1, 4)]
    for text in genuine:
        append_raw(fake, text, json.loads(text)["receipt_id"], kind="key")
    cp, note = fake.checkpoint(old)
    tree = fake.tree()
    carried = [(i, genuine[i - 3], tuple(tree.inclusion_proof(i, cp.size))) for i in (3, 4)]
    proof = InclusionProof(1, tuple(tree.inclusion_proof(1, cp.size)), note,
                           key_proof_extra(forged[1].receipt_id, carried))
    report = verify_inclusion_proof(proof.text(), forged[1], new.public, origin)
    assert not report.ok
    bad = {c.check: c.detail for c in report.checks if not c.ok}
    assert "signed for " + origin + " #2, but it stands at " + origin + " #4" in bad["key_entries"]
    assert "unknown key " + old.key_id in bad["receipt_signature"]
    fake.close()
