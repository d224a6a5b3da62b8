"""Attacks on the host pool's turns (``g6.fetch.host_pool.per_host_groups``, commit 5888c0f): a thread runs one
item of the host at the front of the line, then puts that host at the back; a host is in the line only while none
of its items runs.

No timing is asserted: each wait is for a state the pool must reach (threads blocked on its condition, a closing
thread inside the executor's shutdown), with a generous limit only so that a broken pool fails instead of hanging.
Findings (each test failed on 5888c0f):

1. Every ``workers`` thread was started up front, whatever the number of hosts (``--concurrency 256`` for one
   host: 256 threads), and every item that ended woke every idle thread (``notify_all``): with two hosts and 256
   threads, 3,000 items of 1 ms took 4.3 s of CPU (0.09 s before the turns). Now a thread starts per host listed,
   up to ``workers``, as before, and a host put back wakes one thread.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from g6.fetch import host_pool
from g6.fetch.host_pool import per_host, per_host_groups

LIMIT = 60.0  # seconds: only a broken pool gets near it


def _wait_for(cond: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + LIMIT
    while not cond():
        assert time.monotonic() < end, f"the pool never reached: {what}"
        time.sleep(0.005)


def _in(thread: threading.Thread, name: str, filename: str) -> bool:
    """Whether ``thread`` is inside a function ``name`` of a file ending in ``filename`` right now."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == name and frame.f_code.co_filename.endswith(filename):
            return True
        frame = frame.f_back
    return False


class _Counting(threading.Condition):
    """The pool's condition, counting how often a waiting thread was woken, and how many wait now."""

    made: list[_Counting] = []

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.woken = 0
        _Counting.made.append(self)

    def wait(self, timeout: float | None = None) -> bool:
        got = super().wait(timeout)
        self.woken += 1
        return got

    def waiting(self) -> int:
        with self:
            return len(self._waiters)  # type: ignore[attr-defined]


class _Threading:
    """``threading`` as the pool sees it, with a counting condition."""

    Condition = _Counting

    def __getattr__(self, name: str) -> Any:
        return getattr(threading, name)


@pytest.fixture()
def counting(monkeypatch: pytest.MonkeyPatch) -> list[_Counting]:
    _Counting.made = []
    monkeypatch.setattr(host_pool, "threading", _Threading())
    return _Counting.made


def _pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("ThreadPoolExecutor-")}


# -- finding 1: threads and wake-ups ---------------------------------------------------------------------------------

def test_no_more_threads_than_hosts() -> None:
    """One host on 64 workers runs on one thread, as before the turns (64 threads started up front, 63 idle)."""
    before = _pool_threads()
    seen: list[int] = []

    def work(i: int) -> int:
        seen.append(len(_pool_threads() - before))
        return i

    assert sorted(it for it, _, _ in per_host(range(20), lambda i: "one", work, workers=64)) == list(range(20))
    assert max(seen) == 1
    two: list[int] = []
    list(per_host(range(20), lambda i: str(i % 2), lambda i: two.append(len(_pool_threads() - before)), workers=64))
    assert max(two) <= 2


def test_an_item_that_ends_wakes_one_idle_thread_not_all(counting: list[_Counting]) -> None:
    """Sixteen hosts on sixteen threads; fifteen have one item, so their threads are idle while the sixteenth
    host's 100 items run. Each of its items waits until those fifteen wait on the pool's condition: an item that
    ends must wake one of them (to take the host on), not all fifteen (which find nothing and sleep again)."""
    long, idle = 100, 15
    items = [("long", i) for i in range(long)] + [(f"short{h}", 0) for h in range(idle)]

    def work(it: tuple[str, int]) -> tuple[str, int]:
        if it[0] == "long":
            _wait_for(lambda: counting[0].waiting() >= idle, "the fifteen idle threads waiting")
        return it

    got = [it for it, _, _ in per_host(items, lambda it: it[0], work, workers=16)]
    assert sorted(got) == sorted(items)
    assert [it for it in got if it[0] == "long"] == [("long", i) for i in range(long)]
    woken = counting[0].woken
    assert woken <= 3 * len(items), f"{woken} wake-ups for {len(items)} items: every idle thread woken each time"


# -- guarantees that held; kept so that they hold ---------------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, 1, 3])
def test_no_items_no_hosts_and_empty_lists_end_at_once(workers: int) -> None:
    before = _pool_threads()
    assert list(per_host([], str, str, workers=workers)) == []
    assert list(per_host_groups([], str, workers=workers)) == []
    assert list(per_host_groups([[], [], []], str, workers=workers)) == []
    out = list(per_host_groups([[], ["a"], [], ["b", "c"], []], str.upper, workers=workers))
    assert sorted((it, res) for it, res, _ in out) == [("a", "A"), ("b", "B"), ("c", "C")]
    _wait_for(lambda: not (_pool_threads() - before), "every pool thread ended")


