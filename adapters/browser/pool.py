"""Browsers at once: at most ``size`` Chromiums, each running one capture at a time.

A browser is started the first time one is wanted and reused for the next capture (each capture has a
browser context of its own, disposed after it); one that crashed or hung is closed and replaced. Every
browser is started from one thread of the pool's, which lives as long as the pool: ``PR_SET_PDEATHSIG``
ends a child when the *thread* that started it ends, so a browser started from a short-lived worker
thread would be killed under a capture. ``close`` ends every browser; nothing outlives it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from g6.adapters.browser.launch import BrowserProcess, find_chromium
from g6.adapters.browser.render import prepare_browser


class BrowserPool:
    def __init__(self, size: int = 2, *, executable: str | None = None, extra_flags: tuple[str, ...] = (),
                 start_timeout: float = 30.0,
                 launch: Callable[[], BrowserProcess] | None = None) -> None:
        if size < 1:
            raise ValueError(f"browsers at once must be at least 1, got {size}")
        self.size = size
        self._exe = executable
        self._flags = extra_flags
        self._start_timeout = start_timeout
        self._launch = launch
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[BrowserProcess] = []
        self._all: list[BrowserProcess] = []
        self._closed = False
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="g6-browser-starter")
        self.started = 0  # browsers started over the pool's life (a crashed one is replaced)

    def _start(self) -> BrowserProcess:
        if self._launch is not None:
            b = self._launch()
        else:
            b = BrowserProcess(find_chromium(self._exe), extra_flags=self._flags, start_timeout=self._start_timeout)
        try:
            prepare_browser(b, self._start_timeout)
        except BaseException:
            b.close()
            raise
        return b

    @contextmanager
    def browser(self) -> Iterator[BrowserProcess]:
        """One browser for one capture; waits while ``size`` are in use. A browser found broken after the
        capture (its process gone, its pipe closed, or ``discard`` called) is closed, not reused."""
        self._slots.acquire()
        b: BrowserProcess | None = None
        try:
            with self._lock:
                if self._closed:
                    raise RuntimeError("the browser pool is closed")
                while self._idle and b is None:
                    cand = self._idle.pop()
                    if cand.alive():
                        b = cand
                    else:
                        self._forget(cand)
            if b is None:
                b = self._starter.submit(self._start).result()
                with self._lock:
                    closed = self._closed
                    if not closed:  # closed meanwhile: close() has taken its list, and would never close this one
                        self._all.append(b)
                        self.started += 1
                if closed:
                    b.close()
                    b = None
                    raise RuntimeError("the browser pool is closed")
            yield b
        finally:
            if b is not None:
                with self._lock:
                    keep = not self._closed and b.alive() and not getattr(b, "discarded", False)
                    if keep:
                        self._idle.append(b)
                if not keep:
                    b.close()
                    with self._lock:
                        self._forget(b)
            self._slots.release()

    def running(self) -> list[BrowserProcess]:
        """The browsers started and not yet closed."""
        with self._lock:
            return list(self._all)

    @staticmethod
    def discard(b: BrowserProcess) -> None:
        """Mark ``b`` as not to be reused (a capture found it hung): it is closed when handed back."""
        b.discarded = True  # type: ignore[attr-defined]

    def _forget(self, b: BrowserProcess) -> None:
        if b in self._all:
            self._all.remove(b)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            browsers, self._all, self._idle = list(self._all), [], []
        for b in browsers:
            b.close()
        self._starter.shutdown(wait=True)

    def __enter__(self) -> BrowserPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
