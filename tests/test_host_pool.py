"""The host pool's backlog: hosts stop when the caller stops taking results, and end when it stops early.

No timing is asserted: each wait below is for a state the pool must reach (a thread blocked waiting for
room, every thread ended), with a generous limit only so that a broken pool fails instead of hanging.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator

from g6.fetch.host_pool import per_host, per_host_groups

LIMIT = 60.0  # seconds: only a broken pool gets near it


def _waiting_for_room(thread: threading.Thread) -> bool:
    """Whether ``thread`` is blocked in a semaphore's ``acquire`` (the pool's wait for room)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "acquire" and frame.f_code.co_filename == threading.__file__:
            return True
        frame = frame.f_back
    return False


def _wait_for(cond, what: str) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + LIMIT
    while not cond():
        assert time.monotonic() < end, f"the pool never reached: {what}"
        time.sleep(0.005)


class _Work:
    """Counts the items started, remembers the threads they ran on, flags the last item."""

    def __init__(self, n: int) -> None:
        self.n, self.started, self.threads = n, 0, set()
        self.lock = threading.Lock()
        self.reached_end = threading.Event()

    def __call__(self, item: int) -> int:
        with self.lock:
            self.started += 1
            self.threads.add(threading.current_thread())
        if item == self.n - 1:
            self.reached_end.set()
        return item


def test_hosts_stop_when_the_caller_stops_taking_results() -> None:
    n, backlog = 1000, 5
    work = _Work(n)
    results = per_host(range(n), lambda i: "one-host", work, workers=1, backlog=backlog)
    try:
        first = next(results)
        assert first[0] == 0
        # the one host thread may start the taken item plus `backlog` more, then must wait for room
        _wait_for(lambda: work.reached_end.is_set()
                  or (work.started == 1 + backlog and any(_waiting_for_room(t) for t in work.threads)),
                  "the host waiting for room after 1 + backlog items")
        assert not work.reached_end.is_set(), "the host fetched the whole list while nobody took results"
        assert work.started == 1 + backlog
        # taking one more result lets exactly one more item start
        next(results)
        _wait_for(lambda: work.started == 2 + backlog and any(_waiting_for_room(t) for t in work.threads),
                  "one more item after one more result was taken")
        assert work.started == 2 + backlog
    finally:
        results.close()


def test_a_caller_that_stops_early_ends_every_host_waiting_for_room() -> None:
    # more hosts than threads, each thread waiting for room when the caller stops: close() must
    # return (no thread left waiting for ever) and no further item starts
    n_hosts, per, backlog = 12, 50, 3
    items = [(h, i) for h in range(n_hosts) for i in range(per)]
    work = _Work(len(items))
    results = per_host(items, lambda it: f"host{it[0]}", work, workers=4, backlog=backlog)
    next(results)
    _wait_for(lambda: work.started == 1 + backlog
              and sum(_waiting_for_room(t) for t in work.threads) >= 1, "hosts waiting for room")
    done = threading.Event()

    def close() -> None:
        results.close()
        done.set()

    closer = threading.Thread(target=close, daemon=True)
    closer.start()
    closer.join(LIMIT)
    assert done.is_set(), "close() hung: a host thread was left waiting for room"
    assert work.started == 1 + backlog
    assert not any(t.is_alive() for t in work.threads)


def test_every_result_arrives_with_a_small_backlog() -> None:
    items = [(h, i) for h in range(7) for i in range(40)]
    got = sorted(it for it, _, _ in per_host(items, lambda it: str(it[0]), lambda it: it, workers=3, backlog=2))
    assert got == sorted(items)


def test_per_host_groups_starts_a_host_before_the_next_is_listed() -> None:
    """A re-check verifies the next host's citations while the hosts listed before it fetch: the
    first host's work must run before the caller has listed the second (eagerly taking every list
    first would never set ``started``)."""
    started = threading.Event()
    seen_started: list[bool] = []

    def groups() -> Iterator[list[str]]:
        yield ["a1", "a2"]
        seen_started.append(started.wait(60))
        yield ["b1"]

    def work(it: str) -> str:
        started.set()
        return it.upper()

    out = list(per_host_groups(groups(), work, workers=2))
    assert seen_started == [True]
    assert sorted((it, res) for it, res, _ in out) == [("a1", "A1"), ("a2", "A2"), ("b1", "B1")]


