"""Every sentence of the fixtures' visible text can be cited, and stays `current` when the same
words come back re-encoded, re-wrapped or with comments between them (issue 30), over the
real-world-like pages of fixtures/browser-pages; what a reader sees is Chromium's innerText."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.adapters import CheckedClient
from g6.adapters.net.checked_client import FetchPolicy, FetchResponse
from g6.adapters.outcomes import Outcome
from g6.cite.cite import cite_web
from g6.cite.manifest import Citation, Manifest
from g6.cite.page_text import read_texts
from g6.cite.recheck import judge, recheck
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from headless import Browser, chromium  # noqa: E402

from recheck.browser_pages import (  # noqa: E402
    ENCODINGS,
    LOOPBACK_ONLY,
    Page,
    chromium_evaluate,
    chromium_text,
    decoded,
    encode,
    pages,
    sentences,
    transform,
)

PAGES = pages()
Cited = dict[str, list[Citation]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EvidenceHome, CheckedClient, LocalSite]]:
    home = EvidenceHome(tmp_path_factory.mktemp("browser-pages") / "home", fsync=False)
    home.keys.init()
    routes = {p.path: Reply(body=p.body, content_type=p.content_type) for p in PAGES}
    site = LocalSite({**routes, "/robots.txt": Reply(404)}).start()
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        yield home, client, site
    site.stop()
    home.close()


@pytest.fixture(scope="module")
def receipts(served: tuple[EvidenceHome, CheckedClient, LocalSite]) -> dict[str, str]:
    home, client, site = served
    return {p.name: fetch(home, client, site.url(p.path)).receipt_id for p in PAGES}


@pytest.fixture(scope="module")
def cited(served: tuple[EvidenceHome, CheckedClient, LocalSite], receipts: dict[str, str]) -> Cited:
    """Every sentence of each page's visible text, cited (cite_web refuses what it cannot cite)."""
    home, _, site = served
    out: Cited = {}
    for p in PAGES:
        visible = read_texts(p.body, site.url(p.path), p.content_type).visible or ""
        out[p.name] = [cite_web(home, receipts[p.name], quote=s) for s in sentences(visible)]
    return out


def test_the_fixtures_have_what_they_claim(cited: Cited) -> None:
    assert len(PAGES) >= 8 and sum(map(len, cited.values())) >= 130  # sentences long enough to quote
    react = next(p for p in PAGES if p.name == "news-react.html").body
    assert react.count(b"<!-- -->") >= 10 and b"application/ld+json" in react
    assert any(b"\x93" in p.body and "iso-8859-1" in p.content_type for p in PAGES)  # a latin1 header label
    assert any(b"\x92" in p.body and b"ISO-8859-1" in p.body for p in PAGES)  # a latin1 meta label


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(page=st.sampled_from(PAGES), encoding=st.sampled_from(sorted(ENCODINGS)),
       wrap=st.none() | st.lists(st.sampled_from([" ", "\n", "  ", "\t", " \n   ", "\r\n"]), min_size=1, max_size=8),
       comments=st.none() | st.lists(st.booleans(), min_size=1, max_size=8))
def test_the_same_words_are_current(served: tuple[EvidenceHome, CheckedClient, LocalSite], cited: Cited,
                                    page: Page, encoding: str, wrap: list[str] | None,
                                    comments: list[bool] | None) -> None:
    _, _, site = served
    body, content_type = encode(transform(decoded(page), wrap=wrap, comments=comments), encoding)
    texts = read_texts(body, site.url(page.path), content_type)
    resp = FetchResponse(site.url(page.path), Outcome.OK, final_url=site.url(page.path))
    verdicts = {c.text: judge(c, resp, texts).verdict for c in cited[page.name]}
    assert set(verdicts.values()) == {"current"}, {t: v for t, v in verdicts.items() if v != "current"}


def test_a_recheck_over_http_of_every_page_changed_every_way_is_current(
        served: tuple[EvidenceHome, CheckedClient, LocalSite], cited: Cited) -> None:
    home, client, site = served
    for i, p in enumerate(PAGES):
        encoding = sorted(ENCODINGS)[i % len(ENCODINGS)]
        body, content_type = encode(transform(decoded(p), wrap=["\n", "  "], comments=[True, False, False]), encoding)
        site.routes[p.path] = Reply(body=body, content_type=content_type)
    try:
        every = tuple(c for p in PAGES for c in cited[p.name])
        report = recheck(home, client, Manifest("mfst_browser_pages", "2026-12-04T00:00:00Z", every))
    finally:
        site.routes.update({p.path: Reply(body=p.body, content_type=p.content_type) for p in PAGES})
    assert report.counts() == {"current": len(every)}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:  # conftest's, kept to loopback
    with chromium(LOOPBACK_ONLY) as b:
        yield b


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_sentence_chromium_shows_can_be_cited(served: tuple[EvidenceHome, CheckedClient, LocalSite],
                                                    receipts: dict[str, str], browser: Browser, page: Page) -> None:
    home, _, site = served
    shown = sentences(chromium_text(browser, site.url(page.path)), 3)
    assert shown
    refused = []
    for s in shown:
        try:
            cite_web(home, receipts[page.name], quote=s)
        except Exception as e:  # noqa: BLE001 - the refusal is the finding
            refused.append((s, str(e)))
    # innerText holds text laid out but drawn where no one sees it (the "sr-only" skip link: a 1x1 box, clipped);
    # g6 does not cite it (a planted sentence could hide so). Such a refusal stands only when Chromium itself
    # draws that text in a box of at most one pixel, off the page (left of or above it), clipped away, at zero
    # opacity or size
    unseen = [(s, why) for s, why in refused if _drawn_unseen(browser, site.url(page.path), s)]
    assert [r for r in refused if r not in unseen] == []
    assert len(unseen) <= 2, unseen


_UNSEEN = """(() => {
  const s = %s;
  const holders = [...document.querySelectorAll('body *')].filter(e => e.innerText && e.innerText.includes(s));
  const el = holders[holders.length - 1];
  if (!el) return false;
  const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
  // off the page: wholly left of or above it, where no reader can scroll (the page starts at 0, 0)
  const off = r.right + scrollX <= 0 || r.bottom + scrollY <= 0;
  return (r.width <= 1 && r.height <= 1) || off || cs.fontSize === '0px' || Number(cs.opacity) === 0
    || cs.clip === 'rect(0px, 0px, 0px, 0px)' || cs.clipPath === 'inset(50%%)';
})()"""


def _drawn_unseen(browser: Browser, url: str, sentence: str) -> bool:
    """Whether Chromium draws ``sentence`` in an element no reader sees (see the test above)."""
    import json

    return bool(chromium_evaluate(browser, url, _UNSEEN % json.dumps(sentence)))
