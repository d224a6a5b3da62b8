"""One page rendered in a locked-down browser: every request answered by g6, then what a reader saw.

``render`` opens the page in a browser context of its own (no cookie or storage of another capture),
with every request of every target paused and answered by ``fetch`` (``intercept``), waits for the page
to load, scrolls it down a viewport at a time (lazy-loaded text) while it is taller than its viewport, waits
until it is settled, and keeps: the DOM after the scripts ran, the text a
reader sees (shadow roots too, open and closed), and a full-page PNG screenshot. The render deadline
ends loading and scrolling whatever the page does (a page that polls for ever, an endless scroll):
the capture keeps what there is then. A browser that crashes or stops answering ends the render with
a typed ``ended`` and what was kept up to then; the caller closes such a browser.

**Settled.** A page is taken as settled when no request has been paused or answered for ``limits.quiet``
seconds (0.5), or sooner: when none is being answered and none was for ``limits.settle`` seconds (0.1), the capture
has no target besides its page (a frame or a worker of its own: their timers are not counted), and the page has
nothing under way (``page_js.SETTLE_PROBE``, counted in the page's world before its scripts run, read over
DevTools): no one-shot timer set to fire within the quiet window, no interval that short, no idle callback, no
fetch(), body read or XMLHttpRequest unanswered, no frame; twice in a row, a step apart, with no request and no
navigation between. The read waits for the page's main thread, so what its scripts started before it is counted;
a request or a navigation seen meanwhile starts the wait again. A page that keeps something pending (a clock that
ticks within the window, a frame, a worker) is settled by the quiet window, as before. The page can undo the count
(it runs in its world); that changes only when its own capture is taken, never what is kept of it.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from g6.adapters.browser import page_js
from g6.adapters.browser.cdp import BrowserError, BrowserGone, BrowserHung
from g6.adapters.browser.intercept import Counts, Interceptor, Navigation, SubFetch
from g6.adapters.browser.launch import BrowserInfo, BrowserProcess

ENDINGS = ("settled", "deadline", "scroll_limit", "subrequest_limit", "byte_limit", "navigation_failed",
           "renderer_crashed", "browser_crashed", "browser_hung")
BROKEN = ("renderer_crashed", "browser_crashed", "browser_hung")  # the browser is closed after these
MAX_CLOSED_ROOTS = 200  # closed shadow roots read (each one DevTools command, all sent at once)
MAX_PIERCED_NODES = 50_000  # elements in reach past which closed shadow roots are not looked for (DOM.getDocument)
MAX_DIALOGS_KEPT = 10  # dialogs named in the capture (each one is dismissed and counted)
MAX_DIALOG_MESSAGE = 200
RETIRED_FRAMES = 4096  # frames of ended captures whose late requests are failed, per browser (the newest kept)


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """The bounds of one render. ``deadline``: seconds for loading and scrolling; ``quiet``: seconds
    without a request that count as settled (``settle``: sooner, when no short timer is pending: see the module
    docstring); ``command_timeout``: seconds a browser may take to answer
    one command before it is taken as hung."""

    deadline: float = 30.0
    quiet: float = 0.5
    settle: float = 0.1  # seconds without a request that settle a page with no short timer pending
    max_requests: int = 300
    max_bytes: int = 64 * 1024 * 1024
    width: int = 1280
    height: int = 800
    max_scroll_steps: int = 40
    max_screenshot_height: int = 16384
    command_timeout: float = 20.0
    # seconds the walk of the reader's text may take before it stops where it got to (the text then cut);
    # None: 60 % of command_timeout, so the command itself is answered in time
    text_seconds: float | None = None
    workers: int = 6
    # the page-world lockdown script (defence in depth); off only in tests that show the proxy and the
    # interception hold without it
    page_lockdown: bool = True


@dataclass(slots=True)
class RenderResult:
    url: str
    ended: str  # one of ENDINGS
    info: BrowserInfo | None  # None: no browser was used (a URL refused before one started)
    width: int
    height: int
    started: float  # time.time() when the render began
    render_ms: int = 0
    location: str | None = None  # the page's location.href when captured (a script may have set it: replaceState)
    title: str | None = None
    dom: bytes | None = None  # UTF-8 HTML
    text: str | None = None
    screenshot: bytes | None = None  # PNG
    screenshot_clipped: bool = False
    counts: Counts = field(default_factory=Counts)
    idents: list[Any] = field(default_factory=list)  # fetch's handle on each request, in answer order
    navigations: list[Navigation] = field(default_factory=list)  # the top frame's requests
    message: str = ""
    dialogs: int = 0  # alert/confirm/prompt/beforeunload dialogs the page opened, each dismissed
    # the document the top frame showed when the capture was taken: its URL as the browser committed it
    # (an error page: the URL it could not show), None when nothing committed after the page's own request;
    # ``committed`` is the top-frame request whose answer it is (None: no request of the capture's was)
    document_url: str | None = None
    error_page: bool = False
    committed: Navigation | None = None
    truncated: list[str] = field(default_factory=list)  # what was cut to its bound: dom, text, screenshot, shadow_roots
    dialogs_seen: list[dict[str, str]] = field(default_factory=list)  # the first MAX_DIALOGS_KEPT: type, message

    @property
    def broken(self) -> bool:
        return self.ended in BROKEN


class _Targets:
    """The events of one capture: its page's session, the targets attached under it, crashes, the load."""

    def __init__(self, browser: BrowserProcess, context: str, interceptor: Interceptor,
                 timeout: float) -> None:
        self.b, self.context, self.icpt, self.timeout = browser, context, interceptor, timeout
        self.page_target: str | None = None
        self.sessions: dict[str, str] = {}  # target id -> session id, for every target attached
        self.attached = threading.Condition()
        self.loaded = threading.Event()
        self.crashed: str | None = None
        self.page_lockdown = True
        self.dialogs = 0
        self.dialogs_seen: list[dict[str, str]] = []
        # each document the top frame committed: (its URL, whether an error page, top-frame requests answered by then)
        self.commits: list[tuple[str, bool, int]] = []

    def on_event(self, method: str, params: dict[str, Any], session: str | None) -> None:
        if method == "Fetch.requestPaused":
            self.icpt.paused(params, session)
        elif method == "Target.attachedToTarget":
            info = params.get("targetInfo") or {}
            tid, sid = info.get("targetId"), params.get("sessionId")
            if not (isinstance(tid, str) and isinstance(sid, str)):
                return
            waiting = bool(params.get("waitingForDebugger"))
            with self.attached:
                # the capture's own page is the first page of its context, attached (paused) before
                # createTarget even answers; any later page of the context is a popup
                ours = (self.page_target is None and info.get("type") == "page"
                        and info.get("browserContextId") == self.context and not info.get("openerId"))
                if ours:
                    self.page_target = tid
                self.sessions[tid] = sid
                self.attached.notify_all()
            if not ours:
                _submit(self.icpt, self._setup_other, info, sid, waiting, info.get("browserContextId") == self.context)
        elif method == "Page.loadEventFired" and session is not None and session == self.page_session():
            self.loaded.set()
        elif method in ("Page.frameRequestedNavigation", "Page.frameScheduledNavigation", "Page.frameStartedLoading"):
            self.icpt.touch()  # a navigation about to ask for its document: not settled yet
        elif method == "Page.javascriptDialogOpening" and session is not None:
            self._dismiss(params, session)
        elif method == "Page.frameNavigated" and session is not None and session == self.page_session():
            frame = params.get("frame") or {}
            if frame.get("id") == self.page_target and not frame.get("parentId"):
                self._committed(frame)
        elif method == "Inspector.targetCrashed" and session is not None and session == self.page_session():
            self._crash(session)
        elif method == "Target.detachedFromTarget" and params.get("targetId") == self.page_target:
            self._crash(self.page_session())

    def _dismiss(self, params: dict[str, Any], session: str) -> None:
        """A dialog (alert, confirm, prompt, beforeunload) blocks its page's scripts until answered: it is
        dismissed at once, as a reader closing it would (confirm false, prompt null, beforeunload: stay), and
        noted. Posted, not awaited: this runs on the reader thread."""
        with self.attached:
            self.dialogs += 1
            if len(self.dialogs_seen) < MAX_DIALOGS_KEPT:
                self.dialogs_seen.append({"type": str(params.get("type") or "")[:20],
                                          "message": str(params.get("message") or "")[:MAX_DIALOG_MESSAGE]})
        with contextlib.suppress(BrowserError):
            self.b.cdp.post("Page.handleJavaScriptDialog", {"accept": False}, session=session)

    def _committed(self, frame: dict[str, Any]) -> None:
        """The top frame committed a document. Its answer was handed over before the commit, so it is among the
        top-frame requests answered by now; the tab's first, empty document (before any request) is not one."""
        answered = len(self.icpt.navigations)
        if not answered:
            return
        unreachable = frame.get("unreachableUrl")
        if isinstance(unreachable, str) and unreachable:
            url, error = unreachable, True
        else:
            url, error = str(frame.get("url") or "") + str(frame.get("urlFragment") or ""), False
        with self.attached:
            self.commits.append((url, error, answered))

    def committed(self, navigations: list[Navigation]) -> tuple[str | None, bool, Navigation | None]:
        """The document the top frame shows now: its URL, whether an error page, and the request it is the answer
        of (the last one of that URL answered before it committed; a navigation the browser asked for and never
        showed, such as a download or a 204, is not it)."""
        with self.attached:
            if not self.commits:
                return None, False, None
            url, error, answered = self.commits[-1]
        for nav in reversed(navigations[:answered]):
            if nav.url == url:
                return url, error, nav
        return url, error, None

    def _crash(self, session: str | None) -> None:
        self.crashed = self.crashed or "renderer_crashed"
        if session is not None:  # a command waiting on the dead page gets no reply: it is answered now
            self.b.cdp.fail_session(session, "the page's renderer crashed")

    def page_session(self) -> str | None:
        return self.sessions.get(self.page_target) if self.page_target else None

    def wait_session(self, target: str) -> str:
        with self.attached:
            if not self.attached.wait_for(lambda: self.page_target is not None, self.timeout):
                raise BrowserHung(f"the browser did not attach the new page within {self.timeout:g} s")
            if self.page_target != target:
                raise BrowserError("the browser attached another page than the one it opened")
            return self.sessions[target]

    def _setup_other(self, info: dict[str, Any], sid: str, waiting: bool, mine: bool) -> None:
        """A target the capture did not open: a frame gets the lockdown script and is let run; a popup gets the
        lockdown script, is let run, then closed (its requests are checked like any other); any other is let run."""
        cdp, t = self.b.cdp, self.timeout
        kind = info.get("type")
        try:
            if kind == "page" and mine:
                self.icpt.counts.popups += 1
                if waiting:
                    # let run before it is closed: a popup begins in its opener's renderer, and while it waits for
                    # the debugger its opener's scripts wait too; closed still waiting, it could leave the opener
                    # paused for good (its later requests never made, its text unreadable). Locked down first, as a
                    # frame is: while it runs its opener holds its window (same origin) and its own document may
                    # run, and neither may reach a channel the page's own lockdown removed (WebSocket, WebRTC)
                    with contextlib.suppress(BrowserError):
                        _lock_down(cdp, sid, t, script=self.page_lockdown)
                    waiting = False
                cdp.post("Target.closeTarget", {"targetId": info.get("targetId")})
            elif kind == "iframe":
                _lock_down(cdp, sid, t, script=self.page_lockdown)
                return
            elif kind in ("worker", "shared_worker", "service_worker"):
                cdp.post("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True,
                                                  "flatten": True}, session=sid)
        except BrowserError:
            pass
        if waiting:
            with contextlib.suppress(BrowserError):
                cdp.post("Runtime.runIfWaitingForDebugger", session=sid)


