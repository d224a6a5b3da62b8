"""Browser-wide interception: every request any target of the browser makes is paused and answered by g6.

``Fetch.enable`` sent to the browser target itself (no session) pauses the requests of every target of
the browser: the page and its frames (out-of-process ones too), popups, dedicated, shared and service
workers, the service worker's own script, keep-alive requests and beacons sent after the page is gone
(checked on Chromium 156 by ``tests/browser``). Each paused request goes to ``fetch`` (a
:data:`SubFetch` the caller supplies: g6's checked client, one receipt per request), on a small pool
of threads, and is answered with what it returned: the response (``Fetch.fulfillRequest``: the browser
never opens a connection for it) or a failure inside the page (``Fetch.failRequest``).

The limits are counted here: at most ``max_requests`` requests are handed to ``fetch``; past it, or
past ``max_bytes`` of answered bodies, the capture is told to stop.

**The capture's moment.** From the moment the capture stops (a limit, the deadline, or the snapshot of a settled
page) nothing more reaches the page: a request paused from then on is held (not handed to ``fetch``), and an answer
or failure ``fetch`` gives for a request under way is held too, all until the capture is taken (``release``, after
the snapshot), then failed. Failing them at once would hand the page a failure g6 caused (its ``catch`` writing
"failed" into text no reader saw) before its DOM, text and screenshot are taken. A request ``fetch`` says the capture's
end cut (``SubResponse.cut``) is held the same way, and receipted by the caller when it seals the capture.
"""

from __future__ import annotations

import base64
import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from g6.adapters.browser.cdp import BrowserError, BrowserGone, BrowserHung, CDPConnection

# Chromium's own words for why a request failed (Network.ErrorReason): what the page's script sees.
FAIL_REFUSED = "AccessDenied"
FAIL_BLOCKED = "BlockedByClient"
FAIL_UNREACHABLE = "ConnectionFailed"
FAIL_TIMEOUT = "TimedOut"
FAIL_REASONS = frozenset({FAIL_REFUSED, FAIL_BLOCKED, FAIL_UNREACHABLE, FAIL_TIMEOUT, "Failed", "Aborted"})

# Schemes of the browser's own resources (its PDF viewer, its WebUI): requests of the browser, never of the page.
BROWSER_OWN = ("chrome:", "chrome-extension:", "chrome-untrusted:", "devtools:")

# The response headers that restrict what a page may do, handed to the browser as the server sent them: a reader's
# browser honours them, so a capture must too (a script the page's Content-Security-Policy forbids, or one served as
# text/plain with nosniff, is not run for g6 alone, its words kept as what the reader saw). What the caller asks
# its client to hand back (``g6.fetch.render``) includes these.
RESTRICTING_HEADERS = ("content-security-policy", "x-content-type-options", "x-frame-options", "permissions-policy",
                       "referrer-policy", "cross-origin-opener-policy", "cross-origin-embedder-policy",
                       "cross-origin-resource-policy")
# A policy's reporting directives would make the browser send reports (POSTs, outside the page's own requests):
# they are cut from every Content-Security-Policy handed over; the policy itself stays whole.
_CSP_REPORTING = frozenset({"report-uri", "report-to"})


def without_reporting(csp: str) -> str:
    """``csp`` (one header value: policies separated by commas, directives by semicolons) without its reporting
    directives."""
    policies = []
    for policy in csp.split(","):
        kept = [d.strip() for d in policy.split(";")
                if d.strip() and d.split(None, 1)[0].lower() not in _CSP_REPORTING]
        if kept:
            policies.append("; ".join(kept))
    return ", ".join(policies)


