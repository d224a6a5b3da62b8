"""What an agent reads from `g6 mcp` over a real MCP session (the SDK's own stdio client): a description for
every parameter, tool annotations, gated tools that say how to allow them, refusals as error results
(``isError``), and ``search`` with the options of ``g6 search`` against loopback servers."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from g6.demo.site import LocalSite, Reply, SeenRequest

Site = Callable[..., LocalSite]
FIX = Path(__file__).resolve().parent.parent / "fixtures" / "http"
SENSITIVE = {"fetch", "search", "es_mapping", "es_search", "es_count", "es_get_doc", "cite", "recheck",
             "report_check"}
READ_ONLY = {"sources", "receipt_show", "ledger_verify", "verify_proof"}
NETWORK = {"fetch", "search", "es_mapping", "es_search", "es_count", "es_get_doc", "recheck", "report_check",
           "g6_invoke"}


def env_for(home: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", **extra})
    return e


def session(env: dict[str, str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """The tools as listed, and each call's raw result (``is_error`` and content kept)."""
    async def main() -> tuple[list[Any], list[Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "g6", "mcp"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            return tools, [await s.call_tool(name, args) for name, args in calls]
    return anyio.run(main)


def test_every_parameter_is_described_and_every_tool_annotated(tmp_path: Path) -> None:
    tools, _ = session(env_for(tmp_path), [])
    by_name = {t.name: t for t in tools}
    assert set(by_name) == SENSITIVE | READ_ONLY | {"g6_invoke"}
    for t in tools:
        props = t.input_schema.get("properties", {})
        undescribed = [p for p, schema in props.items() if len(schema.get("description") or "") < 15]
        assert undescribed == [], (t.name, undescribed)
        a = t.annotations
        assert a is not None and a.title, t.name
        assert a.read_only_hint is (t.name in READ_ONLY), t.name
        assert a.open_world_hint is (t.name in NETWORK), t.name
        assert a.destructive_hint is False, t.name  # nothing deletes or overwrites evidence
        gated = "Gated:" in (t.description or "")
        assert gated is (t.name in SENSITIVE | {"g6_invoke"}), t.name
        if t.name in SENSITIVE:
            assert f"G6_MCP_SENSITIVE listing {t.name}" in t.description, t.description
    # a path is said to be on the server; a URL is said to be a URL
    assert "on the server's filesystem" in by_name["cite"].input_schema["properties"]["manifest"]["description"]
    assert "on the server's filesystem" in by_name["recheck"].input_schema["properties"]["manifest"]["description"]
    assert "URL" in by_name["fetch"].input_schema["properties"]["url"]["description"]


def test_refusals_are_error_results(tmp_path: Path, site: Site) -> None:
    s = site({"/p": Reply(body=b"<p>hello there</p>"), "/robots.txt": Reply(404, b"")})
    _, (denied, unknown_op, listed) = session(env_for(tmp_path), [
        ("fetch", {"url": s.url("/p")}),
        ("g6_invoke", {"skill": "ctx_elastic", "op": "delete", "args": {"index": "hb"}}),
        ("sources", {}),
    ])
    assert denied.is_error is True and denied.structured_content["code"] == "G6_E_MCP_OP_NOT_ALLOWED"
    assert "G6_MCP_SENSITIVE=fetch" in json.loads(denied.content[0].text)["message"]  # readable as text too
    assert unknown_op.is_error is True and unknown_op.structured_content["code"] == "G6_E_MCP_UNKNOWN_OP"
    assert listed.is_error is False and listed.structured_content["status"] == "qualified-draft"
    assert s.requests == []  # nothing was sent
    _, (unknown_source, bad_cite, bad_scheme, page) = session(env_for(tmp_path, G6_MCP_SENSITIVE="all"), [
        ("g6_invoke", {"skill": "knowledge_fetcher", "op": "fetch", "args": {"source": "gopher", "url": "gopher://x"}}),
        ("cite", {"receipt_id": "rcpt_x", "manifest": str(tmp_path / "m.json"), "quote": "a", "passage_id": "p1"}),
        ("fetch", {"url": "file:///etc/passwd"}),
        ("fetch", {"url": s.url("/p")}),
    ])
    assert unknown_source.is_error is True
    assert unknown_source.structured_content["code"] == "G6_E_KNOWLEDGE_UNKNOWN_SOURCE"
    assert bad_cite.is_error is True and "exactly one of" in bad_cite.structured_content["message"]
    assert not (tmp_path / "m.json").exists()
    assert bad_scheme.is_error is True and bad_scheme.structured_content["reason"] == "scheme"
    assert page.is_error is False and page.structured_content["outcome"] == "ok"


def test_read_only_tools_create_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _, (verified, shown) = session(env_for(home), [("ledger_verify", {}), ("receipt_show", {"receipt_id":
                                                                                      "rcpt_" + "0" * 26})])
    # no ledger is a failed check (fails closed), and reading it created nothing: no home, no key, no table
    assert verified.is_error is True and verified.structured_content["rows"] == 0
    assert "no ledger" in json.dumps(verified.structured_content)
    assert shown.is_error is True
    assert not home.exists()


def oai(seen: list[dict[str, str]]) -> Callable[[SeenRequest], Reply]:
    def route(req: SeenRequest) -> Reply:
        args = {k: v[0] for k, v in parse_qs(urlsplit(req.path).query).items()}
        seen.append(args)
        name = ("zenodo_ListIdentifiers_from_until_first_page_status200.xml" if "resumptionToken" not in args
                else "zenodo_ListIdentifiers_resumption_cursor50_status200.xml")
        return Reply(200, (FIX / "oai-pmh" / name).read_bytes(), content_type="text/xml")
    return route


def test_search_takes_the_options_of_g6_search(tmp_path: Path, site: Site) -> None:
    seen: list[dict[str, str]] = []
    s = site({"/oai2d": oai(seen), "/arxiv/api/query": Reply(200, (
        FIX / "arxiv" / "search_q_testing_start0_max10_status200.xml").read_bytes(),
        content_type="application/atom+xml")})
    env = env_for(tmp_path, G6_MCP_SENSITIVE="search", G6_ARXIV_URL=s.url("/arxiv/api/query"), G6_ARXIV_PAUSE="0",
                  G6_OAI_PMH_PAUSE="0")
    _, (listed, default, arxiv) = session(env, [
        ("search", {"source": "oai_pmh", "endpoint": s.url("/oai2d"), "verb": "ListIdentifiers",
                    "metadata_prefix": "oai_datacite", "set_spec": "user-x", "since": "2026-04-01",
                    "until": "2026-04-02", "max_results": 1000, "max_pages": 2}),
        ("search", {"source": "oai_pmh", "endpoint": s.url("/oai2d"), "max_pages": 1}),
        ("search", {"source": "arxiv", "query": "testing", "max_results": 3, "page_size": 2, "max_pages": 1}),
    ])
    assert [r.is_error for r in (listed, default, arxiv)] == [False, False, False]
    first, second, third = seen
    assert first == {"verb": "ListIdentifiers", "metadataPrefix": "oai_datacite", "set": "user-x",
                     "from": "2026-04-01", "until": "2026-04-02"}
    assert second["verb"] == "ListIdentifiers" and set(second) == {"verb", "resumptionToken"}
    assert third == {"verb": "ListRecords", "metadataPrefix": "oai_dc"}  # the defaults, as g6 search has them
    out = listed.structured_content
    assert len(out["receipt_ids"]) == 2 and out["complete"] is False  # stopped at max_pages: never the whole answer
    arxiv_asked = [parse_qs(urlsplit(r.path).query) for r in s.requests if r.path.startswith("/arxiv")]
    assert [a["max_results"] for a in arxiv_asked] == [["2"]]  # page_size per request, one page only
    assert arxiv.structured_content["complete"] is False
    _, (too_small,) = session(env, [("search", {"source": "arxiv", "query": "x", "page_size": 0})])
    assert too_small.is_error is True  # refused by the schema before anything is sent
    assert len([r for r in s.requests if r.path.startswith("/arxiv")]) == 1
