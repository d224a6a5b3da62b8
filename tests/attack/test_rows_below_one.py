"""Finding F1 of the outsider attack: a row planted at seq <= 0 was never checked by verify (it walks
1..head) yet was served by ``Ledger.get``, ``receipt show`` and ``ledger list``, and verify said ok.
Now verify fails on any row outside 1..head, and reading refuses such a row."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.cli import cli
from g6.errors import LedgerError
from g6.home import EvidenceHome
from g6.ledger import Receipt
from tests.attack._ledger_fixture import KEYS, attacker, ledger_with


def _forged_text(led_conn, rid: str) -> str:  # type: ignore[no-untyped-def]
    """A receipt the key never signed: row 3's text with another URL and receipt id (its old
    signature kept, so it even looks signed)."""
    data = json.loads(led_conn.execute("SELECT receipt FROM receipts WHERE seq = 3").fetchone()[0])
    data["request"]["url"] = "https://evil.example/planted"
    data["receipt_id"] = rid
    return json.dumps(data)


@pytest.mark.parametrize("seq", [0, -7])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_row_below_seq_1_fails_verify(tmp_path: Path, seq: int, workers: int) -> None:
    led = ledger_with(tmp_path, 600)  # > one range on 2 workers, and a signed checkpoint
    conn = attacker(led)
    rid = "rcpt_FORGED0000000000000000000"
    text = _forged_text(conn, rid)
    conn.execute("INSERT INTO receipts (seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash)"
                 " VALUES (?, ?, 'fetch', 'ok', ?, ?, 'junk', 'junk')",
                 (seq, rid, json.loads(text)["fetched_at"], text))
    # the planted receipt is never served as part of the ledger ...
    with pytest.raises(LedgerError, match="outside its sequence"):
        led.get(rid)
    with pytest.raises(LedgerError, match="outside its sequence"):
        list(led.entries())
    assert len(led) == 601
    # ... and verify does not say "ok" over a ledger holding a row it never looked at
    report = led.verify(KEYS, workers=workers)
    assert not report.ok, f"verify said ok over {len(led)} rows having checked {report.rows}"
    bad = [c for c in report.checks if not c.ok]
    assert any(c.check == "chain" and "outside 1..head" in c.detail for c in bad), bad


def test_cli_verify_fails_when_receipt_show_serves_an_unchecked_row(tmp_path: Path) -> None:
    run = CliRunner().invoke
    g6home = tmp_path / "h"
    home = EvidenceHome(g6home, fsync=False)
    home.keys.init()
    rs = []
    for i in range(20):
        ref = home.store.put(f"body {i}".encode())
        rs.append(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                          outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size, content=ref.to_json()))
    home.ledger.append_many(rs, home.signing_key())
    home.ledger.checkpoint(home.signing_key())
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    rid = "rcpt_FORGED0000000000000000000"
    text = _forged_text(conn, rid)
    conn.execute("INSERT INTO receipts (seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash)"
                 " VALUES (0, ?, 'fetch', 'ok', ?, ?, 'junk', 'junk')", (rid, json.loads(text)["fetched_at"], text))
    shown = run(cli, ["--home", str(g6home), "receipt", "show", rid])
    assert shown.exit_code == 1 and "evil.example" not in shown.output, shown.output  # never served
    r = run(cli, ["--home", str(g6home), "ledger", "verify", "--json"])
    assert r.exit_code == 1, r.output