def browser_headers(headers: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    """The headers a response is handed to the browser with (``Fetch.fulfillRequest``)."""
    out = []
    for name, value in headers:
        if name.lower() == "content-security-policy":
            value = without_reporting(value)
            if not value:
                continue
        out.append({"name": name, "value": value})
    return out


@dataclass(frozen=True, slots=True)
class SubRequest:
    """One request the browser made, as g6 is asked to answer it."""

    url: str
    method: str
    resource_type: str  # Document, Script, Stylesheet, Image, Font, XHR, Fetch, Ping, Other…
    main_frame: bool  # a navigation of the captured page's own top frame
    service_worker_script: bool  # the browser fetching a service worker's script (Service-Worker: script)
    accept: str | None
    max_bytes: int  # what the capture's byte budget leaves for this body
    time_left: float  # seconds until the render deadline


@dataclass(frozen=True, slots=True)
class SubResponse:
    """What to answer the browser with: a response, or ``fail`` (one of FAIL_REASONS) and nothing else.
    ``ident`` is the caller's own handle on the request (its receipt), kept in the capture's record."""

    ident: Any
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    fail: str | None = None
    over_budget: bool = False  # the body did not fit what the byte budget left: the capture stops there
    # the capture's end cut the read (its deadline was the read's): nothing to answer in the page, no receipt yet
    # (the caller receipts it when it seals the capture); ``ident`` is then None
    cut: bool = False


SubFetch = Callable[[SubRequest], SubResponse]


@dataclass(slots=True)
class Navigation:
    """A request of the captured page's top frame, and how it was answered."""

    url: str
    ident: Any
    status: int | None
    failed: bool


@dataclass(slots=True)
class Counts:
    requests: int = 0  # handed to fetch
    answered: int = 0  # fulfilled
    failed: int = 0  # failed in the page (refused by fetch, or fetch could not read it)
    over_limit: int = 0  # past a limit or the capture's end: never handed to fetch, not receipted
    bytes: int = 0  # bodies answered
    popups: int = 0  # windows the page opened: closed as they opened (their requests, if any, checked)

    def to_json(self) -> dict[str, int]:
        return {"requests": self.requests, "answered": self.answered, "failed": self.failed,
                "over_limit": self.over_limit, "bytes": self.bytes, "popups": self.popups}


@dataclass(slots=True)
class _State:
    counts: Counts = field(default_factory=Counts)
    in_flight: int = 0
    last_activity: float = 0.0
    touches: int = 0  # navigations the page's targets said they started
    stop_reason: str | None = None
    idents: list[Any] = field(default_factory=list)
    navigations: list[Navigation] = field(default_factory=list)
    held: list[tuple[str, str | None]] = field(default_factory=list)  # (request id, session) not answered in the page
    released: bool = False  # the capture is taken: what is held is failed, and so is anything later


class Interceptor:
    """The answers to one capture's requests. ``main_frame_id`` is the captured page's target id (its top
    frame's id); ``deadline`` a ``time.monotonic`` value."""

    def __init__(self, cdp: CDPConnection, fetch: SubFetch, *, max_requests: int, max_bytes: int,
                 deadline: float, workers: int = 6, clock: Callable[[], float] = time.monotonic) -> None:
        self._cdp, self._fetch = cdp, fetch
        self.max_requests, self.max_bytes, self.deadline = max_requests, max_bytes, deadline
        self._clock = clock
        self._lock = threading.Lock()
        self._s = _State(last_activity=clock())
        self._idle = threading.Condition(self._lock)
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="g6-intercept")
        self.main_frame_id: str | None = None
        self.on_limit: Callable[[str], None] | None = None
        self.reply_timeout = 20.0  # seconds the browser may take to take a response (RenderLimits.command_timeout)

    # -- what the capture reads ------------------------------------------------------------
    @property
    def counts(self) -> Counts:
        return self._s.counts

    @property
    def idents(self) -> list[Any]:
        """Every handle ``fetch`` returned, in the order the requests were answered."""
        with self._lock:
            return list(self._s.idents)

    @property
    def navigations(self) -> list[Navigation]:
        with self._lock:
            return list(self._s.navigations)

    @property
    def stop_reason(self) -> str | None:
        return self._s.stop_reason

    def activity(self) -> tuple[int, float]:
        """Requests paused so far and when the last was paused or answered: unchanged while nothing happened."""
        with self._lock:
            return self._s.counts.requests + self._s.counts.over_limit + self._s.touches, self._s.last_activity

    def touch(self) -> None:
        """Something happened in the page that will ask for more (a navigation): quiet starts again from now."""
        with self._lock:
            self._s.last_activity = self._clock()
            self._s.touches += 1

    def quiet_for(self) -> float:
        """Seconds since a request was last paused or answered; 0 while one is being answered."""
        with self._lock:
            return 0.0 if self._s.in_flight else self._clock() - self._s.last_activity

    def stop(self, reason: str) -> None:
        """From now on every request fails in the page without being handed to ``fetch``."""
        with self._lock:
            if self._s.stop_reason is None:
                self._s.stop_reason = reason

    def release(self) -> None:
        """The capture is taken: every request held since it stopped is failed in the page (nothing of it is kept),
        and from now on any request or late answer is failed at once."""
        with self._lock:
            self._s.released = True
            if self._s.stop_reason is None:
                self._s.stop_reason = "snapshot"
            held, self._s.held = self._s.held, []
        for rid, session in held:
            self._fail(rid, session, FAIL_BLOCKED)

    def _stopped(self) -> bool:
        """Whether the capture has stopped (the lock held): a limit, the snapshot, or the deadline passed (noted as
        the stop, so the answer to a request under way at the deadline is held like any after it)."""
        if self._s.stop_reason is None and self._clock() >= self.deadline:
            self._s.stop_reason = "deadline"
        return self._s.stop_reason is not None

    def _hold(self, rid: str, session: str | None) -> bool:
        """Hold ``rid`` unanswered until the capture is taken (the lock held); False once it is (fail it now)."""
        if self._s.released:
            return False
        self._s.held.append((rid, session))
        return True

    def _first_document(self, sub: SubRequest) -> bool:
        """Whether ``sub`` is the capture's first top-frame document: never held, since no page is shown yet whose
        moment holding would keep, and a navigation held unanswered stalls the browser's every later command on the
        page (the snapshot waited 20 s and the browser was ended as hung)."""
        return sub.main_frame and not self._s.navigations

    def drain(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) for the requests being answered; whether none is left."""
        end = self._clock() + timeout
        with self._lock:
            while self._s.in_flight:
                left = end - self._clock()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.5))
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the events ------------------------------------------------------------------------
    def paused(self, params: dict[str, Any], session: str | None) -> None:
        """A ``Fetch.requestPaused`` event (on the reader thread): answered on the pool."""
        rid = params.get("requestId")
        if not isinstance(rid, str):
            return
        url = str((params.get("request") or {}).get("url") or "")
        if url.lower().startswith(BROWSER_OWN):
            # the browser's own (its PDF viewer's scripts and styles): never a request of the page's, never handed
            # to fetch nor listed; failed, since nothing of g6's answers it (a page cannot ask for these itself)
            self._fail(rid, session, FAIL_BLOCKED)
            return
        with self._lock:
            self._s.last_activity = self._clock()
            # the capture's first document is read even past the deadline (a slow start): never held (see
            # ``_first_document``), and its read is bounded by the time left, or answered from the raw read at once
            first = (params.get("resourceType") == "Document" and params.get("frameId") == self.main_frame_id
                     and not self._s.navigations)
            admitted = (first or not self._stopped()) and self._s.counts.requests < self.max_requests
            held = False
            if admitted:
                self._s.counts.requests += 1
                self._s.in_flight += 1
                budget = self.max_bytes - self._s.counts.bytes
            else:
                self._s.counts.over_limit += 1
                first_over = self._s.stop_reason is None
                if first_over:
                    self._s.stop_reason = "subrequest_limit"
                held = self._hold(rid, session)  # pending in the page until the capture is taken
        if not admitted:
            if not held:
                self._fail(rid, session, FAIL_BLOCKED)
            if first_over and self.on_limit is not None:
                self.on_limit("subrequest_limit")
            return
        try:
            self._pool.submit(self._answer, rid, session, params, max(0, budget))
        except RuntimeError:  # the pool is shut: the capture is over
            self._done()
            self._fail(rid, session, FAIL_BLOCKED)

    def _answer(self, rid: str, session: str | None, params: dict[str, Any], budget: int) -> None:
        try:
            req = params.get("request") or {}
            headers = {str(k).lower(): str(v) for k, v in (req.get("headers") or {}).items()}
            url = str(req.get("url", "")) + str(req.get("urlFragment") or "")
            rtype = str(params.get("resourceType") or "Other")
            main = rtype == "Document" and params.get("frameId") == self.main_frame_id
            sub = SubRequest(url=url, method=str(req.get("method", "GET")).upper(), resource_type=rtype,
                             main_frame=main, service_worker_script=headers.get("service-worker") == "script",
                             accept=headers.get("accept"), max_bytes=budget,
                             time_left=max(0.0, self.deadline - self._clock()))
            try:
                resp = self._fetch(sub)
            except Exception as e:  # noqa: BLE001 - the page's request fails; the capture goes on and says why
                resp = SubResponse(ident={"error": f"{type(e).__name__}: {str(e)[:200]}"}, fail="Failed")
            self._reply(rid, session, sub, resp)
        finally:
            self._done()

    def _reply(self, rid: str, session: str | None, sub: SubRequest, resp: SubResponse) -> None:
        """Answer the browser, or hold the request once the capture has stopped (the module docstring). A body that
        would take the capture past ``max_bytes`` is not handed over (its read is kept and receipted all the same)
        and the capture stops there: bodies read at once each had what was left when they were asked for, so only
        what is answered can be held to the budget."""
        if resp.cut:  # the capture's end cut it: pending in the page, receipted when the capture is sealed
            with self._lock:
                held = not self._first_document(sub) and self._hold(rid, session)
            if not held:
                self._fail(rid, session, FAIL_TIMEOUT if self._first_document(sub) else FAIL_BLOCKED)
            return
        over = False
        with self._lock:
            self._s.idents.append(resp.ident)
            stopped = self._stopped()
            answer = resp.fail is None and resp.status is not None
            if answer and self._s.counts.bytes + len(resp.body) > self.max_bytes:
                answer, over = False, True
            if over or resp.over_budget:
                stopped = True  # the capture stops at this body, which the page does not get
            held = stopped and not self._first_document(sub) and self._hold(rid, session)
            if held:
                answer = False  # receipted all the same; neither answered nor failed in the page
            elif answer:
                self._s.counts.answered += 1
                self._s.counts.bytes += len(resp.body)
            else:
                self._s.counts.failed += 1
            over = over or resp.over_budget or self._s.counts.bytes >= self.max_bytes
            if over and self._s.stop_reason is None:
                self._s.stop_reason = "byte_limit"
            else:
                over = False
            if sub.main_frame and not held:  # a held one was never shown: a resource of the capture, not its document
                self._s.navigations.append(Navigation(sub.url, resp.ident, resp.status, not answer))
        if held:
            pass
        elif not answer:
            self._fail(rid, session, resp.fail if resp.fail in FAIL_REASONS else "Failed")
        elif not self._fulfil(rid, session, resp):
            with self._lock:  # the browser did not take it: failed, not answered, and its bytes not counted
                self._s.counts.answered -= 1
                self._s.counts.bytes -= len(resp.body)
                self._s.counts.failed += 1
                for nav in self._s.navigations:
                    if nav.ident is resp.ident:
                        nav.failed = True
            self._fail(rid, session, "Failed")
        if over and self.on_limit is not None:
            self.on_limit("byte_limit")

    def _fulfil(self, rid: str, session: str | None, resp: SubResponse) -> bool:
        """Hand the response to the browser and wait for its reply; whether it took it. The browser refuses a
        response it cannot build (a status it has no reason phrase for, such as 999; a header it will not take),
        and the request then stays paused: the page would wait for it for ever and a navigation never end. A
        refused response is failed in the page instead, and counted failed (its receipt says what the server
        sent). A browser gone or hung is not a refusal: the capture sees those itself."""
        params = {"requestId": rid, "responseCode": resp.status, "responseHeaders": browser_headers(resp.headers),
                  "body": base64.b64encode(resp.body).decode("ascii")}
        try:
            self._cdp.send("Fetch.fulfillRequest", params, session=session, timeout=self.reply_timeout)
        except (BrowserGone, BrowserHung):
            return True
        except BrowserError:
            return False
        return True

    def _fail(self, rid: str, session: str | None, reason: str) -> None:
        with contextlib.suppress(BrowserError):
            self._cdp.post("Fetch.failRequest", {"requestId": rid, "errorReason": reason}, session=session)

    def _done(self) -> None:
        with self._lock:
            self._s.in_flight -= 1
            self._s.last_activity = self._clock()
            if not self._s.in_flight:
                self._idle.notify_all()
