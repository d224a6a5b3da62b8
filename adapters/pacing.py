"""A pause per host: the least time between two requests to one host, kept per source."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


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
