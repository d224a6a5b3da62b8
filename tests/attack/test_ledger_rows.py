"""Attacker with write access to the ledger file (no key): rows planted where verify does look."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.attack._ledger_fixture import KEYS, attacker, ledger_with


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("seq", [601, 1000])
def test_a_planted_row_after_the_head_fails_verify(tmp_path: Path, workers: int, seq: int) -> None:
    led = ledger_with(tmp_path, 600)
    conn = attacker(led)
    data = json.loads(conn.execute("SELECT receipt FROM receipts WHERE seq = 3").fetchone()[0])
    data["request"]["url"] = "https://evil.example/planted"
    data["receipt_id"] = "rcpt_FORGED0000000000000000000"
    conn.execute("INSERT INTO receipts (seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash)"
                 " VALUES (?, ?, 'fetch', 'ok', ?, ?, 'junk', 'junk')",
                 (seq, data["receipt_id"], data["fetched_at"], json.dumps(data)))
    assert not led.verify(KEYS, workers=workers).ok
