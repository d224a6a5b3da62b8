"""The headers that restrict a page reach the browser (finding 7 of the attack round: a script a reader's browser
refuses under the page's Content-Security-Policy ran for g6), without their reporting: a capture sends nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.intercept import browser_headers, without_reporting
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")


@pytest.mark.parametrize(("csp", "kept"), [
    ("script-src 'self'", "script-src 'self'"),
    ("img-src 'none'; report-uri /r; report-to g", "img-src 'none'"),
    ("REPORT-URI /r ;default-src 'self' ;", "default-src 'self'"),
    ("report-uri /r", ""),
    ("script-src 'none'; report-to g, img-src 'self'; report-uri /x", "script-src 'none', img-src 'self'"),
    ("report-urix /r", "report-urix /r"),  # not a reporting directive: the browser judges it, not g6
])
def test_a_policy_loses_only_its_reporting_directives(csp: str, kept: str) -> None:
    assert without_reporting(csp) == kept


def test_a_policy_of_reporting_only_is_not_handed_over_and_other_headers_are_untouched() -> None:
    assert browser_headers((("content-security-policy", "report-uri /r"), ("content-type", "text/html"),
                            ("x-content-type-options", "nosniff"))) == [
        {"name": "content-type", "value": "text/html"}, {"name": "x-content-type-options", "value": "nosniff"}]


PAGE = b"""<p>Zqarticle.</p><img src="/blocked.png"><p id=a></p>
<script>document.getElementById("a").textContent = "Zqinline ran";</script>"""


def test_the_policy_holds_and_its_violations_are_reported_nowhere(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    """The page's policy forbids inline scripts and images and names a same-origin report endpoint: the script
    does not run, the image is not asked for, and no report is sent (none reaches the interception, so none is
    receipted)."""
    csp = "script-src 'self'; img-src 'none'; report-uri /csp-report"
    s = site({"/": Reply(body=PAGE, headers=(("Content-Security-Policy", csp),)), "/robots.txt": ROBOTS,
              "/blocked.png": Reply(body=b"\x89PNG", content_type="image/png"), "/csp-report": Reply(204, b"")})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=5, quiet=1))
    assert result.outcome.value == "ok" and "Zqarticle." in result.documents[0].text
    assert "Zqinline" not in result.documents[0].text
    asked = sorted(str(e.receipt.request.get("url")).rsplit("/", 1)[-1] for e in home.ledger.entries()
                   if e.receipt.links.get("capture") == result.receipt_id)
    assert asked in ([""], ["", "favicon.ico"]), asked
    assert [q.path for q in s.requests if q.path not in ("/robots.txt", "/", "/favicon.ico")] == []
