"""A server's verify (``g6 serve``'s, the MCP server's ``ledger_verify`` tool) runs in its own process, on the thread
that asked: never on a pool of worker processes.

The server never waits for a verify when it stops; a pool's teardown cut by the interpreter's exit left a semaphore
of the pool's named on stderr (``resource_tracker: There appear to be 1 leaked semaphore objects``), which failed the
clean-stop check of ``tests/serve/test_tlog.py`` in 4 runs of 10."""

from __future__ import annotations

import pytest

from g6.config import Settings
from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.verification import verify_ranges
from g6.mcp.context import ToolContext
from g6.mcp.tools_ledger import ledger_verify
from g6.serve.views import VerifyStatus


def _pools_counted(home: EvidenceHome, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """600 receipts in ``home``; the list each pool of range workers started is counted in."""
    rows = [Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED") for i in range(600)]
    home.ledger.append_many(rows, home.signing_key())
    pools: list[int] = []
    real = verify_ranges._ranges_in_workers

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        pools.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_ranges, "_ranges_in_workers", counted)
    monkeypatch.setattr(verify_ranges, "default_workers", lambda: 2)  # as on a machine of two cores or more
    assert home.verify().ok and pools == [1]  # `g6 ledger verify` (the same home) uses the cores
    return pools


def test_the_servers_verify_uses_no_worker_process(home: EvidenceHome, monkeypatch: pytest.MonkeyPatch) -> None:
    pools = _pools_counted(home, monkeypatch)
    status = VerifyStatus()
    status.run(home)
    assert status.snapshot(600)["status"] == "ok"
    assert pools == [1]  # the server's verify added no pool


def test_the_mcp_servers_verify_uses_no_worker_process(home: EvidenceHome, monkeypatch: pytest.MonkeyPatch) -> None:
    pools = _pools_counted(home, monkeypatch)
    ctx = ToolContext(Settings(home=home.root), frozenset())
    reply = ledger_verify(ctx)
    assert reply["ok"] is True and reply["rows"] == 600, reply
    assert pools == [1]  # the tool added no pool
