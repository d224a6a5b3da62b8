"""A consent banner beside the article is not a wall; a consent dialog in place of the article is.

Issue 36: on 100 real news pages every page of one publisher group (Vox Media: vox.com, theverge.com, an
SB Nation blog) was flagged ``interstitial`` (consent dialog) although the whole article sat on the page
beside the publisher's consent markup, so ``g6 cite`` refused every sentence on them. Their layout calls
the column holding the article ``l-sidebar-fixed``, which the wall check took for a sidebar. A wall is a
page whose own content is missing or cut short and replaced by the dialog, so the page's main text decides.

``fixtures/consent`` (see its README) holds each consent manager publishers use (OneTrust, Quantcast
Choice, Didomi, Sourcepoint, and the TCF CMPs of Google Funding Choices and Cookiebot) once beside a full
article and once as a wall, and two pages in Vox Media's markup with the whole article and its banner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from g6.adapters import CheckedClient
from g6.adapters.html.interstitial import LITTLE_TEXT, Interstitial, detect
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.conftest import FIXTURES

Site = Callable[..., LocalSite]
PAGES = FIXTURES / "consent"
URL = "https://news.example/2026/12/story"
TCF = Interstitial("consent", "consent dialog (IAB TCF CMP)")
PLAIN = Interstitial("consent", "consent dialog")

WALLS = {
    "onetrust-wall.html": PLAIN,
    "quantcast-wall.html": TCF,
    "didomi-wall.html": TCF,
    "sourcepoint-wall.html": TCF,
    "tcf-funding-choices-wall.html": PLAIN,
    "tcf-cookiebot-wall.html": PLAIN,
}
ARTICLES = ("onetrust-article.html", "quantcast-article.html", "didomi-article.html", "sourcepoint-article.html",
            "tcf-funding-choices-article.html", "tcf-cookiebot-article.html", "voxmedia-article.html",
            "voxmedia-short-article.html")
# a sentence of each Vox Media-like page's article, for cite and re-check
VOX_QUOTES = {"voxmedia-article.html": "A heat pump does not make heat.",
              "voxmedia-short-article.html": "The update also adds a setting to dim the front light on a schedule."}


def page(name: str) -> bytes:
    return (PAGES / name).read_bytes()


def test_the_fixtures_are_all_named() -> None:
    assert sorted(p.name for p in PAGES.glob("*.html")) == sorted([*WALLS, *ARTICLES])


@pytest.mark.parametrize("name", sorted(WALLS))
def test_every_consent_wall_is_flagged(name: str) -> None:
    assert detect(page(name), status=200, final_url=URL) == WALLS[name]


@pytest.mark.parametrize("name", ARTICLES)
def test_no_article_beside_a_consent_banner_is_a_wall(name: str) -> None:
    assert detect(page(name), status=200, final_url=URL) is None


def _emptied(body: bytes) -> bytes:
    """A Vox Media-like page with the article's body taken out (headline, dek and byline left): the same
    markup and banner, as a page whose content is missing."""
    html = body.decode()
    start = html.index('<div class="c-entry-content ">') + len('<div class="c-entry-content ">')
    return (html[:start] + html[html.index("</div>", start):]).encode()


def test_the_same_markup_without_its_article_is_a_wall() -> None:
    """What tells the two apart is the page's own main text, not the consent markup: with the article's body
    taken out, the very same layout, banner and all, is a consent wall. (Not so the longer page: without its
    article, its furniture (dek, caption, newsletter box, most-read list) still says more than its banner, a
    page of furniture with a banner that the rule does not call a wall.)"""
    empty = _emptied(page("voxmedia-short-article.html"))
    assert b"<p id=" in page("voxmedia-short-article.html") and b"<p id=" not in empty
    assert detect(empty, status=200, final_url=URL) == PLAIN


def test_a_wrapper_named_for_consent_is_not_the_dialog() -> None:
    """A page wrapped in an element named for consent (a state class a consent script sets) holds the whole
    article and the banner: the wrapper is not the dialog, the banner inside it is."""
    article = "".join(f"<p>Paragraph {i}: " + "the council met again on the tram budget and agreed nothing. " * 4
                      + "</p>" for i in range(8))
    banner = ('<div id="cookie-banner"><p>We use cookies to measure our audience.</p>'
              "<button>Accept</button><button>Reject</button></div>")
    body = (f'<html><body><div class="app consent-pending"><main><article><h1>Tram budget</h1>{article}'
            f"</article></main>{banner}</div></body></html>").encode()
    assert len("".join(re.sub("<[^>]+>", " ", article).split())) > LITTLE_TEXT
    assert detect(body, status=200, final_url=URL) is None
    wall = (f'<html><body><div class="app consent-pending"><main><article><h1>Tram budget</h1></article></main>'
            f"{banner.replace('measure our audience', 'measure our audience and personalise the adverts')}"
            "</div></body></html>").encode()
    assert detect(wall, status=200, final_url=URL) == PLAIN


# -- over a real socket: fetch, the receipt, cite, re-check --------------------------------------------------
@pytest.fixture
def served(site: Site) -> LocalSite:
    routes: dict[str, Any] = {f"/{n}": Reply(body=page(n)) for n in [*WALLS, *ARTICLES]}
    routes["/robots.txt"] = Reply(404, b"")
    return site(routes)


def test_fetch_flags_the_walls_and_no_article(home: EvidenceHome, client: CheckedClient, served: LocalSite) -> None:
    for name in [*WALLS, *ARTICLES]:
        result = fetch(home, client, served.url(f"/{name}"))
        receipt = home.ledger.get(result.receipt_id)
        assert result.outcome.value == "ok", name
        expected = WALLS[name].to_json() if name in WALLS else None
        assert result.interstitial == expected and receipt.interstitial == expected, name


@pytest.mark.parametrize("name", sorted(VOX_QUOTES))
def test_a_vox_media_article_can_be_cited_and_rechecked(home: EvidenceHome, client: CheckedClient, site: Site,
                                                        name: str) -> None:
    """The issue's symptom: `g6 cite` refused every sentence of these pages, and a re-check could only ever
    say interstitial. The sentence is cited from the main text, and a re-check finds it current."""
    s = site({"/a": Reply(body=page(name)), "/robots.txt": Reply(404, b"")})
    result = fetch(home, client, s.url("/a"))
    assert result.interstitial is None
    citation = cite_web(home, result.receipt_id, quote=VOX_QUOTES[name])
    assert citation.text_source == "main"
    m = Manifest.new().with_citation(citation).signed(home.signing_key())
    s.routes = {**s.routes, "/a": Reply(body=page(name) + b"<!-- served again -->\n")}  # new bytes: read and judged
    v = recheck(home, client, m, workers=1).verdicts[0]
    assert v.verdict == "current", v
