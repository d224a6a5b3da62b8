"""A capture records the page as a reader saw it at the moment it ends, not a failure g6 itself caused then.

* A request still pending at the render deadline is pending in the snapshot: g6 does not fail it in the page (whose
  ``catch`` would write "failed" into the text a reader never saw) before the DOM, text and screenshot are taken,
  and its receipt says the capture ended it (``capture_ended``), not that the server timed out.
* The host pause (``G6_HOST_PAUSE``) is for g6's own successive reads of a host: a page's sub-requests are one page
  load, as a browser's, and are not paced against each other or against the read of the page itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
SLOW_PAGE = b"""<!doctype html><html><body><p id="r">Loading the slow report.</p><script>
const el = document.getElementById("r");
fetch("/slow.json").then((r) => r.json()).then((d) => { el.textContent = d.text; })
  .catch((e) => { el.textContent = "failed " + e; });
</script></body></html>"""
POLL_PAGE = b"""<!doctype html><html><body><p id="t">Waiting for the first tick\xe2\x80\xa6</p><script>
const el = document.getElementById("t");
setInterval(() => fetch("/tick.json").then((r) => r.json()).then((d) => { el.textContent = "Tick " + d.n; }), 200);
</script></body></html>"""


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """The server holds a slow reply until the test lets it go (at its end, whatever happened)."""
    ev = threading.Event()
    yield ev
    ev.set()


def _subs(home: EvidenceHome, capture_id: str) -> dict[str, object]:
    return {str(e.receipt.request["url"]): e.receipt for e in home.ledger.entries()
            if e.receipt.links.get("capture") == capture_id}


def test_a_request_pending_at_the_deadline_is_pending_in_the_snapshot(home: EvidenceHome, pool: BrowserPool,
                                                                       site: Site, release: threading.Event) -> None:
    def slow(req: SeenRequest) -> Reply:
        release.wait(60)
        return Reply(body=json.dumps({"text": "The slow report."}).encode(), content_type="application/json")

    s = site({"/": Reply(body=SLOW_PAGE), "/slow.json": slow, "/robots.txt": ROBOTS})
    # the fetch's own timeout (120 s) is far beyond the render's: only the capture's end can cut the request
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=3))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and cap["ended"] == "deadline"
    assert home.store.read_as(cap["text"]).decode().strip() == "Loading the slow report."
    cut = _subs(home, r.receipt_id)[s.url("/slow.json")]
    assert (cut.outcome, cut.detail["reason"], cut.content) == ("unreachable", "capture_ended", None)  # type: ignore[attr-defined]
    assert cut.receipt_id in {x["receipt_id"] for x in cap["resources"]}  # type: ignore[attr-defined]
    assert cap["counts"]["failed"] == 0  # nothing was failed in the page
    assert home.verify().ok


def test_the_page_s_own_request_pending_at_the_deadline_ends_the_capture_there(
        home: EvidenceHome, pool: BrowserPool, site: Site, release: threading.Event) -> None:
    """The page's own document is never held (nothing is shown yet, and a navigation left unanswered stalls every
    later command on the page): its read cut by the deadline fails at once, the capture ends ``deadline`` with
    nothing of the empty tab kept, and the browser is not ended as hung (it was, 20 s later, when held)."""
    def slow(req: SeenRequest) -> Reply:
        release.wait(60)
        return Reply(body=SLOW_PAGE)

    s = site({"/": slow, "/robots.txt": ROBOTS})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=3))
    receipt = home.ledger.get(r.receipt_id)
    cap = receipt.capture
    assert cap is not None and cap["ended"] == "deadline", cap
    assert cap["dom"] is None and cap["text"] is None and cap["screenshot"] is None
    cut = _subs(home, r.receipt_id)[s.url("/")]
    assert (cut.outcome, cut.detail["reason"]) == ("unreachable", "capture_ended")  # type: ignore[attr-defined]
    assert home.verify().ok


def test_a_deadline_passed_before_the_page_s_own_request_still_shows_the_page(
        home: EvidenceHome, pool: BrowserPool, site: Site) -> None:
    """A machine slow to start the page (here: a deadline that has passed before the browser asks for the page) still
    reads the capture's first document and ends at once, ``deadline``; holding it stalled the navigation 20 s and
    ended the browser as hung (seen under a loaded .ci/run with G6_RENDER_TIMEOUT=1)."""
    s = site({"/": Reply(body=b"<html><body><p>Shown at once.</p></body></html>"), "/robots.txt": ROBOTS})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=0.01))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and cap["ended"] == "deadline", cap
    assert home.store.read_as(cap["text"]).decode().strip() == "Shown at once."


def test_the_host_pause_does_not_pace_a_pages_own_requests(home: EvidenceHome, pool: BrowserPool, site: Site) -> None:
    ticks = {"n": 0}
    lock = threading.Lock()

    def tick(req: SeenRequest) -> Reply:
        with lock:
            ticks["n"] += 1
            return Reply(body=json.dumps({"n": ticks["n"]}).encode(), content_type="application/json")

    s = site({"/": Reply(body=POLL_PAGE), "/tick.json": tick, "/robots.txt": ROBOTS})
    # robots.txt, then the page 3 s later (g6's own reads of the host, paced); the page polls every 200 ms from then:
    # paced 3 s after the page's read, no poll would be sent before the deadline
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=3.0)) as client:
        r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=5.5))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and cap["ended"] == "deadline"
    text = home.store.read_as(cap["text"]).decode().strip()
    assert text.startswith("Tick "), text
    polls = [e.receipt for e in home.ledger.entries()
             if e.receipt.links.get("capture") == r.receipt_id and e.receipt.request["url"].endswith("/tick.json")]
    assert len(polls) >= 2
    for p in polls:  # none waited on g6's own pause and was then receipted as the server's time-out
        assert p.detail.get("reason") != "total_timeout" and p.detail.get("stage") != "host_busy", p.detail
    assert home.verify().ok


def test_the_browsers_own_requests_are_never_listed_as_the_pages(home: EvidenceHome, client: CheckedClient,
                                                                  pool: BrowserPool, site: Site) -> None:
    """A PDF opened in the top frame is shown by Chromium's viewer, which loads ``chrome://resources/…`` and
    ``chrome-extension://…/pdf_viewer_wrapper.js``: the browser's own, never requests the page made."""
    pdf = (Path(__file__).resolve().parents[2] / "src/g6/demo/pages/paper.pdf").read_bytes()
    s = site({"/paper.pdf": Reply(body=pdf, content_type="application/pdf"), "/robots.txt": ROBOTS})
    r = fetch_rendered(home, client, pool, s.url("/paper.pdf"), limits=RenderLimits(deadline=10))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None
    urls = [e.receipt.request["url"] for e in home.ledger.entries() if e.receipt.links.get("capture") == r.receipt_id]
    assert s.url("/paper.pdf") in urls
    assert not [u for u in urls if not u.startswith(("http:", "https:"))], urls
    assert len(cap["resources"]) == cap["counts"]["requests"] == len(urls)
    assert home.verify().ok
