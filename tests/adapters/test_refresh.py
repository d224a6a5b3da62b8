"""``g6.adapters.html.refresh``: a page's ``<meta http-equiv=refresh>`` read as a browser reads it (red-team
finding 16)."""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from g6.adapters.html.refresh import MAX_DELAY, Refresh, meta_refresh, parse_content, sends_on

PAGE = "https://e.org/news/a.html"


@pytest.mark.parametrize(("content", "parsed"), [
    ("0; url=/", (0.0, "/")), ("0;URL='/next'", (0.0, "/next")), ('5, url="b.html"', (5.0, "b.html")),
    ("0;/x", (0.0, "/x")), (" 3 ", (3.0, None)), ("0", (0.0, None)), ("1.5; url = /y", (1.0, "/y")),
    ("0 url=/z", (0.0, "/z")), ("0;", (0.0, None)), (".5;url=/q", (0.0, "/q")),
    ("", None), ("abc", None), ("0x;url=/", None), ("-1;url=/", None)])
def test_content_is_parsed_as_the_html_standard_says(content: str, parsed: tuple[float, str | None] | None) -> None:
    assert parse_content(content) == parsed


def refresh_of(head: str, body: str = "") -> Refresh | None:
    root = lxml_html.document_fromstring(f"<html><head>{head}</head><body><p>x</p>{body}</body></html>")
    return meta_refresh(root, PAGE)


def test_the_first_refresh_a_browser_with_scripts_acts_on_counts() -> None:
    assert refresh_of('<meta http-equiv="Refresh" content="0; url=/">') == Refresh(0.0, "https://e.org/")
    assert refresh_of('<base href="https://e.org/other/"><meta http-equiv=refresh content="0;url=b">') == \
        Refresh(0.0, "https://e.org/other/b")
    # inside noscript or template a browser with scripts on never acts on it
    assert refresh_of("", '<noscript><meta http-equiv=refresh content="0;url=/nojs"></noscript>') is None
    assert refresh_of("", '<template><meta http-equiv=refresh content="0;url=/t"></template>') is None
    assert refresh_of('<meta name=refresh content="0;url=/">') is None
    assert refresh_of('<meta http-equiv=refresh content="nonsense"><meta http-equiv=refresh content="0;url=/b">') \
        == Refresh(0.0, "https://e.org/b")


def test_sends_on_is_a_quick_refresh_to_another_address() -> None:
    assert sends_on(Refresh(0.0, "https://e.org/"), PAGE)
    assert sends_on(Refresh(MAX_DELAY, "https://other.example/"), PAGE)
    assert not sends_on(Refresh(MAX_DELAY + 1, "https://e.org/"), PAGE)  # a reader reads it first
    assert not sends_on(Refresh(0.0, PAGE + "#top"), PAGE)  # the page itself, reloaded
    assert not sends_on(None, PAGE)
