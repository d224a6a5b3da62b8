"""The pages of `g6 serve` in a real headless Chromium, over the real socket: no script runs (the hostile
capture's `<script>`, its `onerror` attribute, its `</textarea><script>` text), the cited passage is in a
`<mark>`, the captured page is framed in a sandbox of no origin, and nothing loads from elsewhere. A control
(the same hostile bytes opened as a plain file) shows that the script does run when nothing stops it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from g6.demo.site import LocalSite, Reply
from tests.headless import Browser
from tests.serve.pages_world import BIDI_TEXT, HOSTILE, HOSTILE_TEXT, World, build, g6
from tests.serve.server import served

NO_ON_ATTRIBUTES = ("[...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
                    ".filter(n => n.startsWith('on'))")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build(tmp_path_factory.mktemp("pages"))


@pytest.fixture(scope="module")
def base(world: World) -> Iterator[str]:
    with served(world.home, "--manifest", str(world.manifest)) as url:
        yield url


def iframes(b: Browser) -> set[str]:
    return {t["targetId"] for t in b.send("Target.getTargets")["targetInfos"] if t["type"] == "iframe"}


def frame_eval(b: Browser, target: str, expression: str) -> object:
    """Evaluate in the framed memento from DevTools (not one of the frame's own scripts, which are what the
    test looks for). A sandboxed frame has no origin, so Chromium runs it as a target of its own."""
    session = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    res = b.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
    assert "exceptionDetails" not in res, res
    return res["result"].get("value")


def test_the_control_page_runs_its_script(browser: Browser, tmp_path: Path) -> None:
    """The hostile bytes opened as a plain file: the script runs, so the checks below can fail."""
    (tmp_path / "hostile.html").write_bytes(HOSTILE)
    browser.open(tmp_path / "hostile.html")
    assert browser.evaluate("document.title") == "PWNED"
    assert browser.evaluate("document.documentElement.getAttribute('data-pwned')") == "1"


def test_capture_page_shows_hostile_text_as_text_and_marks_the_citation(browser: Browser, base: str,
                                                                          world: World) -> None:
    browser.open_url(base + f"capture/{world.hostile}")
    assert browser.evaluate("document.title") == f"Capture {world.hostile} · g6 serve"
    assert browser.evaluate("document.documentElement.getAttribute('data-pwned')") is None
    assert browser.evaluate("document.querySelectorAll('script').length") == 0
    assert browser.evaluate(NO_ON_ATTRIBUTES) == []
    marks = browser.evaluate("[...document.querySelectorAll('pre.text mark')].map(m => [m.id, m.textContent])")
    [(cid, text)] = marks
    assert text == HOSTILE_TEXT and cid.startswith("c_")
    shown = browser.evaluate("document.querySelector('pre.text').textContent")
    assert "\u202e" not in shown and "[U+202E]" in shown  # a bidi override is shown, not obeyed
    assert BIDI_TEXT.split()[0] in shown
    assert browser.evaluate("getComputedStyle(document.querySelector('mark')).backgroundColor") == \
        "rgb(255, 226, 122)"  # the stylesheet of this server loaded under the page's CSP


def test_the_captured_page_is_framed_in_a_sandbox_where_nothing_runs(browser: Browser, base: str,
                                                                      world: World) -> None:
    before = iframes(browser)
    browser.open_url(base + f"capture/{world.hostile}")
    frame = browser.evaluate("(f => [f.getAttribute('sandbox'), f.getAttribute('src')])"
                             "(document.querySelector('iframe'))")
    assert frame[0] == "" and frame[1].startswith("/web/") and frame[1].endswith("id_/" + world.urls["/hostile"])
    [target] = iframes(browser) - before  # the frame of this page

    def inside(expression: str) -> object:
        return frame_eval(browser, target, expression)

    assert inside("document.querySelector('title') && document.querySelector('title').textContent") == "Hostile"
    assert inside("document.title") == "Hostile"  # the captured page is there, and its script did not run
    assert inside("document.documentElement.getAttribute('data-pwned')") is None
    assert inside("origin") == "null"  # of no origin: it cannot reach the server's pages


def test_the_memento_opened_alone_runs_no_script(browser: Browser, base: str, world: World) -> None:
    """Opened top-level (a link, a new tab), the memento's own Content-Security-Policy: sandbox keeps it inert."""
    cap = json.loads(__import__("httpx").get(base + f"api/capture/{world.hostile}").text)
    browser.open_url(base + cap["memento"].lstrip("/"))
    assert browser.evaluate("document.querySelector('title').textContent") == "Hostile"
    assert browser.evaluate("document.title") == "Hostile"
    assert browser.evaluate("document.documentElement.getAttribute('data-pwned')") is None


def test_pages_load_nothing_from_elsewhere(browser: Browser, base: str, world: World) -> None:
    origin = urlsplit(base).netloc
    for path in ("", f"capture/{world.hostile}", f"capture/{world.article}", f"manifest/{world.manifest_id}",
                 "search?q=" + world.urls["/article"]):
        browser.open_url(base + path)
        assert browser.evaluate("document.querySelectorAll('script').length") == 0
        elsewhere = [u for u in browser.requested_urls() if urlsplit(u).netloc != origin]
        assert elsewhere == [], (path, elsewhere)


def test_article_capture_marks_the_cited_sentence(browser: Browser, base: str, world: World) -> None:
    browser.open_url(base + f"capture/{world.article}")
    marks = browser.evaluate("[...document.querySelectorAll('pre.text mark')].map(m => m.textContent)")
    assert [m.lower() for m in marks] == ["the answer should be a receipt"]
    browser.open_url(base + f"manifest/{world.manifest_id}")
    badges = browser.evaluate("[...document.querySelectorAll('main section:nth-of-type(2) td .badge')]"
                              ".map(b => b.textContent)")
    assert badges.count("unchanged") == 2


def test_a_framed_capture_loads_nothing_from_its_original_site(browser: Browser, tmp_path: Path) -> None:
    elsewhere = LocalSite({"/pixel.png": Reply(body=b"x", content_type="image/png"),
                           "/s.css": Reply(body=b"p{}", content_type="text/css")}).start()
    body = (f'<html><head><title>Ext</title><link rel=stylesheet href="{elsewhere.url("/s.css")}"></head><body>'
            f'<p>Words of a page whose image is elsewhere.</p><img src="{elsewhere.url("/pixel.png")}"></body></html>')
    site = LocalSite({"/ext": Reply(body=body.encode())}).start()
    try:
        rid = json.loads(g6(tmp_path / "home", "fetch", site.url("/ext"), "--json", cwd=tmp_path).stdout)["receipt_id"]
        with served(tmp_path / "home") as base:
            browser.open_url(base + f"capture/{rid}")
        assert [r.path for r in elsewhere.requests] == []
    finally:
        site.stop()
        elsewhere.stop()
