"""Hosts in parallel, one request at a time per host: the worker pool re-check and batch fetch share.

Items are grouped by host; each host's items run in order, one at a time (so the checked client's
per-host pause and robots rules hold), and up to ``workers`` hosts run at once, taking turns. Results
come back to the calling thread as they finish, so it alone writes receipts, run files and output.

``per_host_processes`` does the same over several forked processes (one GIL each): the hosts are
shared out among them, each runs ``per_host`` over its own, and results come back over a pipe.
``fork_workers`` forks the processes first and takes the hosts as they come (``Workers.give``), for a
caller that decides each host's list (verifying it, say) while the first hosts already fetch.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from g6.adapters.net.urls import normalise_url
from g6.errors import G6Error, WorkerLost

T = TypeVar("T")  # an item is never hashed: a worker process reports it by the place it was given at
R = TypeVar("R")


def host_of(url: str) -> str:
    """The host ``url`` is fetched from, as the checked client names it (``normalise_url``): so
    ``127.0.0.2``, ``127.0.0.2.`` and ``127.2`` are one host, one worker, one request at a time."""
    try:
        return normalise_url(url).host
    except (ValueError, UnicodeError, TypeError):  # URLError is a ValueError
        return ""  # an unparseable URL: its own group; the checked client rejects it with a typed outcome


def _by_host(items: Iterable[T], host: Callable[[T], str]) -> list[list[T]]:
    groups: dict[str, list[T]] = defaultdict(list)
    for it in items:
        groups[host(it)].append(it)
    return list(groups.values())


BACKLOG = 256  # results done or under way that the caller has not taken yet, at most

# How often a wait in the calling thread wakes, seconds. Python runs a signal's handler (Ctrl-C's KeyboardInterrupt)
# only in the main thread, and a main thread asleep on a lock or a pipe is woken only by a signal the kernel gives to
# it. The kernel may give a process's SIGINT to another of its threads instead (one starting a thread at that moment,
# more often on a busy machine): its C handler then only notes the signal, and the main thread slept on until what it
# waited for ended (in CI, a batch's render: g6 ignored Ctrl-C for its 600 s deadline). Waking at each step, the main
# thread runs the noted handler within one step. A wait that wakes is no slower: it still returns as its result comes.
WAKE = 0.5


def waited(f: Future[R]) -> R:
    """``f.result()``, waiting in steps of :data:`WAKE` so that Ctrl-C still ends the wait (see ``WAKE``)."""
    while not f.done():
        wait_for_futures((f,), WAKE)
    return f.result()


def _taken(q: queue.Queue[Any]) -> Any:
    """``q.get()``, waiting in steps of :data:`WAKE` so that Ctrl-C still ends the wait (see ``WAKE``)."""
    while True:
        try:
            return q.get(timeout=WAKE)
        except queue.Empty:
            continue


def per_host(items: Iterable[T], host: Callable[[T], str], work: Callable[[T], R],
             workers: int = 8, backlog: int = BACKLOG,
             on_stop: Callable[[], None] | None = None) -> Iterator[tuple[T, R | BaseException, bool]]:
    """Yield ``(item, work(item) or the exception it raised, more_ready)`` in completion order;
    ``more_ready`` says another result is already waiting (a caller batching writes can wait).

    At most ``backlog`` items are under way or done and not yet taken: a caller that stops taking
    (its output blocked, a worker process whose parent stops reading) stops the hosts too, instead
    of them fetching the rest of the list into memory. A caller that stops early (an error, Ctrl-C) has
    ``on_stop()`` called before the items under way are waited for: what they still do is not the caller's."""
    return per_host_groups(_by_host(items, host), work, workers, backlog, on_stop)


