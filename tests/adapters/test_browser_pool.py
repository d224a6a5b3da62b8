"""Browsers at once: the pool never runs more than its size, reuses a healthy browser, replaces a broken one."""

from __future__ import annotations

import threading
from typing import Any

from g6.adapters.browser.pool import BrowserPool


class FakeCDP:
    def send(self, method: str, params: Any = None, **kw: Any) -> dict[str, Any]:
        return {}

    def set_event_handler(self, h: Any) -> None:
        pass


class FakeBrowser:
    """Stands in for a BrowserProcess: the pool only starts, prepares, checks and closes it."""

    def __init__(self) -> None:
        self.cdp = FakeCDP()
        self.closed = False
        self.healthy = True

    def alive(self) -> bool:
        return self.healthy and not self.closed

    def close(self) -> None:
        self.closed = True


def test_no_more_browsers_at_once_than_the_pool_size() -> None:
    made: list[FakeBrowser] = []
    inside, peak, lock = 0, 0, threading.Lock()
    gate = threading.Barrier(2, timeout=30)

    def launch() -> FakeBrowser:
        made.append(FakeBrowser())
        return made[-1]

    def capture(pool: BrowserPool) -> None:
        nonlocal inside, peak
        with pool.browser():
            with lock:
                inside += 1
                peak = max(peak, inside)
            try:
                gate.wait()  # two captures hold their browsers at the same time
            except threading.BrokenBarrierError:
                pass
            with lock:
                inside -= 1

    with BrowserPool(2, launch=launch) as pool:  # type: ignore[arg-type]
        threads = [threading.Thread(target=capture, args=(pool,)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert peak == 2 and len(made) == 2 and pool.started == 2  # reused, never a third
    assert all(b.closed for b in made)


def test_a_broken_browser_is_closed_and_replaced() -> None:
    made: list[FakeBrowser] = []

    def launch() -> FakeBrowser:
        made.append(FakeBrowser())
        return made[-1]

    with BrowserPool(1, launch=launch) as pool:  # type: ignore[arg-type]
        with pool.browser() as b:
            b.healthy = False  # its process died during the capture
        assert made[0].closed
        with pool.browser() as b2:
            pool.discard(b2)  # a capture found it hung
        assert made[1].closed
        with pool.browser():
            pass
        assert pool.started == 3
