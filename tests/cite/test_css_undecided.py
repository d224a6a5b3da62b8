"""Text whose visibility g6 cannot decide from a page's bytes is never support (red-team finding 8): an
element the page's CSS may hide (``@container``) is not cited and the verdict says why; a page whose CSS is
past the bounds g6 applies has no text to cite (render it). Real home, a loopback site, ``g6 cite`` and
``g6 report check``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.adapters.outcomes import Outcome
from g6.cite.cite import cite_web
from g6.cite.page_text import STYLE_UNDECIDED, read_texts
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.report.check_helpers import LEAD, QUOTE, check, cite, report_of

Site = Callable[..., LocalSite]
MAYBE = "Water bills fell by three percent in the same quarter"


def undecided_page() -> bytes:
    return (f"<html><head><title>Bills</title><style>@container (max-width: 30em) {{ .narrow {{ display: none }} }}"
            f"</style></head><body><article><h1>Bills</h1><p>{LEAD}</p><p>{QUOTE}</p><p class=narrow>{MAYBE}</p>"
            f"<p>{LEAD}</p></article></body></html>").encode()


def past_bounds_page() -> bytes:
    """More selectors x elements than ``MAX_STYLE_VISITS``: the last rules are not applied."""
    css = "\n".join(f"p:nth-child({i + 1}) {{ display: none }}" for i in range(1400))
    paras = "".join(f"<p>Paragraph {i} of the page.</p>" for i in range(2000))
    return (f"<html><head><style>{css}</style></head><body><article><p>{QUOTE}</p>{paras}</article>"
            "</body></html>").encode()


def test_a_quote_in_text_the_css_may_hide_is_not_found_and_says_why(home: EvidenceHome, client: CheckedClient,
                                                                    site: Site) -> None:
    s = site({"/a": Reply(body=undecided_page()), "/robots.txt": Reply(404)})
    found, maybe = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), MAYBE)), client).verdicts
    assert found.verdict == "quote_found"
    assert maybe.verdict == "quote_not_found" and maybe.detail["hidden_in"] == "css_undecided", maybe
    assert "@container (max-width: 30em)" in maybe.reason and "--render" in maybe.reason, maybe.reason
    with pytest.raises(InputError, match="undecided.*--render"):
        cite_web(home, maybe.receipt_id, quote=MAYBE)
    r = fetch(home, client, s.url("/a"))  # a fetch's documents keep it: a reader may well see it
    assert MAYBE in r.documents[0].text


def test_a_page_whose_css_is_past_the_bounds_has_no_text_to_cite(home: EvidenceHome, client: CheckedClient,
                                                                 site: Site) -> None:
    texts = read_texts(past_bounds_page(), "https://e.org/", "text/html")
    assert (texts.outcome, texts.reason) == (Outcome.PARSE_FAILED, STYLE_UNDECIDED)
    s = site({"/a": Reply(body=past_bounds_page()), "/robots.txt": Reply(404)})
    (v,) = check(home, report_of(cite(s.url("/a"), QUOTE)), client).verdicts
    assert v.verdict == "source_failed" and STYLE_UNDECIDED in v.reason, v
    with pytest.raises(InputError, match="past .* selector visits.*--render"):
        cite_web(home, v.receipt_id, quote=QUOTE)


def test_a_quote_in_a_closed_details_is_not_found_and_says_why(home: EvidenceHome, client: CheckedClient,
                                                               site: Site) -> None:
    """A closed <details> shows only its summary as the page loads (Chromium too): its body is kept in a fetch's
    documents but never cited."""
    body = (f"<html><head><title>Bills</title></head><body><article><h1>Bills</h1><p>{LEAD}</p><p>{QUOTE}</p>"
            f"<details><summary>More on bills</summary><p>{MAYBE}</p></details><p>{LEAD}</p></article></body>"
            "</html>").encode()
    s = site({"/a": Reply(body=body), "/robots.txt": Reply(404)})
    found, closed = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), MAYBE)), client).verdicts
    assert found.verdict == "quote_found"
    assert closed.verdict == "quote_not_found" and closed.detail["hidden_in"] == "details_closed", closed
    assert "closed <details>" in closed.reason
