"""Our WARC export vs warcio writing the same response and metadata records directly."""

from __future__ import annotations

import json
import os
import tempfile
import time
from io import BytesIO
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from bench.report import line
from g6.export.warc import export_warc
from g6.home import EvidenceHome
from g6.ledger import Receipt


def run(quick: bool = False) -> None:
    n = 100 if quick else 2000
    with tempfile.TemporaryDirectory() as d:
        home = EvidenceHome(Path(d) / "home", fsync=False)
        home.keys.init()
        bodies = [os.urandom(256) + f"<p>page {i}</p>".encode() * 200 for i in range(n)]
        receipts = []
        for i, b in enumerate(bodies):
            ref = home.store.put(b)
            receipts.append(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                    final_url=f"https://example.org/{i}", http_status=200, byte_count=len(b),
                                    outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", content=ref.to_json(),
                                    detail={"content_type": "text/html"}))
        receipts = home.ledger.append_many(receipts, home.signing_key())

        t = time.perf_counter()
        with open(Path(d) / "raw.warc.gz", "wb") as f:
            w = WARCWriter(f, gzip=True, warc_version="WARC/1.1")
            for r, b in zip(receipts, bodies, strict=True):
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(b)))],
                                        protocol="HTTP/1.1")
                w.write_record(w.create_warc_record(r.final_url, "response", payload=BytesIO(b), length=len(b),
                                                    http_headers=http))
                meta = json.dumps(r.to_json()).encode()
                w.write_record(w.create_warc_record(r.final_url, "metadata", payload=BytesIO(meta),
                                                    length=len(meta), warc_content_type="application/json"))
        ref_s = time.perf_counter() - t
        t = time.perf_counter()
        export_warc(home, Path(d) / "ours.warc.gz", receipts)
        ours_s = time.perf_counter() - t
        home.close()
        line(f"WARC export, {n} reads", n / ours_s, n / ref_s, "reads/s")
