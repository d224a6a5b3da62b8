"""Rendering (g6 fetch --render): pages whose text a script writes, over loopback hosts.

1. ``--render`` of N pages over H hosts (``g6 fetch --input --render``: every request through the checked client,
   a receipt each, the DOM, text and screenshot kept) against the same Chromium loading the same pages directly
   (no proxy, no interception, nothing kept), doing the same reading of each page: load, wait until it is settled
   by the same rule (the same count of the page's pending work, the same quiet window), then the DOM, the text and
   a screenshot. Both use two browsers at once.
2. ``--render auto`` on a batch where one page in ten is a shell, against raw httpx fetching the same pages (the
   issue's reference), and against raw httpx plus the direct Chromium rendering the shells.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import multiprocessing
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from bench.report import line_by_rounds
from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits, find_chromium
from g6.adapters.browser.cdp import CDPConnection
from g6.adapters.browser.launch import QUIET_FLAGS
from g6.adapters.browser.page_js import PENDING, SETTLE_PROBE
from g6.adapters.browser.pool import BrowserPool
from g6.cli.words import counted
from g6.fetch.batch import batch_fetch
from g6.fetch.render import Renderer
from g6.home import EvidenceHome

BROWSERS = 2
QUIET = 0.5
SETTLE = RenderLimits().settle
APP_JS = b"""fetch(document.body.dataset.src).then((r) => r.json()).then((d) => {
  const a = document.getElementById("app");
  for (const t of d.paragraphs) { const p = document.createElement("p"); p.textContent = t; a.append(p); } });"""


def _shell(h: int, p: int) -> bytes:
    return (f'<!doctype html><html><head><title>App {p}</title></head><body data-src="/d/{p}.json">'
            f'<div id="app"></div><script src="/app.js"></script></body></html>').encode()


def _data(h: int, p: int) -> bytes:
    import json

    from bench.sites import page_paragraphs

    return json.dumps({"paragraphs": page_paragraphs(h, p)}).encode()


def _late(reply: Any, latency: float) -> Any:
    """``reply``, answered ``latency`` seconds after the request came (as a distant server answers): the time
    is spent on the server's own thread for the connection, the client's machine does nothing meanwhile."""
    if not latency:
        return reply

    def answer(_req: Any) -> Any:
        time.sleep(latency)
        return reply

    return answer


def _serve(hosts: int, pages: int, shell_every: int, latency: float, port_q: Any, stop: Any) -> None:
    from bench.sites import page_html
    from g6.demo.site import LocalSite, Reply

    sites, port = [], 0
    for h in range(hosts):
        routes: dict[str, Any] = {"/robots.txt": Reply(404, b""), "/favicon.ico": Reply(404, b""),
                                  "/app.js": Reply(body=APP_JS, content_type="text/javascript")}
        for p in range(pages):
            shell = shell_every == 1 or (h * pages + p) % shell_every == 0
            routes[f"/p/{p}"] = Reply(body=_shell(h, p) if shell else page_html(h, p))
            routes[f"/d/{p}.json"] = Reply(body=_data(h, p), content_type="application/json")
        routes = {path: _late(reply, latency) for path, reply in routes.items()}
        s = LocalSite(routes, host=f"127.0.0.{h + 2}", port_wanted=port).start()
        port = s.port
        sites.append(s)
    port_q.put(port)
    stop.wait()
    for s in sites:
        s.stop()


class Farm:
    def __init__(self, hosts: int, pages: int, shell_every: int, latency: float = 0.0) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.hosts, self.pages, self.shell_every = hosts, pages, shell_every
        self._q, self._stop = ctx.Queue(), ctx.Event()
        self._proc = ctx.Process(target=_serve, args=(hosts, pages, shell_every, latency, self._q, self._stop),
                                 daemon=True)

    def __enter__(self) -> Farm:
        self._proc.start()
        self.port = self._q.get(timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._proc.join(10)

    def urls(self) -> list[tuple[str, bool]]:
        return [(f"http://127.0.0.{h + 2}:{self.port}/p/{p}",
                 self.shell_every == 1 or (h * self.pages + p) % self.shell_every == 0)
                for p in range(self.pages) for h in range(self.hosts)]


class _Direct:
    """Chromium with the same quiet flags, no proxy and no interception: pages load straight from the sites."""

    def __init__(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="g6-bench-")
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        c_in, c_out = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)

        def fds() -> None:
            os.dup2(c_in, 3)
            os.dup2(c_out, 4)

        flags = [*QUIET_FLAGS, "--no-sandbox", f"--user-data-dir={self._profile}", "--remote-debugging-pipe"]
        self.proc = subprocess.Popen([find_chromium(), *flags, "about:blank"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(3, 4, c_in, c_out), preexec_fn=fds, start_new_session=True)
        for fd in (to_r, from_w, c_in, c_out):
            os.close(fd)
        self.cdp = CDPConnection(to_w, from_r, self._event)
        self._active: dict[str, set[str]] = {}
        self._last: dict[str, float] = {}
        self._loaded: dict[str, threading.Event] = {}

    def _event(self, msg: dict[str, Any]) -> None:
        sid, m, p = msg.get("sessionId"), msg["method"], msg.get("params") or {}
        if sid not in self._active:
            return
        if m == "Network.requestWillBeSent":
            self._active[sid].add(p.get("requestId"))
        elif m in ("Network.loadingFinished", "Network.loadingFailed"):
            self._active[sid].discard(p.get("requestId"))
        elif m == "Page.loadEventFired":
            self._loaded[sid].set()
        self._last[sid] = time.monotonic()

    def capture(self, url: str) -> int:
        """Load ``url`` in a fresh context and read it as a render does; the bytes of what was read."""
        c = self.cdp
        ctx = c.send("Target.createBrowserContext")["browserContextId"]
        target = c.send("Target.createTarget", {"url": "about:blank", "browserContextId": ctx})["targetId"]
        sid = c.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self._active[sid], self._last[sid], self._loaded[sid] = set(), time.monotonic(), threading.Event()
        for m in ("Page.enable", "Network.enable"):
            c.send(m, session=sid)
        c.send("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1,
                                                      "mobile": False}, session=sid)
        c.send("Page.addScriptToEvaluateOnNewDocument", {"source": SETTLE_PROBE % int(QUIET * 1000)}, session=sid)
        c.send("Page.navigate", {"url": url}, session=sid)
        self._loaded[sid].wait(30)
        self._settle(sid)
        ev = {"returnByValue": True}
        dom = c.send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML", **ev}, session=sid)
        text = c.send("Runtime.evaluate", {"expression": "document.body.innerText", **ev}, session=sid)
        shot = c.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=sid)
        c.send("Target.disposeBrowserContext", {"browserContextId": ctx})
        for d in (self._active, self._last, self._loaded):
            d.pop(sid, None)
        return len(dom["result"]["value"]) + len(text["result"]["value"]) + len(base64.b64decode(shot["data"]))

    def _settle(self, sid: str) -> None:
        """g6's settle rule (adapters/browser/render.py): no request for the quiet window, or none for
        ``SETTLE`` s and the page's count of its pending work 0 twice in a row, a step apart."""
        calm = 0
        while True:
            quiet = 0.0 if self._active[sid] else time.monotonic() - self._last[sid]
            if quiet >= QUIET:
                return
            if quiet >= SETTLE:
                last = self._last[sid]
                got = self.cdp.send("Runtime.evaluate", {"expression": PENDING, "returnByValue": True}, session=sid)
                calm = calm + 1 if got["result"].get("value") == 0 and self._last[sid] == last else 0
                if calm >= 2:
                    return
                time.sleep(0.03)
            else:
                calm = 0
                time.sleep(0.02)

    def close(self) -> None:
        self.cdp.close(wait=0)
        with __import__("contextlib").suppress(ProcessLookupError):
            os.killpg(self.proc.pid, 9)
        self.proc.wait()
        shutil.rmtree(self._profile, ignore_errors=True)


