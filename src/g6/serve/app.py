"""The ASGI app of ``g6 serve``: the routes of every serve module over one read-only home.

Handlers are plain (sync) functions; Starlette runs them in its worker threads, so a slow read never
blocks the event loop, and each thread keeps its own read-only handle on the home (SQLite connections
belong to the thread that opened them).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response

from g6.config import Settings
from g6.home import EvidenceHome
from g6.serve import api, memento, pages, tlog
from g6.serve.responses import not_found


class HomeReader:
    """One read-only :class:`EvidenceHome` per thread, opened on first use from the settings.

    ``opener`` is injected for tests (a home built in the test); by default the settings' own
    ``open_home`` (read-only: nothing is created, no key is needed)."""

    def __init__(self, settings: Settings | None = None, *, opener: Callable[[], EvidenceHome] | None = None) -> None:
        if opener is None:
            if settings is None:
                raise ValueError("HomeReader needs settings or an opener")
            opener = lambda: settings.open_home()  # noqa: E731 (read-only by default)
        self._opener = opener
        self._local = threading.local()
        self._opened: list[EvidenceHome] = []
        self._lock = threading.Lock()

    def home(self) -> EvidenceHome:
        ev = getattr(self._local, "home", None)
        if ev is None:
            ev = self._opener()
            self._local.home = ev
            with self._lock:
                self._opened.append(ev)
        return ev

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for ev in opened:
            ev.close()


def build_app(reader: HomeReader, **options: Any) -> Starlette:
    """The app: every module's routes, a 404 that says why in JSON or HTML, the reader closed at shutdown.
    ``options`` are handed to every module's ``routes`` (for example ``tiles_dir`` for published tiles)."""

    async def missing(request: Request, exc: Exception) -> Response:
        return not_found(request, f"nothing is served at {request.url.path}")

    routes = [*tlog.routes(reader, **options), *memento.routes(reader, **options), *api.routes(reader, **options),
              *pages.routes(reader, **options)]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        reader.close()

    app = Starlette(routes=routes, exception_handlers={404: missing}, lifespan=lifespan)
    app.state.reader = reader
    return app
