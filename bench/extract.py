"""HTML to text: our extraction (hidden text dropped and counted, links, metadata) vs trafilatura alone; and a
fetch's reading of a page with a cookie banner, its text and wall check from one parse, vs the two parses
(``extract_html``, then ``detect``) it took before issue 36; and a page text normalised for finding quotes in it
(``g6.cite.passages.normalised``, a stretch at a time) vs the whole-text way it took before 2026-12-07 (NFKC
pieces of the whole text, character by character; still the fallback)."""

from __future__ import annotations

import time

import trafilatura

from bench.report import line, line_by_rounds
from bench.sites import BANNER, STYLE, TCF_STUB
from g6.adapters.html.interstitial import WallCheck, detect
from g6.adapters.html.text import extract_html
from g6.cite.passages import _whole_normalised, normalised

PARA = ("<p>Receipts keep the address, the time and the bytes of every read; a citation names a passage by the "
        "hash of its normalised text, and a re-check compares it with what the page says now. {i}</p>")


def page(i: int, paras: int = 40) -> bytes:
    body = "".join(PARA.format(i=f"{i}-{j}") for j in range(paras))
    return (f"<!doctype html><html lang='en'><head><title>Page {i}</title><meta name='description' content='d{i}'>"
            f"<style>p{{color:red}}</style><script>var x={i};</script></head><body><nav><a href='/'>Home</a>"
            f"<a href='/a{i}'>Next</a></nav><article><h1>Heading {i}</h1>{body}"
            f"<div style='display:none'>hidden {i}</div></article><footer>Footer {i}</footer></body></html>").encode()


def banner_page(i: int) -> bytes:
    """``page(i)`` as news pages come (``bench.sites``): a consent manager's stub and banner, and style rules
    that hide things (menus, dialogs), which the reading applies."""
    return page(i).replace(b"</head>", f"{STYLE}{TCF_STUB}</head>".encode()).replace(
        b"</body>", BANNER.encode() + b"</body>")


def _reading(pages: list[bytes], one_parse: bool) -> float:
    """CPU seconds to read the text of ``pages`` and check each for a wall, as a fetch does."""
    url, ctype = "https://example.org/a", "text/html; charset=utf-8"
    c = time.process_time()
    for p in pages:
        if one_parse:
            check = WallCheck(status=200, final_url=url, content_type=ctype)
            extract_html(p, url, ctype, reader=check)
            wall = check.verdict(p)
        else:
            extract_html(p, url, ctype)
            wall = detect(p, status=200, final_url=url, content_type=ctype)
        assert wall is None  # a banner beside the article is not a wall: a fast wrong answer fails the run
    return time.process_time() - c


def run(quick: bool = False) -> None:
    pages = [page(i) for i in range(20 if quick else 200)]
    for p in pages[:3]:  # warm caches of both
        trafilatura.extract(p)
        extract_html(p, "https://example.org/")
    t = time.perf_counter()
    for p in pages:
        trafilatura.extract(p, url="https://example.org/", favor_recall=True, include_comments=False)
    ref = time.perf_counter() - t
    t = time.perf_counter()
    for p in pages:
        extract_html(p, "https://example.org/", "text/html; charset=utf-8")
    ours = time.perf_counter() - t
    line(f"HTML to text, {len(pages)} pages of {len(pages[0]) // 1024} KiB", len(pages) / ours, len(pages) / ref,
         "pages/s")
    print(f"{'':<44} ours takes {ours / ref:.2f}x trafilatura.extract alone")
    banner = [banner_page(i) for i in range(20 if quick else 200)]
    ours: list[float] = []
    ref: list[float] = []
    for r in range(1 if quick else 3):  # interleaved, the order alternating; CPU time, not wall time
        for one in ((True, False) if r % 2 == 0 else (False, True)):
            (ours if one else ref).append(_reading(banner, one))
    line_by_rounds(f"text + wall check, {len(banner)} banner pages", len(banner), ours, ref, "pages/CPU s",
                   "the reference: extract_html, then detect (two parses)")
    _normalising(pages)


def _normalising(pages: list[bytes]) -> None:
    """A page's visible text normalised with its offset map, as every quote looked for in it needs (cite, recheck,
    report check), with typographic apostrophes and quotes as most pages write them: a text past ASCII, which took
    the whole-text way before (an ASCII text had a way of its own, now the same as the stretches here)."""
    texts = [extract_html(p, "https://example.org/", "text/html; charset=utf-8").visible for p in pages]
    typographic = [t.replace("'", "\u2019").replace("; a", "; \u201ca").replace(", and", "\u201d, and")
                   for t in texts]
    ours: list[float] = []
    ref: list[float] = []
    for r in range(3):  # interleaved, the order alternating; CPU time
        for by_words in ((True, False) if r % 2 == 0 else (False, True)):
            fn = normalised.__wrapped__ if by_words else _whole_normalised
            c = time.process_time()
            for t in typographic:
                fn(t)
            (ours if by_words else ref).append(time.process_time() - c)
    size = sum(map(len, typographic)) // len(typographic) // 1024
    line_by_rounds(f"page text normalised, {len(typographic)} texts of {size} KiB, typographic quotes",
                   len(typographic), ours, ref, "texts/CPU s",
                   "the reference: the whole-text way (NFKC pieces, character by character)")
