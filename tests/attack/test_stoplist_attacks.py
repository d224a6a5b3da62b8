"""Attacks on the justext stoplist built once per process (``g6.adapters.html.text._stoplist_once``).

trafilatura builds the stoplist lazily, inside ``extract``, only for a page that falls back to justext; g6 puts a
locked, once-only builder in the place trafilatura calls. That is a speed-up only and must change nothing else:
not which pages build it, not what a failing build does, not the words justext is given.
"""

from __future__ import annotations

import pytest
import trafilatura.external

from g6.adapters.html import text
from g6.adapters.html.text import extract_html

ARTICLE = ("<!doctype html><html><head><title>T</title></head><body><article><h1>Heading</h1>"
           + "".join(f"<p>Paragraph {i} says something long enough to be kept by the extractor as the real content "
                     f"of the article, number {i}.</p>" for i in range(8))
           + "</article></body></html>").encode()
SHELL = (b'<!doctype html><html><head><title>App</title></head><body><div id="app"></div>'
         b'<script src="/app.js"></script></body></html>')


@pytest.fixture()
def unbuilt(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not built the stoplist yet (each test's changes undone after it)."""
    monkeypatch.setattr(trafilatura.external, "JT_STOPLIST", None)


def _reference(body: bytes) -> tuple[str, str]:
    r = extract_html(body, "https://example.org/a", "text/html")
    return r.text_source, r.text


@pytest.mark.parametrize("error", [UnicodeDecodeError("utf-8", b"\xff", 0, 1, "a stoplist file"),
                                   OSError("a stoplist file is missing")])
def test_a_stoplist_that_fails_to_build_changes_no_page_that_never_needs_it(
        unbuilt: None, monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """A page with a plain article never reaches justext, so a build that raises (a damaged stoplist file, say)
    must not touch its extraction (a fetch's documents, the wall check, a re-check's texts): it is never tried."""
    expected = _reference(ARTICLE)
    calls = []

    def broken() -> tuple[str]:
        calls.append(1)
        raise error

    monkeypatch.setattr(text, "_build_stoplist", broken)
    assert _reference(ARTICLE) == expected
    assert _reference(ARTICLE) == expected
    assert calls == [], "the stoplist was built for a page that never falls back to justext"


def test_a_failed_build_leaves_the_fallback_page_as_it_was(unbuilt: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell falls back to justext: with the build failing by a ``ValueError`` (trafilatura's own failure,
    which ``main_text`` catches), its text is the page's visible text, as it was with trafilatura's builder."""
    def broken() -> tuple[str]:
        raise ValueError("a stoplist file")

    monkeypatch.setattr(text, "_build_stoplist", broken)
    r = extract_html(SHELL, "https://example.org/app", "text/html")
    assert r.text_source == "visible_text"


def test_the_stoplist_built_is_the_one_trafilatura_would_build(unbuilt: None) -> None:
    """No change to what justext is given: the same words, whoever builds them."""
    extract_html(SHELL, "https://example.org/app", "text/html")  # falls back: builds it
    ours = trafilatura.external.JT_STOPLIST
    assert ours is not None
    assert set(text._build_stoplist()) == set(ours)


def test_a_build_that_raises_leaves_the_lock_free(unbuilt: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that raises must not leave the lock held (every later fallback would wait for ever)."""
    def broken() -> tuple[str]:
        raise OSError("a stoplist file is missing")

    monkeypatch.setattr(text, "_build_stoplist", broken)
    with pytest.raises(OSError):
        extract_html(SHELL, "https://example.org/app", "text/html")
    assert text._STOPLIST_LOCK.acquire(blocking=False), "the stoplist lock was left held"
    text._STOPLIST_LOCK.release()
