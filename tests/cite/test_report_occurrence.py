"""Finding 1 through a TextQuoteSelector's prefix: ``g6 report check`` picks among a quote's places by the report's
prefix and suffix (``g6.report.verdicts._occurrence``) and counts the places with a plain substring search, so a
prefix can move the citation onto a place ``g6.cite.passages.find`` refuses: inside a word. The fix is the report
module's (another helper's): take the places from ``g6.cite.passages.find_all``."""

from __future__ import annotations

from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.cite.page_text import read_texts
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from tests.report.check_helpers import article, check, cite, report_of

Site = Callable[..., LocalSite]


def test_a_prefix_never_moves_the_citation_inside_a_word(home: EvidenceHome, client: CheckedClient,
                                                        site: Site) -> None:
    body = article("In the first study the drug was ineffective in trials of older patients.",
                   "In the second study the drug was effective in trials of older patients.")
    s = site({"/a": Reply(body=body), "/robots.txt": Reply(404)})
    (v,) = check(home, report_of(cite(s.url("/a"), "effective in trials of older patients",
                                      prefix="In the first study the drug was in")), client).verdicts
    # the only place the prefix surrounds is inside "ineffective", which g6 cite never takes: no place is cited
    assert v.verdict == "quote_not_found" and v.found is None and v.detail.get("context") == "not_around", v
    (w,) = check(home, report_of(cite(s.url("/a"), "effective in trials of older patients",
                                      prefix="In the second study the drug was")), None).verdicts
    assert w.verdict == "quote_found" and w.found is not None
    text = read_texts(body, s.url("/a"), "text/html").text(w.found["text_source"]) or ""
    start = w.found["start"]
    assert not text[start - 1].isalnum() and "second study" in text[max(0, start - 40):start], w.found
