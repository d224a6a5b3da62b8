"""WARC export (ISO 28500, WARC/1.1) of what the ledger says was read, written with warcio.

Per receipt with a stored body: a ``request`` record (the GET g6 sent: its stated User-Agent and
Accept, never anything secret), a ``response`` record (status line and Content-Type as the receipt
recorded them, the stored body as payload, ``WARC-Payload-Digest: sha256:<hex>`` of that body,
``WARC-Truncated: length`` where the read was cut), and a ``metadata`` record carrying the signed
receipt as JSON. A re-check whose bytes equal an earlier response of the same URL becomes a
``revisit`` record (identical-payload-digest profile). Receipts without a body (refused, denied,
unreachable…) get a metadata record only. The stored body is the decoded entity (after
Content-Encoding), so the response headers carry no Content-Encoding.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from g6 import TOOL_NAME, __version__
from g6.adapters.checked_client import USER_AGENT
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content", 301: "Moved Permanently",
            302: "Found", 304: "Not Modified", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
            404: "Not Found", 410: "Gone", 429: "Too Many Requests", 451: "Unavailable For Legal Reasons",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass(frozen=True, slots=True)
class WarcSummary:
    path: str
    receipts: int
    responses: int
    revisits: int
    requests: int
    metadata: int

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "receipts": self.receipts, "responses": self.responses,
                "revisits": self.revisits, "requests": self.requests, "metadata": self.metadata}


def _warc_date(iso: str) -> str:
    # receipts carry microseconds; WARC/1.1 allows fractional seconds in W3C-ISO8601
    return iso if iso.endswith("Z") else iso + "Z"


def export_warc(home: EvidenceHome, out: str | os.PathLike[str], receipts: Iterable[Receipt]) -> WarcSummary:
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    counts = {"responses": 0, "revisits": 0, "requests": 0, "metadata": 0, "receipts": 0}
    seen: dict[tuple[str, str], tuple[str, str]] = {}  # (url, sha256) -> (record id, date)
    with tmp.open("wb") as f:
        # lengths are always given, so warcio keeps our sha256 payload digests (it recomputes without them)
        writer = WARCWriter(f, gzip=out.name.endswith(".gz"), warc_version="WARC/1.1")
        info = writer.create_warcinfo_record(out.name, {"software": f"{TOOL_NAME}/{__version__}",
                                                        "format": "WARC File Format 1.1",
                                                        "description": "reads recorded in a g6 evidence ledger"})
        writer.write_record(info)
        for r in receipts:
            counts["receipts"] += 1
            url = r.final_url or str(r.request.get("url") or "")
            if not url:
                continue
            date = _warc_date(r.fetched_at)
            concurrent = None
            if r.content and r.http_status is not None and r.kind in ("fetch", "recheck", "search"):
                sha = str(r.content["sha256"])
                key = (url, sha)
                if r.kind == "recheck" and key in seen:
                    ref_id, ref_date = seen[key]
                    rec = writer.create_warc_record(url, "revisit", payload=BytesIO(b""), warc_headers_dict={
                        "WARC-Date": date, "WARC-Profile": REVISIT_PROFILE,
                        "WARC-Refers-To": ref_id, "WARC-Refers-To-Target-URI": url,
                        "WARC-Refers-To-Date": ref_date, "WARC-Payload-Digest": sha})
                    writer.write_record(rec)
                    counts["revisits"] += 1
                    concurrent = rec.rec_headers.get_header("WARC-Record-ID")
                else:
                    body = home.store.read(str(r.content["blake3"]))
                    status = int(r.http_status)
                    headers = [("Content-Length", str(len(body)))]
                    if r.detail.get("content_type"):
                        headers.insert(0, ("Content-Type", str(r.detail["content_type"])))
                    http = StatusAndHeaders(f"{status} {_REASONS.get(status, 'Status')}", headers,
                                            protocol="HTTP/1.1")
                    extra = {"WARC-Date": date, "WARC-Payload-Digest": sha}
                    if r.truncated:
                        extra["WARC-Truncated"] = "length"
                    if r.hops and r.hops[-1].connected_address:
                        extra["WARC-IP-Address"] = r.hops[-1].connected_address
                    resp = writer.create_warc_record(url, "response", payload=BytesIO(body), length=len(body),
                                                     http_headers=http, warc_headers_dict=extra)
                    writer.write_record(resp)
                    counts["responses"] += 1
                    concurrent = resp.rec_headers.get_header("WARC-Record-ID")
                    seen.setdefault(key, (concurrent, date))
                    parts = urlsplit(url)
                    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                    req_http = StatusAndHeaders(f"GET {path} HTTP/1.1", [("Host", parts.netloc),
                                                                         ("User-Agent", USER_AGENT)],
                                                protocol="HTTP/1.1", is_http_request=True)
                    req = writer.create_warc_record(url, "request", payload=BytesIO(b""), http_headers=req_http,
                                                    warc_headers_dict={"WARC-Date": date,
                                                                       "WARC-Concurrent-To": concurrent})
                    writer.write_record(req)
                    counts["requests"] += 1
            meta_headers = {"WARC-Date": date, "Content-Type": "application/json"}
            if concurrent:
                meta_headers["WARC-Concurrent-To"] = concurrent
            payload = json.dumps(r.to_json(), ensure_ascii=False, sort_keys=True).encode()
            meta = writer.create_warc_record(url, "metadata", payload=BytesIO(payload), length=len(payload),
                                             warc_headers_dict=meta_headers, warc_content_type="application/json")
            writer.write_record(meta)
            counts["metadata"] += 1
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, out)
    return WarcSummary(str(out), **counts)
