"""A response the browser will not take (``Fetch.fulfillRequest`` refused: a status Chromium has no reason phrase
for, such as 999) is failed in the page and counted failed, never left paused (finding 13 of the attack round:
the page's promise never settled and the request was counted answered)."""

from __future__ import annotations

from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
ODD = b"HTTP/1.1 999 Odd\r\nContent-Type: text/plain\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"
PAGE = b"""<p>Zqpage.</p><p id=o></p><script>fetch("/odd").then((r) => r.text()).then(
(t) => { document.getElementById("o").textContent = "Zqgot " + t; },
(e) => { document.getElementById("o").textContent = "Zqfailed in the page"; });</script>"""


def test_a_refused_response_fails_in_the_page_and_is_counted_failed(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = site({"/": Reply(body=PAGE), "/odd": Reply(raw=ODD), "/robots.txt": ROBOTS})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10, quiet=1))
    cap = home.ledger.get(result.receipt_id).capture
    assert result.outcome.value == "ok" and "Zqfailed in the page" in result.documents[0].text
    odd = [e.receipt for e in home.ledger.entries() if str(e.receipt.request.get("url")).endswith("/odd")]
    assert [(r.outcome, r.http_status) for r in odd] == [("http_error", 999)]
    # the page and its text were taken; /odd was not: answered does not count it, failed does
    assert cap["counts"]["requests"] == cap["counts"]["answered"] + cap["counts"]["failed"]
    assert cap["counts"]["failed"] >= 1 and cap["ended"] == "settled"
    assert home.verify().ok


def test_a_document_the_browser_will_not_take_ends_at_once_with_its_own_outcome(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = site({"/": Reply(raw=ODD.replace(b"text/plain", b"text/html")), "/robots.txt": ROBOTS})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10, quiet=1))
    receipt = home.ledger.get(result.receipt_id)
    assert (receipt.outcome, receipt.http_status) == ("http_error", 999)
    assert receipt.capture["ended"] == "navigation_failed" and receipt.capture["counts"]["answered"] == 0
    with pool.browser() as b:  # the browser was not taken for hung: the same one serves on
        assert b.alive() and pool.started == 1