def test_an_error_from_the_lists_themselves_stops_every_host() -> None:
    """``groups`` raises after its first host started (a re-check's verification failing on the second host): the
    error reaches the caller, ``on_stop`` is called, no item of the first host starts after it, every thread ends."""
    before = _pool_threads()
    started: list[str] = []
    first_done = threading.Event()
    stops: list[bool] = []

    def groups() -> Iterator[list[str]]:
        yield ["a1", "a2", "a3"]
        assert first_done.wait(LIMIT)
        raise RuntimeError("the second host's list could not be made")

    gate = threading.Event()

    def work(it: str) -> str:
        started.append(it)
        if it == "a1":
            first_done.set()
            assert gate.wait(LIMIT)  # held until the pool has stopped: a2 must never start
        return it

    results = per_host_groups(groups(), work, workers=2, on_stop=lambda: stops.append(True))
    caller = threading.current_thread()
    releaser = threading.Thread(target=lambda: (
        _wait_for(lambda: _in(caller, "shutdown", "concurrent/futures/thread.py"), "the pool shutting down"),
        gate.set()), daemon=True)
    releaser.start()
    with pytest.raises(RuntimeError, match="second host"):
        next(results)
    releaser.join(LIMIT)
    assert stops == [True]
    assert started == ["a1"]
    assert not (_pool_threads() - before)


def test_an_early_stop_starts_no_item_and_ends_every_thread() -> None:
    """The caller closes the results while items run and other hosts wait in the line: once the pool has
    stopped, the items under way end and no new one starts (no thread is left waiting on the condition)."""
    before = _pool_threads()
    items = [(h, i) for h in range(6) for i in range(5)]
    started: list[tuple[int, int]] = []
    lock = threading.Lock()
    gate = threading.Event()

    def work(it: tuple[int, int]) -> tuple[int, int]:
        with lock:
            started.append(it)
        if it != (0, 0):
            assert gate.wait(LIMIT)
        return it

    results = per_host(items, lambda it: str(it[0]), work, workers=3)
    assert next(results)[0] == (0, 0)
    _wait_for(lambda: len(started) == 4, "the three threads busy again")  # (0,0), then three items held
    closer = threading.Thread(target=results.close, daemon=True)
    closer.start()
    _wait_for(lambda: _in(closer, "shutdown", "concurrent/futures/thread.py"), "the pool shutting down")
    under_way = list(started)
    gate.set()
    closer.join(LIMIT)
    assert not closer.is_alive(), "close() hung"
    assert started == under_way, "an item started after the stop"
    assert not (_pool_threads() - before)


def test_an_item_that_raises_leaves_its_host_in_turn() -> None:
    """An item's error is its result; the host's next items still run, in order, once each."""
    items = [("a", i) for i in range(4)] + [("b", i) for i in range(4)]
    ran: list[tuple[str, int]] = []

    def work(it: tuple[str, int]) -> tuple[str, int]:
        ran.append(it)
        if it[1] % 2 == 0:
            raise ValueError(str(it))
        return it

    out = list(per_host(items, lambda it: it[0], work, workers=1))
    assert ran == [(h, i) for i in range(4) for h in "ab"]
    assert [isinstance(res, ValueError) for _, res, _ in out] == [i % 2 == 0 for i in range(4) for _ in "ab"]


def test_many_hosts_every_item_once_each_host_in_order() -> None:
    """5,000 hosts of one to three items on eight threads: every item once, each host's in order."""
    items = [(h, i) for h in range(5000) for i in range(1 + h % 3)]
    order: dict[int, list[int]] = {}
    lock = threading.Lock()

    def work(it: tuple[int, int]) -> None:
        with lock:
            order.setdefault(it[0], []).append(it[1])

    got = [it for it, _, _ in per_host(items, lambda it: str(it[0]), work, workers=8)]
    assert len(got) == len(items) and set(got) == set(items)
    assert order == {h: list(range(1 + h % 3)) for h in range(5000)}


def test_a_host_listed_later_joins_the_turns_while_the_first_still_runs() -> None:
    """One thread: the first host's items are under way when the second host is listed; the second host takes
    its turn between them, it does not wait for the first host's whole list."""
    ran: list[str] = []
    listed_b = threading.Event()

    def groups() -> Iterator[list[str]]:
        yield ["a1", "a2", "a3"]
        yield ["b1"]
        listed_b.set()

    def work(it: str) -> str:
        if it == "a1":
            assert listed_b.wait(LIMIT)
        ran.append(it)
        return it

    out = [it for it, _, _ in per_host_groups(groups(), work, workers=1)]
    assert ran == ["a1", "b1", "a2", "a3"]
    assert sorted(out) == ["a1", "a2", "a3", "b1"]