def _direct(urls: list[str], browsers: list[_Direct]) -> float:
    """The pages shared out between the browsers, one page at a time each."""
    todo = list(urls)
    lock = threading.Lock()

    def work(b: _Direct) -> None:
        while True:
            with lock:
                if not todo:
                    return
                u = todo.pop()
            assert b.capture(u) > 0

    t = time.perf_counter()
    threads = [threading.Thread(target=work, args=(b,)) for b in browsers]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t


def _raw(urls: list[str]) -> float:
    async def main() -> float:
        sem = asyncio.Semaphore(8)
        async with httpx.AsyncClient() as c:
            async def get(u: str) -> int:
                async with sem:
                    return len((await c.get(u)).content)
            t = time.perf_counter()
            assert sum(await asyncio.gather(*(get(u) for u in urls))) > 0
            return time.perf_counter() - t

    return asyncio.run(main())


def _ours(urls: list[str], mode: str, check: Callable[[Any], None], browsers: int = BROWSERS) -> float:
    with tempfile.TemporaryDirectory() as d:
        home = EvidenceHome(d, fsync=False)
        home.keys.init()
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client, \
                BrowserPool(browsers) as pool:
            with contextlib.ExitStack() as started:  # every browser started before the clock, as the direct ones are
                for _ in range(browsers if mode != "off" else 0):
                    started.enter_context(pool.browser())
            renderer = Renderer(pool, RenderLimits(quiet=QUIET))
            t = time.perf_counter()
            report = batch_fetch(home, client, urls, concurrency=8, processes=1, render_mode=mode, renderer=renderer)
            took = time.perf_counter() - t
        check(report)
        home.close()
    return took


