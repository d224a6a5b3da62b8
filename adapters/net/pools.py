"""Connection pools, one per host, and at most ``keep`` of them held.

A client fetches one request at a time per host, so a pool of its own per host needs one connection, and keeps one
idle at most (``checked_client.host_transport``).
One pool shared by every host would cost more: httpcore looks over every connection of a pool twice a request
(and counts the idle ones again for each idle one): cProfile counted 344,000 of its ``is_idle`` calls for 400
requests over 20 hosts (about 0.65 ms a request under the profiler; the benchmark cannot tell it from noise).
HTTPS needs a pool per host name in any case: the request URL carries the checked address, and a connection
verified for one name must never serve another name on that address.

A pool is lent for one request, from sending it to closing its answer (``lease``). When more than ``keep`` pools
are held, the least recently used ones with nothing lent are closed (their idle connections with them), so a batch
over ten thousand hosts keeps at most ``keep`` idle connections open, not one per host it ever read.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator

import httpx

KEEP = 64  # pools held at most (each with at most one idle connection) once nothing is lent from the others


class _Held:
    __slots__ = ("transport", "lent")

    def __init__(self, transport: httpx.BaseTransport) -> None:
        self.transport = transport
        self.lent = 0


class HostPools:
    """Pools by key (a host and what its connections must be: scheme, port, trusted roots), made by ``make``."""

    def __init__(self, keep: int = KEEP) -> None:
        if keep < 1:
            raise ValueError(f"pools held must be at least 1, got {keep}")
        self.keep = keep
        self._held: OrderedDict[Hashable, _Held] = OrderedDict()  # least recently lent first
        self._lock = threading.Lock()
        self.closed_idle = 0  # pools closed because more than ``keep`` were held (for tests and figures)

    @contextlib.contextmanager
    def lease(self, key: Hashable, make: Callable[[], httpx.BaseTransport]) -> Iterator[httpx.BaseTransport]:
        """The pool for ``key`` (made by ``make()`` when none is held), lent until the block ends."""
        held = self._take(key)
        if held is None:
            made = _Held(make())  # outside the lock: making one may read a CA bundle
            held = self._take(key, made)
            if held is not made:  # another thread made one meanwhile: that one is used
                made.transport.close()
        try:
            yield held.transport
        finally:
            with self._lock:
                held.lent -= 1
                surplus = self._surplus()
            for t in surplus:
                with contextlib.suppress(Exception):  # a connection that fails closing is gone all the same
                    t.close()

    def _take(self, key: Hashable, made: _Held | None = None) -> _Held | None:
        """The pool held for ``key`` (else ``made``, now held; else None), lent once more."""
        with self._lock:
            held = self._held.get(key)
            if held is None and made is not None:
                held = self._held[key] = made
            if held is not None:
                self._held.move_to_end(key)
                held.lent += 1
            return held

    def _surplus(self) -> list[httpx.BaseTransport]:
        """Under the lock: the pools past ``keep``, least recently lent first, with nothing lent, taken out."""
        over = len(self._held) - self.keep
        if over <= 0:
            return []
        out = []
        for key in list(self._held):
            if over <= 0:
                break
            if self._held[key].lent == 0:
                out.append(self._held.pop(key).transport)
                over -= 1
        self.closed_idle += len(out)
        return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)

    def forget(self) -> None:
        """In a forked child: drop every pool without closing it (its sockets are the parent's too)."""
        self._lock = threading.Lock()  # the parent's may have been held by another thread at the fork
        self._held = OrderedDict()

    def close(self) -> None:
        with self._lock:
            held, self._held = list(self._held.values()), OrderedDict()
        for h in held:
            with contextlib.suppress(Exception):
                h.transport.close()

