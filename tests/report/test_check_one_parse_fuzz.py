"""``_ReadWithTexts`` against ``page_outcome`` on generated HTML, no server: the same outcome, reason, detail and wall
(``interstitial_of``) for every body, and texts equal to ``read_texts`` without the wall check's reader (what
``body_texts`` reads). The two minimised pages are where the cited texts' words were once taken for
``page_outcome``'s (a CSS-undecided ``<body>`` dropped, so the head's second ``<title>`` read as visible; trafilatura
finding a character in the cited tree and none in ``page_outcome``'s)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from g6.adapters.outcomes import Outcome
from g6.cite.page_text import read_texts
from g6.fetch.capture import interstitial_of, page_outcome, wall_check
from g6.report.fetching import _ReadWithTexts

URL = "https://example.org/p"


@dataclass
class _Body:
    blake3: str
    size: int


@dataclass
class _Resp:
    body: _Body
    content_type: str | None
    final_url: str | None = URL
    status: int = 200
    outcome: Outcome = Outcome.OK
    reason: str = ""


class _Store:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self, digest: Any) -> bytes:
        return self.body


def _both(body: bytes, ct: str | None) -> tuple[Any, Any, _ReadWithTexts]:
    out = []
    reading = _ReadWithTexts()
    for read in (page_outcome, reading):
        resp = _Resp(_Body("b", len(body)), ct)
        seen = wall_check(resp)
        try:
            page = read(resp, _Store(body), URL, "text", seen)  # type: ignore[operator]
        except Exception as e:  # both must fail alike
            out.append(type(e).__name__)
            continue
        out.append((page.outcome, page.reason, page.detail, interstitial_of(resp, _Store(body), page.outcome, seen)))
    return out[0], out[1], reading


def _same(body: bytes, ct: str | None = "text/html; charset=utf-8") -> None:
    want, got, reading = _both(body, ct)
    assert got == want, body
    if reading.texts is not None:
        assert reading.texts == read_texts(body, URL, ct), body


UNDECIDED_BODY = (b"<html><head><title>A</title><title>Second title words</title><style>@container (max-width: 30em)"
                  b" { body { display: none } }</style></head><body> </body></html>")
TRAFILATURA_ONLY = b"<title></title><noscript>&#8203;</head><select>\x0b<p class=c>"


@pytest.mark.parametrize("body", [UNDECIDED_BODY, TRAFILATURA_ONLY], ids=["undecided-body", "trafilatura-only"])
def test_words_only_the_cited_reading_finds_do_not_make_a_page_ok(body: bytes) -> None:
    want, got, _ = _both(body, "text/html")
    assert want[:2] == (Outcome.EMPTY, "no_text")
    assert got == want


def test_a_failing_cited_reading_leaves_the_outcome_to_page_outcome() -> None:
    _same(b"<style>@container (max-width: 30em) { * { display: none } }</style><noscript>", "text/html")


def test_the_cited_reading_of_an_undecided_noscript() -> None:
    """A noscript the CSS may hide is doomed twice (fallback content, CSS-undecided): dropped once (it raised)."""
    read_texts(b"<style>@container (max-width: 30em) { * { display: none } }</style><noscript>", URL, "text/html")


_WORDS = ["Words here", "", " ", "&nbsp;", "&#8203;", "&#xFEFF;", "\u200b", "\t\n", "x", "<!-- c -->",
          "<![CDATA[cd]]>", "\x0b", "\x1f", "\x01"]
_STYLES = ["@container (max-width: 30em) { %s { display: none } }", "%s { display: none }",
           "%s { visibility: hidden }", "@media print { %s { display:none } }", "%s:has(p) { display: none }",
           "[data-x] { display:none }", "%s { display: var(--u) }", "@supports (display: grid) { %s { display:none } }"]
_SELECTORS = ["body", "p", "div", "details", "noscript", ".c", "span", "head", "*", "summary", "title"]
_TAGS = ["noscript", "details", "details open", "summary", "p", "div hidden", "div aria-hidden=true",
         "div style='display:none'", "span style='visibility:hidden'", "template", "svg", "title", "math", "dialog",
         "dialog open", "select", "option", "textarea", "iframe", "object", "canvas", "ruby", "rp", "rt", "p class=c",
         "div data-x", "br", "wbr", "annotation", "desc", "noembed", "noframes", "datalist", "section", "style"]
_HEADS = ["<title>T</title>", "<title>Second words</title>", '<meta http-equiv="refresh" content="0; url=/x">',
          "<meta charset=utf-8>", "<script>var a</script>", "<object>obj words</object>", ""]


def _style(rnd: random.Random) -> str:
    return rnd.choice(_STYLES).replace("%s", rnd.choice(_SELECTORS))


def _fragment(rnd: random.Random, depth: int = 0) -> str:
    if depth > 3 or rnd.random() < 0.25:
        return rnd.choice(_WORDS)
    tag = rnd.choice(_TAGS)
    name = tag.split()[0]
    inner = _style(rnd) if name == "style" else "".join(_fragment(rnd, depth + 1) for _ in range(rnd.randint(0, 3)))
    if name in ("br", "wbr"):
        return f"<{tag}>{inner}"
    return f"<{tag}>{inner}" + ("" if rnd.random() < 0.1 else f"</{name}>")


def _page(rnd: random.Random) -> bytes:
    head = "".join(rnd.choice([*_HEADS, f"<noscript>{_fragment(rnd, 2)}</noscript>", f"<style>{_style(rnd)}</style>"])
                   for _ in range(rnd.randint(0, 4)))
    body = "".join(_fragment(rnd) for _ in range(rnd.randint(0, 4)))
    pre = rnd.choice(["", "\ufeff", "<!doctype html>", '<?xml version="1.0"?>'])
    post = rnd.choice(["", "tail words", "</html>after", "<frameset><frame src=a></frameset>"])
    if rnd.random() < 0.1:
        return (pre + head + body + post).encode()
    attrs = rnd.choice(["", " hidden", " class=c", " style='display:none'", " aria-hidden=true"])
    return f"{pre}<html><head>{head}</head><body{attrs}>{body}</body>{post}</html>".encode()


@pytest.mark.parametrize("seed", range(4))
def test_generated_pages_read_as_page_outcome_reads_them(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(60):
        _same(_page(rnd), rnd.choice(["text/html; charset=utf-8", "application/xhtml+xml", None,
                                      "text/html; charset=windows-1252"]))


def test_the_minimised_pages_over_a_socket_get_page_outcomes_receipts(home: Any, client: Any, site: Any) -> None:
    from g6.demo.site import Reply
    from g6.fetch.capture import prepare_fetch

    bodies = {"/u": UNDECIDED_BODY, "/t": TRAFILATURA_ONLY,
              "/n": b"<style>@container (max-width: 30em) { * { display: none } }</style><noscript>"}
    s = site({**{k: Reply(body=b, content_type="text/html") for k, b in bodies.items()}, "/robots.txt": Reply(404)})

    def seen(reading: Any) -> list[Any]:
        out = []
        for path in bodies:
            r = prepare_fetch(home.store, client, s.url(path), documents=False, reading=reading).receipt
            detail = {k: v for k, v in r.detail.items() if not k.endswith("_ms")}
            out.append((r.outcome, detail, r.interstitial, r.content))
        return out

    assert seen(_ReadWithTexts()) == seen(None)
