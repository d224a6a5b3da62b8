"""A page's ``<meta http-equiv="refresh">``: the declarative refresh that sends a reader on to another address.

A browser reads ``content`` as the HTML standard's shared declarative refresh steps say (``0; url=/``,
``5,URL='/next'``, ``0;/next``, ``3`` alone reloads the page) and, once the delay is over, navigates. A page that
sends its reader on at once is not what a reader reads: its body is a stop on the way (the redirect of sites
that cannot send a 3xx, a soft 404's way to the home page), like a 3xx's body. ``sends_on`` says when a page
does: a refresh within ``MAX_DELAY`` seconds to an address other than the page's own. A ``<meta>`` inside
``<noscript>`` or ``<template>`` is not acted on by a browser with scripts on (the reader g6 cites for), and the
first refresh in the document is the one that counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin

from lxml import html as lxml_html

MAX_DELAY = 5.0  # seconds: a page that moves its reader on within this is a stop on the way, not the page
_WS = " \t\n\r\f"
_NOT_ACTED_ON = ("noscript", "template")


@dataclass(frozen=True, slots=True)
class Refresh:
    delay: float
    url: str  # absolute: where the reader is sent

    def words(self) -> str:
        """``a refresh to https://e.org/ after 0 s``: for messages."""
        return f"a refresh to {self.url[:300]} after {self.delay:g} s"


def parse_content(content: str) -> tuple[float, str | None] | None:
    """(delay in seconds, URL as written or None for the page itself) of a refresh ``content``; None when a
    browser ignores it."""
    s, i = content, 0
    while i < len(s) and s[i] in _WS:
        i += 1
    start = i
    while i < len(s) and s[i].isascii() and s[i].isdigit():
        i += 1
    if i == start and not (i < len(s) and s[i] == "."):
        return None
    delay = float(s[start:i] or "0")
    while i < len(s) and (s[i] == "." or (s[i].isascii() and s[i].isdigit())):
        i += 1
    if i == len(s):
        return delay, None
    if s[i] not in ";," + _WS:
        return None
    while i < len(s) and s[i] in _WS:
        i += 1
    if i < len(s) and s[i] in ";,":
        i += 1
    while i < len(s) and s[i] in _WS:
        i += 1
    if i == len(s):
        return delay, None
    rest = s[i:]
    if rest[:3].lower() == "url":
        j = 3
        while j < len(rest) and rest[j] in _WS:
            j += 1
        if j < len(rest) and rest[j] == "=":
            j += 1
            while j < len(rest) and rest[j] in _WS:
                j += 1
            rest = rest[j:]
    if rest[:1] in ("'", '"'):
        quote, rest = rest[0], rest[1:]
        rest = rest.split(quote, 1)[0]
    return delay, rest.strip(_WS)


def meta_refresh(root: lxml_html.HtmlElement, page_url: str) -> Refresh | None:
    """The refresh of the first ``<meta http-equiv=refresh>`` a browser with scripts on acts on, its URL made
    absolute against ``page_url`` (and the document's ``<base>``); None when there is none."""
    base_el = root.find(".//base[@href]")
    try:
        base = urljoin(page_url, (base_el.get("href") or "").strip()) if base_el is not None else page_url
    except ValueError:
        base = page_url
    for meta in root.iter("meta"):
        if (meta.get("http-equiv") or "").strip().lower() != "refresh":
            continue
        if any(isinstance(a.tag, str) and a.tag.lower() in _NOT_ACTED_ON for a in meta.iterancestors()):
            continue
        parsed = parse_content(meta.get("content") or "")
        if parsed is None:
            continue
        delay, url = parsed
        try:
            target = urljoin(base, url) if url else page_url
        except ValueError:
            continue
        return Refresh(delay, target)
    return None


def sends_on(refresh: Refresh | None, page_url: str) -> bool:
    """Whether ``refresh`` moves a reader of ``page_url`` on to another address within ``MAX_DELAY``."""
    if refresh is None or refresh.delay > MAX_DELAY:
        return False
    return urldefrag(refresh.url)[0] != urldefrag(page_url)[0]
