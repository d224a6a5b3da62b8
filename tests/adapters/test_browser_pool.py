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


def test_a_browser_started_while_the_pool_closes_is_closed_not_handed_out() -> None:
    # close() (Ctrl-C, the command ending) while a capture's browser is starting: that browser was added after
    # close() took its list, so the capture ran in it until its deadline; now it is closed and the capture refused
    made: list[FakeBrowser] = []
    pool = BrowserPool(1, launch=lambda: launch())  # type: ignore[arg-type,return-value]
    closed = threading.Event()

    def launch() -> FakeBrowser:
        threading.Thread(target=lambda: (pool.close(), closed.set())).start()
        while not pool._closed:  # close() marks the pool before it waits for this start to end
            threading.Event().wait(0.01)
        made.append(FakeBrowser())
        return made[-1]

    try:
        with pool.browser():
            raise AssertionError("a browser of a closed pool was handed out")
    except RuntimeError as e:
        assert "closed" in str(e)
    assert closed.wait(30)
    assert len(made) == 1 and made[0].closed
    assert pool.running() == []
