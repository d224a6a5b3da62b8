from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from g6.home import EvidenceHome
from g6.ledger import KeyDir, Ledger, Receipt, SigningKey
from g6.ledger.chain import GENESIS, entry_hash


def make_receipt(i: int, content: dict | None = None) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", content=content, byte_count=i)


def fill(home: EvidenceHome, n: int = 5) -> list[Receipt]:
    out = []
    for i in range(n):
        ref = home.store.put(f"body {i}".encode())
        out.append(home.record(make_receipt(i, ref.to_json())))
    return out


def raw(home: EvidenceHome) -> sqlite3.Connection:
    return sqlite3.connect(home.ledger.path, isolation_level=None)


def failures(home: EvidenceHome, check: str) -> list[str]:
    return [f.detail for f in home.verify().failures(check)]


def test_append_chains_rows_and_verifies(home: EvidenceHome) -> None:
    rs = fill(home)
    entries = list(home.ledger.entries())
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
    assert entries[0].prev_hash == GENESIS
    for a, b in zip(entries, entries[1:], strict=False):
        assert b.prev_hash == a.entry_hash
    assert home.ledger.get(rs[2].receipt_id) == rs[2]
    report = home.verify()
    assert report.ok and report.rows == 5
    assert len(report.of("signature")) == len(report.of("chain")) == len(report.of("blob")) == 5


def test_flipped_byte_in_blob_is_detected(home: EvidenceHome) -> None:
    rs = fill(home)
    p = home.store.path(rs[1].content["blake3"])
    data = bytearray(p.read_bytes())
    data[0] ^= 0x20
    p.write_bytes(bytes(data))
    report = home.verify()
    assert not report.ok
    assert [f.receipt_id for f in report.failures()] == [rs[1].receipt_id]
    assert report.failures()[0].check == "blob"


def test_missing_blob_is_detected(home: EvidenceHome) -> None:
    rs = fill(home)
    home.store.path(rs[0].content["blake3"]).unlink()
    assert failures(home, "blob") == [f"{rs[0].content['blake3']}: missing"]


def test_edited_row_breaks_signature_and_chain(home: EvidenceHome) -> None:
    rs = fill(home)
    conn = raw(home)
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = 3").fetchone()[0]
    d = json.loads(text)
    d["byte_count"] = 999
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 3", (json.dumps(d),))
    report = home.verify()
    assert [f.receipt_id for f in report.failures("signature")] == [rs[2].receipt_id]
    assert [f.seq for f in report.failures("chain")] == [3]


def test_edit_with_recomputed_hashes_still_fails_signature(home: EvidenceHome) -> None:
    """An editor who rewrites the whole chain cannot forge the signature."""
    fill(home)
    conn = raw(home)
    rows = conn.execute("SELECT seq, receipt FROM receipts ORDER BY seq").fetchall()
    prev = GENESIS
    for seq, text in rows:
        d = json.loads(text)
        if seq == 2:
            d["final_url"] = "https://evil.example/"
        body = Receipt.from_json(d).canonical_bytes(with_signature=True)
        h = entry_hash(seq, prev, body)
        conn.execute("UPDATE receipts SET receipt=?, prev_hash=?, entry_hash=? WHERE seq=?",
                     (body.decode(), prev, h, seq))
        prev = h
    report = home.verify()
    assert not report.failures("chain")
    assert [f.seq for f in report.failures("signature")] == [2]


def test_deleted_row_is_detected(home: EvidenceHome) -> None:
    fill(home)
    raw(home).execute("DELETE FROM receipts WHERE seq = 2")
    details = failures(home, "chain")
    assert len(details) == 1 and "jumps from 1 to 3" in details[0]


def test_inserted_row_is_detected(home: EvidenceHome) -> None:
    rs = fill(home)
    forged = make_receipt(99).signed(home.signing_key())
    conn = raw(home)
    conn.execute("UPDATE receipts SET seq = seq + 100 WHERE seq >= 3")
    conn.execute("UPDATE receipts SET seq = seq - 99 WHERE seq >= 100")
    body = forged.canonical_bytes(with_signature=True).decode()
    prev = conn.execute("SELECT entry_hash FROM receipts WHERE seq = 2").fetchone()[0]
    conn.execute("INSERT INTO receipts (seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash)"
                 " VALUES (3, ?, 'fetch', 'ok', ?, ?, ?, ?)",
                 (forged.receipt_id, forged.fetched_at, body, prev, entry_hash(3, prev, body.encode())))
    report = home.verify()
    assert report.rows == 6
    # the inserted row links to row 2, but the old row 3 (now 4) no longer links to it
    assert [f.seq for f in report.failures("chain")] == [4, 5, 6]
    assert rs[2].receipt_id in {f.receipt_id for f in report.failures("chain")}


def test_reordered_rows_are_detected(home: EvidenceHome) -> None:
    fill(home)
    conn = raw(home)
    conn.execute("UPDATE receipts SET seq = 100 WHERE seq = 2")
    conn.execute("UPDATE receipts SET seq = 2 WHERE seq = 3")
    conn.execute("UPDATE receipts SET seq = 3 WHERE seq = 100")
    bad = {f.seq for f in home.verify().failures("chain")}
    assert {2, 3} <= bad


