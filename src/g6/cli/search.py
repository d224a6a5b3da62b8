"""``g6 sources`` and ``g6 search``: the paper sources."""

# Imports: the adapters are loaded by g6.config anyway (top); g6.fetch.capture only inside `search`, so
# `g6 --help` does not load it.
from __future__ import annotations

from dataclasses import replace

import click

from g6.adapters.net.redact import redact_text
from g6.adapters.sources.search import SearchRequest
from g6.cli.app import Ctx, cli, emit_json, fail, finish, info, knowledge_reply, pass_ctx, progress, refusal_json
from g6.cli.options import json_option, quiet_option
from g6.errors import InputError


@cli.command("sources", short_help="List the paper sources and what each needs.")
@json_option("sources.v1", help="Print the sources as JSON")
@pass_ctx
def sources_cmd(c: Ctx, as_json: bool) -> None:
    """List the paper sources, what each needs, its pause and whether robots.txt applies. Fetches nothing."""
    rows = []
    for src in c.sources():
        base = getattr(src, "base_url", None)
        rows.append({"name": src.name, "needs": src.needs, "pause_seconds": src.pause, "robots_txt": src.robots,
                     "base_url": redact_text(base, c.settings.secret_values()) if base else None,
                     "key_env": src.key_env,
                     "key_set": bool(src.key_env and c.settings.secret(src.key_env))})
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        key = f"key {r['key_env']} ({'set' if r['key_set'] else 'not set'})" if r["key_env"] else "no key"
        click.echo(f"{r['name']:<17} pause {r['pause_seconds']:g}s  robots.txt {'yes' if r['robots_txt'] else 'no'}"
                   f"  {key}  {r['base_url'] or '(endpoint given per search)'}")
        click.echo(f"{'':<17} needs: {r['needs']}")


@cli.command("search", short_help="Search a paper source; every page kept and receipted.")
@click.argument("source")
@click.argument("query", required=False)
@click.option("--category", "categories", multiple=True, help="arXiv category (repeatable), checked locally.")
@click.option("--max-results", type=click.IntRange(min=1), default=25, show_default=True,
              help="Stop after this many papers.")
@click.option("--page-size", type=click.IntRange(min=1), default=None,
              help="Papers asked for per page (default: set by the source and --max-results).")
@click.option("--max-pages", type=click.IntRange(min=1), default=20, show_default=True,
              help="Stop after this many pages (each one kept and receipted).")
@click.option("--filter", "filters", multiple=True, metavar="KEY:VALUE", help="OpenAlex filter (repeatable).")
@click.option("--field", "fields", multiple=True, help="Semantic Scholar field (repeatable).")
@click.option("--mode", type=click.Choice(["relevance", "bulk"]), default="relevance", show_default=True,
              help="Semantic Scholar: relevance search (/paper/search) or bulk search (/paper/search/bulk).")
@click.option("--endpoint", help="OAI-PMH base URL.")
@click.option("--set", "set_spec", help="OAI-PMH set.")
@click.option("--since", help="OAI-PMH from (YYYY-MM-DD).")
@click.option("--until", help="OAI-PMH until (YYYY-MM-DD).")
@click.option("--metadata-prefix", default="oai_dc", show_default=True, help="OAI-PMH metadataPrefix.")
@click.option("--verb", type=click.Choice(["ListRecords", "ListIdentifiers"]), default="ListRecords",
              show_default=True, help="OAI-PMH verb: full records, or identifiers and datestamps only.")
@click.option("--allow", multiple=True, metavar="HOST", help="Allowlist pattern (repeatable).")
@json_option("search-result.v1", "refusal.v1", help="Print the result as JSON ({}; a refused search: {})")
@quiet_option
@pass_ctx
def search_cmd(c: Ctx, source: str, query: str | None, categories: tuple[str, ...], max_results: int,
               page_size: int | None, max_pages: int, filters: tuple[str, ...], fields: tuple[str, ...], mode: str,
               endpoint: str | None, set_spec: str | None, since: str | None, until: str | None,
               metadata_prefix: str, verb: str, allow: tuple[str, ...], as_json: bool) -> None:
    """Search a paper source; every page is kept and receipted with the source's own count."""
    from g6.fetch.capture import search

    parsed_filters = {}
    for f in filters:
        k, sep, v = f.partition(":")
        if not sep or not k or not v:
            fail(f"--filter wants KEY:VALUE, got {f!r}")
        parsed_filters[k] = v
    request = SearchRequest(query=query, max_results=max_results, page_size=page_size, max_pages=max_pages,
                            categories=categories, filters=parsed_filters, fields=fields, mode=mode,
                            endpoint=endpoint, set_spec=set_spec, since=since, until=until,
                            metadata_prefix=metadata_prefix, verb=verb)
    policy = replace(c.policy(allow), max_bytes=None)
    try:
        src = c.sources().get(source)
        with c.evidence(need_key=True) as ev, c.settings.client(policy) as client:
            with progress(f"searching {source}", "pages") as bar:  # one page is no progress to show
                result = search(ev, client, src, request, progress=bar if max_pages > 1 else None)
            reply = knowledge_reply(ev, result) if as_json else None
    except InputError as e:
        if as_json:
            emit_json(refusal_json(e, c.settings.secret_values()))
        fail(redact_text(f"{e.code}: {e}", c.settings.secret_values()))
    if as_json:
        emit_json(reply)
    else:
        total = "unknown" if result.total is None else f"{result.total:,}"
        click.echo(f"{result.outcome.value} {result.code} total={total} returned={len(result.papers)}"
                   f" complete={'yes' if result.complete else 'no'} pages={len(result.pages)}"
                   + (f" deleted={result.detail['deleted']}" if result.detail.get("deleted") else ""))
        if result.reason:
            click.echo(f"reason: {result.reason}")
        for i, p in enumerate(result.papers, 1):
            who = ", ".join(p.authors[:3]) + (" et al." if len(p.authors) > 3 else "")
            click.echo(f"{i:>3}. {p.title}  [{who}]  {p.locator or ''}")
        info("receipts: " + " ".join(result.receipt_ids))
    finish(result.outcome.is_success)
