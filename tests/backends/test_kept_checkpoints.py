"""`g6 ledger verify --checkpoint KEPT` on either backend pair: a checkpoint kept away from the ledger
catches a ledger read over PostgreSQL that was cut short or whose history was rewritten (re-signed with the
real key, its stored tree and checkpoints rebuilt to match), as it does for a SQLite file.

The tampering goes through the ledger's own connection (what someone with database access can do); the
verification runs as a grader runs it: `g6 --home` in a fresh process (the home's ``.env`` names the
PostgreSQL ledger) and through the library.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.prove.proofs import checkpoint
from tests.backends.raw_sql import raw_sql


def fill(home: EvidenceHome, n: int, tag: str = "") -> None:
    for i in range(n):
        ref = home.store.put(f"body {tag}{i}".encode())
        home.record(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{tag}{i}"},
                            outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size,
                            content=ref.to_json()))


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), *args], capture_output=True,
                          text=True, timeout=120, env=env)


def kept_verdict(home: EvidenceHome, kept: Path) -> tuple[int, dict[str, object]]:
    r = g6(home, "ledger", "verify", "--checkpoint", str(kept), "--json")
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads(r.stdout)


def failure_details(report: dict[str, object], check: str) -> list[str]:
    return [f["detail"] for f in report["checks"][check]["failures"]]  # type: ignore[index]


def rebuild(home: EvidenceHome, keep: int) -> None:
    """Cut the ledger to its first ``keep`` rows and remove every trace of the rest (the stored tree, the
    checkpoints the ledger issued), as an attacker with the database and the key would."""
    sql = raw_sql(home.ledger)
    sql.execute("DELETE FROM receipts WHERE seq > ?", (keep,))
    sql.execute("DELETE FROM merkle_hashes")
    sql.execute("DELETE FROM checkpoints")
    if hasattr(home.ledger._usable().connection, "commit"):
        home.ledger._usable().connection.commit()


def test_a_kept_checkpoint_catches_a_rewritten_history(pair_home: EvidenceHome, tmp_path: Path) -> None:
    fill(pair_home, 4)
    kept = tmp_path / "kept.note"
    r = g6(pair_home, "ledger", "checkpoint", "--out", str(kept))
    assert r.returncode == 0, r.stderr
    code, report = kept_verdict(pair_home, kept)
    assert code == 0, report
    # two rows rewritten: same size, another root; every signature real, the chain and tree rebuilt
    rebuild(pair_home, 2)
    fill(pair_home, 2, tag="forged-")
    assert len(pair_home.ledger.tree()) == 4
    plain = g6(pair_home, "ledger", "verify")
    assert plain.returncode == 0, plain.stdout  # nothing the ledger keeps shows it
    code, report = kept_verdict(pair_home, kept)
    assert code == 1
    assert "history rewritten" in failure_details(report, "kept_checkpoint")[0]
    lib = pair_home.verify(kept=[("kept", kept.read_text())])
    assert not lib.ok and "history rewritten" in lib.failures("kept_checkpoint")[0].detail


def test_a_kept_checkpoint_catches_rows_removed_from_the_end(pair_home: EvidenceHome, tmp_path: Path) -> None:
    fill(pair_home, 5)
    kept = tmp_path / "kept.note"
    assert g6(pair_home, "ledger", "checkpoint", "--out", str(kept)).returncode == 0
    fill(pair_home, 1, tag="later-")
    code, report = kept_verdict(pair_home, kept)
    assert code == 0, report
    rebuild(pair_home, 3)
    assert g6(pair_home, "ledger", "verify").returncode == 0
    code, report = kept_verdict(pair_home, kept)
    assert code == 1 and "removed from the end" in failure_details(report, "kept_checkpoint")[0]


def test_a_kept_checkpoint_of_a_recreated_ledger(pair_home: EvidenceHome, tmp_path: Path) -> None:
    """The whole ledger dropped and made again: a new log id, so the kept checkpoint is of another log."""
    fill(pair_home, 3)
    cp, note = checkpoint(pair_home)
    kept = tmp_path / "kept.note"
    kept.write_text(note)
    sql = raw_sql(pair_home.ledger)
    sql.execute("UPDATE meta SET value = ? WHERE key = ?", ("0123456789abcdef", "log_id"))
    if hasattr(pair_home.ledger._usable().connection, "commit"):
        pair_home.ledger._usable().connection.commit()
    code, report = kept_verdict(pair_home, kept)
    assert code == 1 and "replaced or re-created" in failure_details(report, "kept_checkpoint")[0]


def test_a_grader_reading_the_shared_ledger_from_another_home(shared_home: EvidenceHome, tmp_path: Path) -> None:
    """The grader's own home names the same PostgreSQL ledger and S3 store, holds no key of its own, and
    pins the publisher's key: the kept checkpoint catches a rewrite there too."""
    fill(shared_home, 4)
    kept = tmp_path / "kept.note"
    assert g6(shared_home, "ledger", "checkpoint", "--out", str(kept)).returncode == 0
    pub = shared_home.signing_key().public.to_text()
    grader = EvidenceHome.__new__(EvidenceHome)
    grader_root = tmp_path / "grader"
    grader_root.mkdir()
    (grader_root / ".env").write_text((shared_home.root / ".env").read_text())
    grader.root = grader_root  # only .root is read by g6() below

    def verdict() -> tuple[int, str]:
        r = g6(grader, "ledger", "verify", "--checkpoint", str(kept), "--key", pub)
        assert "Traceback" not in r.stderr, r.stderr
        return r.returncode, r.stdout + r.stderr
    code, out = verdict()
    assert code == 0, out
    rebuild(shared_home, 2)
    fill(shared_home, 2, tag="forged-")
    code, out = verdict()
    assert code == 1 and "history rewritten" in out, out


def test_a_rewrite_that_leaves_the_stored_tree_alone_is_not_called_consistent(pair_home: EvidenceHome,
                                                                              tmp_path: Path) -> None:
    """Rows 3 and 4 replaced in place by receipts re-signed with the real key (chain recomputed), the stored
    Merkle hashes left as they were: those hashes are a cache, and still hash to the kept root. The kept
    checkpoint's verdict must come from the receipts, never from that cache."""
    from g6.ledger.chain import entry_hash

    fill(pair_home, 4)
    kept = tmp_path / "kept.note"
    assert g6(pair_home, "ledger", "checkpoint", "--out", str(kept)).returncode == 0
    key = pair_home.signing_key()
    sql = raw_sql(pair_home.ledger)
    prev = pair_home.ledger._usable().row_at(2)[7]
    for seq in (3, 4):
        forged, body = Receipt(kind="fetch", source="web", request={"url": f"https://example.org/forged{seq}"},
                               outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED").sign_canonical(key)
        h = entry_hash(seq, prev, body)
        sql.execute("UPDATE receipts SET receipt_id = ?, receipt = ?, prev_hash = ?, entry_hash = ?, kind = ?, "
                    "outcome = ?, fetched_at = ? WHERE seq = ?",
                    (forged.receipt_id, body.decode(), prev, h, forged.kind, forged.outcome, forged.fetched_at, seq))
        prev = h
    code, report = kept_verdict(pair_home, kept)
    assert code == 1
    assert report["checks"]["kept_checkpoint"]["ok"] is False, report["checks"]["kept_checkpoint"]
    assert "history rewritten" in failure_details(report, "kept_checkpoint")[0]
