"""Hosts in parallel, one request at a time per host: the worker pool re-check and batch fetch share.

Items are grouped by host; each host's items run in order on one worker thread (so the checked
client's per-host pause and robots rules hold), and up to ``workers`` hosts run at once. Results
come back to the calling thread as they finish, so it alone writes receipts, run files and output.

``per_host_processes`` does the same over several forked processes (one GIL each): the hosts are
shared out among them, each runs ``per_host`` over its own, and results come back over a pipe.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from g6.adapters.urls import normalise_url
from g6.errors import G6Error, WorkerLost

T = TypeVar("T", bound=Hashable)
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


def per_host(items: Iterable[T], host: Callable[[T], str], work: Callable[[T], R],
             workers: int = 8, backlog: int = BACKLOG) -> Iterator[tuple[T, R | BaseException, bool]]:
    """Yield ``(item, work(item) or the exception it raised, more_ready)`` in completion order;
    ``more_ready`` says another result is already waiting (a caller batching writes can wait).

    At most ``backlog`` items are under way or done and not yet taken: a caller that stops taking
    (its output blocked, a worker process whose parent stops reading) stops the hosts too, instead
    of them fetching the rest of the list into memory."""
    return per_host_groups(_by_host(items, host), work, workers, backlog)


def per_host_groups(groups: Iterable[list[T]], work: Callable[[T], R], workers: int = 8,
                    backlog: int = BACKLOG) -> Iterator[tuple[T, R | BaseException, bool]]:
    """:func:`per_host` over items already grouped, one list per host (each host in one list only).
    ``groups`` is taken lazily, one list at a time: a host starts as soon as its list is there, so a
    caller can still be deciding what the next host is asked for while the first ones fetch."""
    n = 0
    results: queue.Queue[tuple[T, R | BaseException]] = queue.Queue()
    stop = threading.Event()  # set when the caller stops early (an error, Ctrl-C): no new item starts
    room = threading.Semaphore(max(1, backlog))  # one per item started; given back as its result is taken

    def run(batch: list[T]) -> None:
        for it in batch:
            if stop.is_set():
                return
            room.acquire()
            if stop.is_set():
                room.release()  # passed on: the next host waiting for room wakes and ends too
                return
            try:
                results.put((it, work(it)))
            except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                results.put((it, e))

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        try:
            for batch in groups:
                if batch:
                    n += len(batch)
                    pool.submit(run, batch)
            for _ in range(n):
                it, res = results.get()
                room.release()
                yield it, res, not results.empty()
        finally:
            stop.set()
            room.release()  # a host waiting for room wakes, sees the stop, and passes it on


def can_fork() -> bool:
    """Whether worker processes may be forked here: the platform forks and no other thread runs (a
    thread holding a lock at the fork would leave that lock held forever in the child)."""
    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _share_out(groups: list[list[T]], parts: int) -> list[list[T]]:
    """Whole host groups into ``parts`` lists of about equal length (largest groups first)."""
    out: list[list[T]] = [[] for _ in range(max(1, min(parts, len(groups))))]
    for g in sorted(groups, key=len, reverse=True):
        min(out, key=len).extend(g)
    return out


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


def _child(items: list[T], host: Callable[[T], str], work: Callable[[T], R], workers: int, send: Connection,
           stop: Any, setup: Callable[[], None] | None, not_mine: list[Connection]) -> None:
    # Ctrl-C reaches the whole process group: the parent handles it and stops the workers; the
    # child itself never prints a traceback for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for conn in not_mine:  # the parent's read ends, inherited by the fork
        conn.close()
    code = 0
    try:
        if setup is not None:
            setup()
        results = per_host(items, host, work, workers)
        try:
            for it, res, _ in results:
                send.send((it, _portable(res)))
                if stop.is_set():
                    break
        finally:
            results.close()
    except (BrokenPipeError, EOFError, OSError):
        code = 1  # the parent stopped reading (it ended, or stopped early): nothing to report to
    except BaseException:  # noqa: BLE001 - ends as a lost worker in the parent, without a traceback here
        code = 1
    finally:
        send.close()
    os._exit(code)  # no atexit handler, no flush of buffers copied from the parent


def per_host_processes(items: Iterable[T], host: Callable[[T], str], work: Callable[[T], R], workers: int = 8,
                       processes: int = 2, setup: Callable[[], None] | None = None,
                       ) -> _Collected:
    """``per_host`` over ``processes`` forked processes (at most ``workers``), forked now (before
    this returns): each gets whole hosts and its share of the ``workers`` threads, calls
    ``setup()`` first, and sends back ``work(item)`` (which must pickle). Yields as ``per_host``
    does; an item whose process ended before reporting it yields ``WorkerLost``. Only where
    ``can_fork()``."""
    if not can_fork():
        raise RuntimeError("worker processes are forked only where no other thread runs")
    workers = max(1, workers)
    # no more processes than threads: ``workers`` threads in all, shared out as evenly as they go
    parts = [p for p in _share_out(_by_host(items, host), min(processes, workers)) if p]
    threads = [workers // len(parts) + (1 if i < workers % len(parts) else 0) for i in range(len(parts))]
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    if not parts:  # nothing to fetch
        return _Collected([], stop)
    for stream in (sys.stdout, sys.stderr):  # a child must not write out what the parent buffered
        stream.flush()
    children: list[tuple[Any, Connection, list[T]]] = []
    try:
        for part, each in zip(parts, threads, strict=True):
            recv, send = ctx.Pipe(duplex=False)
            # the pipes of the workers forked before this one are closed in it: a worker must be the
            # only writer and the parent the only reader of each, so a parent's death breaks them all
            others = [r for _, r, _ in children] + [recv]
            proc = ctx.Process(target=_child, args=(part, host, work, each, send, stop, setup, others),
                               daemon=True)
            proc.start()
            send.close()
            children.append((proc, recv, part))
    except BaseException:
        _end(children, stop)
        raise
    return _Collected(children, stop)


def _end(children: list[tuple[Any, Connection, list[T]]], stop: Any) -> None:
    """Stop the workers now. Whatever they still do would never be reported (the pipes close), so
    they are not waited for: a worker stopped inside a fetch leaves at most a temporary file or an
    unreferenced blob, as a kill -9 of a single fetch does, and Ctrl-C ends the batch at once."""
    stop.set()
    for _, recv, _ in children:
        recv.close()
    for proc, _, _ in children:
        if proc.exitcode is None:
            proc.terminate()
    for proc, _, _ in children:
        proc.join()


class _Collected:
    """The parent's side of ``per_host_processes``: an iterator whose ``close`` (an early stop, an
    error, Ctrl-C) stops and joins the workers, whether or not iteration ever began."""

    def __init__(self, children: list[tuple[Any, Connection, list[T]]], stop: Any) -> None:
        self._children, self._stop = children, stop
        self._open = {recv: (proc, part) for proc, recv, part in children}
        self._reported: dict[Connection, set[Any]] = {recv: set() for _, recv, _ in children}
        self._ready: deque[tuple[Any, Any]] = deque()

    def __iter__(self) -> _Collected:
        return self

    def _take(self, conn: Connection) -> None:
        try:
            it, res = conn.recv()
        except (EOFError, OSError):  # the worker ended: what it did not report is lost
            proc, part = self._open.pop(conn)
            proc.join()
            for lost in (it for it in part if it not in self._reported[conn]):
                self._ready.append((lost, WorkerLost(
                    f"the worker process fetching it ended (exit {proc.exitcode}) before it was done")))
            return
        self._reported[conn].add(it)
        self._ready.append((it, res))

    def _drain(self, block: bool) -> None:
        """Take what the workers have sent: wait for something if ``block``, then whatever else is
        already there (so ``more_ready`` says whether another result is waiting right now)."""
        while self._open:
            readable = wait(list(self._open), None if block and not self._ready else 0)
            if not readable:
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
