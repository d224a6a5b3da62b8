"""A URL as the client put it on the wire: what a WARC, a WACZ's pages and index, and a capture's resource records
name a read by (a receipt keeps the URL as it was asked)."""

from __future__ import annotations

import httpx


def wire_url(url: str) -> str:
    """``url`` as the client put it on the wire (httpx's encoding: IDNA host, non-ASCII, spaces and
    controls percent-encoded, UTF-8), without its fragment, which is never sent. A receipt keeps the URL
    as it was asked (``/café/a b``); a WARC-Target-URI, a request line and a ``Location`` must be a URI,
    and warcio writes neither a space nor a non-ASCII character in a request line (it fails) or
    header (it percent-encodes the whole value, ``/`` and ``:`` too, into another URL)."""
    try:
        u = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return url  # nothing g6 fetched: left as the receipt says
    return str(u.copy_with(fragment=None)) if u.fragment else str(u)