def per_host_groups(groups: Iterable[list[T]], work: Callable[[T], R], workers: int = 8,
                    backlog: int = BACKLOG,
                    on_stop: Callable[[], None] | None = None) -> Iterator[tuple[T, R | BaseException, bool]]:
    """:func:`per_host` over items already grouped, one list per host (each host in one list only).
    ``groups`` is taken lazily, one list at a time: a host starts as soon as its list is there, so a
    caller can still be deciding what the next host is asked for while the first ones fetch.

    The hosts take turns: a thread runs one item of the host whose turn it is, then puts that host at the back
    of the line and takes the next one. A host is in the line only while none of its items is under way, so it
    is still asked one request at a time and its items run in order; but no host waits for another host's whole
    list, as it would if each thread kept a host to its end (ten hosts on eight threads: the last two would start
    only when two others had finished, and end alone). A thread is started per host listed, up to ``workers``."""
    n = 0
    results: queue.Queue[tuple[T, R | BaseException]] = queue.Queue()
    stop = threading.Event()  # set when the caller stops early (an error, Ctrl-C): no new item starts
    room = threading.Semaphore(max(1, backlog))  # one per item started; given back as its result is taken
    turn = threading.Condition()  # guards ``line``, ``listed`` and ``under_way``
    line: deque[deque[T]] = deque()  # the hosts whose next item may start, in turn order
    listed = False  # every host's list has been taken from ``groups``
    under_way = 0  # hosts with an item running now

    def next_host() -> deque[T] | None:
        nonlocal under_way
        with turn:
            turn.wait_for(lambda: bool(line) or stop.is_set() or (listed and not under_way))
            if stop.is_set() or not line:
                return None
            under_way += 1
            return line.popleft()

    def run() -> None:
        nonlocal under_way
        while (host := next_host()) is not None:
            it = host.popleft()
            room.acquire()
            started = not stop.is_set()
            if started:
                try:
                    results.put((it, work(it)))
                except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                    results.put((it, e))
            else:
                room.release()  # passed on: the next host waiting for room wakes and ends too
            with turn:
                under_way -= 1
                if host and started:
                    line.append(host)
                    turn.notify()  # one thread takes it; waking every idle one cost each item a wake-up per thread
                elif listed and not line and not under_way:
                    turn.notify_all()  # nothing left: the idle threads end
            if not started:
                return

    threads = max(1, workers)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        try:
            hosts = 0
            for batch in groups:
                if batch:
                    n += len(batch)
                    if hosts < threads:  # a thread per host, as many as there are hosts, up to ``workers``
                        pool.submit(run)
                        hosts += 1
                    with turn:
                        line.append(deque(batch))
                        turn.notify()
            with turn:
                listed = True
                turn.notify_all()
            for _ in range(n):
                it, res = _taken(results)
                room.release()
                yield it, res, not results.empty()
            n = -1  # every result taken
        finally:
            if n != -1 and on_stop is not None:
                on_stop()
            stop.set()
            room.release()  # a host waiting for room wakes, sees the stop, and passes it on
            with turn:
                turn.notify_all()