def _submit(icpt: Interceptor, fn: Callable[..., None], *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the capture is over: its pool is shut
        icpt._pool.submit(fn, *args)


class _Dispatch:
    """A browser's events: to the capture running in it, if any; between captures, a request paused is
    failed and a target attached is let run (nothing of the browser's own is left paused)."""

    def __init__(self, browser: BrowserProcess) -> None:
        self.b = browser
        self.current: _Targets | None = None
        # the frames and targets of captures that ended: a request one of them still sends (a keep-alive fetch
        # on pagehide, a poll) arrives browser-wide with no session and must never be taken by the next capture
        self.retired: collections.deque[str] = collections.deque(maxlen=RETIRED_FRAMES)
        self.retired_set: set[str] = set()

    def retire(self, targets: _Targets) -> None:
        for tid in (targets.page_target, *list(targets.sessions)):
            if isinstance(tid, str) and tid not in self.retired_set:
                if len(self.retired) == self.retired.maxlen:
                    self.retired_set.discard(self.retired[0])
                self.retired.append(tid)
                self.retired_set.add(tid)

    def __call__(self, msg: dict[str, Any]) -> None:
        method, params, session = msg["method"], msg.get("params") or {}, msg.get("sessionId")
        cur = self.current
        frame = params.get("frameId") if method == "Fetch.requestPaused" else None
        if isinstance(frame, str) and frame in self.retired_set:
            cur = None  # an ended capture's request: failed, never answered for the capture running now
        if cur is not None:
            cur.on_event(method, params, session)
        elif method == "Fetch.requestPaused" and isinstance(params.get("requestId"), str):
            self.b.cdp.post("Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                            session=session)
        elif method == "Target.attachedToTarget" and params.get("waitingForDebugger"):
            self.b.cdp.post("Runtime.runIfWaitingForDebugger", session=params.get("sessionId"))


def _lock_down(cdp: Any, sid: str, timeout: float, *more: tuple[str, dict[str, Any]], script: bool = True,
               probe: str = "") -> None:
    """A page or frame target paused before it runs: the lockdown script (and ``probe``) before its scripts, its
    own children attached paused, ``more`` commands, then let run. All are sent before any reply is awaited: a
    paused target answers some only once it runs, and a session runs its commands in the order sent."""
    lockdown = {"source": (page_js.LOCKDOWN if script else "") + probe, "runImmediately": True}
    sent = [cdp.start("Page.enable", session=sid),
            cdp.start("Page.addScriptToEvaluateOnNewDocument", lockdown, session=sid),
            cdp.start("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True},
                      session=sid),
            *(cdp.start(m, p, session=sid) for m, p in more),
            cdp.start("Runtime.runIfWaitingForDebugger", session=sid)]
    for s in sent:
        cdp.result(s, timeout)


def prepare_browser(browser: BrowserProcess, timeout: float = 20.0) -> None:
    """Once per browser: interception of every request of every target, and every new target attached
    paused (so nothing of it runs before it is set up)."""
    cdp = browser.cdp
    browser.dispatch = _Dispatch(browser)  # type: ignore[attr-defined]
    cdp.set_event_handler(browser.dispatch)  # type: ignore[attr-defined]
    # browser_ui: Chromium's own pages (the omnibox popup), never the capture's, never attached
    ui = [{"type": "browser", "exclude": True}, {"type": "tab", "exclude": True},
          {"type": "browser_ui", "exclude": True}, {}]
    cdp.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}, timeout=timeout)
    cdp.send("Target.setAutoAttach", {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True,
                                      "filter": ui}, timeout=timeout)


