"""Attacks on the justext stoplist built once per process (``g6.adapters.html.text._justext_stoplist``).

The build was moved out of trafilatura (which makes it lazily, inside ``extract``, only for a page that falls
back to justext) into ``main_text``, before its ``try``: so it now runs for every page, outside the handling
of trafilatura's own failures. Building it up front is a speed-up only; it must change nothing else.
"""

from __future__ import annotations

import threading

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
    monkeypatch.setattr(text, "_STOPLIST_BUILT", threading.Event())


def _reference(body: bytes) -> tuple[str, str]:
    r = extract_html(body, "https://example.org/a", "text/html")
    return r.text_source, r.text


@pytest.mark.parametrize("error", [UnicodeDecodeError("utf-8", b"\xff", 0, 1, "a stoplist file"),
                                   OSError("a stoplist file is missing")])
def test_a_stoplist_that_fails_to_build_changes_no_page_that_never_needs_it(
        unbuilt: None, monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """Found: a page with a plain article never reaches justext, so trafilatura never built the stoplist for it;
    since the build moved in front of ``extract``, a build that raises (a damaged stoplist file, say) made every
    page's extraction raise, the article's too (a fetch's documents, the wall check, a re-check's texts),
    instead of giving its text as before."""
    expected = _reference(ARTICLE)  # the stoplist is built here as usual; the broken build comes next
    monkeypatch.setattr(trafilatura.external, "JT_STOPLIST", None)
    monkeypatch.setattr(text, "_STOPLIST_BUILT", threading.Event())
    calls = []

    def broken() -> tuple[str]:
        calls.append(1)
        raise error

    monkeypatch.setattr(trafilatura.external, "jt_stoplist_init", broken)
    assert _reference(ARTICLE) == expected
    assert _reference(ARTICLE) == expected  # and again, once the up-front build has failed
    assert len(calls) <= 1, "the failing build is tried once per process up front, not on every page"


def test_a_failed_build_leaves_the_fallback_page_as_it_was(unbuilt: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shell falls back to justext: with the build failing by a ``ValueError`` (trafilatura's own failure,
    which ``main_text`` catches), its text is the page's visible text, as it was before the build moved."""
    def broken() -> tuple[str]:
        raise ValueError("a stoplist file")

    monkeypatch.setattr(trafilatura.external, "jt_stoplist_init", broken)
    r = extract_html(SHELL, "https://example.org/app", "text/html")
    assert r.text_source == "visible_text"


def test_the_stoplist_built_up_front_is_the_one_trafilatura_would_build(unbuilt: None) -> None:
    """No change to what justext is given: the same words, whoever builds them."""
    extract_html(ARTICLE, "https://example.org/a", "text/html")
    ours = trafilatura.external.JT_STOPLIST
    assert ours is not None and text._STOPLIST_BUILT.is_set()
    trafilatura.external.JT_STOPLIST = None
    assert set(trafilatura.external.jt_stoplist_init()) == set(ours)


def test_a_build_that_raises_leaves_the_lock_free(unbuilt: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build that raises must not leave the lock held (every later extraction would wait for ever)."""
    def broken() -> tuple[str]:
        raise OSError("a stoplist file is missing")

    monkeypatch.setattr(trafilatura.external, "jt_stoplist_init", broken)
    try:
        extract_html(ARTICLE, "https://example.org/a", "text/html")
    except OSError:
        pass  # the defect the first test shows; here only the lock matters
    assert text._STOPLIST_LOCK.acquire(blocking=False), "the stoplist lock was left held"
    text._STOPLIST_LOCK.release()
