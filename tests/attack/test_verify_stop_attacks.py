"""Attacks on cb09795: the server's verify runs ``home.verify(workers=1)`` and ``_collect`` wakes only on the main
thread; on any exception ``_end_workers`` kills the range workers. A verify in this process must give the verdicts
the pool gives on a tampered ledger, a range's error must still reach the caller (from the main thread or another
one), and no range worker may be left running after it."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from typing import Any

import pytest

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger import stored_tree as stt
from g6.ledger.verification import verify_ranges
from g6.serve.views import VerifyStatus

ROWS = 300


def _fill(home: EvidenceHome) -> None:
    rows = [Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i) for i in range(ROWS)]
    home.ledger.append_many(rows, home.signing_key())


def _tamper(home: EvidenceHome) -> None:
    """A chain break at a range's first row, an edited receipt body mid-range, a row removed and a stored tree hash
    changed: each a failure some range, or what spans ranges, must report."""
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    try:
        conn.execute("UPDATE receipts SET prev_hash = prev_hash || 'x' WHERE seq = 33")
        conn.execute("UPDATE receipts SET receipt = replace(receipt, 'e.org/70\"', 'e.org/71\"') WHERE seq = 71")
        conn.execute("DELETE FROM receipts WHERE seq = 150")
        conn.execute("UPDATE merkle_hashes SET hash = ? WHERE id = ?", (b"\x02" * 32, stt.stored_hash_index(6, 0)))
    finally:
        conn.close()


def _verdicts(report: Any) -> tuple[bool, dict[str, bool], set[tuple[str, int | None]]]:
    """The verdict, each check's verdict, and the rows the signature and chain checks flag. (The details, and the
    tree check's rows, follow the range size, which differs between one process and a pool: a row count or a
    message may be worded per range, never a verdict.)"""
    d = report.to_json()
    rows = {(f.check, f.seq) for name in ("signature", "chain") for f in report.failures(name)}
    return report.ok, {k: bool(v["ok"]) for k, v in d["checks"].items()}, rows


def test_a_verify_in_this_process_gives_the_pools_verdicts_on_a_tampered_ledger(
        home: EvidenceHome, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify_ranges, "CHUNK", 64)  # several ranges either way: 64 rows here, 8 in the pool
    monkeypatch.setattr(verify_ranges, "MIN_CHUNK", 8)
    monkeypatch.setattr(verify_ranges, "default_workers", lambda: 2)  # as on a machine of two cores or more
    _fill(home)
    _tamper(home)
    pooled, here = home.verify(), home.verify(workers=1)
    assert not here.ok and pooled.failures("tree") and here.failures("tree")
    assert _verdicts(here) == _verdicts(pooled)
    status = VerifyStatus()  # the server's verify: the same verdict
    status.run(home)
    snap = status.snapshot(ROWS)
    assert snap["status"] == "failed"
    by_name = {c["name"]: c["ok"] for c in snap["checks"]}
    assert by_name == _verdicts(here)[1]


class _RangeBroke(RuntimeError):
    pass


def _broken_worker(*args: Any) -> Any:
    if args[3] > 1:  # every range but the first raises
        raise _RangeBroke(f"range from {args[3]} broke")
    return _real_worker(*args)


_real_worker = verify_ranges._worker


@pytest.mark.parametrize("on_main", [True, False])
def test_a_ranges_error_reaches_the_caller_and_leaves_no_worker(home: EvidenceHome, monkeypatch: pytest.MonkeyPatch,
                                                                on_main: bool) -> None:
    """The error of one range is raised to the caller (the main thread's wait wakes every WAKE, another thread's
    waits without waking: both must see it) and ``_end_workers`` leaves no range worker running."""
    monkeypatch.setattr(verify_ranges, "CHUNK", 64)
    monkeypatch.setattr(verify_ranges, "MIN_CHUNK", 8)
    monkeypatch.setattr(verify_ranges, "_worker", _broken_worker)  # the pool's workers are forked, so they have it
    _fill(home)
    got: list[BaseException | None] = []

    def run() -> None:
        try:
            with EvidenceHome(home.root) as own:  # a home of this thread's own, as the server's background verify
                own.verify(workers=2)
            got.append(None)
        except BaseException as e:  # noqa: BLE001 - what the test looks at
            got.append(e)

    if on_main:
        run()
    else:
        t = threading.Thread(target=run)
        t.start()
        t.join(120)
        assert not t.is_alive(), "a verify on another thread never ended after a range's error"
    assert len(got) == 1 and got[0] is not None, "a range's error was not raised"
    assert "broke" in str(got[0]) or isinstance(got[0], _RangeBroke), got[0]
    # every child ends: a range worker left running would be listed for good. A killed one closes its sentinel pipe a
    # moment before the kernel lets it be reaped, so join() can return with it still listed: looked at again, in steps
    pause = threading.Event()
    for _ in range(600):  # 30 s at most
        if not multiprocessing.active_children():  # reaps the ended ones: any still listed is alive
            break
        pause.wait(0.05)
    assert multiprocessing.active_children() == []
