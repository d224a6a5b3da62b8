"""Cite and re-check pages as a browser reads them (issue 30): over a real loopback site."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
FILLER = "".join(f"<p>Filler paragraph number {i} says something about the city and its many streets.</p>"
                 for i in range(6))
SENTENCE = "The council approved twelve new cycle lanes on Monday after a long debate."


def _page(inner: str, head: str = "", aside: str = "") -> bytes:
    return (f"<html><head><title>Harbour Gazette</title>{head}</head><body><nav>Home · News</nav><main><article>"
            f"<h1>Cycle lanes</h1>{FILLER}{inner}{FILLER}</article><aside>{aside}</aside></main>"
            f"<footer>© 2026 Harbour Gazette</footer></body></html>").encode()


def _react(sentence: str) -> str:
    """A sentence as a server-rendered React page writes it: text nodes split by empty comments."""
    words = sentence.split(" ")
    return "<p>" + " ".join(words[:3]) + " <!-- -->" + words[3] + "<!-- --> " + " ".join(words[4:]) + "</p>"


def _recheck(home: EvidenceHome, client: CheckedClient, *cites: object) -> list[tuple[str, dict[str, object]]]:
    report = recheck(home, client, Manifest("mfst_browser", "2026-12-04T00:00:00Z", tuple(cites)))  # type: ignore[arg-type]
    return [(v.verdict, dict(v.detail)) for v in report.verdicts]


def test_a_sentence_split_by_comments_can_be_cited(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    aside_sentence = "Most read: the new harbour ferry starts its winter timetable next week."
    s = site({"/a": Reply(body=_page(_react(SENTENCE), aside=_react(aside_sentence))), "/robots.txt": Reply(404)})
    rid = fetch(home, client, s.url("/a")).receipt_id
    main = cite_web(home, rid, quote=SENTENCE)
    side = cite_web(home, rid, quote=aside_sentence)
    assert (main.text, main.text_source) == (SENTENCE, "main")
    assert (side.text, side.text_source) == (aside_sentence, "visible")


def test_a_one_word_edit_in_a_page_with_comments_is_changed_not_gone(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=_page(f"<p>{SENTENCE}</p>")), "/robots.txt": Reply(404)})
    c = cite_web(home, fetch(home, client, s.url("/a")).receipt_id, quote=SENTENCE)
    s.routes["/a"] = Reply(body=_page(_react(SENTENCE.replace("twelve", "eleven"))))
    [(verdict, detail)] = _recheck(home, client, c)
    assert verdict == "changed", detail
    s.routes["/a"] = Reply(body=_page(_react(SENTENCE)))
    assert _recheck(home, client, c)[0][0] == "current"


CURLY = "“We expected people to stay put,” said Renée Dubois – who led the study."


def test_a_page_labelled_latin1_reads_as_windows_1252(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    latin = _page(f"<p>{CURLY}</p>").decode().encode("cp1252")
    meta = _page(f"<p>{CURLY}</p>", head='<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">')
    s = site({"/h": Reply(body=latin, content_type="text/html; charset=iso-8859-1"),
              "/m": Reply(body=meta.decode().encode("cp1252"), content_type="text/html"),
              "/robots.txt": Reply(404)})
    reads = [fetch(home, client, s.url(p)) for p in ("/h", "/m")]
    assert all(CURLY in r.documents[0].text for r in reads)  # type: ignore[operator]  # what fetch shows
    cites = [cite_web(home, r.receipt_id, quote=CURLY) for r in reads]
    assert [c.text for c in cites] == [CURLY, CURLY]
    # the same page later: in UTF-8, in windows-1252 under another label, re-wrapped: the words did not change
    s.routes["/h"] = Reply(body=_page(f"<p>\n{CURLY.replace(' said', chr(10) + 'said')}</p>"),
                           content_type="text/html; charset=utf-8")
    s.routes["/m"] = Reply(body=latin + b"\n<!-- served again -->", content_type="text/html; charset=us-ascii")
    assert [v for v, _ in _recheck(home, client, *cites)] == ["current", "current"]


LD = ('<script type="application/ld+json">{"@context": "https://schema.org", "@type": "NewsArticle", '
      '"articleBody": "Cycle lanes. The mayor\\u2019s office said the full plan costs 4 million euros. '
      'It will be built over three years."}</script>')
PAYWALLED = "The mayor’s office said the full plan costs 4 million euros."


def test_a_quote_only_in_json_ld_is_refused_as_structured_data(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=_page(f"<p>{SENTENCE}</p>", head=LD)), "/robots.txt": Reply(404)})
    rid = fetch(home, client, s.url("/a")).receipt_id
    with pytest.raises(InputError) as e:
        cite_web(home, rid, quote=PAYWALLED)
    msg = str(e.value)
    assert "only in its structured data (a JSON-LD" in msg and "hidden from readers" not in msg


def test_a_cited_passage_now_only_in_json_ld_is_gone_as_structured_data(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=_page(f"<p>{PAYWALLED}</p><p>{SENTENCE}</p>")), "/robots.txt": Reply(404)})
    c = cite_web(home, fetch(home, client, s.url("/a")).receipt_id, quote=PAYWALLED)
    s.routes["/a"] = Reply(body=_page(f"<p>{SENTENCE}</p>", head=LD))  # the paywall came down
    [(verdict, detail)] = _recheck(home, client, c)
    assert verdict == "gone"
    assert detail["reason"] == "only in the page's structured data (JSON-LD), not in the text readers see"
    assert "JSON-LD" in str(detail["hidden"])


def test_a_quote_hidden_by_a_style_sheet_is_refused_even_if_also_in_json_ld(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    page = _page(f"<p>{SENTENCE}</p><p class='teaser-more'>{PAYWALLED}</p>",
                 head=LD + "<style>.teaser-more { display: none }</style>")
    s = site({"/a": Reply(body=page), "/robots.txt": Reply(404)})
    with pytest.raises(InputError) as e:
        cite_web(home, fetch(home, client, s.url("/a")).receipt_id, quote=PAYWALLED)
    assert 'hidden from readers (display:none from the <style> rule ".teaser-more")' in str(e.value)
