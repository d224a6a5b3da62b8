"""The pages of `g6 serve` as HTTP answers: their Content-Security-Policy, hostile captured text escaped in
the HTML itself, search by URL, digest or receipt id, and refusals that say why (in HTML for browsers)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import lxml.html
import pytest

from g6.serve.html import CSP, esc, marked_text
from tests.serve.pages_world import ATTR_TEXT, HOSTILE_TEXT, World, build
from tests.serve.server import served


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build(tmp_path_factory.mktemp("pages-http"))


@pytest.fixture(scope="module")
def web(world: World) -> Iterator[httpx.Client]:
    with served(world.home, "--manifest", str(world.manifest), stop=signal.SIGINT, sigint_ignored=True) as base, \
            httpx.Client(base_url=base) as client:  # started as CI runners start it, stopped by SIGINT all the same
        yield client


def test_every_page_forbids_scripts_and_other_origins(web: httpx.Client, world: World) -> None:
    for path in ("/", f"/capture/{world.hostile}", f"/manifest/{world.manifest_id}", "/verify",
                 "/search?q=" + quote(world.urls["/article"])):
        r = web.get(path)
        assert r.status_code == 200, (path, r.text)
        csp = r.headers["content-security-policy"]
        assert csp == CSP and "default-src 'none'" in csp and "script" not in csp and "unsafe" not in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        doc = lxml.html.fromstring(r.text)
        assert doc.xpath("//script") == [] and doc.xpath("//@*[starts-with(name(), 'on')]") == []
        assert doc.xpath("//@style") == [] and doc.xpath("//style") == []  # no inline style either
        # links stay on this server
        assert all(h.startswith("/") and not h.startswith("//") for h in doc.xpath("//a/@href | //iframe/@src"))


def test_hostile_text_is_escaped_in_the_html(web: httpx.Client, world: World) -> None:
    r = web.get(f"/capture/{world.hostile}")
    assert "</textarea><script>" not in r.text and "<script>" not in r.text
    assert esc(HOSTILE_TEXT) in r.text  # there, as text
    assert 'onerror="' not in r.text and esc(ATTR_TEXT) in r.text
    doc = lxml.html.fromstring(r.text)
    [mark] = doc.xpath("//pre[@class='text']/mark")
    assert mark.text_content() == HOSTILE_TEXT


@pytest.mark.parametrize("text, spans, want", [
    ("a <b> c", [(2, 5)], "a <mark>&lt;b&gt;</mark> c"),
    ("abcdef", [(0, 3), (2, 5)], "<mark>abc</mark><mark>de</mark>f"),  # overlaps cut at the earlier end
    ("abc", [(1, 2), (1, 2)], "a<mark>b</mark>c"),  # the same span twice is marked once
    ('"x"\u202e', [(0, 3)], "<mark>&quot;x&quot;</mark>[U+202E]"),
])
def test_marked_text(text: str, spans: list[tuple[int, int]], want: str) -> None:
    cites = [{"start": s, "end": e, "citation_id": "c_0", "found": True} for s, e in spans]
    assert marked_text(text, cites).replace(' id="c_0" title="c_0"', "") == want


def test_search_by_url_digest_and_receipt(web: httpx.Client, world: World) -> None:
    r = web.get("/search", params={"q": world.urls["/article"]})
    assert r.status_code == 200 and f"/capture/{world.article}" in r.text and f"/capture/{world.redirect}" in r.text
    r = web.get("/search", params={"q": "sha256:" + world.article_sha256})
    assert r.status_code == 200 and f"/capture/{world.article}" in r.text
    site = world.urls["/article"].removesuffix("article")  # nothing captured at the site's root itself
    r = web.get("/search", params={"q": site})
    assert r.status_code == 200 and "0 captures" in r.text
    assert f'href="/search?q={quote(world.urls["/hostile"], safe="")}"' in r.text  # but URLs under it are listed
    r = web.get("/search", params={"q": world.hostile})
    assert r.status_code == 303 and r.headers["location"] == f"/capture/{world.hostile}"


@pytest.mark.parametrize("path, status, says", [
    ("/search?q=", 400, "give a URL"), ("/search?q=%3Cscript%3Ealert(1)%3C/script%3E", 400, "neither a URL"),
    ("/capture/rcpt_NOSUCH", 404, "no receipt rcpt_NOSUCH"),
    ("/capture/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", 404, ""),
    ("/manifest/mfst_NOSUCH", 404, "not given to g6 serve")])
def test_refusals_say_why_in_html(web: httpx.Client, path: str, status: int, says: str) -> None:
    r = web.get(path, headers={"accept": "text/html"})
    assert r.status_code == status and r.headers["content-type"].startswith("text/html")
    assert says in r.text and "<script>" not in r.text and "<img" not in r.text

