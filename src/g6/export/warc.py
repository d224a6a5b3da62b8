"""WARC export (ISO 28500, WARC/1.1) of what the ledger says was read, written with warcio, laid
out so that a replay tool (pywb, ReplayWeb.page) shows each page as it was read.

Per receipt of a read (``fetch``, ``search``, ``recheck``):

- each redirect hop before the final answer: a ``response`` record of its own (the hop's status
  line, ``Location`` the next hop, empty body) and its ``request``, so the old address replays as
  a redirect;
- the final answer with a stored body: a ``response`` record (status line and Content-Type as the
  receipt recorded them, the stored body as payload, ``WARC-Payload-Digest: sha256:<hex>``,
  ``WARC-IP-Address``, ``WARC-Truncated: length`` where the read was cut) and its ``request``
  (the GET g6 sent: its stated User-Agent, never anything secret). When a body with the same
  sha256 was already written, for any URL, a ``revisit`` record (identical-payload-digest
  profile) keeps the HTTP status line and headers and refers to that first response;
- a ``metadata`` record carrying the signed receipt as JSON, with a URI of its own,
  ``urn:g6:receipt:<receipt id>``, and ``WARC-Concurrent-To`` the response (or revisit): the
  page's own URL always replays the page, never its receipt.

- for each hop over TLS, the certificates the server presented on that hop's connection (the leaf, and
  the chains where the receipt names them): a ``resource`` record each, once per WARC (the first
  response that presented it is its ``WARC-Concurrent-To``), of ``Content-Type: application/pkix-cert``
  (RFC 2585: one DER certificate), URI ``urn:g6:certificate:sha256:<hex>`` (the certificate's SHA-256
  fingerprint). WARC has no record type for TLS; a resource record is "a resource, without full
  protocol response information", which a certificate read off a TLS connection is. Replay tools index
  it under its ``urn:`` URI and never serve it as a page; the receipt's metadata record names each
  certificate by the same digest, beside the protocol, cipher and address.

A rendered capture (``g6 fetch --render``): each of its requests has a receipt of its own, exported as above
(a redirect the browser was answered with is a ``response`` whose ``Location`` is the one the server sent), and
the capture receipt's ``metadata`` record is followed by a ``resource`` record each for its screenshot, its
reader's text and its DOM (:mod:`g6.export.capture_records`): what the browser made is never written as a
server's response. The capture, not its sub-resources, is the page a WACZ lists.

A body a redaction entry took out of the home (``g6.ledger.redactions``) is never written: in place of its
response (or conversion) stands a ``resource`` record, ``urn:g6:redacted:<receipt id>``, whose JSON says why
(for each blob of the read that is redacted, its digests, which the log still proves, and the entry's seq,
receipt id, reason and note); the receipt's metadata record is ``WARC-Concurrent-To`` it, and the redaction
entry has its own metadata record like any receipt. A replay tool finds no page at the URL (no response, no
redirect hop leading to it): the page's own URL never replays the redaction either. A rendered capture gets that
record when its DOM, text or screenshot is redacted, and none of those three resource records is written for
a redacted blob (the capture is then no page of a WACZ); each of its sub-resources is a read of its own, left
out when its body is redacted. The certificates a redacted read's server presented are still written
(concurrent to the resource record): a redaction takes out what was read, never what the server presented
(``g6.ledger.takedown``).

A ``convert`` receipt becomes a ``conversion`` record (the extracted text) whose ``WARC-Refers-To``
is the response that carried the source PDF (target URI: that response's URL; ``urn:g6:blob:<blake3>``
when the PDF's response is not in this export). Receipts without a body (refused, denied,
unreachable…) get a metadata record only. The stored body is the decoded entity (after
Content-Encoding), so the response headers carry no Content-Encoding.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import httpx
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from g6 import TOOL_NAME, __version__
from g6.adapters.net.checked_client import USER_AGENT
from g6.export.capture_records import capture_records, is_part
from g6.export.wire import wire_url
from g6.home import EvidenceHome
from g6.ledger.receipts import CAPTURE_BLOBS, Hop, Receipt, named_blobs

REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
EMPTY_SHA256 = "sha256:" + hashlib.sha256(b"").hexdigest()
PAGE_BLOBS = ("content", *(f"capture.{name}" for name in CAPTURE_BLOBS))  # what a read kept of the page
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content", 301: "Moved Permanently",
            302: "Found", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 410: "Gone", 429: "Too Many Requests", 451: "Unavailable For Legal Reasons",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass(frozen=True, slots=True)
class Page:
    receipt_id: str
    url: str  # the address asked for (a redirect's first hop replays as that redirect)
    final_url: str
    date: str
    status: int
    kind: str


@dataclass(frozen=True, slots=True)
class WarcSummary:
    path: str
    receipts: int
    responses: int  # every response record, redirect hops included
    revisits: int
    requests: int
    metadata: int
    redirects: int = 0  # response records of redirect hops
    conversions: int = 0
    redacted: int = 0  # resource records standing for a body a redaction entry took out
    certificates: int = 0  # resource records of the certificates servers presented over TLS
    captures: int = 0  # rendered captures, each with resource records for its screenshot, text and DOM
    pages: tuple[Page, ...] = ()  # every read whose answer was archived (response or revisit), in order

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "receipts": self.receipts, "responses": self.responses,
                "revisits": self.revisits, "requests": self.requests, "metadata": self.metadata,
                "redirects": self.redirects, "conversions": self.conversions, "redacted": self.redacted,
                "certificates": self.certificates, "captures": self.captures}


@dataclass(frozen=True, slots=True)
class _Written:
    record_id: str
    url: str
    date: str


def _warc_date(iso: str) -> str:
    # receipts carry microseconds; WARC/1.1 allows fractional seconds in W3C-ISO8601
    return iso if iso.endswith("Z") else iso + "Z"


def receipt_uri(receipt_id: str) -> str:
    return f"urn:g6:receipt:{receipt_id}"


def _status_line(status: int) -> str:
    return f"{status} {_REASONS.get(status, 'Status')}"


class _Exporter:
    def __init__(self, home: EvidenceHome, writer: WARCWriter) -> None:
        self.home = home
        self.w = writer
        self.counts = {"responses": 0, "revisits": 0, "requests": 0, "metadata": 0, "receipts": 0,
                       "redirects": 0, "conversions": 0, "redacted": 0, "certificates": 0, "captures": 0}
        self.redactions = home.redactions()  # what is never written, whatever the store still holds
        self.certificates: set[str] = set()  # sha256 of each certificate written
        self.by_sha: dict[str, _Written] = {}  # sha256 of a non-empty body -> its first response
        self.by_blake3: dict[str, _Written] = {}  # blake3 of a body -> the response that carried it
        self.pages: list[Page] = []

    def _write(self, rec: object, kind: str) -> str:
        self.w.write_record(rec)
        self.counts[kind] += 1
        return str(rec.rec_headers.get_header("WARC-Record-ID"))  # type: ignore[attr-defined]

    def request(self, url: str, date: str, concurrent: str) -> None:
        parts = httpx.URL(url)  # already the wire's form (wire_url): its path and Host are what was sent
        path = parts.raw_path.decode("ascii") or "/"
        http = StatusAndHeaders(f"GET {path} HTTP/1.1", [("Host", parts.netloc.decode("ascii")),
                                                          ("User-Agent", USER_AGENT)],
                                protocol="HTTP/1.1", is_http_request=True)
        rec = self.w.create_warc_record(url, "request", payload=BytesIO(b""), length=0, http_headers=http,
                                        warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent})
        self._write(rec, "requests")

    def redirects(self, r: Receipt, date: str) -> None:
        for hop, nxt in zip(r.hops, r.hops[1:], strict=False):
            if hop.status is None or not 300 <= hop.status < 400:
                continue
            http = StatusAndHeaders(_status_line(hop.status), [("Location", wire_url(nxt.url)),
                                                               ("Content-Length", "0")], protocol="HTTP/1.1")
            extra = {"WARC-Date": date, "WARC-Payload-Digest": EMPTY_SHA256}
            if hop.connected_address:
                extra["WARC-IP-Address"] = hop.connected_address
            url = wire_url(hop.url)
            rec = self.w.create_warc_record(url, "response", payload=BytesIO(b""), length=0, http_headers=http,
                                            warc_headers_dict=extra)
            rid = self._write(rec, "responses")
            self.counts["redirects"] += 1
            self.request(url, date, rid)
            self.presented(hop, date, rid)

    def answer(self, r: Receipt, url: str, date: str) -> str:
        """The final response (or a revisit of an identical body written before); its record id."""
        assert r.content is not None and r.http_status is not None
        sha, b3, size = str(r.content["sha256"]), str(r.content["blake3"]), int(r.content["size"])
        status = int(r.http_status)
        headers = [("Content-Length", str(size))]
        location = r.detail.get("location")
        if 300 <= status < 400 and isinstance(location, str) and r.detail.get("reason") == "redirect":
            # a redirect answered as itself (a rendered page's request)
            headers.append(("Location", wire_url(location)))
        if r.detail.get("content_type"):
            headers.insert(0, ("Content-Type", str(r.detail["content_type"])))
        http = StatusAndHeaders(_status_line(status), headers, protocol="HTTP/1.1")
        first = self.by_sha.get(sha) if size else None
        if first is not None:
            rec = self.w.create_revisit_record(url, sha, first.url, first.date, http_headers=http,
                                               warc_headers_dict={"WARC-Date": date, "WARC-Refers-To": first.record_id})
            rid = self._write(rec, "revisits")
        else:
            body = self.home.store.read_as(r.content)
            extra = {"WARC-Date": date, "WARC-Payload-Digest": sha}
            if r.truncated:
                extra["WARC-Truncated"] = "length"
            if r.hops and r.hops[-1].connected_address:
                extra["WARC-IP-Address"] = r.hops[-1].connected_address
            rec = self.w.create_warc_record(url, "response", payload=BytesIO(body), length=len(body),
                                            http_headers=http, warc_headers_dict=extra)
            rid = self._write(rec, "responses")
            if size:
                self.by_sha[sha] = _Written(rid, url, date)
        self.by_blake3.setdefault(b3, _Written(rid, url, date))
        self.request(url, date, rid)
        if r.hops:
            self.presented(r.hops[-1], date, rid)
        return rid

    def presented(self, hop: Hop, date: str, concurrent: str) -> None:
        """What the server presented on ``hop``'s TLS connection: a ``resource`` record per certificate
        not yet in this WARC, concurrent to the hop's response. A certificate the receipt names that the
        store cannot give back stops the export, as a missing body does."""
        for _, ref in named_blobs({"hops": [hop.to_json()]}):
            der = self.home.store.read_as(ref)  # BlobCorrupt for a malformed reference or other bytes
            sha = str(ref["sha256"])
            if sha in self.certificates:
                continue
            rec = self.w.create_warc_record(f"urn:g6:certificate:{sha}", "resource", payload=BytesIO(der),
                                            length=len(der), warc_content_type="application/pkix-cert",
                                            warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent,
                                                               "WARC-Payload-Digest": sha})
            self._write(rec, "certificates")
            self.certificates.add(sha)

    def conversion(self, r: Receipt, date: str) -> str | None:
        if not r.content:
            return None
        src = r.links.get("from") if isinstance(r.links.get("from"), dict) else {}
        src_b3 = str(src.get("blake3") or r.request.get("digest") or "")
        origin = self.by_blake3.get(src_b3)
        body = self.home.store.read_as(r.content)
        extra = {"WARC-Date": date, "WARC-Payload-Digest": str(r.content["sha256"])}
        if origin is not None:
            extra["WARC-Refers-To"] = origin.record_id
        target = origin.url if origin is not None else f"urn:g6:blob:{src_b3 or 'unknown'}"
        ctype = str(r.detail.get("content_type") or "text/plain; charset=utf-8")
        rec = self.w.create_warc_record(target, "conversion", payload=BytesIO(body), length=len(body),
                                        warc_content_type=ctype, warc_headers_dict=extra)
        return self._write(rec, "conversions")

    def redacted(self, r: Receipt, url: str, date: str) -> str | None:
        """The resource record saying why ``r``'s bytes are left out (its record id), or None when none of what
        it read is redacted: its body, a capture's DOM, text or screenshot (never a certificate: see
        ``g6.ledger.takedown``)."""
        gone = [(what, ref, red) for what, ref in named_blobs(r.to_json(with_signature=False))
                if what in PAGE_BLOBS and isinstance(ref, dict) and (red := self.redactions.of_content(ref))]
        if not gone:
            return None
        first = gone[0][2]
        why = {"redacted": True, "receipt_id": r.receipt_id, "url": url or None,
               "content": dict(r.content) if isinstance(r.content, dict) else None,
               "redaction": first.to_json(),
               "blobs": [{"what": what, **{k: ref.get(k) for k in ("blake3", "sha256", "size")},
                          "redaction": red.to_json()} for what, ref, red in gone],
               "said": f"the {'body' if gone[0][0] == 'content' else gone[0][0]} was {first.said()}: left out of "
                       "this export; the log still proves it was read"}
        payload = json.dumps(why, ensure_ascii=False, sort_keys=True).encode()
        rec = self.w.create_warc_record(f"urn:g6:redacted:{r.receipt_id}", "resource", payload=BytesIO(payload),
                                        length=len(payload), warc_content_type="application/json",
                                        warc_headers_dict={"WARC-Date": date})
        return self._write(rec, "redacted")

    def receipt(self, r: Receipt) -> None:
        self.counts["receipts"] += 1
        date = _warc_date(r.fetched_at)
        url = wire_url(r.final_url or str(r.request.get("url") or ""))
        concurrent = gone = self.redacted(r, url, date)
        if concurrent is not None:
            # no response, revisit, redirect, request or conversion: nothing of the bytes leaves the home; what
            # the servers presented is no part of what was read, and stays
            for hop in r.hops:
                self.presented(hop, date, concurrent)
        # a rendered capture's content is the DOM after scripts, which no server sent: it is no response
        # record (the server's answers are its sub-resources' receipts, each exported as one)
        elif r.kind in ("fetch", "recheck", "search") and url and r.capture is None:
            self.redirects(r, date)
            if r.content and r.http_status is not None:
                concurrent = self.answer(r, url, date)
                asked = wire_url(r.hops[0].url) if r.hops else url
                if not is_part(r):  # a rendered page's request is part of its capture, not a page
                    self.pages.append(Page(r.receipt_id, asked, url, date, int(r.http_status), r.kind))
        elif r.kind == "convert":
            concurrent = self.conversion(r, date)
        meta_headers = {"WARC-Date": date, "Content-Type": "application/json"}
        if concurrent:
            meta_headers["WARC-Concurrent-To"] = concurrent
        payload = json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True).encode()
        meta = self.w.create_warc_record(receipt_uri(r.receipt_id), "metadata", payload=BytesIO(payload),
                                         length=len(payload), warc_headers_dict=meta_headers,
                                         warc_content_type="application/json")
        mid = self._write(meta, "metadata")
        if r.capture is not None and r.kind in ("fetch", "recheck"):
            self.rendered(r, date, mid, redacted=gone is not None)

    def rendered(self, r: Receipt, date: str, meta: str, *, redacted: bool = False) -> None:
        """A capture receipt (its ``metadata`` record is ``meta``): a resource record for each thing the browser
        made, concurrent to it, but none for a blob a redaction entry took out; the capture is a page when its
        top frame was answered and nothing of it is redacted."""
        for rec in capture_records(r):
            if self.redactions.of_content(rec.ref) is not None:
                continue  # the redaction's own resource record stands for it
            data = self.home.store.read_as(rec.ref)  # BlobCorrupt for bytes that are not the receipt's
            extra = {"WARC-Date": date, "WARC-Concurrent-To": meta, "WARC-Payload-Digest": str(rec.ref["sha256"])}
            self.w.write_record(self.w.create_warc_record(rec.uri, "resource", payload=BytesIO(data), length=len(data),
                                                          warc_content_type=rec.content_type,
                                                          warc_headers_dict=extra))
        self.counts["captures"] += 1
        if r.http_status is not None and r.hops and r.content and not redacted:
            self.pages.append(Page(r.receipt_id, wire_url(r.hops[0].url), wire_url(r.final_url or r.hops[-1].url),
                                   date, int(r.http_status), r.kind))


def export_warc(home: EvidenceHome, out: str | os.PathLike[str], receipts: Iterable[Receipt], *,
                progress: Callable[[int, int], None] | None = None) -> WarcSummary:
    """Write every receipt's records into a WARC at ``out`` (whole or not at all);
    ``progress(receipts written, receipts)`` after each."""
    out = Path(out)
    if progress is not None and not isinstance(receipts, Sized):
        receipts = list(receipts)  # counted for the progress, so read once
    total = len(receipts) if isinstance(receipts, Sized) else 0
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("wb") as f:
            # lengths are always given, so warcio keeps our sha256 payload digests (it recomputes without them)
            writer = WARCWriter(f, gzip=out.name.endswith(".gz"), warc_version="WARC/1.1")
            info = writer.create_warcinfo_record(out.name, {"software": f"{TOOL_NAME}/{__version__}",
                                                            "format": "WARC File Format 1.1",
                                                            "description": "reads recorded in a g6 evidence ledger"})
            writer.write_record(info)
            ex = _Exporter(home, writer)
            for i, r in enumerate(receipts, 1):
                ex.receipt(r)
                if progress is not None:
                    progress(i, max(total, i))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return WarcSummary(str(out), **ex.counts, pages=tuple(ex.pages))
