"""A pause per host (the least time between two requests to one host, kept per source) and a gate
per host (one request at a time to it, whichever thread asks); and the same two shared by forked
processes (``SharedHostPacer``, ``SharedHostGate``), for a batch that fetches on several cores."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

K = TypeVar("K")


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


class _LockTable(Generic[K]):
    """A thread lock per key (a semaphore of ``per_key`` when more than one may hold it), made the first time the
    key is asked for."""

    def __init__(self, per_key: int = 1) -> None:
        self._locks: dict[K, Any] = {}
        self._guard = threading.Lock()
        self._per_key = per_key

    def __call__(self, key: K) -> Any:
        with self._guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = (threading.Lock() if self._per_key == 1
                                           else threading.BoundedSemaphore(self._per_key))
            return lock


class HostGate:
    """One request at a time per host, whoever asks: every thread that shares the client (the host
    pool's workers), every redirect hop. The host pool runs each host's own URLs on one worker, but a
    redirect leads a worker to another host, beside that host's own worker; the gate is what keeps
    that host at one request at a time. Keyed by the normalised host, as the pacer is. ``per_host``:
    how many at once instead (a rendered page's load: ``CheckedClient.page_load``)."""

    def __init__(self, per_host: int = 1) -> None:
        if per_host < 1:
            raise ValueError("a host gate lets at least one request through")
        self._for = _LockTable[str](per_host)

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


def _key(text: str) -> int:
    """A 56-bit number for ``text``, the same in every process: where its lock lives in the lock file."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=7).digest(), "big")


class _DyingSafeLocks:
    """Locks shared by the processes forked after they are made and by the threads of each, that a
    process dying while it holds one cannot leave held: lock ``k`` is a thread lock (for the threads
    of one process) and a POSIX record lock on byte ``k`` of one unlinked temporary file (for the
    processes; record locks belong to a process, so the kernel drops them when it ends, however it
    ends). A semaphore held by a killed worker would stay held for ever."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="g6-host-locks-")
        os.unlink(path)
        self._fd = fd  # inherited by the forked workers; each process closes its own
        self._thread_lock = _LockTable[int]()

    def acquire(self, k: int, timeout: float | None = None) -> bool:
        """Take lock ``k``; with ``timeout``, give up (False) once that many seconds passed."""
        mine = self._thread_lock(k)
        if timeout is None:
            mine.acquire()
            fcntl.lockf(self._fd, fcntl.LOCK_EX, 1, k)  # blocks until the holder lets go or dies
            return True
        deadline = time.monotonic() + max(0.0, timeout)
        if not mine.acquire(timeout=max(0.0, timeout)):
            return False
        nap = 0.0005
        while True:  # a record lock takes no timeout: try, then nap a little longer each time
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, k)
                return True
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EAGAIN):
                    mine.release()
                    raise
            left = deadline - time.monotonic()
            if left <= 0:
                mine.release()
                return False
            time.sleep(min(nap, left))
            nap = min(nap * 2, 0.02)

    def release(self, k: int) -> None:
        fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, k)
        self._thread_lock(k).release()

    def close(self) -> None:
        """Close this process's handle on the lock file (once no lock of it is wanted here)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class SharedHostGate(HostGate):
    """``HostGate`` across the processes forked after it is made: one request at a time per host,
    whichever process or thread asks. Each host has a lock of its own (at a 56-bit hash of its name
    in the lock file), so one host's request or pause never holds up another's; a worker that dies
    holding one frees it (``_DyingSafeLocks``)."""

    def __init__(self) -> None:
        super().__init__()
        self._locks = _DyingSafeLocks()

    def close(self) -> None:
        self._locks.close()

    @contextmanager
    def hold(self, host: str, timeout: float) -> Iterator[bool]:
        k = _key(host)
        got = self._locks.acquire(k, timeout)
        try:
            yield got
        finally:
            if got:
                self._locks.release(k)


class SharedHostPacer(HostPacer):
    """``HostPacer`` across the processes forked after it is made: the time each (source, host) may
    next be asked is kept in shared memory (65,536 slots, by a hash of the key) under one lock a dying
    worker cannot leave held. Two keys that share a slot share its time, so a host may wait longer
    than its own pause, never less. ``clock`` must be one all the processes share
    (the default, ``time.monotonic``, is system-wide)."""

    SLOTS = 1 << 16  # 576 KiB shared: two of 20 hosts share a slot about 0.3% of the time

    def __init__(self, ctx: Any, *, stripes: int = SLOTS,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(clock=clock, sleep=sleep)
        self._slots = ctx.Array("d", stripes, lock=False)
        self._filled = ctx.Array("b", stripes, lock=False)
        self._shared_lock = _DyingSafeLocks()

    def close(self) -> None:
        self._shared_lock.close()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self._shared_lock.acquire(0)
        try:
            yield
        finally:
            self._shared_lock.release(0)

    def carry_over(self, pacer: HostPacer) -> None:
        """Take the times ``pacer`` (this process's, so far) holds, so a host asked just before
        still waits out its pause."""
        with pacer._lock, self._locked():
            for (source, host), at in pacer._next.items():
                k = _key(f"{source}\0{host}") % len(self._slots)
                self._slots[k] = max(self._slots[k], at) if self._filled[k] else at
                self._filled[k] = 1

    def wait(self, source: str, host: str, pause: float) -> float:
        k = _key(f"{source}\0{host}") % len(self._slots)
        with self._locked():
            now = self._clock()
            start = max(now, self._slots[k]) if self._filled[k] else now
            self._slots[k] = start + pause  # start is already past what the slot held
            self._filled[k] = 1
        delay = start - now
        if delay > 0:
            self._sleep(delay)
        return max(delay, 0.0)