def test_hosts_take_turns_one_item_each_and_each_host_keeps_its_order() -> None:
    """With one thread, three hosts of three items run a, b, c, a, b, c, a, b, c: a host waits for one item of
    each other host, never for another host's whole list (ten hosts on eight threads, the last two hosts would
    otherwise start only once two others had ended)."""
    items = [(h, i) for h in "abc" for i in range(3)]
    ran: list[tuple[str, int]] = []
    out = list(per_host(items, lambda it: it[0], lambda it: ran.append(it) or it, workers=1))
    assert ran == [(h, i) for i in range(3) for h in "abc"]
    assert [it for it, _, _ in out] == ran


def test_a_host_never_has_two_items_under_way() -> None:
    """More threads than hosts: each host still has at most one item running, and its items run in order. Each
    item waits until every thread has had the chance to start another (a barrier that times out when they
    cannot: a broken pool would let a second item of a host start there)."""
    items = [(h, i) for h in range(3) for i in range(6)]
    running: dict[int, int] = dict.fromkeys(range(3), 0)
    most: dict[int, int] = dict.fromkeys(range(3), 0)
    order: dict[int, list[int]] = {h: [] for h in range(3)}
    lock = threading.Lock()
    barrier = threading.Barrier(3, timeout=2)  # the three hosts' items meet; a fourth thread never would

    def work(it: tuple[int, int]) -> None:
        h, i = it
        with lock:
            running[h] += 1
            most[h] = max(most[h], running[h])
            order[h].append(i)
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            barrier.reset()
        with lock:
            running[h] -= 1

    list(per_host(items, lambda it: str(it[0]), work, workers=8))
    assert most == dict.fromkeys(range(3), 1)
    assert order == {h: list(range(6)) for h in range(3)}


# A process's SIGINT may be given by the kernel to any of its threads; its C handler then only notes it, and Python
# runs the noted handler when the main thread next runs Python code. ``_thread.interrupt_main`` from another thread
# does exactly that: so each wait below must wake on its own to let Ctrl-C end it. (In CI a batch's main thread,
# asleep on a render's result, ignored a Ctrl-C given to another thread until the render's deadline.)
_INTERRUPTED_WAIT = """
import _thread, sys, threading
import signal
# Ctrl-C as a terminal gives it: the test command may run with SIGINT ignored (a CI runner), which this
# process inherits, and then interrupt_main would do nothing
signal.signal(signal.SIGINT, signal.default_int_handler)
from concurrent.futures import Future

from g6.fetch import host_pool

released = threading.Event()  # what the main thread waits for, given only at the limit: a wait not woken fails

def main_waits():  # asleep in the wait under test (not, say, in a thread's start, which waits too)
    frame = sys._current_frames().get(threading.main_thread().ident)
    if frame is None or frame.f_code.co_name not in ("wait", "select", "poll"):
        return False
    names = []
    while frame is not None and len(names) < 4:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return bool({{"get", "result", "waited", "_taken", "_drain"}} & set(names))

given_up = threading.Event()  # the interrupt did not end the wait: the limit did

def interrupt_once_waiting():
    while not main_waits():
        given_up.wait(0.005)
    _thread.interrupt_main()  # the signal noted by a thread that is not the main one
    if not released.wait({limit}):
        given_up.set()
        released.set()

def work(item):
    released.wait()
    return item

what = sys.argv[1]
try:
    if what == "future":
        f = Future()
        threading.Thread(target=interrupt_once_waiting, daemon=True).start()
        threading.Thread(target=lambda: (released.wait(), f.set_result(1)), daemon=True).start()
        host_pool.waited(f)
    elif what == "threads":
        threading.Thread(target=interrupt_once_waiting, daemon=True).start()
        for _ in host_pool.per_host([1], str, work, on_stop=released.set):
            pass
    else:
        pool = host_pool.per_host_processes([1, 2], str, lambda item: threading.Event().wait({limit}), 2, 2)
        threading.Thread(target=interrupt_once_waiting, daemon=True).start()
        try:
            for _ in pool:
                pass
        finally:
            pool.close()
    print("the wait ended without the interrupt")
except KeyboardInterrupt:
    print("interrupted only once the wait ended" if given_up.is_set() else "interrupted")
"""


def test_ctrl_c_noted_by_another_thread_ends_the_callers_wait() -> None:
    import subprocess

    for what in ("future", "threads", "processes"):
        r = subprocess.run([sys.executable, "-c", _INTERRUPTED_WAIT.format(limit=LIMIT), what], capture_output=True,
                           text=True, timeout=LIMIT * 3)
        assert r.stdout.strip() == "interrupted" and r.returncode == 0, (what, r.stdout, r.stderr)