def render(browser: BrowserProcess, url: str, fetch: SubFetch, limits: RenderLimits | None = None,
           clock: Callable[[], float] = time.monotonic) -> RenderResult:
    """Render ``url`` in ``browser`` (made ready by :func:`prepare_browser`), every request answered by
    ``fetch``. Never raises for what the page or the browser does: ``RenderResult.ended`` says how it ended."""
    lim = limits or RenderLimits()
    t0, started = clock(), time.time()
    result = RenderResult(url, "settled", browser.info, lim.width, lim.height, started)
    icpt = Interceptor(browser.cdp, fetch, max_requests=lim.max_requests, max_bytes=lim.max_bytes,
                       deadline=t0 + lim.deadline, workers=lim.workers, clock=clock)
    context: str | None = None
    targets: _Targets | None = None
    dispatch: _Dispatch = browser.dispatch  # type: ignore[attr-defined]
    try:
        context = browser.cdp.send("Target.createBrowserContext", {"disposeOnDetach": True},
                                   timeout=lim.command_timeout)["browserContextId"]
        targets = _Targets(browser, context, icpt, lim.command_timeout)
        targets.page_lockdown = lim.page_lockdown
        dispatch.current = targets
        _load(browser, url, lim, icpt, targets, result, t0, clock)
        # the document is the one committed when the snapshot begins (requests stopped: no new one is answered)
        result.document_url, result.error_page, result.committed = targets.committed(icpt.navigations)
        if not result.broken and result.ended != "navigation_failed":
            _snapshot(browser, lim, targets, result)
    except BrowserError as e:
        if targets is not None and targets.crashed:
            result.ended = targets.crashed
        elif isinstance(e, BrowserGone) or not browser.alive():
            result.ended = "browser_crashed"
        else:
            result.ended = "browser_hung"
        result.message = str(e)
    finally:
        icpt.stop(result.ended)
        icpt.release()  # taken (or never to be): what was held since the capture stopped is failed now
        icpt.drain(max(1.0, lim.command_timeout))
        if context is not None and not result.broken:
            try:
                browser.cdp.send("Target.disposeBrowserContext", {"browserContextId": context},
                                 timeout=lim.command_timeout)
            except BrowserError as e:
                result.ended, result.message = "browser_hung", f"the capture's context would not close: {e}"
        if targets is not None:
            dispatch.retire(targets)
        dispatch.current = None
        icpt.close()
        if targets is not None:
            result.dialogs, result.dialogs_seen = targets.dialogs, list(targets.dialogs_seen)
        result.counts, result.idents, result.navigations = icpt.counts, icpt.idents, icpt.navigations
        if targets is not None and (result.broken or result.ended == "navigation_failed"):
            result.document_url, result.error_page, result.committed = targets.committed(result.navigations)
        result.render_ms = int((clock() - t0) * 1000)
    return result