def can_fork() -> bool:
    """Whether worker processes may be forked here: the platform forks and no other thread runs (a
    thread holding a lock at the fork would leave that lock held forever in the child)."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _portable(res: Any) -> Any:
    """``res`` as it can cross the pipe: an exception that does not survive pickling becomes a
    ``G6Error`` (a G6 error's message and code kept) or a ``RuntimeError`` naming its type."""
    if not isinstance(res, BaseException):
        return res
    try:
        pickle.loads(pickle.dumps(res))
        return res
    except Exception:  # noqa: BLE001 - any exception at all must cross as something
        if isinstance(res, G6Error):
            e = G6Error(str(res))
            e.code = res.code
            return e
        return RuntimeError(f"{type(res).__name__}: {res}")


def _child(take: Connection, work: Callable[[T], R], workers: int, send: Connection, stop: Any,
           setup: Callable[[], None] | None, not_mine: list[Connection]) -> None:
    # Ctrl-C reaches the whole process group: the parent handles it and stops the workers; the
    # child itself never prints a traceback for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for conn in not_mine:  # the parent's ends of this worker's pipes and of those forked before it
        conn.close()
    code = 0
    try:
        if setup is not None:
            setup()
        given = itertools.count()  # the parent knows an item by its place in what it sent here

        def groups() -> Iterator[list[tuple[int, T]]]:
            while (group := take.recv()) is not None:  # None: the parent has sent everything
                yield [(next(given), it) for it in group]

        results = per_host_groups(groups(), lambda numbered: work(numbered[1]), workers)
        try:
            for (n, _), res, _ in results:
                send.send((n, _portable(res)))
                if stop.is_set():
                    break
        finally:
            results.close()
    except (BrokenPipeError, EOFError, OSError):
        code = 1  # the parent stopped (it ended, or stopped early): nothing to report to
    except BaseException:  # noqa: BLE001 - ends as a lost worker in the parent, without a traceback here
        code = 1
    finally:
        send.close()
    os._exit(code)  # no atexit handler, no flush of buffers copied from the parent


def per_host_processes(items: Iterable[T], host: Callable[[T], str], work: Callable[[T], R], workers: int = 8,
                       processes: int = 2, setup: Callable[[], None] | None = None,
                       ) -> Workers:
    """``per_host`` over ``processes`` forked processes (at most ``workers``), forked now (before
    this returns): each gets whole hosts (the largest first, each to the process with the fewest
    items so far) and its share of the ``workers`` threads, calls ``setup()`` first, and sends back
    ``work(item)`` (which must pickle). Yields as ``per_host`` does; an item whose process ended
    before reporting it yields ``WorkerLost``. Only where ``can_fork()``."""
    groups = sorted(_by_host(items, host), key=len, reverse=True)
    pool = fork_workers(work, workers, min(processes, len(groups)), setup)
    pool.give(groups)
    return pool


def fork_workers(work: Callable[[T], R], workers: int = 8, processes: int = 2,
                 setup: Callable[[], None] | None = None) -> Workers:
    """Fork ``processes`` worker processes now (at most ``workers``; none for 0), each with its share of
    the ``workers`` threads, calling ``setup()`` first; hand them hosts with ``Workers.give``. So a caller
    can fork before it knows every host's list (it must fork while no other thread runs), and let the
    first hosts fetch while it still decides on the next. Only where ``can_fork()``."""
    if not can_fork():
        raise RuntimeError("worker processes are forked only where no other thread runs")
    workers = max(1, workers)
    n = max(0, min(processes, workers))
    threads = [workers // n + (1 if i < workers % n else 0) for i in range(n)] if n else []
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    for stream in (sys.stdout, sys.stderr):  # a child must not write out what the parent buffered
        stream.flush()
    children: list[_Worker] = []
    try:
        for each in threads:
            results, send = ctx.Pipe(duplex=False)
            take, give = ctx.Pipe(duplex=False)
            # the parent's ends of the pipes of the workers forked before this one, and of this one's,
            # are closed in it: a worker must be the only writer of its results and the only reader of
            # its work, so a parent's death breaks them all
            others = [c for w in children for c in (w.results, w.give)] + [results, give]
            proc = ctx.Process(target=_child, args=(take, work, each, send, stop, setup, others), daemon=True)
            proc.start()
            send.close()
            take.close()
            children.append(_Worker(proc, results, give))
    except BaseException:
        _end(children, stop)
        raise
    return Workers(children, stop)


@dataclass
class _Worker:
    """The parent's side of one worker process: its results' read end, its work's write end, and
    every item given to it, by the place the worker numbers it with."""

    proc: Any
    results: Connection
    give: Connection | None
    given: list[Any] = field(default_factory=list)
    reported: set[int] = field(default_factory=set)


def _end(children: list[_Worker], stop: Any) -> None:
    """Stop the workers now. Whatever they still do would never be reported (the pipes close), so
    they are not waited for: a worker stopped inside a fetch leaves at most a temporary file or an
    unreferenced blob, as a kill -9 of a single fetch does, and Ctrl-C ends the batch at once."""
    stop.set()
    for w in children:
        w.results.close()
        if w.give is not None:
            w.give.close()
            w.give = None
    for w in children:
        if w.proc.exitcode is None:
            w.proc.terminate()
    for w in children:
        w.proc.join()


class Workers:
    """The parent's side of forked workers (``fork_workers``, ``per_host_processes``): ``give`` hands
    them hosts; iterating yields as ``per_host`` does; ``close`` (an early stop, an error, Ctrl-C) stops
    and joins the workers, whether or not iteration ever began."""

    def __init__(self, children: list[_Worker], stop: Any) -> None:
        self._children, self._stop = children, stop
        self._open = {w.results: w for w in children}
        self._ready: deque[tuple[Any, Any]] = deque()

    def give(self, groups: Iterable[list[T]]) -> None:
        """Hand out ``groups`` (each one host's items, each host in one group only), each to the worker
        with the fewest items so far, as they are taken from ``groups`` (lazily: a worker starts on its
        first host while the next is still being decided); then tell every worker there is no more. A
        worker that has ended gets nothing more; what it was given is reported as lost."""
        try:
            for group in groups:
                if not group:
                    continue
                while True:
                    live = [w for w in self._children if w.give is not None]
                    if not live:
                        raise WorkerLost("every worker process ended before it was given its work")
                    w = min(live, key=lambda x: len(x.given))
                    try:
                        assert w.give is not None
                        w.give.send(group)
                    except (BrokenPipeError, EOFError, OSError):
                        w.give.close()
                        w.give = None
                        continue
                    w.given.extend(group)
                    break
        except BaseException:
            self.close()
            raise
        for w in self._children:
            if w.give is not None:
                try:
                    w.give.send(None)
                except (BrokenPipeError, EOFError, OSError):
                    pass  # it ended: its results' pipe says so
                w.give.close()
                w.give = None

    def __iter__(self) -> Workers:
        return self

    def _take(self, conn: Connection) -> None:
        w = self._open[conn]
        try:
            n, res = conn.recv()
        except (EOFError, OSError):  # the worker ended: what it did not report is lost
            del self._open[conn]
            w.proc.join()
            for i, lost in enumerate(w.given):
                if i not in w.reported:
                    self._ready.append((lost, WorkerLost(
                        f"the worker process fetching it ended (exit {w.proc.exitcode}) before it was done")))
            return
        w.reported.add(n)
        self._ready.append((w.given[n], res))

    def _drain(self, block: bool) -> None:
        """Take what the workers have sent: wait for something if ``block``, then whatever else is
        already there (so ``more_ready`` says whether another result is waiting right now)."""
        while self._open:
            blocking = block and not self._ready
            readable = wait(list(self._open), WAKE if blocking else 0)  # woken at each step: see WAKE
            if not readable:
                if blocking:
                    continue
                return
            for conn in readable:
                assert isinstance(conn, Connection)
                self._take(conn)  # a worker's end may add nothing: then wait on for the others

    def __next__(self) -> tuple[Any, Any, bool]:
        try:
            if not self._ready:
                self._drain(block=True)
            if not self._ready:
                raise StopIteration
            it, res = self._ready.popleft()
            self._drain(block=False)
        except StopIteration:
            raise
        except BaseException:  # Ctrl-C or a broken pipe while waiting: the workers stop too
            self.close()
            raise
        return it, res, bool(self._ready)

    def close(self) -> None:
        _end(self._children, self._stop)
