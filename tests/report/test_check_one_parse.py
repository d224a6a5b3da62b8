"""A page a report check fetches is parsed once (issue 37's end-to-end cost): its outcome (``page_outcome``, what
``g6 fetch --input`` says) decided from the cited texts the verdicts are read from (``_ReadWithTexts``), not from a
parse of its own. Measured here over a real socket: the parse count, and on every HTML page of the fixtures and
the edge cases (no visible words, noscript only, a closed ``<details>`` only, CSS past the bounds, a refresh, a wall,
plain text, JSON, a PDF's bytes, an empty body) the same receipt outcome, reason and wall as ``page_outcome`` gives
and the same texts as ``body_texts`` gives."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import prepare_fetch
from g6.home import EvidenceHome
from g6.report.fetching import _ReadWithTexts
from g6.report.verdicts import body_texts
from tests.cite.test_css_undecided import past_bounds_page, undecided_page
from tests.conftest import FIXTURES
from tests.report.check_helpers import QUOTE, check, cite, report_of

Site = Callable[..., LocalSite]
HTML = "text/html; charset=utf-8"

EDGES: dict[str, tuple[bytes, str]] = {  # name -> (body, content type)
    "shell": (b"<html><head><script src=/app.js></script></head><body><div id=root></div></body></html>", HTML),
    "noscript-only": (b"<html><body><noscript>Please enable JavaScript to read this page.</noscript></body></html>",
                      HTML),
    "details-closed-only": (b"<html><body><details><summary> </summary>The body a reader opens.</details>"
                            b"</body></html>", HTML),
    "hidden-only": (b"<html><body><p hidden>Not shown.</p><div style='display:none'>Nor this.</div></body></html>",
                    HTML),
    "title-only": (b"<html><head><title>Only a title</title></head><body> </body></html>", HTML),
    "blank": (b"   \n ", HTML),
    "empty": (b"", HTML),
    "refresh-now": (b'<html><head><meta http-equiv="refresh" content="0; url=/elsewhere"></head><body><p>Moved, '
                    b"follow on.</p></body></html>", HTML),
    "css-undecided": (undecided_page(), HTML),
    "css-past-bounds": (past_bounds_page(), HTML),
    "xhtml": (b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>Words in XHTML.</p>'
              b"</body></html>", "application/xhtml+xml"),
    "plain-text": (b"Plain words, no markup.\n", "text/plain; charset=utf-8"),
    "json": (b'{"text": "words in JSON"}', "application/json"),
    "pdf": (b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n", "application/pdf"),
    "latin1": ("<html><body><p>Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9.</p></body></html>".encode("latin-1"),
               "text/html; charset=iso-8859-1"),
}


def _fixture_pages() -> dict[str, tuple[bytes, str]]:
    paths = sorted([*(FIXTURES / "interstitial").glob("*.html"), *(FIXTURES / "consent").glob("*.html"),
                    *(FIXTURES / "browser-pages" / "pages").glob("*.html"),
                    *(FIXTURES / "recheck-corpus" / "pages").glob("*.html"),
                    *(FIXTURES / "render").glob("*/*.html")])
    return {f"{p.parent.name}/{p.name}": (p.read_bytes(), HTML) for p in paths}


PAGES = {**EDGES, **_fixture_pages()}


def _route(name: str) -> str:
    return "/p/" + name.replace("/", "--")


@pytest.fixture
def served(site: Site) -> LocalSite:
    routes = {_route(n): Reply(body=b, content_type=ct) for n, (b, ct) in PAGES.items()}
    return site({**routes, "/robots.txt": Reply(404, b"")})


def test_there_are_fixture_pages_to_compare() -> None:
    assert len(PAGES) - len(EDGES) >= 60, sorted(PAGES)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_outcome_and_texts_are_page_outcomes_and_body_texts(home: EvidenceHome, client: CheckedClient,
                                                                 served: LocalSite, name: str) -> None:
    url = served.url(_route(name))
    plain = prepare_fetch(home.store, client, url, documents=False)
    reading = _ReadWithTexts()
    once = prepare_fetch(home.store, client, url, documents=False, reading=reading)
    a, b = plain.receipt, once.receipt
    assert (b.outcome, b.detail.get("reason"), b.interstitial, b.content, b.http_status) == \
           (a.outcome, a.detail.get("reason"), a.interstitial, a.content, a.http_status)
    assert {k: v for k, v in b.detail.items() if "ms" not in k} == {k: v for k, v in a.detail.items() if "ms" not in k}
    body = home.store.read(str((b.content or {})["blake3"])) if b.content else None
    if body is not None:
        assert reading.texts_of(b, body) == body_texts(b, body)


def test_a_checked_page_is_parsed_once(home: EvidenceHome, client: CheckedClient, served: LocalSite,
                                       parses: list[int]) -> None:
    """Through ``g6 report check`` itself: one parse of the page (two before: its outcome, then its texts)."""
    body = (FIXTURES / "consent" / "onetrust-article.html").read_bytes()
    quote = "The line runs for six kilometres from the railway station to the old shipyards, with eleven stops"
    (v,) = check(home, report_of(cite(served.url(_route("consent/onetrust-article.html")), quote)), client).verdicts
    assert v.verdict == "quote_found", v
    assert parses == [len(body)]


def test_a_page_with_no_visible_words_is_read_as_page_outcome_reads_it(home: EvidenceHome, client: CheckedClient,
                                                                       served: LocalSite, parses: list[int]) -> None:
    """No visible words in the cited texts: the outcome is ``page_outcome``'s own (it parses the page again)."""
    (v,) = check(home, report_of(cite(served.url(_route("shell")), QUOTE)), client).verdicts
    assert v.verdict == "source_failed" and "no_text_without_scripts" in v.reason, v
    assert len(parses) >= 2


def test_texts_read_with_another_url_than_the_receipts_are_read_again(home: EvidenceHome, client: CheckedClient,
                                                                       served: LocalSite) -> None:
    """The texts are the verdicts' only when read with the URL and content type the receipt records."""
    reading = _ReadWithTexts()
    url = served.url(_route("consent/onetrust-article.html"))
    r = prepare_fetch(home.store, client, url, documents=False, reading=reading).receipt
    body = home.store.read(str((r.content or {})["blake3"]))
    assert reading.texts_of(r, body) is reading.texts
    reading.source = ("https://another.example/", reading.source[1] if reading.source else None)
    again = reading.texts_of(r, body)
    assert again is not reading.texts and again == body_texts(r, body)