def _load(browser: BrowserProcess, url: str, lim: RenderLimits, icpt: Interceptor, targets: _Targets,
          result: RenderResult, t0: float, clock: Callable[[], float]) -> None:
    """Open the page, navigate, wait for its load, scroll it, wait until it is quiet or the deadline."""
    cdp, to = browser.cdp, lim.command_timeout
    deadline = t0 + lim.deadline
    stop = threading.Event()
    icpt.on_limit = lambda _why: stop.set()
    # downloads denied in the context before anything loads in it (answered below, before the navigation)
    no_downloads = cdp.start("Browser.setDownloadBehavior", {"behavior": "deny", "browserContextId": targets.context})
    target = cdp.send("Target.createTarget", {"url": "about:blank", "browserContextId": targets.context},
                      timeout=to)["targetId"]
    sid = targets.wait_session(target)
    icpt.main_frame_id = target
    cdp.result(no_downloads, to)
    _lock_down(cdp, sid, to, ("Emulation.setDeviceMetricsOverride", {"width": lim.width, "height": lim.height,
                                                                       "deviceScaleFactor": 1, "mobile": False}),
               ("Inspector.enable", {}), script=lim.page_lockdown,
               probe=page_js.SETTLE_PROBE % int(lim.quiet * 1000))
    # answered once the page's own request is: its first bytes, or its failure (that request is never held, and its
    # read ends by the render's deadline at the latest, failed in the page then: intercept.Interceptor)
    nav = cdp.send("Page.navigate", {"url": url}, session=sid, timeout=to)
    if nav.get("errorText"):
        # the deadline cut the page's own read: the capture ended there, with nothing shown
        cut = clock() >= deadline and "TIMED_OUT" in str(nav["errorText"])
        result.ended = "deadline" if cut else "navigation_failed"
        result.message = str(nav["errorText"])[:200]
        return

    def over() -> bool:
        return (clock() >= deadline or stop.is_set() or targets.crashed is not None
                or browser.cdp.closed is not None or not browser.alive())

    def sleep_until(done: Callable[[], bool], step: float = 0.02) -> None:
        while not done() and not over():
            time.sleep(min(step, max(0.0, deadline - clock())))

    while not targets.loaded.wait(min(0.05, max(0.0, deadline - clock()))) and not over():
        pass
    world: list[int] = []

    def ev(expression: str, promise: bool = False) -> Any:
        """Evaluate in g6's world; a navigation since (the world gone with its document) makes a new one."""
        for attempt in (1, 2):
            try:
                if not world:
                    world.append(_world(cdp, sid, target, to))
                return _eval(cdp, sid, world[0], expression, to, promise=promise)
            except (BrowserGone, BrowserHung):
                raise
            except BrowserError:
                world.clear()
                if attempt == 2:
                    raise
        return None

    steps, seen = 0, -1  # scroll steps taken; the page's height when it was last found at the bottom
    while not over():
        if steps < lim.max_scroll_steps:
            step = ev(page_js.SCROLL_STEP, promise=True) or {}
            steps += 1
            if not step.get("bottom"):
                continue
            seen = int(step.get("height") or 0)
        # at the bottom: settled (the module docstring) and the page did not grow meanwhile; a page that grew is
        # scrolled on (an endless one, until the steps run out)
        _settle(lim, icpt, lambda: cdp.send("Runtime.evaluate", {
            "expression": page_js.PENDING, "returnByValue": True, "timeout": 1000}, session=sid, timeout=to),
            lambda: len(targets.sessions) > 1, sleep_until)
        if over():
            break
        if int(ev(page_js.HEIGHT) or 0) == seen:
            break
        if steps >= lim.max_scroll_steps:
            result.ended = "scroll_limit"
            break
    if browser.cdp.closed is not None or not browser.alive():
        raise BrowserGone(browser.cdp.closed or "the browser exited")
    if targets.crashed:
        result.ended = targets.crashed
    elif icpt.stop_reason is not None:
        result.ended = icpt.stop_reason
    elif clock() >= deadline:
        result.ended = "deadline"
    icpt.stop(result.ended if result.ended != "settled" else "snapshot")
    if targets.crashed is None:
        with contextlib.suppress(BrowserError):
            ev(page_js.SCROLL_TOP)


