"""The Merkle tree the ledger keeps: equal to the recomputed one, cheap to read, and never trusted."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.errors import LedgerError
from g6.home import EvidenceHome
from g6.ledger import Ledger, Receipt, SigningKey
from g6.ledger import stored_tree as stt
from g6.ledger.chain import GENESIS, entry_hash
from g6.ledger.merkle import MerkleTree, leaf_hash
from g6.ledger.verification import verify_ranges

KEY = SigningKey.generate()
KEYS = {KEY.key_id: KEY.public}


def receipts(start: int, n: int) -> list[Receipt]:
    return [Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i) for i in range(start, start + n)]


def stored(path: Path) -> list[tuple[int, bytes]]:
    conn = sqlite3.connect(path)
    try:
        return [(i, bytes(h)) for i, h in conn.execute("SELECT id, hash FROM merkle_hashes ORDER BY id")]
    finally:
        conn.close()


def test_go_tlog_stored_hash_layout() -> None:
    # values from Go's golang.org/x/mod/sumdb/tlog (StoredHashIndex / StoredHashCount)
    assert [stt.stored_hash_index(0, n) for n in range(8)] == [0, 1, 3, 4, 7, 8, 10, 11]
    assert stt.stored_hash_index(1, 0) == 2 and stt.stored_hash_index(2, 0) == 6 and stt.stored_hash_index(3, 0) == 14
    assert [stt.stored_hash_count(n) for n in range(9)] == [0, 1, 3, 4, 7, 8, 10, 11, 15]
    for n in range(200):
        assert stt.size_from_count(stt.stored_hash_count(n)) == n
    assert stt.size_from_count(2) is None  # a tree never stores exactly 2 hashes


@given(st.lists(st.binary(max_size=8), max_size=70))
def test_stored_tree_answers_like_the_in_memory_one(items: list[bytes]) -> None:
    leaves = [leaf_hash(x) for x in items]
    table = dict(stt.expected_hashes(leaves))
    assert sorted(table) == list(range(stt.stored_hash_count(len(leaves))))
    mem = MerkleTree(leaves)
    kept = stt.StoredTree(lambda ids: {i: table[i] for i in ids if i in table}, len(leaves))
    for size in range(len(leaves) + 1):
        assert kept.root(size) == mem.root(size)
        for i in range(size):
            assert kept.inclusion_proof(i, size) == mem.inclusion_proof(i, size)
        if size:
            for old in range(1, size + 1):
                assert kept.consistency_proof(old, size) == mem.consistency_proof(old, size)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=8))
def test_appends_keep_the_tree_equal_to_the_recomputed_one(batches: list[int]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "l.sqlite"
        with Ledger(path) as ledger:
            n = 0
            for b in batches:
                ledger.append_many(receipts(n, b), KEY)
                n += b
                want = list(stt.expected_hashes(ledger.leaf_hashes()))
                assert stored(path) == want
                tree = ledger.tree()
                assert isinstance(tree, stt.StoredTree)
                mem = MerkleTree(ledger.leaf_hashes())
                assert [tree.root(s) for s in range(n + 1)] == [mem.root(s) for s in range(n + 1)]
            assert ledger.checkpoint(KEY)[0].root == MerkleTree(ledger.leaf_hashes()).root()
            assert ledger.verify(KEYS, workers=1).ok


def test_checkpoint_and_proofs_read_log_n_rows(tmp_path: Path) -> None:
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.append_many(receipts(0, 1000), KEY)
        conn = ledger.rows
        reads: list[int] = []
        tree = stt.StoredTree(lambda ids: reads.append(len(ids)) or conn.read_hashes(ids), 1000)
        tree.root()
        tree.inclusion_proof(377)
        tree.consistency_proof(613)
        assert sum(reads) <= 3 * 10 * 10  # O(log n) rows each (log2 1000 ~ 10), not 1000 leaves


def test_a_corrupted_stored_hash_is_caught_by_verify(home: EvidenceHome) -> None:
    home.ledger.append_many(receipts(0, 21), home.signing_key())
    assert home.verify().ok
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    conn.execute("UPDATE merkle_hashes SET hash = ? WHERE id = 5", (b"\x00" * 32,))
    report = home.verify()
    assert not report.ok
    assert [f.detail for f in report.failures("tree")] == ["stored tree hash 5 (level 1) differs from the hash "
                                                          "of the receipts"]
    assert not report.failures("signature") and not report.failures("chain")


def test_a_missing_or_extra_stored_hash_is_caught(home: EvidenceHome) -> None:
    home.ledger.append_many(receipts(0, 9), home.signing_key())
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    conn.execute("DELETE FROM merkle_hashes WHERE id = 3")
    assert home.verify().failures("tree")[0].detail == "stored tree hash 3 (level 0) is missing"
    conn.execute("INSERT INTO merkle_hashes (id, hash) VALUES (3, ?)", (b"\x01" * 32,))
    assert home.verify().failures("tree")
    conn.execute("INSERT INTO merkle_hashes (id, hash) VALUES (99, ?)", (b"\x01" * 32,))
    assert "not that of a whole tree" in home.verify().failures("tree")[0].detail
    conn.execute("DELETE FROM merkle_hashes WHERE id = 99")
    conn.execute("DELETE FROM receipts WHERE seq = 9")  # rows removed from the end, tree left
    assert any("rows removed from the end" in f.detail for f in home.verify().failures("tree"))
    with pytest.raises(LedgerError, match="stored Merkle tree does not match"):
        home.ledger.append_many(receipts(9, 1), home.signing_key())


def test_an_old_ledger_is_read_in_memory_and_upgraded_on_the_next_write(home: EvidenceHome) -> None:
    home.ledger.append_many(receipts(0, 6), home.signing_key())
    want = MerkleTree(home.ledger.leaf_hashes()).root()
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    conn.execute("DROP TABLE merkle_hashes")  # as a ledger made before the tree was kept
    tree = home.ledger.tree()
    assert isinstance(tree, MerkleTree) and tree.root() == want
    report = home.verify()
    assert report.ok and not report.of("tree")
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'merkle_hashes'").fetchone() is None
    home.ledger.append_many(receipts(6, 3), home.signing_key())
    assert stored(home.ledger.path) == list(stt.expected_hashes(home.ledger.leaf_hashes()))


@pytest.mark.parametrize("workers", [1, 2])
def test_range_verify_checks_what_spans_ranges(home: EvidenceHome, monkeypatch: pytest.MonkeyPatch,
                                               workers: int) -> None:
    monkeypatch.setattr(verify_ranges, "CHUNK", 8)
    home.ledger.append_many(receipts(0, 37), home.signing_key())
    report = home.ledger.verify(home.keys.trusted(), home.store, workers=workers)
    assert report.ok and report.rows == 37
    j = report.to_json()["checks"]
    assert j["signature"]["checked"] == j["chain"]["checked"] == 37
    assert j["tree"]["checked"] == 5 + 1  # one per range, and the hashes above the ranges
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    # a hash above one range (level 4 covers rows 1..16, two ranges of 8)
    good = conn.execute("SELECT hash FROM merkle_hashes WHERE id = ?", (stt.stored_hash_index(4, 0),)).fetchone()[0]
    conn.execute("UPDATE merkle_hashes SET hash = ? WHERE id = ?", (b"\x02" * 32, stt.stored_hash_index(4, 0)))
    bad = home.ledger.verify(home.keys.trusted(), home.store, workers=workers)
    assert [f.detail for f in bad.failures()] == [f"stored tree hash {stt.stored_hash_index(4, 0)} (level 4) "
                                                  "differs from the hash of the receipts"]
    conn.execute("UPDATE merkle_hashes SET hash = ? WHERE id = ?", (good, stt.stored_hash_index(4, 0)))
    # a chain break exactly at a range boundary (row 17 opens the third range)
    conn.execute("UPDATE receipts SET prev_hash = ? WHERE seq = 17", (GENESIS,))
    bad = home.ledger.verify(home.keys.trusted(), home.store, workers=workers)
    assert {(f.check, f.seq) for f in bad.failures()} == {("chain", 17)}
    assert any("prev_hash does not match the row before" in f.detail for f in bad.failures())


def test_range_verify_rebuilt_chain_still_fails_on_signature(home: EvidenceHome,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_ranges, "CHUNK", 4)
    home.ledger.append_many(receipts(0, 10), home.signing_key())
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = 6").fetchone()[0]
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 6", (text.replace('"byte_count":5', '"byte_count":6'),))
    prev = GENESIS
    for seq, t in conn.execute("SELECT seq, receipt FROM receipts ORDER BY seq").fetchall():
        h = entry_hash(seq, prev, t.encode())
        conn.execute("UPDATE receipts SET prev_hash = ?, entry_hash = ? WHERE seq = ?", (prev, h, seq))
        prev = h
    bad = home.ledger.verify(home.keys.trusted(), workers=2)
    # the leaf of row 6 and the subtrees it is in (closed by rows 6 and 8, and above the ranges)
    assert {(f.check, f.seq) for f in bad.failures()} == {("signature", 6), ("tree", 6), ("tree", 8), ("tree", None)}
