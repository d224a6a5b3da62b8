"""A pause per host (the least time between two requests to one host, kept per source) and a gate
per host (one request at a time to it, whichever thread asks)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


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
