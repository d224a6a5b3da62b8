"""A page that hides its whole document or its body (``<html hidden>``, ``html {display: none}``, ``body
{display: none}``, or CSS g6 cannot decide on either) shows a reader nothing. Its reading used to raise (lxml will
not drop a tree's root: ``g6 fetch`` of such a page ended in an AssertionError, its body kept and no receipt), or,
with the body dropped, read the head's words as the page's (a second ``<title>``). Now the root and the body stay,
emptied: the page has no text, and a fetch of it is receipted ``empty``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.adapters.html.text import extract_html
from g6.adapters.outcomes import Outcome
from g6.cite.page_text import read_texts
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch, prepare_fetch
from g6.home import EvidenceHome
from tests.report.check_helpers import check, cite, report_of

Site = Callable[..., LocalSite]
HEAD = b"<head><title>Title</title><title>Words of a second title</title></head>"
UNDECIDED = b"<style>@container (max-width: 30em) { %s { display: none } }</style>"
# name -> (body, whether a fetch's reading, which keeps what CSS g6 cannot decide on, shows the words)
PAGES = {
    "html-hidden": (b"<html hidden>" + HEAD + b"<body><p>Words of the page.</p></body></html>", False),
    "html-aria-hidden": (b'<html aria-hidden="true">' + HEAD + b"<body><p>Words of the page.</p></body></html>",
                         False),
    "html-style": (b'<html style="display:none">' + HEAD + b"<body><p>Words of the page.</p></body></html>", False),
    "html-rule": (b"<html>" + HEAD + b"<style>html { display: none }</style><body><p>Words of the page.</p></body>"
                  b"</html>", False),
    "everything-invisible": (b"<html>" + HEAD + b"<style>* { visibility: hidden }</style><body><p>Words of the "
                             b"page.</p></body></html>", False),
    "body-hidden": (b"<html>" + HEAD + b"<body hidden><p>Words of the page.</p></body>After the body.</html>", False),
    "body-rule": (b"<html>" + HEAD + b"<style>body { display: none }</style><body><p>Words of the page.</p></body>"
                  b"</html>", False),
    "html-undecided": (b"<html>" + HEAD + UNDECIDED % b"html" + b"<body><p>Words of the page.</p></body></html>",
                       True),
    "body-undecided": (b"<html>" + HEAD + UNDECIDED % b"body" + b"<body><p>Words of the page.</p></body></html>",
                       True),
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_page_that_hides_its_document_or_body_has_no_text(name: str) -> None:
    body, fetch_sees = PAGES[name]
    for cited in (False, True):
        page = extract_html(body, "https://e.example/", "text/html", cited=cited)
        assert "second title" not in page.visible + page.text, (cited, page.visible)
        words = "Words of the page." in page.visible
        assert words is (fetch_sees and not cited), (cited, page.visible)
    texts = read_texts(body, "https://e.example/", "text/html")
    assert (texts.outcome, texts.reason) == (Outcome.EMPTY, "no_text"), texts


def test_a_page_hidden_whole_is_fetched_and_receipted_empty(home: EvidenceHome, client: CheckedClient,
                                                           site: Site) -> None:
    s = site({**{f"/{n}": Reply(body=b) for n, (b, _) in PAGES.items()}, "/robots.txt": Reply(404, b"")})
    for name, (_, fetch_sees) in PAGES.items():
        r = fetch(home, client, s.url(f"/{name}"))
        assert r.outcome is (Outcome.OK if fetch_sees else Outcome.EMPTY), (name, r.reason)
        assert prepare_fetch(home.store, client, s.url(f"/{name}"), documents=False).receipt.outcome == r.outcome.value
    (v,) = check(home, report_of(cite(s.url("/html-hidden"), "Words of the page.")), client).verdicts
    assert v.verdict == "source_failed" and "no_text" in v.reason, v
    assert home.verify().ok
