"""The ASGI app of ``g6 serve``: the routes of every serve module over one read-only home.

Handlers are plain (sync) functions. They run on the threads of :class:`HomeReader`, never on the event
loop (a slow read blocks no other request) and never on Starlette's own thread pool: each of the reader's
threads keeps its own read-only handle on the home and closes it itself when the server stops (a SQLite
connection belongs to the thread that opened it), and there are at most ``threads`` of them, so the handles
(a PostgreSQL connection each) stay bounded however long the server runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from g6.config import Settings
from g6.home import EvidenceHome
from g6.serve import api, memento, pages, tlog
from g6.serve.digests import ContentDigest
from g6.serve.responses import not_found

_STOP = None  # what a worker takes from the queue to close its home and end
_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class HomeReader:
    """Read-only :class:`EvidenceHome` handles, each opened, used and closed on one thread.

    :meth:`run` runs a function on one of the reader's own threads (at most ``threads``, started as work
    comes); there :meth:`home` is that thread's home, opened on first use. :meth:`close` has every thread
    close its own home and end, after the work it was given. Starlette's pool is not used for this: its
    threads end after a while idle and new ones start, so homes kept per thread there pile up (a file handle
    or a PostgreSQL connection each) and are left for another thread to close, which SQLite refuses.

    A caller on any other thread opens a home of its own with :meth:`open` and closes it there.
    ``opener`` is injected for tests (a home built in the test); by default the settings' own
    ``open_home`` (read-only: nothing is created, no key is needed)."""

    def __init__(self, settings: Settings | None = None, *, opener: Callable[[], EvidenceHome] | None = None,
                 threads: int | None = None) -> None:
        if opener is None:
            if settings is None:
                raise ValueError("HomeReader needs settings or an opener")
            opener = lambda: settings.open_home()  # noqa: E731 (read-only by default)
        self._opener = opener
        # reads wait on SQLite, PostgreSQL or the store with the GIL released: a few threads a core, bounded
        self.threads = threads or min(32, (os.cpu_count() or 1) + 4)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._idle = 0  # workers waiting for a job (each job given to one of them, or to a new worker)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._closed = False

    def open(self) -> EvidenceHome:
        """A read-only home of the caller's own: it closes it, on the thread it opened it on."""
        return self._opener()

    def home(self) -> EvidenceHome:
        """The home of the reader's thread this runs on (opened now if it was not; closed by :meth:`close`)."""
        if not getattr(self._local, "worker", False):
            raise RuntimeError("HomeReader.home() answers on the reader's own threads (give it the work with run()); "
                               "elsewhere open() a home and close it")
        ev: EvidenceHome | None = self._local.home
        if ev is None:
            ev = self._local.home = self._opener()
        return ev

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on one of the reader's threads: its result, or the exception it raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the home reader is closed")
            if self._idle:
                self._idle -= 1
            elif len(self._workers) < self.threads:
                worker = threading.Thread(target=self._work, name=f"g6-serve-{len(self._workers) + 1}", daemon=True)
                self._workers.append(worker)
                worker.start()
            self._jobs.put((functools.partial(fn, *args), loop, future))
        return await future

    def _work(self) -> None:
        self._local.worker, self._local.home = True, None
        try:
            while (job := self._jobs.get()) is not _STOP:
                fn, loop, future = job
                try:
                    outcome: tuple[Any, BaseException | None] = (fn(), None)
                except BaseException as e:  # noqa: BLE001 - handed to the request that waits for it
                    outcome = (None, e)
                with self._lock:
                    self._idle += 1
                _settle(loop, future, *outcome)
        finally:
            ev, self._local.home = self._local.home, None
            if ev is not None:
                ev.close()  # on the thread that opened it

    def close(self) -> None:
        """Each thread closes its own home and ends, once the work already given to it is done; returns when
        all have."""
        with self._lock:
            self._closed = True
            workers, self._workers = self._workers, []
        for _ in workers:
            self._jobs.put(_STOP)
        for w in workers:
            w.join()


def _settle(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
            error: BaseException | None) -> None:
    """Hand a worker's outcome to the coroutine waiting for it, on its event loop's thread."""

    def settle() -> None:
        if future.done():  # the request was cancelled (its client went away): nobody waits for it
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop has been closed: nobody waits for it either
        loop.call_soon_threadsafe(settle)


def on_reader(reader: HomeReader, route: BaseRoute) -> BaseRoute:
    """``route`` with its sync endpoint run on the reader's threads (Starlette would run it on its own pool)."""
    if not isinstance(route, Route) or inspect.iscoroutinefunction(route.endpoint):
        return route
    fn = route.endpoint

    async def endpoint(request: Request) -> Response:
        response: Response = await reader.run(fn, request)
        return response

    return Route(route.path, endpoint, methods=sorted(route.methods or ()), name=route.name)


def build_app(reader: HomeReader, **options: Any) -> Starlette:
    """The app: every module's routes, a 404 that says why in JSON or HTML, ``Content-Digest`` and ``Repr-Digest``
    on every answer, the reader closed at shutdown.
    ``options`` are handed to every module's ``routes`` (for example ``tiles_dir`` for published tiles)."""

    async def missing(request: Request, exc: Exception) -> Response:
        return not_found(request, f"nothing is served at {request.url.path}")

    routes = [*tlog.routes(reader, **options), *memento.routes(reader, **options), *api.routes(reader, **options),
              *pages.routes(reader, **options)]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        reader.close()

    # every answer carries RFC 9530 digests of what it sends (g6.serve.digests)
    app = Starlette(routes=[on_reader(reader, r) for r in routes], exception_handlers={404: missing},
                    lifespan=lifespan, middleware=[Middleware(ContentDigest)])
    app.state.reader = reader
    return app
