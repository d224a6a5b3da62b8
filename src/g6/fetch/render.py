"""A page as a reader saw it: rendered in a locked-down browser, every request through the checked client.

``prepare_render`` hands the browser (``g6.adapters.browser``) one callable, ``_SubFetcher``: each request
the page makes (the document, scripts, styles, images, fonts, XHR and fetch, frames, worker scripts,
navigations, popups) goes through the same :class:`CheckedClient` a raw fetch uses (address checks on the
request's host, the allowlist, robots.txt, the byte cap, a deadline), its bytes into the store, and gets a
receipt of its own (``request.resource_type``, ``links.capture``). A redirect is answered as the 3xx itself
(the browser asks for the new address, and that request is checked in turn). A request that is not a GET (a
form's POST, a beacon, a keep-alive POST) is refused and receipted without anything being sent: a capture
never sends data. So is the script of a service worker (a worker that would outlive the page).

The capture receipt (kind ``fetch``, or ``recheck`` for a re-check) holds, in ``capture``, everything
the capture kept: the sub-resource receipts (each id with its body's sha256), the digests of the DOM after
scripts (which is also the receipt's ``content``), of the reader's text and of the full-page screenshot,
the viewport, the browser (version, user agent) and the render time and how it ended
(``schemas/receipt.v1.schema.json``, ``capture``). Every receipt of a capture is appended in one
transaction, the sub-resources' first, so the capture never names a receipt the ledger lacks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from g6.adapters.browser import (
    FAIL_BLOCKED,
    FAIL_REFUSED,
    FAIL_TIMEOUT,
    FAIL_UNREACHABLE,
    RESTRICTING_HEADERS,
    RenderLimits,
    RenderResult,
    SubRequest,
    SubResponse,
    render,
)
from g6.adapters.browser.intercept import Navigation
from g6.adapters.browser.pool import BrowserPool
from g6.adapters.html.interstitial import Interstitial, detect
from g6.adapters.html.page import MAX_EXTRACT_BYTES, Document, PageRead
from g6.adapters.net.checked_client import MAX_CHAIN_URLS, CheckedClient, FetchPolicy, FetchResponse
from g6.adapters.net.redact import redact_text
from g6.adapters.net.urls import MAX_URL_LENGTH, URLError, normalise_url, recorded_url, redact_url, shortened
from g6.adapters.outcomes import Outcome
from g6.adapters.untrusted import flag_instructions
from g6.errors import FetchInputError, G6Error
from g6.fetch.capture import FetchResult, PreparedFetch, _ReadBack, prepare_fetch, receipt_from_response
from g6.fetch.shell import not_a_page, shell_verdict
from g6.home import EvidenceHome
from g6.ledger.receipts import AllowlistDecision, Hop, Receipt, new_receipt_id
from g6.store import BlobBackend, BlobRef

# The response headers handed to the browser with a body: what it needs to use it (its type, a redirect's
# target, whether another origin's script may read it) and what restricts the page (RESTRICTING_HEADERS: its
# Content-Security-Policy, nosniff…). Never cookies: the browser is given none.
RENDER_HEADERS = ("content-type", "location", "content-language", "access-control-allow-origin",
                  "access-control-allow-credentials", "access-control-allow-methods",
                  "access-control-allow-headers", "access-control-expose-headers", "timing-allow-origin",
                  *RESTRICTING_HEADERS)
HTML_UTF8 = "text/html; charset=utf-8"
TEXT_UTF8 = "text/plain; charset=utf-8"
# The capture receipt lists every sub-resource receipt: past this many it would not fit one log entry.
MAX_REQUESTS_LIMIT = 400
_FAIL = {Outcome.UNREACHABLE: FAIL_UNREACHABLE}
_NOT_WHOLE = (204, 205, 206)  # a 2xx whose body is not a whole page: none, or part of one (a range)
UNSENT_CUT = ("the capture ended before this request was answered from the raw read's bytes: nothing was sent, "
              "nothing given to the page")


@dataclass(frozen=True, slots=True)
class RawDocument:
    """The raw read a shell's render starts from (``--render auto``): the browser's first request for the page itself
    is answered with these bytes, read through every check a moment before, instead of reading them a second time.
    Its receipt in the capture is a receipt of its own (``links.capture``, and ``links.answered_from`` the raw
    read's), made at no new request, carrying the raw read's time, hops and body. Only a whole answer is given this
    way (``usable``): a 2xx with no redirect, not cut, no content coding left on, its headers kept for a browser;
    not a 206 (part of a body) nor a 204 or 205 (none)."""

    url: str  # the URL the raw read asked for, as given (the browser's request for it is matched after normalising)
    receipt: Receipt
    response: FetchResponse

    @property
    def usable(self) -> bool:
        r = self.response
        return (r.outcome is Outcome.OK and r.status is not None and 200 <= r.status < 300
                and r.status not in _NOT_WHOLE and len(r.hops) <= 1 and r.body is not None and not r.truncated
                and "content_encoding" not in r.detail
                and not self.receipt.truncated and self.receipt.content is not None)

    def answers(self, req: SubRequest) -> bool:
        """Whether ``req`` is a request for this very page that these bytes may answer."""
        if not (req.main_frame and req.method == "GET" and not req.service_worker_script):
            return False
        if self.response.body is None or self.response.body.size > req.max_bytes:
            return False
        try:
            return _as_sent(req.url) == _as_sent(self.url)
        except (URLError, ValueError, UnicodeError, TypeError, httpx.InvalidURL):
            return False


PAGE_LOAD_PER_HOST = 6  # requests of one capture under way at once to one host: a browser's connections per host


def _was_sent(resp: FetchResponse) -> bool:
    """Whether a read cut by the capture's end had been sent (or was being sent): not when it waited its turn at the
    host or for its name (``stage``), or for the host's pause (no hop, no transport error)."""
    if resp.hops:
        return True
    return resp.detail.get("stage") is None and "message" in resp.detail


def _cut_message(sent: bool) -> str:
    if sent:
        return "the capture ended while this request was under way (sent, or being sent): its answer is not kept"
    return ("the capture ended while this request waited its turn (its host, its name, or g6's pause between reads "
            "of a host): nothing was sent")


def _as_sent(url: str) -> str:
    """``url`` normalised, in the form a request for it goes out in (the checked client sends ``httpx.URL`` of the
    normalised URL: non-ASCII and spaces percent-encoded, the host in IDNA; never a userinfo), which is the form the
    browser asks for it in: a page given with ``/é`` or ``user@`` is still the page the browser asks for."""
    return normalise_url(str(httpx.URL(normalise_url(url).url))).url


@dataclass(frozen=True, slots=True)
class _Sub:
    """One request of the page, as the capture records it: its receipt (unsigned)."""

    receipt: Receipt
    url: str


class _SubFetcher:
    """The one callable the browser is given: every request through the checked client, each receipted."""

    def __init__(self, store: BlobBackend, client: CheckedClient, policy: FetchPolicy, capture_id: str,
                 secrets: tuple[str, ...], first: RawDocument | None = None) -> None:
        self.store, self.client, self.policy = _ReadBack(store), client, policy
        self.capture_id, self.secrets = capture_id, secrets
        self.receipts: list[Receipt] = []
        self._lock = threading.Lock()
        self._pending: dict[int, SubRequest] = {}  # requests handed to the checked client and not yet answered
        self._unsent: set[int] = set()  # of those, the one being answered from the raw read: nothing sent (yet)
        # of those, the ones whose read the capture's end cut (its deadline was the read's): kept pending, receipted
        # by the seal, with whether anything was sent
        self._cut: dict[int, bool] = {}
        # the page's own requests besides its top frame's documents: one page load, as a browser's
        # (``CheckedClient.page_load``)
        self.page_client = client.page_load(PAGE_LOAD_PER_HOST)
        self._sealed = False
        # the raw read the page's first top-frame request may be answered from (RawDocument); used once at most
        self._first = first if first is not None and first.usable else None

    def _receipt(self, resp: FetchResponse, req: SubRequest, raw: Receipt | None = None) -> Receipt:
        shown, about = recorded_url(redact_text(req.url, self.secrets))  # a page's URL over the limit: shortened
        request = {"url": shown, "method": req.method[:16], "resource_type": req.resource_type[:40]}
        links: dict[str, Any] = {"capture": self.capture_id}
        detail: dict[str, Any] | None = dict(about) or None
        if raw is not None:
            links["answered_from"] = raw.receipt_id
            detail = {"message": "answered with the bytes of the raw read it links to (answered_from), made before "
                                 "the render: not read again"}
        r = receipt_from_response(resp, kind="fetch", source="web", request=request, links=links, detail=detail)
        return r if raw is None else replace(r, fetched_at=raw.fetched_at)  # when these bytes were read

    def _receipted(self, resp: FetchResponse, req: SubRequest, raw: Receipt | None = None) -> _Sub | None:
        """The request's receipt, kept for the capture; None once the capture is sealed (it was receipted then)."""
        r = self._receipt(resp, req, raw)
        with self._lock:
            if self._sealed:
                return None
            self.receipts.append(r)
            # receipted: no longer pending, so a seal from here on does not receipt it again as cut short
            self._pending.pop(id(req), None)
        return _Sub(r, req.url)

    def seal(self) -> tuple[Receipt, ...]:
        """The capture is over: every request the page made, in the order receipted. One still being read (the capture
        stopped early: a limit, the deadline, a crash) is receipted now, ``unreachable`` (``capture_ended``): it
        was sent and its answer is not kept (or, for the one being answered from the raw read, nothing was sent).
        Nothing is handed to the checked client from now on, and a read that ends later is dropped."""
        with self._lock:
            self._sealed = True
            pending = [(r, UNSENT_CUT if id(r) in self._unsent else _cut_message(self._cut.get(id(r), True)))
                       for r in self._pending.values()]
            self._pending, self._cut = {}, {}
        cut = [self._receipt(FetchResponse(req.url, Outcome.UNREACHABLE, reason="capture_ended",
                                           detail={"message": message}), req) for req, message in pending]
        with self._lock:
            self.receipts.extend(cut)
            return tuple(self.receipts)

    def __call__(self, req: SubRequest) -> SubResponse:
        with self._lock:
            if self._sealed:  # too late for the capture: nothing sent
                return SubResponse(None, fail=FAIL_BLOCKED)
            key = id(req)
            self._pending[key] = req
        resp: SubResponse | None = None
        try:
            resp = self._answer(req)
            return resp
        finally:
            with self._lock:
                if resp is None or not resp.cut:  # a cut one stays pending: the seal receipts it
                    self._pending.pop(key, None)
                self._unsent.discard(key)

    def _answer(self, req: SubRequest) -> SubResponse:
        if req.method != "GET" or req.service_worker_script:
            why = "service_worker_script" if req.method == "GET" else "method_not_get"
            message = ("a service worker would outlive the page: never started in a capture"
                       if req.method == "GET" else f"a {req.method[:16]} request would send data: a capture only reads")
            refused = FetchResponse(req.url, Outcome.REFUSED, reason=why, detail={"message": message})
            return SubResponse(self._receipted(refused, req), fail=FAIL_REFUSED)
        first = self._take_first(req)
        given = self._raw_bytes(first) if first is not None else None
        if first is not None and given is not None:
            return self._from_raw(first, req, given)
        with self._lock:
            if id(req) in self._unsent:
                self._unsent.discard(id(req))
                if self._sealed:  # sealed before it was answered from the raw read: receipted unsent, never sent now
                    return SubResponse(None, fail=FAIL_BLOCKED)
        # the read lasts at most until the render's deadline, so no thread outlives the capture; a read that this
        # bound cut was cut by the capture's end, not by the server: left pending, and receipted so by the seal
        bounded = req.time_left < self.policy.total_timeout
        pol = replace(self.policy, hard_cap=max(1, min(self.policy.hard_cap, req.max_bytes)),
                      total_timeout=max(0.5, min(self.policy.total_timeout, req.time_left)))
        accept = req.accept if req.accept and req.accept.isascii() and len(req.accept) < 300 else None
        # the page's own document is g6's read of the host, paced like any fetch (the next read of the host waits
        # its pause after it); what the page then asks for is one page load, asked at once as a browser asks
        # (``CheckedClient.page_load``), every check on every request
        client = self.client if req.main_frame else self.page_client
        resp = client.fetch(req.url, self.store, source="web", policy=pol, accept=accept,  # type: ignore[arg-type]
                            pause=None if req.main_frame else 0.0, follow_redirects=False,
                            pass_headers=RENDER_HEADERS)
        if bounded and resp.outcome is Outcome.UNREACHABLE and resp.reason == "total_timeout":
            with self._lock:
                if not self._sealed:
                    self._cut[id(req)] = _was_sent(resp)
            if resp.body is not None:
                self.store.forget(resp.body.blake3)
            return SubResponse(None, cut=True)
        sub = self._receipted(resp, req)
        if sub is None:  # read after the capture was sealed: receipted as cut short, its bytes not handed over
            if resp.body is not None:
                self.store.forget(resp.body.blake3)
            return SubResponse(None, fail=FAIL_BLOCKED)
        complete = resp.status is not None and not resp.truncated and resp.outcome not in (
            Outcome.TOO_LARGE, Outcome.UNREACHABLE, Outcome.PARSE_FAILED)
        if not complete:
            fail = FAIL_TIMEOUT if resp.reason == "total_timeout" else _FAIL.get(resp.outcome, FAIL_REFUSED)
            over = resp.outcome is Outcome.TOO_LARGE and pol.hard_cap < self.policy.hard_cap  # the capture's budget
            return SubResponse(sub, status=resp.status, fail=fail, over_budget=over)
        body = self.store.read(resp.body.blake3) if resp.body is not None else b""
        if resp.body is not None:
            self.store.forget(resp.body.blake3)  # handed over: not held for the rest of the capture
        return SubResponse(sub, status=resp.status, headers=resp.passed_headers, body=body)

    def _take_first(self, req: SubRequest) -> RawDocument | None:
        """The raw read, when ``req`` is the page's first top-frame request and asks for that very page; the raw
        read is then used up (a later request, a reload among them, is read as any other)."""
        if not req.main_frame:
            return None
        with self._lock:
            first, self._first = self._first, None
            if first is not None:  # until it is answered or sent, a seal says it was not sent
                self._unsent.add(id(req))
        return first if first is not None and first.answers(req) else None

    def _raw_bytes(self, first: RawDocument) -> bytes | None:
        """The raw read's body as its receipt names it (hashed: ``read_as``), or None when the store no longer holds
        those bytes (changed, garbled or gone since the raw read): the page is then read again, not given other
        bytes under the raw read's digests, and no receipt says it was answered from them."""
        if first.receipt.content is None:
            return None
        try:
            return self.store.read_as(first.receipt.content)
        except (G6Error, OSError):
            return None

    def _from_raw(self, first: RawDocument, req: SubRequest, body: bytes) -> SubResponse:
        resp = first.response
        sub = self._receipted(resp, req, first.receipt)
        if sub is None:
            return SubResponse(None, fail=FAIL_BLOCKED)
        return SubResponse(sub, status=resp.status, headers=resp.passed_headers, body=body)


@dataclass(frozen=True, slots=True)
class PreparedRender:
    """A capture rendered and kept, its receipts (the sub-resources', then the capture's) not yet appended."""

    receipts: tuple[Receipt, ...]
    page: PageRead
    render: RenderResult
    requested_url: str
    text: BlobRef | None = None
    interstitial: Interstitial | None = None

    @property
    def receipt(self) -> Receipt:
        return self.receipts[-1]

    def result(self, signed: Receipt) -> FetchResult:
        return PreparedFetch(self.page, self.receipt, self.requested_url).result(signed)


def _as_kept(s: str | None) -> str | None:
    """A page's text or title as the capture keeps it: JavaScript strings are UTF-16, so a script can make one with a
    lone surrogate, which is no Unicode text; each is kept as '?' (as ``encode(errors="replace")`` writes it), the
    same in the text blob, the result's documents and whatever prints them."""
    return s.encode("utf-8", "replace").decode("utf-8") if s else s


def _put(store: BlobBackend, data: bytes | None) -> BlobRef | None:
    if data is None:
        return None
    with store.writer() as w:
        w.write(data)
        return w.commit()


def _document_nav(r: RenderResult) -> tuple[Navigation | None, list[Navigation]]:
    """The top-frame request whose answer is the document the capture shows, and the top-frame requests up to it
    (the capture receipt's hops). A navigation the browser asked for and never showed (a download, a 204, one
    still loading when the capture was taken) is a resource of the capture, not its document. When no document
    committed at all, the last top-frame request stands for it (a 204 to the page's own request)."""
    if r.committed is not None:
        at = next((i for i in range(len(r.navigations) - 1, -1, -1) if r.navigations[i] is r.committed), None)
        return r.committed, (r.navigations[:at + 1] if at is not None else [r.committed])
    if r.document_url is None and r.navigations:
        return r.navigations[-1], list(r.navigations)
    return None, list(r.navigations)


def _document_outcome(r: RenderResult) -> tuple[Outcome, str, Receipt | None]:
    """The capture's outcome: the broken browser's, else the read of the document the top frame shows (not the
    last top-frame request's: one that never committed describes nothing shown), refined by the text."""
    nav, _ = _document_nav(r)
    receipt = nav.ident.receipt if nav is not None and isinstance(nav.ident, _Sub) else None
    if r.broken:
        return Outcome.PARSE_FAILED, r.ended, receipt
    if receipt is None and r.document_url is not None:
        # the top frame shows a document no read of the capture's answered: one that is not http(s) (about:blank,
        # a blob: or data: URL the page opened) is refused as the checked client refuses its scheme; an error page
        # (a request past a limit) is unreachable. Nothing of either is evidence.
        if not r.error_page and not r.document_url.startswith(("http:", "https:")):
            return Outcome.REFUSED, "scheme", None
        return Outcome.UNREACHABLE, "document_not_read", None
    if receipt is None:
        return Outcome.UNREACHABLE, r.ended if r.ended != "settled" else "no_document", None
    outcome = Outcome(receipt.outcome)
    if outcome is Outcome.OK and receipt.detail.get("reason") == "redirect":
        return Outcome.HTTP_ERROR, "redirect_not_rendered", receipt  # the browser stopped at a redirect
    if outcome is not Outcome.OK:
        return outcome, str(receipt.detail.get("reason") or outcome.value), receipt
    if not (r.text or "").strip():
        return Outcome.EMPTY, "no_text_rendered", receipt
    return Outcome.OK, "", receipt


MAX_SHOWN_URL = 8192  # a page can make its address anything (pushState, a data: URL): a receipt stays small


def shown_url(url: str | None) -> str | None:
    """The page's address as a receipt holds it: redacted, and cut (marked with …) past MAX_SHOWN_URL."""
    if not url:
        return None
    u = redact_url(url) if url.startswith(("http:", "https:")) else url
    return u if len(u) <= MAX_SHOWN_URL else u[:MAX_SHOWN_URL - 1] + "…"


def _answer_order(r: RenderResult, receipts: tuple[Receipt, ...]) -> tuple[Receipt, ...]:
    """The sub-resources' receipts in the order the capture lists them: as the browser was answered, then any
    answered after the browser was done with them, and those cut short. The ledger takes them in this order too, so
    the capture's list is the ledger's (two requests answered on two threads can be receipted in one order and
    answered in the other)."""
    listed = [i.receipt for i in r.idents if isinstance(i, _Sub)]
    ids = {x.receipt_id for x in listed}
    return (*listed, *(x for x in receipts if x.receipt_id not in ids))


def capture_json(r: RenderResult, page_url: str, refs: Mapping[str, BlobRef | None],
                 secrets: tuple[str, ...], final_url: str | None,
                 receipts: tuple[Receipt, ...]) -> dict[str, Any]:
    """The receipt's ``capture``: what the capture kept and how (schemas/receipt.v1, ``capture``). ``final_url``
    is the URL of the read whose answer is the document shown; the address the page showed, when a script made it
    another (``history.replaceState``, ``pushState``), is ``location_url``, never read. ``receipts``: the
    sub-resources' receipts in the capture's order (``_answer_order``), listed as ``resources``."""
    location = shown_url(redact_text(r.location, secrets) if r.location else None)
    d: dict[str, Any] = {
        "page_url": page_url,
        "final_url": final_url,
        "engine": r.info.to_json() if r.info is not None else None,
        "viewport": {"width": r.width, "height": r.height},
        "render_ms": r.render_ms,
        "ended": r.ended,
        "resources": [{"receipt_id": x.receipt_id, "sha256": x.content["sha256"] if x.content else None}
                      for x in receipts],
        "counts": r.counts.to_json(),
        **{k: (ref.to_json() if ref is not None else None) for k, ref in refs.items()},
    }
    if r.screenshot_clipped:
        d["screenshot_clipped"] = True
    if location is not None and location.split("#", 1)[0] != final_url and r.dom is not None:
        # a fragment alone is no other address: the same document, the same read; a script may set any length
        d["location_url"] = shortened(location, MAX_URL_LENGTH)
    if r.truncated:  # cut to the capture's byte limit (or, for shadow_roots, to the roots a capture reads)
        d["truncated"] = list(r.truncated)
    if r.dialogs:  # a dialog a reader would have seen (and closed): dismissed, and named here
        d["dialogs"] = {"dismissed": r.dialogs,
                        "seen": [{"type": x["type"], "message": redact_text(x["message"], secrets)}
                                 for x in r.dialogs_seen]}
    return d


def url_refusal(url: str) -> tuple[Outcome, str, str] | None:
    """Why the checked client would not read ``url`` itself (outcome, reason, message), or None: a URL that is
    not http(s) (``chrome://``, ``view-source:``, ``data:``, ``file:``…) is never handed to the browser, which
    would open it without a request g6 answers."""
    try:
        normalise_url(url)
    except URLError as e:
        return (Outcome.REFUSED if e.reason == "scheme" else Outcome.REJECTED), e.reason, str(e)
    except (ValueError, UnicodeError, TypeError) as e:
        return Outcome.REJECTED, "bad_url", f"unparseable URL: {str(e)[:200]}"
    return None


def check_render_url(url: str) -> None:
    """``g6 fetch URL --render``: a URL the browser would be given but the checked client refuses is the user's
    input error (before any browser starts)."""
    why = url_refusal(url)
    if why is not None and why[1] == "url_too_long":
        return  # receipted rejected as a raw read is (``prepare_render``), no browser started
    if why is not None and why[1] == "scheme":
        scheme = url.split(":", 1)[0][:20] if ":" in url else "a relative URL"
        raise FetchInputError(f"--render opens http and https pages only, not {scheme!r}")
    if why is not None:
        raise FetchInputError(f"--render: {why[2]}")


def prepare_render(store: BlobBackend, client: CheckedClient, pool: BrowserPool, url: str, *,
                   limits: RenderLimits | None = None, extract: str = "text", policy: FetchPolicy | None = None,
                   kind: str = "fetch", links: Mapping[str, Any] | None = None,
                   request: Mapping[str, Any] | None = None, detail: Mapping[str, Any] | None = None,
                   first: RawDocument | None = None) -> PreparedRender:
    """Render ``url``; keep every sub-resource, the DOM, the text and the screenshot in ``store``; make the
    receipts (unsigned). ``request`` replaces the capture receipt's request and ``detail`` adds to its detail
    (a re-check's). ``first``: the raw read of ``url`` just made, which answers the page's own first request
    (:class:`RawDocument`). A URL the checked client refuses is receipted refused as a raw read is, no browser
    used."""
    lim = limits or RenderLimits()
    if not 1 <= lim.max_requests <= MAX_REQUESTS_LIMIT:
        raise ValueError(f"a render makes 1 to {MAX_REQUESTS_LIMIT} requests (its receipt lists each one)")
    secrets = tuple(getattr(client, "secrets", ()))
    capture_id = new_receipt_id()
    pol = policy or client.policy
    fetcher = _SubFetcher(store, client, pol, capture_id, secrets, first)
    refused = url_refusal(url)
    if refused is not None:
        r = RenderResult(url, "navigation_failed", None, lim.width, lim.height, time.time(), message=refused[2])
    else:
        with pool.browser() as b:
            r = render(b, url, fetcher, lim)
            if r.broken:
                pool.discard(b)
    subs = _answer_order(r, fetcher.seal())
    r.text, r.title = _as_kept(r.text), _as_kept(r.title)
    if refused is not None:
        outcome, reason, nav = refused[0], refused[1], None
    else:
        outcome, reason, nav = _document_outcome(r)
        if reason == "scheme" and r.document_url:
            r.message = f"the page opened a document that is not http(s): {r.document_url.split(':', 1)[0][:20]}:"
    # the receipt's final_url is the URL g6 read the document shown from (the checked read's), never the address a
    # script gave the page afterwards
    final_url = nav.final_url if nav is not None else None
    # nothing of a document no read answered is kept: nor of the empty tab when none came (the page's own request
    # still pending when the capture ended)
    if reason in ("document_not_read", "scheme") or (refused is None and nav is None and not r.broken):
        r.dom = r.text = r.screenshot = None
    refs = {"dom": _put(store, r.dom), "text": _put(store, r.text.encode("utf-8") if r.text else None),
            "screenshot": _put(store, r.screenshot)}
    wall = None
    if outcome in (Outcome.OK, Outcome.EMPTY) and r.dom is not None:
        wall = detect(r.dom, status=nav.http_status if nav else None, final_url=final_url, content_type=HTML_UTF8)
    shown, about = recorded_url(redact_text(url, secrets))  # over the limit: shortened, with its length and sha256
    req: dict[str, Any] = dict(request) if request is not None else {"url": shown, "extract": extract, "render": True}
    if request is None and pol.max_bytes is not None:
        req["max_bytes"] = pol.max_bytes
    # each hop as its read has it: the address connected and, over https, what the server presented (tls)
    hops = _bounded_hops(tuple(h for n in _document_nav(r)[1] if isinstance(n.ident, _Sub)
                               for h in (n.ident.receipt.hops or (Hop(n.ident.receipt.request["url"], None, None),))))
    d: dict[str, Any] = {"content_type": HTML_UTF8} if refs["dom"] is not None else {}
    if reason:
        d["reason"] = reason
    if r.message:
        d["message"] = redact_text(r.message, secrets)[:300]
    d.update(about)
    d.update(detail or {})
    dom = refs["dom"]
    receipt = Receipt(
        receipt_id=capture_id, kind=kind, source="web", request=req,
        final_url=final_url,
        hops=hops, http_status=nav.http_status if nav else None, byte_count=dom.size if dom else 0,
        allowlist=nav.allowlist if nav else AllowlistDecision("not_configured", None, pol.allowlist),
        outcome=outcome.value, outcome_code=outcome.code("fetch"), content=dom.to_json() if dom else None,
        detail=d, links=dict(links or {}), interstitial=wall.to_json() if wall else None,
        capture=capture_json(r, shown, refs, secrets, final_url, subs))
    return PreparedRender((*subs, receipt), _page_read(r, receipt, dom, url, extract, reason),
                          r, shown, refs["text"], wall)


def _bounded_hops(hops: tuple[Hop, ...]) -> tuple[Hop, ...]:
    """The capture's hops as its receipt lists them: whole, unless their URLs together pass ``MAX_CHAIN_URLS`` (the
    browser follows up to 20 redirects itself, one read each, each to a URL of up to 8,192 characters: a receipt
    listing them whole would be over 65,535 bytes, and nothing of the capture would be appended). Then each URL is
    cut to ``SHOWN_LENGTH`` characters and "…": each hop's own read (a resource of the capture) keeps it whole."""
    if sum(len(h.url) for h in hops) <= MAX_CHAIN_URLS:
        return hops
    return tuple(replace(h, url=shortened(h.url)) for h in hops)


def _page_read(r: RenderResult, receipt: Receipt, dom: BlobRef | None, url: str, extract: str, reason: str) -> PageRead:
    """The capture as a read: its one document (the reader's text) when it is ``ok``."""
    outcome = Outcome(receipt.outcome)
    text = r.text or ""
    docs: tuple[Document, ...] = ()
    if outcome is Outcome.OK and dom is not None:
        docs = (Document(url=receipt.final_url or url, content_type="text/html", blake3=dom.blake3, title=r.title,
                         text=text if extract == "text" else None,
                         text_source="rendered" if extract == "text" else None,
                         instruction_flags=tuple(f.to_json() for f in flag_instructions(text))),)
    resp = FetchResponse(url, outcome, final_url=receipt.final_url, hops=receipt.hops, status=receipt.http_status,
                         body=dom, byte_count=receipt.byte_count, allowlist=receipt.allowlist,
                         content_type=HTML_UTF8 if dom else None, reason=reason)
    return PageRead(resp, outcome, reason, docs, {k: v for k, v in receipt.detail.items() if k != "reason"})


def fetch_rendered(home: EvidenceHome, client: CheckedClient, pool: BrowserPool, url: str, *,
                   limits: RenderLimits | None = None, extract: str = "text", policy: FetchPolicy | None = None,
                   links: Mapping[str, Any] | None = None) -> FetchResult:
    """Render a page through every check, keep what the capture keeps, append its receipts (one transaction)."""
    prepared = prepare_render(home.store, client, pool, url, limits=limits, extract=extract, policy=policy,
                              links=links)
    signed = home.ledger.append_many(list(prepared.receipts), home.signing_key())
    return prepared.result(signed[-1])


@dataclass(frozen=True, slots=True)
class CaptureText:
    """The text a capture kept of what a reader saw, and where it is."""

    text: str
    ref: Mapping[str, Any] = field(default_factory=dict)


def capture_text(store: BlobBackend, receipt: Receipt) -> CaptureText | None:
    """The reader's text a capture receipt names, read back from ``store`` (None: not a capture, or no text)."""
    cap = receipt.capture
    ref = cap.get("text") if isinstance(cap, Mapping) else None
    if not isinstance(ref, Mapping):
        return None
    return CaptureText(store.read_as(ref).decode("utf-8", "replace"), dict(ref))


RENDER_MODES = ("off", "always", "auto")


@dataclass(frozen=True, slots=True)
class Renderer:
    """What rendering needs besides the checked client: the browsers (at most ``pool.size`` at once) and the
    bounds of each render."""

    pool: BrowserPool
    limits: RenderLimits = field(default_factory=RenderLimits)


@dataclass(frozen=True, slots=True)
class PreparedPage:
    """``g6 fetch URL [--render MODE]`` before its receipts are appended: ``receipts`` (the raw read's, the
    sub-resources', the capture's, as there are) in the order they go into the ledger; ``main`` is the
    prepared read the result is of (the capture, when there is one)."""

    receipts: tuple[Receipt, ...]
    main: PreparedFetch | PreparedRender
    render: Mapping[str, Any] | None = None  # mode, rendered, why, raw_receipt_id: in the result's detail

    @property
    def page(self) -> PageRead:
        return self.main.page

    def result(self, signed: list[Receipt]) -> FetchResult:
        """The result once ``signed`` (these receipts, signed, in order) are in the ledger."""
        r = self.main.result(signed[-1])
        return replace(r, detail={**r.detail, "render": dict(self.render)}) if self.render is not None else r


def prepare_page(store: BlobBackend, client: CheckedClient, url: str, *, render_mode: str = "off",
                 renderer: Renderer | None = None, extract: str = "text", policy: FetchPolicy | None = None,
                 documents: bool = True, links: Mapping[str, Any] | None = None) -> PreparedPage:
    """A page read raw (``off``), rendered (``always``), or read raw and rendered when the raw read is a shell
    (``auto``: :mod:`g6.fetch.shell`); its receipts not yet appended."""
    step = prepare_page_steps(store, client, url, render_mode=render_mode, renderer=renderer, extract=extract,
                              policy=policy, documents=documents, links=links)
    return step if isinstance(step, PreparedPage) else step()


def prepare_page_steps(store: BlobBackend, client: CheckedClient, url: str, *, render_mode: str = "off",
                       renderer: Renderer | None = None, extract: str = "text", policy: FetchPolicy | None = None,
                       documents: bool = True,
                       links: Mapping[str, Any] | None = None) -> PreparedPage | Callable[[], PreparedPage]:
    """:func:`prepare_page` in two steps where it renders after a raw read (``always``, a page; ``auto``, a shell):
    the raw read is made now and what is returned is the render still to do (a callable giving the page, raw read's
    receipt first), so a batch can read its next page while a browser renders this one. Otherwise the page
    itself."""
    if render_mode not in RENDER_MODES:
        raise ValueError(f"render must be one of {RENDER_MODES}")
    if render_mode != "off" and renderer is None:
        raise ValueError("rendering needs a Renderer (the browsers and their limits)")
    # the raw read first, for both modes (keeping the headers a browser needs, so a render can start from its bytes):
    # ``always`` renders it when it is a page (a PDF, an image, a 404 or a refusal is kept as read: Chromium would
    # show its own viewer or error page, not the server's), ``auto`` when it is a shell
    raw = prepare_fetch(store, client, url, extract=extract, policy=policy, links=links, documents=documents,
                        pass_headers=RENDER_HEADERS if render_mode != "off" else ())
    if render_mode == "off":
        return PreparedPage((raw.receipt,), raw)
    resp = raw.page.response
    body = None
    if resp.body is not None and resp.body.size <= MAX_EXTRACT_BYTES:  # the bytes the fetch held, else read back
        body = raw.body if raw.body is not None else store.read(resp.body.blake3)
    info: dict[str, Any]
    if render_mode == "always":
        why_not = not_a_page(resp, body)
        info = {"mode": "always", "rendered": why_not is None} | ({"why": why_not} if why_not else {})
        if why_not is not None:
            return PreparedPage((raw.receipt,), raw, info)
    else:
        verdict = shell_verdict(resp, body, walled=raw.receipt.interstitial is not None)
        info = {"mode": "auto", "rendered": verdict.shell, "why": verdict.why}
        if not verdict.shell:
            return PreparedPage((raw.receipt,), raw, info)
    assert renderer is not None
    info["raw_receipt_id"] = raw.receipt.receipt_id
    # the render still to do holds the raw read's receipt and response only, not the read and the body it kept (up
    # to MAX_EXTRACT_BYTES; the browser is given it from the store): a batch queues its shells for the browsers
    raw_receipt = raw.receipt
    first = RawDocument(url, raw_receipt, resp)

    def render_page() -> PreparedPage:
        captured = prepare_render(store, client, renderer.pool, url, limits=renderer.limits, extract=extract,
                                  policy=policy, links={**dict(links or {}), "raw": raw_receipt.receipt_id},
                                  first=first)
        return PreparedPage((raw_receipt, *captured.receipts), captured, info)

    return render_page


def fetch_page(home: EvidenceHome, client: CheckedClient, url: str, *, render_mode: str = "off",
               renderer: Renderer | None = None, extract: str = "text", policy: FetchPolicy | None = None,
               links: Mapping[str, Any] | None = None) -> FetchResult:
    """``g6 fetch URL --render MODE``: every receipt of the read appended in one transaction."""
    prepared = prepare_page(home.store, client, url, render_mode=render_mode, renderer=renderer, extract=extract,
                            policy=policy, links=links)
    return prepared.result(home.ledger.append_many(list(prepared.receipts), home.signing_key()))
