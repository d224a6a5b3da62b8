"""``g6_invoke(skill, op, args)``: the one tool the knowledge documents name, and one function per skill
that runs its ops with the arguments as the documents spell them. The composed skills reuse the typed
tools' functions (``knowledge_manifest`` is ``cite`` and ``recheck``; ``ctx_elastic`` shares
:func:`~g6.mcp.tools_elastic.es_reply`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Annotated, Any

from pydantic import Field

from g6.adapters.outcomes import BLOCKED
from g6.errors import ElasticInputError, InputError
from g6.mcp.context import ToolContext, ToolSet, receipt_id_of, untrusted
from g6.mcp.gate import SKILLS, as_result
from g6.mcp.tools_cite import cite, recheck
from g6.mcp.tools_elastic import es_reply

TOOLS = ToolSet()

Args = dict[str, Any]


def _arg(args: Mapping[str, Any], name: str) -> str:
    v = args.get(name)
    if not isinstance(v, str) or not v:
        raise InputError(f"missing argument {name!r}")
    return v


def run_knowledge_fetcher(ctx: ToolContext, op: str, args: Args) -> dict[str, Any]:
    from g6.compat import knowledge_fetcher as kf

    if op == "sources":
        return kf.sources_reply(ctx.settings.values)
    request = kf.FetchRequest.from_args(args)

    def client_for(adapter: Any) -> Any:
        from g6.compat import http

        pol = ctx.policy(None, request.max_bytes if request.source == "http" else None)
        if request.source != "http":  # a page's byte cap is not a search page's
            pol = replace(pol, max_bytes=None)
        return http.Client(pol, obey_robots=kf.obeys_robots(adapter))

    with ctx.home() as ev:
        return untrusted(kf.run(ev, request, client_for, values=ctx.settings.values).to_json())


ES_TAKES = {"search": ("index", "query", "fields", "filters", "top_k"),
            "count": ("index", "query", "fields", "filters"), "mapping": ("index",), "get_doc": ("index", "id")}


def _top_k(args: Args) -> int:
    top_k = args.get("top_k", 10)
    if not isinstance(top_k, int) or isinstance(top_k, bool):
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "top_k is a whole number")
    return top_k


def run_ctx_elastic(ctx: ToolContext, op: str, args: Args) -> dict[str, Any]:
    # These refusals are raised before the home or the index opens, so the gate makes them rejections;
    # top_k is checked in the call, once the index is open, so its refusal is es_reply's (the error's to_json).
    unknown = sorted(set(args) - set(ES_TAKES[op]))
    if unknown:  # no host, no key, no query in Elasticsearch's own language
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", f"{op} takes no argument "
                                f"{', '.join(map(repr, unknown))}; it takes {', '.join(ES_TAKES[op])}")
    index = args.get("index")
    if not isinstance(index, str):
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", f"{op} needs an index name")
    fields = args.get("fields") or ()
    if isinstance(fields, str) or not all(isinstance(f, str) for f in fields):
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "fields is a list of field names")
    filters = args.get("filters") or {}
    if not isinstance(filters, dict):
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "filters maps field names to values")
    calls: dict[str, Callable[[Any], Any]] = {
        "search": lambda idx: idx.search(args.get("query"), filters, _top_k(args)),
        "count": lambda idx: idx.count(args.get("query"), filters),
        "mapping": lambda idx: idx.mapping(),
        "get_doc": lambda idx: idx.get(str(args.get("id") or "")),
    }
    return es_reply(ctx, index, fields, calls[op])


def run_web_fetch(ctx: ToolContext, op: str, args: Args) -> dict[str, Any]:
    from g6.compat.web_fetch import check_inputs, web_fetch

    check_inputs(args)  # a missing url fails here: nothing starts, nothing is sealed
    with ctx.home() as ev, ctx.client(ctx.policy()) as c:
        return web_fetch(ev, c, args)  # runx's fetch_result exactly (its schema has no notice)


def run_knowledge_chunker(ctx: ToolContext, op: str, args: Args) -> dict[str, Any]:
    from g6.cite.cite import chunk_receipt

    with ctx.home() as ev:
        r, passages = chunk_receipt(ev, receipt_id_of(_arg(args, "receipt_id")))
    return untrusted({"outcome": "ok", "code": "G6_E_KNOWLEDGE_CHUNKED", "receipt_id": r.receipt_id,
                      "source_url": r.final_url, "content": dict(r.content or {}),
                      "passages": [p.to_json() for p in passages]})


def run_knowledge_converter(ctx: ToolContext, op: str, args: Args) -> dict[str, Any]:
    from g6.fetch.convert import convert

    with ctx.home() as ev:
        return untrusted(convert(ev, _arg(args, "digest")).to_json())


def run_knowledge_manifest(ctx: ToolContext, op: str, args: Args) -> dict[str, Any]:
    if op == "record":
        return cite(ctx, _arg(args, "receipt_id"), _arg(args, "manifest"), args.get("passage_id"),
                    args.get("quote"), args.get("paper"), args.get("allow_failed_read", False))
    return recheck(ctx, _arg(args, "manifest"), args.get("run_id"))


# Each skill's ops, run once the gate let them through (the op is one SKILLS names for the skill).
RUNS: dict[str, Callable[[ToolContext, str, Args], dict[str, Any]]] = {
    "knowledge_fetcher": run_knowledge_fetcher, "ctx_elastic": run_ctx_elastic, "web_fetch": run_web_fetch,
    "knowledge_chunker": run_knowledge_chunker, "knowledge_converter": run_knowledge_converter,
    "knowledge_manifest": run_knowledge_manifest,
}
assert RUNS.keys() == SKILLS.keys(), "every skill the gate knows has a runner, and no other"


@TOOLS.tool(description="Run one op of a g6 skill, as the skills' documents name it. Skills and ops: "
                        "knowledge_fetcher (fetch, sources), ctx_elastic (search, get_doc, count, mapping), "
                        "web_fetch (fetch: runx's fetch_result), knowledge_chunker (chunk), knowledge_converter "
                        "(convert), knowledge_manifest (record, recheck). Gated: every op but "
                        "knowledge_fetcher.sources runs only when the server is started with G6_MCP_SENSITIVE "
                        "listing it (skill.op, the skill, or all); otherwise the call is refused with an error "
                        "result naming what to add, and nothing is sent.",
            title="Invoke a g6 skill", open_world=True, through_gate=False)
def g6_invoke(
    ctx: ToolContext,
    skill: Annotated[str, Field(description="The skill: knowledge_fetcher, ctx_elastic, web_fetch, "
                                            "knowledge_chunker, knowledge_converter or knowledge_manifest.")],
    op: Annotated[str, Field(description="The skill's op, e.g. fetch, sources, search, get_doc, count, "
                                         "mapping, chunk, convert, record, recheck.")],
    args: Annotated[dict[str, Any] | None, Field(
        description="The op's arguments as its document names them, e.g. {\"source\": \"arxiv\", "
                    "\"query\": \"grounding\"} for knowledge_fetcher.fetch or {\"index\": \"handbook\"} "
                    "for ctx_elastic.mapping. A manifest path in them is on the server's filesystem.")] = None,
) -> dict[str, Any]:  # the declared type gives the output schema; a refusal goes back as a CallToolResult
    if skill not in SKILLS or op not in SKILLS[skill]:
        known = "; ".join(f"{k}: {', '.join(ops)}" for k, ops in SKILLS.items())
        return as_result({"outcome": "rejected", "code": "G6_E_MCP_UNKNOWN_OP", "status": BLOCKED,
                          "message": f"no op {skill}.{op}; skills and ops: {known}"})
    # gated by skill.op, not by the tool's name: each op is allowed on its own
    return ctx.gated(f"{skill}.{op}", lambda: RUNS[skill](ctx, op, dict(args or {})))
