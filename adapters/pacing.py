"""A pause per host (the least time between two requests to one host, kept per source) and a gate
per host (one request at a time to it, whichever thread asks); and the same two shared by forked
processes (``SharedHostPacer``, ``SharedHostGate``), for a batch that fetches on several cores."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class HostPacer:
    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._clock = clock
        self._sleep = sleep
        self._next: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def wait(self, source: str, host: str, pause: float) -> float:
        """Block until ``host`` may be asked again by ``source``; return the seconds waited."""
        with self._lock:
            now = self._clock()
            key = (source, host)
            start = max(now, self._next.get(key, now))
            self._next[key] = start + pause
        delay = start - now
        if delay > 0:
            self._sleep(delay)
        return max(delay, 0.0)


class HostGate:
    """One request at a time per host, whoever asks: every thread that shares the client (the host
    pool's workers), every redirect hop. The host pool runs each host's own URLs on one worker, but a
    redirect leads a worker to another host, beside that host's own worker; the gate is what keeps
    that host at one request at a time. Keyed by the normalised host, as the pacer is."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def _for(self, host: str) -> threading.Lock:
        with self._lock:
            lock = self._locks.get(host)
            if lock is None:
                lock = self._locks[host] = threading.Lock()
            return lock

    @contextmanager
    def hold(self, host: str, timeout: float) -> Iterator[bool]:
        """Hold ``host`` for the block; yields False (and holds nothing) when ``timeout`` seconds
        passed first, so a caller's deadline still ends its wait."""
        lock = self._for(host)
        got = lock.acquire(timeout=max(0.0, timeout))
        try:
            yield got
        finally:
            if got:
                lock.release()


def _stripe(key: str, n: int) -> int:
    """A host's slot among ``n``: a stable hash (``hash`` of a str differs between processes)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % n


class SharedHostGate(HostGate):
    """``HostGate`` across the processes forked after it is made: one request at a time per host,
    whichever process or thread asks. Hosts map onto a fixed set of process-shared locks; two hosts
    that share a lock wait for each other, which is slower, never less strict."""

    STRIPES = 256

    def __init__(self, ctx: Any, stripes: int = STRIPES) -> None:
        super().__init__()
        self._shared = [ctx.Lock() for _ in range(stripes)]

    def _for(self, host: str) -> Any:
        return self._shared[_stripe(host, len(self._shared))]


class SharedHostPacer(HostPacer):
    """``HostPacer`` across the processes forked after it is made: the time each (source, host) may
    next be asked is kept in shared memory under one shared lock. Keys share slots as the gate's
    hosts share locks: a shared slot holds the later of two hosts' times, so a host may wait longer
    than its own pause, never less. ``clock`` must be one all the processes share (the default,
    ``time.monotonic``, is system-wide)."""

    def __init__(self, ctx: Any, *, stripes: int = SharedHostGate.STRIPES,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(clock=clock, sleep=sleep)
        self._slots = ctx.Array("d", stripes, lock=False)
        self._filled = ctx.Array("b", stripes, lock=False)
        self._shared_lock = ctx.Lock()

    def carry_over(self, pacer: HostPacer) -> None:
        """Take the times ``pacer`` (this process's, so far) holds, so a host asked just before
        still waits out its pause."""
        with pacer._lock, self._shared_lock:
            for (source, host), at in pacer._next.items():
                k = _stripe(f"{source}\0{host}", len(self._slots))
                self._slots[k] = max(self._slots[k], at) if self._filled[k] else at
                self._filled[k] = 1

    def wait(self, source: str, host: str, pause: float) -> float:
        k = _stripe(f"{source}\0{host}", len(self._slots))
        with self._shared_lock:
            now = self._clock()
            start = max(now, self._slots[k]) if self._filled[k] else now
            self._slots[k] = start + pause  # start is already past what the slot held
            self._filled[k] = 1
        delay = start - now
        if delay > 0:
            self._sleep(delay)
        return max(delay, 0.0)
