"""What a rendered capture adds to a web archive, beside its sub-resources' responses.

A capture receipt (``g6 fetch --render``) binds the page's sub-resources (each a receipt of its own, exported
as the server's responses like any read) and three things no server sent: the full-page screenshot, the DOM
after the scripts ran and the text a reader saw. A WARC has a record type for exactly that, ``resource`` ("a
resource, without full protocol response information"); each is written as one, with a ``urn:`` URI so that a
replay tool indexes it apart from the page and never serves it as the page's answer:

- the screenshot: ``urn:fullPage:<page URL>``, ``image/png``;
- the reader's text: ``urn:textFinal:<page URL>``, ``text/plain; charset=utf-8``;
- the DOM: ``urn:dom:<page URL>``, ``text/html; charset=utf-8``.

The first two are the names browsertrix-crawler gives its full-page screenshot and its final page text
(Webrecorder's tools look a page's screenshot and text up by them); the DOM has no name in the field and is
given the same form. Each record's ``WARC-Payload-Digest`` is the sha256 the signed capture receipt names, and
its ``WARC-Concurrent-To`` is that receipt's ``metadata`` record (``urn:g6:receipt:<id>``), which says which
capture it belongs to. The page URL is the one the capture ended on (its ``final_url``), else the one asked.

A sub-resource (a receipt whose ``links.capture`` names a capture) is part of its capture, not a page of its
own: :func:`is_part` keeps it out of a WACZ's ``pages.jsonl``, where the capture itself is listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from g6.export.wire import wire_url
from g6.ledger.receipts import Receipt

# (what, the URI's scheme word, Content-Type), in the order written
KINDS = (("screenshot", "fullPage", "image/png"), ("text", "textFinal", "text/plain; charset=utf-8"),
         ("dom", "dom", "text/html; charset=utf-8"))


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    """One resource record of a rendered capture: its target URI, Content-Type and the blob it carries."""

    what: str  # screenshot, text or dom
    uri: str
    content_type: str
    ref: Mapping[str, Any]  # the blob reference the signed receipt names (blake3, sha256, size)


def page_url(r: Receipt) -> str:
    """The URL a capture's resource records are named after: where it ended, else what was asked, in the form
    the browser sent it (``wire_url``), as the WACZ's page and the page's response record name it."""
    return wire_url(str(r.final_url or r.request.get("url") or ""))


def capture_records(r: Receipt) -> Iterator[CaptureRecord]:
    """The resource records of capture receipt ``r`` (none for any other receipt, or for a capture that kept
    none, as a failed navigation keeps no DOM, text or screenshot)."""
    cap = r.capture
    if not isinstance(cap, Mapping):
        return
    url = page_url(r)
    for what, word, ctype in KINDS:
        ref = cap.get(what)
        if isinstance(ref, Mapping):
            yield CaptureRecord(what, f"urn:{word}:{url}", ctype, ref)


def capture_of(r: Receipt) -> str | None:
    """The capture ``r`` is a sub-resource of (its ``links.capture``), or None."""
    cid = r.links.get("capture") if isinstance(r.links, Mapping) else None
    return cid if isinstance(cid, str) else None


def is_part(r: Receipt) -> bool:
    """Whether ``r`` is one request of a rendered capture (listed under its capture, not as a page)."""
    return capture_of(r) is not None


def with_parts(chosen: Iterable[Receipt], every: Iterable[Receipt]) -> list[Receipt]:
    """``every`` (in its order) cut to the receipts in ``chosen`` and the sub-resources of the captures among
    them: a capture exported without its sub-resources would not replay."""
    ids = {r.receipt_id for r in chosen}
    return [r for r in every if r.receipt_id in ids or capture_of(r) in ids]
