"""A web page: fetched through the checked client, turned into untrusted documents.

This module knows nothing of the ledger; ``g6.fetch.capture`` writes the receipt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from g6.adapters.html.text import HTMLParseError, TreeReader, decode_text, extract_html
from g6.adapters.net.checked_client import CheckedClient, FetchPolicy, FetchResponse
from g6.adapters.outcomes import Outcome
from g6.adapters.untrusted import flag_instructions
from g6.store import BlobBackend

EXTRACT_MODES = ("text", "metadata", "links")
_TEXTUAL = ("text/plain", "text/markdown", "text/csv", "application/json", "application/xml", "text/xml")
# Reading text out of a body holds it in memory several times over: HTML through lxml and
# trafilatura peaks near 33x its size (a 2 MB page of short paragraphs: +67 MiB; 4 MB: +135 MiB).
# To keep the fetch's peak RSS under 128 MiB above baseline for any body, a larger body is kept
# and receipted but not read (``detail.not_extracted``); ``g6 blob cat`` still serves its bytes.
MAX_EXTRACT_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Document:
    """One readable document from a fetched body. Its text is untrusted data."""

    url: str
    content_type: str
    blake3: str
    title: str | None = None
    text: str | None = None
    text_source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    links: tuple[str, ...] | None = None
    unread: dict[str, int] = field(default_factory=dict)
    instruction_flags: tuple[dict[str, object], ...] = ()
    trust: str = "untrusted"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"trust": self.trust, "url": self.url, "content_type": self.content_type,
                             "blake3": self.blake3, "title": self.title}
        if self.text is not None:
            d["text"] = self.text
            d["text_source"] = self.text_source
        if self.metadata:
            d["metadata"] = self.metadata
        if self.links is not None:
            d["links"] = list(self.links)
        d["unread"] = self.unread
        d["instruction_flags"] = list(self.instruction_flags)
        return d


@dataclass(frozen=True, slots=True)
class PageRead:
    """The fetch plus what was read from it. ``outcome`` may refine the fetch's (ok -> empty)."""

    response: FetchResponse
    outcome: Outcome
    reason: str
    documents: tuple[Document, ...]
    detail: dict[str, Any] = field(default_factory=dict)


def media_type(content_type: str | None, head: bytes) -> str:
    if content_type:
        return content_type.split(";", 1)[0].strip().lower()
    sniff = head[:1024].lstrip().lower()
    if sniff.startswith((b"<!doctype html", b"<html")) or b"<body" in sniff:
        return "text/html"
    if sniff.startswith(b"%pdf-"):
        return "application/pdf"
    return "application/octet-stream"


def read_document(body: bytes, url: str, content_type: str | None, blake3: str, extract: str = "text",
                  reader: TreeReader | None = None) -> tuple[Outcome, str, tuple[Document, ...], dict[str, Any]]:
    """Turn stored bytes into documents. Returns (outcome, reason, documents, detail). ``reader`` is
    shown an HTML body's tree (``extract_html``), so it need not parse the body again."""
    mtype = media_type(content_type, body)
    if mtype in ("text/html", "application/xhtml+xml"):
        try:
            page = extract_html(body, url, content_type, full_metadata=extract == "metadata", reader=reader)
        except HTMLParseError as e:
            return Outcome.PARSE_FAILED, "html_unreadable", (), {"message": str(e)[:200]}
        if not page.text.strip():
            reason = "no_text_without_scripts" if page.had_scripts else "no_text"
            return Outcome.EMPTY, reason, (), {"unread": page.unread}
        doc = Document(
            url=url, content_type=mtype, blake3=blake3, title=page.title,
            text=page.text if extract == "text" else None,
            text_source=page.text_source if extract == "text" else None,
            metadata=page.metadata if extract in ("text", "metadata") else {},
            links=page.links if extract == "links" else None,
            unread=page.unread,
            instruction_flags=tuple(f.to_json() for f in flag_instructions(page.text)),
        )
        return Outcome.OK, "", (doc,), {}
    if mtype.startswith("text/") or mtype in _TEXTUAL or mtype.endswith(("+json", "+xml")):
        text = decode_text(body, content_type)
        if not text.strip():
            return Outcome.EMPTY, "no_text", (), {}
        doc = Document(url=url, content_type=mtype, blake3=blake3, text=text if extract == "text" else None,
                       text_source="body" if extract == "text" else None,
                       instruction_flags=tuple(f.to_json() for f in flag_instructions(text)))
        return Outcome.OK, "", (doc,), {}
    # Neither text nor HTML (a PDF, an image): kept by digest, no document. `g6 convert` reads PDFs.
    return Outcome.OK, "", (), {"kept_as": mtype}


def fetch_page(client: CheckedClient, url: str, store: BlobBackend, *, extract: str = "text",
               policy: FetchPolicy | None = None) -> PageRead:
    if extract not in EXTRACT_MODES:
        raise ValueError(f"extract must be one of {EXTRACT_MODES}")
    return read_page(client.fetch(url, store, source="web", policy=policy), store, url, extract)


def read_page(resp: FetchResponse, store: BlobBackend, url: str, extract: str = "text",
              reader: TreeReader | None = None) -> PageRead:
    """Documents from a finished fetch (split from ``fetch_page`` so a caller can skip reading
    a body it already knows, e.g. a re-check whose bytes did not change). ``reader``: as in
    ``read_document``."""
    if resp.outcome is not Outcome.OK or resp.body is None:
        return PageRead(resp, resp.outcome, resp.reason, ())
    if resp.body.size > MAX_EXTRACT_BYTES:
        return PageRead(resp, Outcome.OK, "", (), {"not_extracted": f"body over {MAX_EXTRACT_BYTES} bytes"})
    body = store.read(resp.body.blake3)
    outcome, reason, docs, detail = read_document(body, resp.final_url or url, resp.content_type,
                                                  resp.body.blake3, extract, reader)
    return PageRead(resp, outcome, reason, docs, detail)
