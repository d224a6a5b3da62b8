"""``ledger verify --since``: prove the ledger extends a signed checkpoint, then check only the new rows."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.cli import cli
from g6.errors import InputError
from g6.home import EvidenceHome
from g6.ledger import Receipt, SigningKey
from g6.ledger.chain import GENESIS, entry_hash
from g6.ledger.note import Checkpoint, sign_checkpoint
from g6.prove.verify_since import read_note, state_path, verify_since


def add(home: EvidenceHome, start: int, n: int) -> None:
    rs = []
    for i in range(start, start + n):
        ref = home.store.put(f"body {i}".encode())
        rs.append(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                          outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size, content=ref.to_json()))
    home.ledger.append_many(rs, home.signing_key())


def rechain(conn: sqlite3.Connection) -> None:
    prev = GENESIS
    for seq, t in conn.execute("SELECT seq, receipt FROM receipts ORDER BY seq").fetchall():
        h = entry_hash(seq, prev, t.encode())
        conn.execute("UPDATE receipts SET prev_hash = ?, entry_hash = ? WHERE seq = ?", (prev, h, seq))
        prev = h


def test_only_new_rows_are_checked_and_consistency_is_proved(home: EvidenceHome) -> None:
    add(home, 0, 30)
    _, note = home.ledger.checkpoint(home.signing_key())
    add(home, 30, 11)
    report = verify_since(home, note)
    assert report.ok, report.to_json()
    j = report.to_json()["checks"]
    assert report.rows == 11 and j["signature"]["checked"] == j["blob"]["checked"] == 11
    assert [c.detail for c in report.of("consistency")] == ["size 30 -> 41"]


def test_a_bad_new_row_fails_and_old_rows_are_not_read(home: EvidenceHome) -> None:
    add(home, 0, 9)
    _, note = home.ledger.checkpoint(home.signing_key())
    add(home, 9, 4)
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    conn.execute("UPDATE receipts SET receipt = replace(receipt, 'e.org/11', 'e.org/99') WHERE seq = 12")
    report = verify_since(home, note)
    assert {(f.check, f.seq) for f in report.failures() if f.check not in ("tree", "consistency")} == {
        ("signature", 12), ("chain", 12)}
    # the stored leaf of row 12 no longer matches it either, so neither does the new root
    assert report.failures("tree") and report.failures("consistency")
    # a blob deleted under an old row is not this mode's business; under a new row it is
    old_blob = json.loads(conn.execute("SELECT receipt FROM receipts WHERE seq = 2").fetchone()[0])["content"]
    home.store.path(old_blob["blake3"]).unlink()
    assert not verify_since(home, note).failures("blob")


def test_rewritten_history_with_a_rebuilt_tree_fails_consistency(home: EvidenceHome) -> None:
    add(home, 0, 12)
    _, note = home.ledger.checkpoint(home.signing_key())
    add(home, 12, 3)
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    forged = home.ledger.get(next(e.receipt.receipt_id for e in home.ledger.entries() if e.seq == 3))
    forged = Receipt.from_json(dict(forged.to_json(), byte_count=1)).signed(home.signing_key())
    body = forged.canonical_bytes(with_signature=True).decode()
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 3", (body,))
    rechain(conn)
    conn.execute("DROP TABLE merkle_hashes")
    add(home, 15, 1)  # the next write rebuilds the stored tree from the forged rows
    report = verify_since(home, note)
    assert [f.detail for f in report.failures()] == [
        "the first 12 receipts' stored hashes do not hash to the checkpoint's root (history rewritten?)",
        "checkpoint 1 (size 12): the first 12 receipts no longer hash to its root"]


def test_rows_removed_after_the_checkpoint_fail(home: EvidenceHome) -> None:
    add(home, 0, 8)
    _, note = home.ledger.checkpoint(home.signing_key())
    sqlite3.connect(home.ledger.path, isolation_level=None).execute("DELETE FROM receipts WHERE seq > 5")
    assert "rows removed from the end" in verify_since(home, note).failures()[0].detail


def test_an_old_ledger_without_a_stored_tree_is_hashed_from_its_receipts(home: EvidenceHome) -> None:
    add(home, 0, 10)
    _, note = home.ledger.checkpoint(home.signing_key())
    add(home, 10, 2)
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    conn.execute("DROP TABLE merkle_hashes")
    report = verify_since(home, note)
    assert report.ok and report.rows == 2
    conn.execute("UPDATE receipts SET receipt = replace(receipt, 'e.org/4\"', 'e.org/5\"') WHERE seq = 5")
    assert "do not hash to the checkpoint's root" in verify_since(home, note).failures()[0].detail


def test_untrusted_or_foreign_checkpoints_are_refused(home: EvidenceHome) -> None:
    add(home, 0, 4)
    cp, _ = home.ledger.checkpoint(home.signing_key())
    stranger = sign_checkpoint(cp, SigningKey.generate())
    assert "not signed by a trusted key" in verify_since(home, stranger).failures()[0].detail
    other = sign_checkpoint(Checkpoint("g6-evidence/0000000000000000", cp.size, cp.root), home.signing_key())
    assert "not this ledger" in verify_since(home, other).failures()[0].detail
    with pytest.raises(InputError, match="not a signed checkpoint note"):
        verify_since(home, "hello\n")


def test_cli_records_the_verified_head_and_since_uses_it(tmp_path: Path) -> None:
    run = CliRunner().invoke
    g6home = tmp_path / "h"
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--since"])
    assert r.exit_code == 2 and "no verified checkpoint recorded yet" in r.output
    home = EvidenceHome(g6home, fsync=False)
    home.keys.init()
    add(home, 0, 20)
    r = run(cli, ["--home", str(g6home), "ledger", "verify"])
    assert r.exit_code == 0, r.output
    assert not state_path(home).exists()  # reading writes nothing unless asked
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--record"])
    assert r.exit_code == 0, r.output
    recorded = read_note(home, None)
    assert recorded.split("\n")[1] == "20" and state_path(home).is_file()
    add(home, 20, 5)
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--since", "--record", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["rows"] == 5 and data["checks"]["consistency"]["ok"]
    assert read_note(home, None).split("\n")[1] == "25"  # and the new head is recorded
    kept = tmp_path / "cp.note"
    kept.write_text(recorded)
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--since", str(kept)])
    assert r.exit_code == 0 and "ledger ok: 5 new receipts" in r.output
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--since", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "no such checkpoint file" in r.output
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    conn.execute("UPDATE receipts SET receipt = replace(receipt, 'e.org/22', 'e.org/99') WHERE seq = 23")
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--since", str(kept)])
    assert r.exit_code == 1 and "ledger FAILED" in r.output
    home.close()
