"""The typed tools that reach the web: ``sources`` (the paper sources, not gated), ``fetch`` (a web page)
and ``search`` (a paper source), each keeping what it read and appending a signed receipt.

The library is imported inside each tool, as it was when the tools were closures, so starting the server
loads only what listing the tools needs."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field

from g6.adapters.outcomes import BLOCKED, OUTSIDE_PROGRAM_MISSING, QUALIFIED
from g6.errors import InputError
from g6.mcp.context import ToolContext, ToolSet, untrusted
from g6.mcp.gate import bounded, gate_note

TOOLS = ToolSet()

ALLOW_DOC = ("Host patterns this fetch may reach, e.g. [\"example.org\", \"*.example.org\"], used instead of "
             "the server's G6_ALLOWLIST for this call (default: that setting). Private and loopback addresses "
             "stay refused unless the server allows them.")


@TOOLS.tool(title="Paper sources", description="List the paper sources, what each needs, its pause and whether "
                                               "robots.txt applies. Not gated.",
            read_only=True, through_gate=False)
def sources(ctx: ToolContext) -> dict[str, Any]:
    reg = ctx.settings.sources()
    return {"code": "G6_E_KNOWLEDGE_SOURCES_LISTED", "status": QUALIFIED,
            "sources": [{"name": s.name, "needs": s.needs, "pause_seconds": s.pause, "robots_txt": s.robots,
                         "key_env": s.key_env} for s in reg]}


RENDER_MODES = ("off", "auto", "always")  # the CLI's words (g6 fetch --render)
RENDER_DOC = ("Read the page as a reader sees it, after its scripts run, in a locked-down Chromium whose every request "
              "goes through the same checks (g6 fetch --render): \"off\" reads it raw; \"auto\" reads it raw and "
              "renders it only when that read is a shell (its text written by scripts); \"always\" renders every "
              "HTML page. A rendered reply's receipt_id is the capture receipt (detail.render.raw_receipt_id: the "
              "raw read's); `rendered` says whether the page was rendered.")
SHELL_HINT = ("the page's text is written by scripts ({why}); fetch again with render: \"auto\" to read what a "
              "reader sees")


@TOOLS.tool(title="Fetch a web page",
            description="Fetch a web page through the checked client (public addresses only, robots.txt obeyed); "
                        "keep its bytes in the store and append a signed receipt. With render \"auto\" or "
                        "\"always\", render it in a locked-down Chromium when its text is written by scripts. "
                        + gate_note("fetch"),
            open_world=True)
def fetch(ctx: ToolContext,
          url: Annotated[str, Field(description="The absolute http(s) URL to fetch, e.g. "
                                                "https://example.org/page. Other schemes are refused.")],
          allow: Annotated[list[str] | None, Field(description=ALLOW_DOC)] = None,
          max_bytes: Annotated[int | None, Field(ge=0, description=(
              "Largest body to keep, in bytes; a longer body is cut and marked truncated. Default: the "
              "server's G6_MAX_BYTES (unset: up to its hard cap G6_HARD_CAP)."))] = None,
          extract: Annotated[Literal["text", "metadata", "links"], Field(description=(
              "What to extract from the page: its text (the reply's documents[].text; for passage ids to cite, "
              "g6_invoke knowledge_chunker chunk with the reply's receipt_id), its metadata, or its links."))]
          = "text",
          # a string listing its values (enum), checked here: a bad value is one typed line, not the SDK's
          # several-line validation error
          render: Annotated[str, Field(description=RENDER_DOC, json_schema_extra={"enum": list(RENDER_MODES)})]
          = "off",
          ) -> dict[str, Any]:
    if render not in RENDER_MODES:
        raise InputError(f"render is one of {', '.join(RENDER_MODES)}, not {render[:40]!r}; nothing was sent")
    pol = ctx.policy(allow, max_bytes)  # impossible settings end here, before anything is sent
    if render == "off":
        with ctx.home() as ev, ctx.client(pol) as c:
            return untrusted(_raw_read(ev, c, url, extract))
    from g6.fetch.render import check_render_url

    if render == "always":
        check_render_url(url)  # chrome://, view-source:, data:… never reach the browser
    rd = ctx.renderer()  # a bad G6_RENDER_* setting or no Chromium: refused here, before anything is sent
    with ctx.home() as ev, ctx.client(pol) as c:
        return untrusted(_rendered_read(ev, c, url, extract, render, rd, pol.hard_cap))


def _raw_read(ev: Any, c: Any, url: str, extract: str) -> dict[str, Any]:
    """The page read raw, as before ``render`` existed; a read that is a shell (``g6.fetch.shell``'s rule, the one
    render \"auto\" renders by) says so in ``hint``, so an agent knows its empty text is not the page's."""
    from g6.adapters.html.page import MAX_EXTRACT_BYTES
    from g6.compat.knowledge_fetcher import page_result
    from g6.fetch.capture import prepare_fetch
    from g6.fetch.shell import shell_verdict

    prepared = prepare_fetch(ev.store, c, url, extract=extract)
    result = prepared.result(ev.record(prepared.receipt))
    reply = page_result(ev, result).to_json()
    resp, body = prepared.page.response, prepared.body
    if body is None and resp.body is not None and resp.body.size <= MAX_EXTRACT_BYTES:
        body = ev.store.read(resp.body.blake3)
    verdict = shell_verdict(resp, body, walled=prepared.receipt.interstitial is not None)
    reply["rendered"] = False
    if verdict.shell:
        reply["hint"] = SHELL_HINT.format(why=verdict.why)
    return reply


def _rendered_read(ev: Any, c: Any, url: str, extract: str, mode: str, rd: Any, hard_cap: int | None,
                   ) -> dict[str, Any]:
    """``g6 fetch URL --render MODE --json``: the raw read, then the capture when it renders, every receipt appended
    at once; ``detail.render`` and ``rendered`` as the capture receipt records the render (never as attempted)."""
    from g6.adapters.browser import BrowserError
    from g6.cli.fetch import told_result
    from g6.compat.knowledge_fetcher import page_result
    from g6.fetch.render import fetch_page

    try:
        result = fetch_page(ev, c, url, render_mode=mode, renderer=rd, extract=extract)
    except BrowserError as e:  # the raw read was sent: never a "rejected" reply (nothing would have been sent)
        return {"outcome": "error", "code": getattr(e, "code", OUTSIDE_PROGRAM_MISSING), "status": BLOCKED,
                "reason": "browser_failed",
                "message": bounded(f"the page was read raw (its request was sent), then the browser failed before "
                                   f"any receipt was kept: {e}")}
    result, _ = told_result(ev, result, rd.limits, hard_cap)
    reply = page_result(ev, result).to_json()
    render = result.detail.get("render")
    reply["rendered"] = bool(isinstance(render, dict) and render.get("rendered"))
    return reply


@TOOLS.tool(title="Search papers",
            description="Search a paper source (arxiv, oai_pmh, openalex, semantic_scholar) with the options of "
                        "`g6 search`; every page is kept and receipted with the source's own total and whether "
                        "every match came back. " + gate_note("search"),
            open_world=True)
def search(
    ctx: ToolContext,
    source: Annotated[Literal["arxiv", "oai_pmh", "openalex", "semantic_scholar"], Field(
        description="The paper source to search (the `sources` tool lists them and what each needs).")],
    query: Annotated[str | None, Field(description=(
        "The search words, in the source's own query syntax (arXiv: e.g. 'ti:grounding AND cat:cs.CL'). "
        "oai_pmh takes none: it lists records by set and date."))] = None,
    max_results: Annotated[int, Field(ge=1, le=1000, description=(
        "Most papers to return in all, over every page (the CLI's --max-results)."))] = 25,
    page_size: Annotated[int | None, Field(ge=1, description=(
        "Papers asked for per request (--page-size); default: the source's own page size, capped by "
        "max_results."))] = None,
    max_pages: Annotated[int, Field(ge=1, description=(
        "Most pages (requests) to read before stopping (--max-pages); stopping early is reported as "
        "complete=false, never as the whole answer."))] = 20,
    categories: Annotated[list[str] | None, Field(description=(
        "arXiv only: category codes such as cs.CL (--category), checked against arXiv's list before "
        "anything is sent."))] = None,
    filters: Annotated[dict[str, str] | None, Field(description=(
        "OpenAlex only: filters as {key: value}, e.g. {\"publication_year\": \"2024\"} (--filter KEY:VALUE)."
    ))] = None,
    fields: Annotated[list[str] | None, Field(description=(
        "Semantic Scholar only: fields to return, e.g. [\"title\", \"year\"] (--field)."))] = None,
    mode: Annotated[Literal["relevance", "bulk"], Field(description=(
        "Semantic Scholar only: relevance search or bulk search (--mode)."))] = "relevance",
    endpoint: Annotated[str | None, Field(description=(
        "OAI-PMH only, and needed there: the repository's base URL (--endpoint), e.g. "
        "https://export.arxiv.org/oai2."))] = None,
    set_spec: Annotated[str | None, Field(description="OAI-PMH only: the set to list (--set), e.g. cs.")]
    = None,
    since: Annotated[str | None, Field(description=(
        "OAI-PMH only: the earliest datestamp, YYYY-MM-DD (--since; OAI-PMH's 'from')."))] = None,
    until: Annotated[str | None, Field(description=(
        "OAI-PMH only: the latest datestamp, YYYY-MM-DD (--until)."))] = None,
    metadata_prefix: Annotated[str, Field(min_length=1, description=(
        "OAI-PMH only: the metadata format to ask for (--metadata-prefix), e.g. oai_dc or arXiv."))]
    = "oai_dc",
    verb: Annotated[Literal["ListRecords", "ListIdentifiers"], Field(description=(
        "OAI-PMH only: list full records or only their identifiers (--verb)."))] = "ListRecords",
) -> dict[str, Any]:  # no allowlist field: a source's host is the operator's setting, not the agent's
    from g6.adapters.sources.search import SearchRequest
    from g6.compat.knowledge_fetcher import search_result
    from g6.fetch.capture import search as do_search

    req = SearchRequest(query=query, max_results=max_results, page_size=page_size, max_pages=max_pages,
                        categories=tuple(categories or ()), filters=filters or {}, fields=tuple(fields or ()),
                        mode=mode, endpoint=endpoint, set_spec=set_spec, since=since, until=until,
                        metadata_prefix=metadata_prefix, verb=verb)
    src = ctx.settings.sources().get(source)
    # G6_MAX_BYTES is a web page's byte cap, not a search page's (the search caps its own replies)
    with ctx.home() as ev, ctx.client(replace(ctx.policy(), max_bytes=None)) as c:
        return untrusted(search_result(ev, do_search(ev, c, src, req)).to_json())
