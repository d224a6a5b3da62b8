"""Every example of the knowledge fetcher's and the Elasticsearch reader's documents, run as written.

Python blocks run as the documents print them (lines restored, words checked identical); a block
whose point is a refusal fails here if the refusal does not happen. ``g6-example`` blocks, and
the ``g6_invoke`` calls written in the prose, run as ``g6_invoke`` over a real stdio MCP session
against loopback servers: the recorded arXiv replies, noida-db's ``handbook``, the local site.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import pytest
from documents import ELASTIC, FETCHER, PYTHON_EXAMPLES, g6_examples, inline_invocations, python_blocks, words
from seedkit import env_for, invoke_all

from g6.demo.site import Reply

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "http"


def run_as_written(code: str, filename: str) -> dict[str, Any]:
    """Run a block statement by statement; a ``try`` must raise what its ``except`` names."""
    ns: dict[str, Any] = {"__name__": "__example__"}
    for node in ast.parse(code).body:
        if isinstance(node, ast.Try):
            handler = node.handlers[0]
            expected = eval(compile(ast.Expression(handler.type), filename, "eval"), ns)  # noqa: S307
            with pytest.raises(expected) as caught:
                exec(compile(ast.Module(node.body, []), filename, "exec"), ns)  # noqa: S102
            if handler.name:
                ns[handler.name] = caught.value
            exec(compile(ast.Module(handler.body, []), filename, "exec"), ns)  # noqa: S102
        else:
            exec(compile(ast.Module([node], []), filename, "exec"), ns)  # noqa: S102
    return ns


@pytest.mark.parametrize("doc", [FETCHER, ELASTIC], ids=lambda p: p.name)
def test_python_blocks_are_the_documents_own(doc: Path) -> None:
    blocks = python_blocks(doc)
    assert len(blocks) == 1
    assert words(PYTHON_EXAMPLES[doc.name].read_text()) == words(blocks[0])


def test_fetcher_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("G6_HOME", str(tmp_path))
    path = PYTHON_EXAMPLES[FETCHER.name]
    ns = run_as_written(path.read_text(), str(path))
    found = ns["found"]
    assert found.code == "G6_E_KNOWLEDGE_FETCH_BLOCKED" and found.status == "blocked-escalated"
    from g6.home import EvidenceHome

    with EvidenceHome(tmp_path) as ev:  # the same receipts as `g6 fetch`: robots.txt read, the page's 403 kept
        (receipt,) = [e.receipt for e in ev.ledger.entries()]
    assert receipt.outcome_code == "G6_E_KNOWLEDGE_FETCH_BLOCKED" and receipt.http_status == 403
    assert receipt.final_url == "https://example.org/report" and receipt.hops[0].connected_address == "93.184.216.34"


def test_elastic_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("G6_HOME", str(tmp_path))
    path = PYTHON_EXAMPLES[ELASTIC.name]
    ns = run_as_written(path.read_text(), str(path))
    assert "server" in ns


def test_an_example_whose_refusal_does_not_happen_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("G6_HOME", str(tmp_path))
    code = PYTHON_EXAMPLES[ELASTIC.name].read_text()
    # a field the index holds: the stand-in server then answers the search with its mapping, which
    # is refused too, but not with the code the example expects, so the example fails
    with pytest.raises(AssertionError):
        run_as_written(code.replace('fields=["content"]', 'fields=["body"]'), "changed-example")
    # no refusal at all: the try block must raise
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        run_as_written(code.replace('elastic.search("handbook"', 'dict(index="handbook"')
                       .replace('"parental leave", fields', 'query="parental leave", fields'), "changed-example")


def no_numeric_status(value: Any) -> bool:
    if isinstance(value, dict):
        return all(not (k == "status" and not isinstance(v, str)) and no_numeric_status(v) for k, v in value.items())
    if isinstance(value, list):
        return all(no_numeric_status(v) for v in value)
    return True


def arxiv_total() -> int:
    xml = (RECORDED / "arxiv" / "search_q_testing_start0_max10_status200.xml").read_text()
    return int(xml.split("<opensearch:totalResults>")[1].split("<")[0])


def test_every_example_over_mcp(tmp_path: Path, site: Any, handbook_url: str) -> None:
    from serve_recorded import routes

    rec = site(routes())
    page = b"<html><head><title>Report</title></head><body><p>The report says forty.</p></body></html>"
    web = site({"/report": Reply(body=page), "/robots.txt": Reply(404, b"")})
    env = env_for(tmp_path, G6_MCP_SENSITIVE="all", G6_ARXIV_URL=rec.url("/arxiv/api/query"), G6_ARXIV_PAUSE="0",
                  G6_OAI_PMH_PAUSE="0", G6_ELASTIC_URL=handbook_url)
    blocks = g6_examples(FETCHER) + g6_examples(ELASTIC)
    prose = inline_invocations(FETCHER) + inline_invocations(ELASTIC)
    assert [(e.skill, e.op) for e in blocks] == [("knowledge_fetcher", "sources"), ("knowledge_fetcher", "fetch"),
                                                 ("ctx_elastic", "mapping"), ("ctx_elastic", "search"),
                                                 ("ctx_elastic", "count"), ("ctx_elastic", "get_doc")]
    assert len(prose) == 3
    # the prose's other two fetches name outside addresses ("https://...", arXiv's OAI-PMH): the same
    # calls, pointed at the loopback copies
    others = [("knowledge_fetcher", "fetch", {"source": "http", "url": web.url("/report")}),
              ("knowledge_fetcher", "fetch", {"source": "oai_pmh", "url": rec.url("/oai"), "set_spec": "cs",
                                              "since": "2026-01-01"})]
    calls = [(e.skill, e.op, e.args) for e in blocks + prose] + others
    replies = invoke_all(env, calls)
    by = dict(zip(range(len(calls)), replies, strict=True))
    for r in replies:
        assert r["status"] in ("qualified-draft", "blocked-escalated"), r
        assert no_numeric_status(r), r  # an HTTP status is http_status, at every depth

    sources, arxiv, mapping, search, count, doc, arxiv_prose, mapping_prose, search_prose, page_, oai = \
        (by[i] for i in range(len(calls)))
    # sources: the five, with arXiv's pause (set to 0 for this server; its default is checked below)
    assert {s["name"] for s in sources["sources"]} == {"arxiv", "http", "oai_pmh", "openalex", "semantic_scholar"}
    assert sources["status"] == "qualified-draft"
    # the arXiv search: the reply's total is arXiv's count of matches
    for a in (arxiv, arxiv_prose):
        assert a["code"] == "G6_E_KNOWLEDGE_FETCHED" and a["status"] == "qualified-draft"
        assert a["total"] == arxiv_total() and a["complete"] is False and a["documents"]
        d = a["documents"][0]
        assert d["trust"] == "untrusted" and d["locator"].startswith("https://arxiv.org/abs/")
        assert d["source"]["url"].startswith(rec.url("/arxiv/api/query")) and d["source"]["sha256"].startswith(
            "sha256:") and d["source"]["fetched"]
        assert a["pages"][0]["http_status"] == 200 and "status" not in a["pages"][0]
    assert len(arxiv["documents"]) == 5
    # ctx_elastic: mapping, search with fields and an exact filter, count, get_doc
    for m in (mapping, mapping_prose):
        assert m["code"] == "G6_E_KNOWLEDGE_ELASTIC_MAPPING_READ" and m["status"] == "qualified-draft"
        assert m["mapping"] == {"body": {"type": "text"}, "team": {"type": "keyword"}, "title": {"type": "text"}}
    for s in (search, search_prose):
        assert s["code"] == "G6_E_KNOWLEDGE_ELASTIC_SEARCHED" and s["status"] == "qualified-draft"
        # "parental leave" over title and body, team hr: both hr documents say "leave"; parental leave first
        assert s["fields"] == ["title", "body"] and s["total"] == 2 and s["total_relation"] == "eq"
        assert s["complete"] is True and s["http_status"] == 200 and len(s["hits"]) == 2
        hit = s["hits"][0]
        assert s["hits"][1]["rank"] == 2 and s["hits"][1]["score"] <= hit["score"]
        assert hit["rank"] == 1 and hit["score"] > 0 and hit["score_scale"] == "es_bm25"
        assert hit["trust"] == "untrusted" and "Parental leave" in hit["passage"]["text"]
        assert hit["passage"]["source"]["address"] == f"{handbook_url}/handbook/_doc/leave-1"
        assert hit["passage"]["source"]["sha256"].startswith("sha256:")
    assert count["code"] == "G6_E_KNOWLEDGE_ELASTIC_COUNTED" and count["count"] == 2
    assert doc["code"] == "G6_E_KNOWLEDGE_ELASTIC_DOC_READ" and doc["document"]["title"] == "Parental leave"
    assert doc["source"] == search["hits"][0]["passage"]["source"]  # the same address and hash as the hit
    assert doc["detail"]["trust"] == "untrusted" and doc["untrusted_content"] is True
    # the page: the text a reader sees, converted from HTML, with its source
    assert page_["code"] == "G6_E_KNOWLEDGE_FETCHED" and page_["http_status"] == 200 and page_["total"] is None
    (d,) = page_["documents"]
    assert d["media_type"] == "text/html" and d["converted_by"] == "g6.knowledge html_to_text"
    assert d["title"] == "Report" and d["text"].strip() == "The report says forty." and d["trust"] == "untrusted"
    assert d["source"]["url"] == web.url("/report") and d["source"]["sha256"] == page_["content"]["sha256"]
    # OAI-PMH: the repository's own records and count
    assert oai["code"] == "G6_E_KNOWLEDGE_FETCHED" and oai["documents"] and oai["source"] == "oai_pmh"


def test_sensitive_examples_are_refused_until_the_owner_lists_them(tmp_path: Path, site: Any) -> None:
    from serve_recorded import routes

    rec = site(routes())
    env = env_for(tmp_path, G6_ARXIV_URL=rec.url("/arxiv/api/query"), G6_ELASTIC_URL="http://127.0.0.1:9")
    examples = g6_examples(FETCHER) + g6_examples(ELASTIC)
    replies = invoke_all(env, [(e.skill, e.op, e.args) for e in examples])
    for e, r in zip(examples, replies, strict=True):
        if (e.skill, e.op) == ("knowledge_fetcher", "sources"):
            arxiv = next(s for s in r["sources"] if s["name"] == "arxiv")
            assert arxiv["pause_seconds"] == 3.0 and arxiv["robots_txt"] is False  # arXiv's three-second pause
            continue
        assert r["code"] == "G6_E_MCP_OP_NOT_ALLOWED" and r["status"] == "blocked-escalated"
        assert r["add"] == f"{e.skill}.{e.op}" and f"G6_MCP_SENSITIVE={e.skill}.{e.op}" in r["message"]
    assert rec.requests == []  # nothing was sent
    # a skill's name allows all its ops; the other skill stays refused
    only = invoke_all(env_for(tmp_path, G6_MCP_SENSITIVE="knowledge_fetcher", G6_ARXIV_URL=rec.url("/arxiv/api/query"),
                              G6_ARXIV_PAUSE="0"),
                      [("knowledge_fetcher", "fetch", examples[1].args), ("ctx_elastic", "mapping", {"index": "x"})])
    assert only[0]["code"] == "G6_E_KNOWLEDGE_FETCHED" and only[1]["code"] == "G6_E_MCP_OP_NOT_ALLOWED"


def test_unknown_skill_or_op_is_a_typed_reply(tmp_path: Path) -> None:
    (r1, r2) = invoke_all(env_for(tmp_path, G6_MCP_SENSITIVE="all"),
                          [("ctx_elastic", "delete", {"index": "handbook"}), ("shell", "run", {})])
    for r in (r1, r2):
        assert r["code"] == "G6_E_MCP_UNKNOWN_OP" and r["status"] == "blocked-escalated"
        assert "ctx_elastic: search, get_doc, count, mapping" in r["message"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