def run(quick: bool = False) -> None:
    hosts, pages = (2, 3) if quick else (20, 10)
    with Farm(hosts, pages, shell_every=1) as farm:
        urls = [u for u, _ in farm.urls()]
        direct = [_Direct() for _ in range(BROWSERS)]
        try:
            for b in direct:
                b.capture(urls[0])  # started and warm, as ours are
            ref = _direct(urls, direct)
        finally:
            for b in direct:
                b.close()

        def all_rendered(report: Any) -> None:
            assert report.ok and all(r.render and r.render["rendered"] for r in report.results), report.counts

        ours = _ours(urls, "always", all_rendered)
        line_by_rounds(f"render {len(urls)} pages / {hosts} hosts, {BROWSERS} browsers", len(urls), [ours], [ref],
                       "pages/s", "reference: the same Chromium loading them directly, no interception, nothing kept")
    run_auto(quick)


# Server latencies the --render auto batch is measured at: none (loopback as it is, the figure), then replies
# that come as a distant server's do (every reply, sub-resources too; web.dev calls a time to first byte under
# 0.8 s good), where the raw reads wait on the network as a batch over the web does.
LATENCIES = (0.0, 0.1, 0.3)
# Browsers at once for the --render auto batch: the default (G6_RENDER_BROWSERS), then five (the ten shells in two
# rounds); the direct reference renders its shells on as many.
AUTO_BROWSERS = (BROWSERS, 5)


def run_auto(quick: bool = False) -> None:
    """The --render auto batch (one page in ten a shell) against raw httpx, at each server latency."""
    hosts, pages = (2, 5) if quick else (10, 10)
    for latency in (0.0,) if quick else LATENCIES:
        with Farm(hosts, pages, shell_every=10, latency=latency) as farm:
            urls = [u for u, _ in farm.urls()]
            raw = _raw(urls)

            def all_read(report: Any, n: int = len(urls)) -> None:
                # a shell read raw is ``empty`` (no text): read all the same
                assert set(report.counts) <= {"ok", "empty"} and len(report.results) == n, report.counts

            # the batch rendering nothing: what the one-request-at-a-time-per-host rule leaves of raw httpx's speed
            line_by_rounds(f"batch, no render, {counted(len(urls), 'page')}, replies after {latency * 1000:.0f} ms",
                           len(urls), [_ours(urls, "off", all_read)], [raw], "pages/s",
                           "reference: raw httpx (8 requests at once, any host)")
            for browsers in (BROWSERS,) if quick else AUTO_BROWSERS:
                _auto_round(farm, latency, raw, browsers)


def _auto_round(farm: Farm, latency: float, raw: float, browsers: int) -> None:
    pairs = farm.urls()
    urls = [u for u, _ in pairs]
    shells = [u for u, s in pairs if s]
    direct = [_Direct() for _ in range(browsers)]
    try:
        for b in direct:
            b.capture(shells[0])
        raw_and_render = raw + _direct(shells, direct)
    finally:
        for b in direct:
            b.close()

    def shells_rendered(report: Any) -> None:
        rendered = sorted(r.url for r in report.results if r.render and r.render["rendered"])
        assert report.ok and rendered == sorted(shells), (rendered, shells)

    ours = _ours(urls, "auto", shells_rendered, browsers)
    label = (f"batch --render auto {counted(len(urls), 'page')}, {counted(len(shells), 'shell')}, "
             f"{counted(browsers, 'browser')}, replies after {latency * 1000:.0f} ms")
    line_by_rounds(label, len(urls), [ours], [raw], "pages/s", "reference: raw httpx (renders nothing)")
    line_by_rounds(label, len(urls), [ours], [raw_and_render], "pages/s",
                   "reference: raw httpx, then the direct Chromium rendering the shells")
