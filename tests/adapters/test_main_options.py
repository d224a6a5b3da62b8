"""The main text's trafilatura options are built once and copied per page (``g6.adapters.html.text._main_options``):
each copy must be, slot by slot, the Extractor ``trafilatura.extract`` builds from the keyword arguments g6 used to
pass (caught from trafilatura itself, so a trafilatura that builds it otherwise fails here), and the main text the
same on every HTML page of the fixtures."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import trafilatura
import trafilatura.core
import trafilatura.settings

from g6.adapters.html import text as html_text
from g6.adapters.html.text import _main_options, parse_html, strip_unseen
from tests.conftest import FIXTURES

KWARGS: dict[str, Any] = {"favor_recall": True, "include_comments": False, "include_tables": True,
                          "deduplicate": False}
URLS = [None, "", "https://news.example/a?b=1#c", "http://例え.jp/パス", "https://e.example/\ud800x", "x" * 5000]


def _slots(options: trafilatura.settings.Extractor) -> dict[str, Any]:
    return {name: getattr(options, name) for name in trafilatura.settings.Extractor.__slots__}


def _built_by_extract(url: str | None, monkeypatch: pytest.MonkeyPatch) -> trafilatura.settings.Extractor:
    """The Extractor ``trafilatura.extract(..., url=url, **KWARGS)`` hands to its extraction."""
    seen: list[Any] = []

    def catch(_content: Any, options: Any, **_: Any) -> None:
        seen.append(options)
        return None

    with monkeypatch.context() as m:
        m.setattr(trafilatura.core, "bare_extraction", catch)
        trafilatura.extract("<html><body><p>x</p></body></html>", url=url, **KWARGS)
    (options,) = seen
    return options


@pytest.mark.parametrize("url", URLS, ids=range(len(URLS)))
def test_each_pages_options_are_those_extract_builds(url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _slots(_main_options(url)) == _slots(_built_by_extract(url, monkeypatch))


def _pages() -> list[Path]:
    return sorted([*(FIXTURES / "interstitial").glob("*.html"), *(FIXTURES / "consent").glob("*.html"),
                   *(FIXTURES / "browser-pages" / "pages").glob("*.html"),
                   *(FIXTURES / "recheck-corpus" / "pages").glob("*.html"), *(FIXTURES / "render").glob("*/*.html")])


def test_the_main_text_is_the_same_on_every_fixture_page() -> None:
    pages = _pages()
    assert len(pages) >= 60
    before = _slots(html_text._MAIN_OPTIONS)
    found = 0
    for path in pages:
        root = parse_html(path.read_bytes(), "text/html")
        strip_unseen(root)
        html_text._noscript_as_text(root)
        url = f"https://site.example/{path.name}"
        old = trafilatura.extract(copy.deepcopy(root), url=url, **KWARGS)
        new = trafilatura.extract(copy.deepcopy(root), options=_main_options(url))
        assert new == old, path
        found += bool(old)
    assert found >= 40  # most pages have a main text: the comparison compared texts, not Nones
    assert _slots(html_text._MAIN_OPTIONS) == before  # the shared options are never changed by an extraction