def _settle(lim: RenderLimits, icpt: Interceptor, pending: Callable[[], dict[str, Any]],
            others: Callable[[], bool], sleep_until: Callable[..., None]) -> None:
    """Wait until the page is settled (the module docstring), or ``sleep_until`` gives up (the deadline)."""
    calm: list[tuple[int, float]] = []  # the activity at each read that found nothing pending, since the last

    def settled() -> bool:
        quiet = icpt.quiet_for()
        if quiet >= lim.quiet:
            return True
        if quiet < lim.settle or others():  # a frame or worker of its own: its timers are not counted
            calm.clear()
            return False
        before = icpt.activity()
        try:  # the page's main thread answers once its current task is done: what it started is counted by then
            count = (pending().get("result") or {}).get("value")
        except (BrowserGone, BrowserHung):
            raise  # the browser is gone or stuck: the render ends so, as any command's would
        except BrowserError:  # the page navigated under the read: not settled yet
            count = None
        nothing = type(count) is int and count == 0  # only the probe's own 0: not false, not 0.0, not "0"
        if not nothing or icpt.activity() != before or (calm and calm[-1] != before):
            calm.clear()
            return False
        # twice in a row, a step apart: a request the page started just before the first read has reached g6
        # by the second (a request's way to the interceptor is longer than the read's answer)
        calm.append(before)
        return len(calm) >= 2

    sleep_until(settled, 0.03)


