"""The browsers of ``g6 mcp``'s renders (the ``fetch`` tool's ``render``): none until the first render asks for one,
then the same pool for every later call, closed when the server stops (:func:`g6.mcp.server.serve`), so no
Chromium outlives the server. A server that never renders starts no browser and reads no render setting."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from g6.errors import G6Error

if TYPE_CHECKING:
    from g6.adapters.browser.pool import BrowserPool
    from g6.config import Settings
    from g6.fetch.render import Renderer


class ServerStopping(G6Error):
    """A render asked for once the server closed its browsers (it is stopping): nothing is sent."""

    code = "G6_E_MCP_STOPPING"


class Renderers:
    """One :class:`~g6.fetch.render.Renderer` for the server's life, made on first use. Calls run on worker
    threads, so making it and closing it hold a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._renderer: Renderer | None = None
        self._closed = False

    def get(self, settings: Settings) -> Renderer:
        """The renderer; its settings (``G6_RENDER_*``, ``G6_CHROMIUM``) are read, and the browser looked for, on
        the first call: a bad setting or no Chromium is refused then, before the page is read."""
        from g6.adapters.browser import find_chromium
        from g6.fetch.render import Renderer

        with self._lock:
            if self._closed:
                raise ServerStopping("the server is stopping: its browsers are closed; nothing was sent")
            if self._renderer is None:
                limits, pool = settings.render_limits(), settings.browser_pool()
                try:
                    find_chromium(settings.values.get("G6_CHROMIUM") or None)
                except BaseException:
                    pool.close()
                    raise
                self._renderer = Renderer(pool, limits)
            return self._renderer

    @property
    def pool(self) -> BrowserPool | None:
        """The browsers, once a render asked for them (for the tests: what is running)."""
        return self._renderer.pool if self._renderer is not None else None

    def close(self) -> None:
        """End every browser (waiting for one being started); later renders are refused. Idempotent."""
        with self._lock:
            self._closed = True
            renderer, self._renderer = self._renderer, None
        if renderer is not None:
            renderer.pool.close()
