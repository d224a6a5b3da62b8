"""One parse per page (issue 36): a fetch reads a page's text and checks it for a wall from one parse.

``g6 fetch`` used to parse an HTML body twice: for its text (``read_page`` -> ``extract_html``) and again for
the wall check (``interstitial_of`` -> ``detect``). Now the wall check (``WallCheck``) is shown the tree the
text is read from. Counted here: every call of ``parse_html``, in every module that imported it, during a
fetch over a real socket, a ``g6 fetch --input``-style fetch and a re-check. And the verdict from the shared
tree is ``detect``'s own on every page of the fixtures.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from g6.adapters import CheckedClient
from g6.adapters.html.interstitial import MAX_INSPECT, Interstitial, WallCheck, detect
from g6.adapters.html.text import extract_html
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest
from g6.cite.page_text import read_texts
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch, prepare_fetch
from g6.home import EvidenceHome
from tests.conftest import FIXTURES

Site = Callable[..., LocalSite]
PLAIN = b"<html><head><title>Tides</title></head><body><p>" + b"The tide turned at noon. " * 60 + b"</p></body></html>"
PAGES = {  # path -> (body, the wall it is)
    "/plain": (PLAIN, None),  # nothing a wall holds: the wall check never parses it anyway
    "/banner": ((FIXTURES / "consent" / "onetrust-article.html").read_bytes(), None),
    "/vox": ((FIXTURES / "consent" / "voxmedia-article.html").read_bytes(), None),
    "/consent-wall": ((FIXTURES / "consent" / "didomi-wall.html").read_bytes(),
                      Interstitial("consent", "consent dialog (IAB TCF CMP)")),
    "/login": ((FIXTURES / "interstitial" / "login-page.html").read_bytes(), Interstitial("login", "password form")),
    "/challenge": ((FIXTURES / "interstitial" / "cloudflare-just-a-moment.html").read_bytes(),
                   Interstitial("challenge", "Cloudflare challenge title")),
}


@pytest.fixture
def served(site: Site) -> LocalSite:
    return site({**{path: Reply(body=body) for path, (body, _) in PAGES.items()}, "/robots.txt": Reply(404, b"")})


@pytest.mark.parametrize("path", sorted(PAGES))
def test_a_fetch_parses_the_page_once(home: EvidenceHome, client: CheckedClient, served: LocalSite,
                                      parses: list[int], path: str) -> None:
    body, wall = PAGES[path]
    result = fetch(home, client, served.url(path))
    assert result.outcome.value == "ok" and result.documents
    assert result.interstitial == (wall.to_json() if wall else None)
    assert parses == [len(body)]


@pytest.mark.parametrize("path", sorted(PAGES))
def test_a_batch_fetch_parses_the_page_once(home: EvidenceHome, client: CheckedClient, served: LocalSite,
                                            parses: list[int], path: str) -> None:
    """``g6 fetch --input`` decides the outcome from the visible text (no documents): one parse there too."""
    body, wall = PAGES[path]
    prepared = prepare_fetch(home.store, client, served.url(path), documents=False)
    assert prepared.receipt.interstitial == (wall.to_json() if wall else None)
    assert parses == [len(body)]


def test_a_recheck_parses_the_new_page_once(home: EvidenceHome, client: CheckedClient, site: Site,
                                            parses: list[int]) -> None:
    body = PAGES["/banner"][0]
    s = site({"/a": Reply(body=body), "/robots.txt": Reply(404, b"")})
    quote = "The line runs for six kilometres from the railway station to the old shipyards, with eleven stops"
    m = Manifest.new().with_citation(cite_web(home, fetch(home, client, s.url("/a")).receipt_id, quote=quote))
    m = m.signed(home.signing_key())
    changed = body.replace(b"</footer>", b" Corrections: none.</footer>")
    s.routes = {**s.routes, "/a": Reply(body=changed)}
    parses.clear()
    v = recheck(home, client, m, workers=1).verdicts[0]
    assert v.verdict == "current", v
    assert parses == [len(changed)]


def _fixture_pages() -> list[Path]:
    return sorted([*(FIXTURES / "interstitial").glob("*.html"), *(FIXTURES / "consent").glob("*.html"),
                   *(FIXTURES / "browser-pages" / "pages").glob("*.html")])


@pytest.mark.parametrize("path", _fixture_pages(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_shared_tree_gives_detects_verdict(path: Path) -> None:
    """From the tree the text is read from, the wall check says what ``detect`` says on its own, both where
    ``extract_html`` reads the page (a fetch, a citation's texts) and where only its outcome is decided."""
    body = path.read_bytes()
    for url in ("https://news.example/a", "https://consent.google.com/ml"):
        check = WallCheck(status=200, final_url=url, content_type="text/html")
        extract_html(body, url, "text/html", reader=check)
        assert check.verdict(body) == detect(body, status=200, final_url=url, content_type="text/html")
        texts_check = WallCheck(status=200, final_url=url, content_type="text/html")
        read_texts(body, url, "text/html", texts_check)
        assert texts_check.verdict(body) == check.verdict(body)


def test_past_the_inspected_bytes_the_wall_check_reads_as_detect_does(parses: list[int]) -> None:
    """``detect`` reads only the first MAX_INSPECT bytes; on a longer page the shared tree holds more, so the
    wall check parses those bytes itself (the one case of a second parse) and gives ``detect``'s verdict."""
    form = b'<form action="/login"><input type="password" name="p"></form>'
    pad = b"<!--" + b" " * MAX_INSPECT + b"-->"
    # the form inside the inspected bytes: parsed for the text, then its first MAX_INSPECT bytes for the check;
    # past them: nothing a wall holds in the inspected bytes, so nothing more is parsed
    login = Interstitial("login", "password form")
    for body, wall, second in ((b"<html><body>" + form + pad + b"</body></html>", login, [MAX_INSPECT]),
                               (b"<html><body>" + pad + form + b"</body></html>", None, [])):
        parses.clear()
        check = WallCheck()
        extract_html(body, "https://e.example/", reader=check)
        assert check.verdict(body) == wall
        assert parses == [len(body), *second]
        assert wall == detect(body)


def test_a_verdict_asked_of_other_bytes_is_detects_own() -> None:
    """The check answers from its tree only for the bytes that tree was parsed from."""
    check = WallCheck()
    extract_html(PAGES["/banner"][0], "https://e.example/", reader=check)
    login = PAGES["/login"][0]
    assert check.verdict(login) == Interstitial("login", "password form") == detect(login)
    assert WallCheck().verdict(login) == detect(login)  # never shown a tree: detect itself