def _world(cdp: Any, sid: str, frame: str, timeout: float) -> int:
    """An isolated world of g6's in the page's top frame: the page's scripts cannot see or change it."""
    return int(cdp.send("Page.createIsolatedWorld", {"frameId": frame, "worldName": "g6-reader",
                                                     "grantUniveralAccess": False},
                        session=sid, timeout=timeout)["executionContextId"])


def _eval(cdp: Any, sid: str, world: int, expression: str, timeout: float, promise: bool = False) -> Any:
    res = cdp.send("Runtime.evaluate", {"expression": expression, "contextId": world, "returnByValue": True,
                                        "awaitPromise": promise, "timeout": int(timeout * 1000)},
                   session=sid, timeout=timeout)
    if "exceptionDetails" in res:
        return None
    return (res.get("result") or {}).get("value")


def _closed_roots(cdp: Any, sid: str, world: int, timeout: float, max_nodes: int) -> tuple[list[str], bool]:
    """The page's closed shadow roots, found over the DevTools DOM domain (which sees them; an open one g6's world
    reaches itself): at most MAX_CLOSED_ROOTS object ids in g6's world, resolved in one round trip, and whether
    any were left out. The whole tree DOM.getDocument brings over is bounded first: a page with more than
    ``max_nodes`` elements in reach has its closed roots left out instead."""
    count = _eval(cdp, sid, world, page_js.ELEMENT_COUNT, timeout)
    if not isinstance(count, int) or count > max_nodes:
        return [], True
    doc = cdp.send("DOM.getDocument", {"depth": -1, "pierce": True}, session=sid, timeout=timeout)
    found: list[int] = []
    stack = [doc.get("root") or {}]
    while stack and len(found) <= MAX_CLOSED_ROOTS:
        node = stack.pop()
        for sr in node.get("shadowRoots") or ():
            if sr.get("shadowRootType") == "closed":
                found.append(sr["backendNodeId"])
            stack.append(sr)
        stack.extend(node.get("children") or ())  # not a frame's contentDocument: its text is the frame's
    del doc, stack
    started = [cdp.start("DOM.resolveNode", {"backendNodeId": b, "executionContextId": world}, session=sid)
               for b in found[:MAX_CLOSED_ROOTS]]
    roots: list[str] = []
    for one in started:
        try:
            roots.append(cdp.result(one, timeout)["object"]["objectId"])
        except (BrowserGone, BrowserHung):
            raise
        except BrowserError:
            continue  # gone since (a script removed it): nothing of it to read
    with contextlib.suppress(BrowserError):
        cdp.post("DOM.disable", session=sid)  # no DOM events for the rest of the capture
    return roots, len(found) > MAX_CLOSED_ROOTS


