"""The composed skills the documents mention, as ``g6_invoke`` over a real MCP session:
``knowledge_chunker.chunk``, ``knowledge_manifest.record`` / ``recheck`` on a page the knowledge
fetcher kept, and ``knowledge_converter.convert`` on a PDF it kept (``kept``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seedkit import env_for, invoke_all
from test_convert import make_pdf

from g6.demo.site import Reply

PAGE = b"<html><head><title>Leave</title></head><body><p>Parents take twenty weeks of leave.</p></body></html>"


def test_chunk_record_recheck_and_convert(tmp_path: Path, site: Any) -> None:
    s = site({"/leave": Reply(body=PAGE), "/paper.pdf": Reply(body=make_pdf("Receipts survive in a PDF"),
                                                                content_type="application/pdf"),
              "/robots.txt": Reply(404, b"")})
    env = env_for(tmp_path / "home", G6_MCP_SENSITIVE="knowledge_fetcher,knowledge_chunker,knowledge_converter,"
                                                      "knowledge_manifest")
    page, pdf = invoke_all(env, [("knowledge_fetcher", "fetch", {"source": "http", "url": s.url("/leave")}),
                                 ("knowledge_fetcher", "fetch", {"source": "http", "url": s.url("/paper.pdf")})])
    assert page["code"] == "G6_E_KNOWLEDGE_FETCHED" and pdf["documents"] == [] and pdf["kept"].startswith("sha256:")
    manifest = str(tmp_path / "citations.json")
    rid = page["receipt_id"]
    chunked, recorded, rechecked, converted, refused = invoke_all(env, [
        ("knowledge_chunker", "chunk", {"receipt_id": rid}),
        ("knowledge_manifest", "record", {"receipt_id": rid, "manifest": manifest, "quote": "twenty weeks of leave"}),
        ("knowledge_manifest", "recheck", {"manifest": manifest}),
        ("knowledge_converter", "convert", {"digest": pdf["kept"]}),
        ("knowledge_chunker", "chunk", {}),
    ])
    assert chunked["code"] == "G6_E_KNOWLEDGE_CHUNKED" and chunked["status"] == "qualified-draft"
    assert any("twenty weeks" in p["text"] for p in chunked["passages"])
    assert recorded["code"] == "G6_E_KNOWLEDGE_MANIFEST_RECORDED" and recorded["citations"] == 1
    assert rechecked["code"] == "G6_E_KNOWLEDGE_MANIFEST_RECHECKED" and rechecked["counts"] == {"unchanged": 1}
    assert rechecked["status"] == "qualified-draft"
    assert converted["code"] == "G6_E_KNOWLEDGE_CONVERTED" and "Receipts survive in a PDF" in converted["text"]
    assert converted["status"] == "qualified-draft" and converted["trust"] == "untrusted"
    assert refused["code"] == "G6_E_INPUT" and refused["status"] == "blocked-escalated"
    assert "receipt_id" in refused["message"]