def test_row_resigned_with_another_key_is_detected(home: EvidenceHome) -> None:
    rs = fill(home)
    intruder = SigningKey.generate()
    resigned = rs[1].signed(intruder)
    body = resigned.canonical_bytes(with_signature=True)
    conn = raw(home)
    prev = conn.execute("SELECT prev_hash FROM receipts WHERE seq = 2").fetchone()[0]
    conn.execute("UPDATE receipts SET receipt=?, entry_hash=? WHERE seq = 2",
                 (body.decode(), entry_hash(2, prev, body)))
    report = home.verify()
    sig = report.failures("signature")
    assert len(sig) == 1 and "unknown key" in sig[0].detail
    assert [f.seq for f in report.failures("chain")] == [3]


def test_truncated_database_file_is_detected(home: EvidenceHome, tmp_path: Path) -> None:
    fill(home, 40)
    home.ledger.close()
    path = home.ledger.path
    wal = Path(str(path) + "-wal")
    if wal.exists():  # fold the WAL in, so the truncation hits real pages
        c = sqlite3.connect(path)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        c.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    try:
        ledger = Ledger(path)
        report = ledger.verify(home.keys.trusted(), home.store)
        ledger.close()
        assert not report.ok
    except sqlite3.DatabaseError:
        pytest.fail("a truncated ledger must give a verdict, not an exception")
    assert report.failures("database") or report.failures("chain")
    for leftover in path.parent.glob(path.name + "*"):
        leftover.unlink()
    home.ledger = Ledger(path)  # a fresh ledger for the fixture's teardown


def _append_worker(root: str, n: int) -> None:
    home = EvidenceHome(root, fsync=False)
    for i in range(n):
        home.record(make_receipt(os.getpid() * 1000 + i))
    home.close()


def test_concurrent_processes_do_not_fork_the_chain(home: EvidenceHome) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append_worker, args=(str(home.root), 40)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    report = home.verify()
    assert report.ok and report.rows == 160
    seqs = [e.seq for e in home.ledger.entries()]
    assert seqs == list(range(1, 161))


def test_append_many_is_one_transaction(home: EvidenceHome) -> None:
    key = home.signing_key()
    home.ledger.append_many([make_receipt(i) for i in range(10)], key)
    dup = make_receipt(100)
    with pytest.raises(sqlite3.IntegrityError):
        home.ledger.append_many([dup, make_receipt(101), dup], key)
    assert len(home.ledger) == 10
    assert home.verify().ok


def test_key_dir_permissions_and_rotation(tmp_path: Path) -> None:
    kd = KeyDir(tmp_path / "keys")
    first = kd.init()
    assert (kd.signing_path.stat().st_mode & 0o777) == 0o600
    with pytest.raises(Exception, match="exists already"):
        kd.init()
    second = kd.init(force=True)
    assert set(kd.trusted()) == {first.key_id, second.key_id}
    assert kd.load_signing().key_id == second.key_id


def test_fast_signature_path_agrees_with_the_slow_one(home: EvidenceHome) -> None:
    from g6.ledger.receipts import unsigned_bytes_of_stored

    rs = fill(home, 3)
    conn = raw(home)
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = 2").fetchone()[0]
    data = json.loads(text)
    assert unsigned_bytes_of_stored(text, data) == rs[1].canonical_bytes()
    # the same receipt stored non-canonically (keys reordered): no fast path, and both the chain and the
    # signature flag it (a stored text is never rebuilt into what was signed: see test_unsigned_members_fail)
    reordered = json.dumps(dict(reversed(list(data.items()))))
    assert unsigned_bytes_of_stored(reordered, json.loads(reordered)) is None
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 2", (reordered,))
    report = home.verify()
    assert [f.seq for f in report.failures("signature")] == [2] and [f.seq for f in report.failures("chain")] == [2]
    # a signature member planted inside another object is not taken for the real one
    planted = dict(data, detail={"schema": "runx.receipt.v1", "signature": data["signature"]})
    import rfc8785

    ptext = rfc8785.dumps(planted).decode()
    derived = unsigned_bytes_of_stored(ptext, planted)
    assert derived is not None and b'"detail":{"schema"' in derived
    assert not Receipt.from_json(planted).verify_signature(home.keys.trusted(), message=derived)[0]


@pytest.mark.parametrize("where", ["top", "hop", "allowlist", "signature"])
def test_unsigned_members_fail(home: EvidenceHome, where: str) -> None:
    """An attacker with the ledger file but no key adds a member the receipt type does not know (at the
    top, in a hop, in the allowlist, in the signature object) and re-hashes the chain. Rebuilding the
    receipt would drop the member and verify; the stored text is what leaves and proofs cover, so the
    row must fail its signature check instead."""
    import rfc8785

    from g6.ledger.chain import entry_hash

    fill(home, 3)
    conn = raw(home)
    seq, text, prev = conn.execute("SELECT seq, receipt, prev_hash FROM receipts WHERE seq = 3").fetchone()
    data = json.loads(text)
    if where == "top":
        data["note"] = "unsigned words"
    elif where == "hop":
        data["hops"] = [dict(data["hops"][0] if data["hops"] else {"url": "https://e.org/", "status": 200,
                                                                    "connected_address": "192.0.2.1"},
                             note="unsigned words")]
    elif where == "allowlist":
        data["allowlist"] = dict(data["allowlist"], note="unsigned words")
    else:
        data["signature"] = dict(data["signature"], note="unsigned words")
    forged = rfc8785.dumps(data)
    conn.execute("UPDATE receipts SET receipt = ?, entry_hash = ? WHERE seq = 3",
                 (forged.decode(), entry_hash(seq, prev, forged)))
    conn.execute("DELETE FROM merkle_hashes")
    report = home.verify()
    assert [f.seq for f in report.failures("signature")] == [3], report.failures()
