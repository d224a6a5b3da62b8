"""A small real ledger for the attack tests, and the attacker's one tool: SQL on the ledger file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from g6.ledger import Ledger, Receipt, SigningKey

KEY = SigningKey.generate()
KEYS = {KEY.key_id: KEY.public}


def receipts(start: int, n: int) -> list[Receipt]:
    return [Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i) for i in range(start, start + n)]


def ledger_with(tmp_path: Path, n: int, *, checkpoint: bool = True) -> Ledger:
    led = Ledger(tmp_path / "l.sqlite")
    led.append_many(receipts(0, n), KEY)
    if checkpoint:
        led.checkpoint(KEY)
    return led


def attacker(led: Ledger) -> sqlite3.Connection:
    """Write access to the ledger file, no signing key."""
    return sqlite3.connect(led.path, isolation_level=None)
