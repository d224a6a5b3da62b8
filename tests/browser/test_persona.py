"""What the capture's browser tells a page about itself (finding 8 of the attack round: ``navigator.webdriver`` was
true and the user agent said ``HeadlessChrome``, so a page could show g6 other words than a reader): a reader's
Chromium of the same version, in the page and in its workers, and the receipt records the user agent pages saw."""

from __future__ import annotations

import re
from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.persona import reader_user_agent
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
PAGE = b"""<p id=p></p><p id=w></p><script>
document.getElementById("p").textContent = "Zqpage " + navigator.webdriver + " " + navigator.userAgent;
const w = new Worker(URL.createObjectURL(new Blob(["postMessage(navigator.userAgent)"])));
w.onmessage = (e) => { document.getElementById("w").textContent = "Zqworker " + e.data; };
</script>"""


def test_the_page_and_its_workers_see_a_readers_chromium_and_the_receipt_says_which(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = site({"/": Reply(body=PAGE), "/robots.txt": ROBOTS})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=5, quiet=1))
    engine = home.ledger.get(result.receipt_id).capture["engine"]
    text = result.documents[0].text
    major = engine["version"].split(".")[0]
    assert engine["user_agent"] == reader_user_agent(pool.running()[0].executable)
    assert "Headless" not in engine["user_agent"] and f"Chrome/{major}.0.0.0" in engine["user_agent"]
    assert f"Zqpage false {engine['user_agent']}" in text, text
    assert f"Zqworker {engine['user_agent']}" in text, text


def test_a_browser_whose_version_is_unknown_keeps_its_own_user_agent() -> None:
    """``--version`` says nothing a version can be read from: no user agent is made up (the browser's own is used,
    and recorded)."""
    assert reader_user_agent("/bin/true") is None
    assert reader_user_agent("/no/such/browser") is None


def test_the_reader_user_agent_names_the_browsers_own_major_version() -> None:
    from world import need_chromium

    exe = need_chromium()
    ua = reader_user_agent(exe)
    assert ua is not None and re.fullmatch(r"Mozilla/5\.0 \(X11; Linux x86_64\) AppleWebKit/537\.36 \(KHTML, like "
                                           r"Gecko\) Chrome/\d+\.0\.0\.0 Safari/537\.36", ua), ua
