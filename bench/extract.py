"""HTML to text: our extraction (hidden text dropped and counted, links, metadata) vs trafilatura alone."""

from __future__ import annotations

import time

import trafilatura

from bench.report import line
from g6.adapters.html_text import extract_html

PARA = ("<p>Receipts keep the address, the time and the bytes of every read; a citation names a passage by the "
        "hash of its normalised text, and a re-check compares it with what the page says now. {i}</p>")


def page(i: int, paras: int = 40) -> bytes:
    body = "".join(PARA.format(i=f"{i}-{j}") for j in range(paras))
    return (f"<!doctype html><html lang='en'><head><title>Page {i}</title><meta name='description' content='d{i}'>"
            f"<style>p{{color:red}}</style><script>var x={i};</script></head><body><nav><a href='/'>Home</a>"
            f"<a href='/a{i}'>Next</a></nav><article><h1>Heading {i}</h1>{body}"
            f"<div style='display:none'>hidden {i}</div></article><footer>Footer {i}</footer></body></html>").encode()


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