def _call(cdp: Any, sid: str, world: int, fn: str, values: list[int], args: list[str],
          timeout: float) -> tuple[Any, bool, bool]:
    """``fn(...values, ...args)`` in g6's world: its ``{value, cut, late}`` as (value, cut to its bytes, cut for
    time)."""
    res = cdp.send("Runtime.callFunctionOn", {"functionDeclaration": fn, "executionContextId": world,
                                              "arguments": [*({"value": v} for v in values),
                                                            *({"objectId": a} for a in args)],
                                              "returnByValue": True}, session=sid, timeout=timeout)
    if "exceptionDetails" in res:
        return None, False, False
    got = (res.get("result") or {}).get("value")
    if not isinstance(got, dict):
        return None, False, False
    return got.get("value"), bool(got.get("cut")), bool(got.get("late"))


def _snapshot(browser: BrowserProcess, lim: RenderLimits, targets: _Targets, result: RenderResult) -> None:
    """The DOM, the reader's text, the screenshot and the final URL, from the page as it is now."""
    cdp, to = browser.cdp, lim.command_timeout
    sid, target = targets.page_session(), targets.page_target
    assert sid is not None and target is not None
    world = _world(cdp, sid, target, to)  # a new one: a navigation since the load replaced the old
    result.location = _eval(cdp, sid, world, page_js.LOCATION, to)
    title = _eval(cdp, sid, world, "document.title", to)
    result.title = title[:1000] if isinstance(title, str) and title.strip() else None
    # what the capture keeps of its own is bounded by its byte limit too, whatever a script wrote
    roots, left_out = _closed_roots(cdp, sid, world, to, min(MAX_PIERCED_NODES, lim.max_bytes // 1024))
    dom, dom_cut, _ = _call(cdp, sid, world, page_js.DOM, [lim.max_bytes // 2], roots, to)
    result.dom = dom.encode("utf-8", "replace") if isinstance(dom, str) else None
    # the walk of the text has most of a command's time, then stops where it got to (a page of very many nodes)
    walk = lim.text_seconds if lim.text_seconds is not None else to * 0.6
    text, text_cut, late = _call(cdp, sid, world, page_js.READER_TEXT, [lim.max_bytes // 4, int(walk * 1000)], roots,
                                 to)
    result.text = text if isinstance(text, str) else None
    result.screenshot, shot_cut = _screenshot(cdp, sid, lim, result)
    result.truncated = [name for name, cut in (("dom", dom_cut), ("text", text_cut or late), ("screenshot", shot_cut),
                                               ("shadow_roots", left_out)) if cut]
    if result.ended == "settled" and (dom_cut or text_cut or shot_cut):
        result.ended = "byte_limit"


def _screenshot(cdp: Any, sid: str, lim: RenderLimits, result: RenderResult) -> tuple[bytes | None, bool]:
    """A full-page PNG (at most ``max_screenshot_height`` tall) of at most a quarter of the byte limit: one too large
    is taken again shorter, once, then dropped. Whether it was cut (shorter or none)."""
    to, budget = lim.command_timeout, lim.max_bytes // 4
    metrics = cdp.send("Page.getLayoutMetrics", session=sid, timeout=to)
    size = metrics.get("cssContentSize") or metrics.get("contentSize") or {}
    height = max(1, int(size.get("height") or lim.height))
    result.screenshot_clipped = height > lim.max_screenshot_height
    height = min(height, lim.max_screenshot_height)
    for attempt in (1, 2):
        shot = cdp.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": lim.width, "height": height, "scale": 1}}, session=sid, timeout=to)
        data = shot.get("data")
        if not isinstance(data, str):
            return None, False
        if len(data) // 4 * 3 <= budget:
            return base64.b64decode(data), attempt > 1
        smaller = int(height * budget / (len(data) // 4 * 3) * 0.8)
        del shot, data
        if attempt == 2 or smaller < 1:
            break
        height = smaller
        result.screenshot_clipped = True
    return None, True
