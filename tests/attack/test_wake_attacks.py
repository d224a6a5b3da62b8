"""Attack round on e69503e (the calling thread's waits wake every ``WAKE`` s) and 0b540ec (settled lines marked on
file once appended).

A wait that wakes must not turn into a busy loop (a future already done with an error or cancelled, a queue, every
worker process gone), nor change what is returned or in which order."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import CancelledError, Future
from typing import Any

import pytest

from g6.fetch import host_pool
from g6.fetch.host_pool import WAKE, per_host, waited


class _Counted:
    """``host_pool``'s future wait, counting its calls and the timeouts asked for."""

    def __init__(self, real: Any) -> None:
        self.real, self.timeouts = real, []

    def __call__(self, fs: Any, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        return self.real(fs, timeout)


def test_waited_on_a_failed_or_cancelled_future_raises_at_once_and_never_spins(monkeypatch: pytest.MonkeyPatch,
                                                                              ) -> None:
    counted = _Counted(host_pool.wait_for_futures)
    monkeypatch.setattr(host_pool, "wait_for_futures", counted)
    failed: Future[int] = Future()
    failed.set_exception(ValueError("the fetch's own error"))
    with pytest.raises(ValueError, match="the fetch's own error"):
        waited(failed)
    cancelled: Future[int] = Future()
    cancelled.cancel()
    with pytest.raises(CancelledError):
        waited(cancelled)
    assert counted.timeouts == []  # done already: not waited on at all
    # one pending until another thread ends it with an error: each wait is a bounded sleep, never a zero timeout
    later: Future[int] = Future()
    go = threading.Event()
    t = threading.Thread(target=lambda: (go.wait(), later.set_exception(KeyError("late"))))
    t.start()
    real = counted.real

    def first_then_release(fs: Any, timeout: float | None = None) -> Any:
        counted.timeouts.append(timeout)
        go.set()
        return real(fs, timeout)

    monkeypatch.setattr(host_pool, "wait_for_futures", first_then_release)
    with pytest.raises(KeyError):
        waited(later)
    t.join()
    assert counted.timeouts and all(x == WAKE for x in counted.timeouts)
    assert not later._waiters  # type: ignore[attr-defined]  # every step's waiter taken off again: no leak per wake


def test_per_host_results_and_their_order_are_unchanged_by_the_waking_take() -> None:
    items = [(h, i) for h in range(4) for i in range(25)]
    got = [it for it, _res, _more in per_host(items, lambda it: str(it[0]), lambda it: it, workers=4, backlog=3)]
    assert sorted(got) == sorted(items)
    for h in range(4):
        assert [i for hh, i in got if hh == h] == list(range(25))


_ALL_DIE = """
import os, sys
from g6.fetch.host_pool import per_host_processes, WorkerLost

def work(item):
    os._exit(3)  # every worker process dies at its first item

pool = per_host_processes([(h, i) for h in range(4) for i in range(3)], lambda it: str(it[0]), work, 4, 2)
try:
    got = [(it, type(res).__name__) for it, res, _more in pool]
finally:
    pool.close()
print(len(got), sorted({name for _it, name in got}), sorted(it for it, _n in got) == sorted(
    (h, i) for h in range(4) for i in range(3)))
"""


def test_every_worker_process_dead_ends_the_iteration_with_each_item_lost() -> None:
    """Workers._drain now waits in steps: with every worker gone (their pipes at EOF) it must still end, each item
    reported once as lost, and not wait on (nor spin) for a pipe that will never speak. The limit only bounds a
    hang (the run takes well under a second)."""
    r = subprocess.run([sys.executable, "-c", _ALL_DIE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "12 ['WorkerLost'] True", r.stdout
