"""``g6 es``: a local Elasticsearch, read only (mapping, search, count, get)."""

# Imports: the Elasticsearch reader (g6.adapters.sources.elasticsearch, g6.fetch.elastic) and its replies (g6.compat)
# only inside the commands, so `g6 --help` does not load them.
from __future__ import annotations

import json
from typing import Any

import click

from g6.cli.app import Ctx, cli, emit_json, fail, finish, info, one_line, pass_ctx
from g6.cli.options import json_option


@cli.group("es", short_help="A local Elasticsearch: mapping, search, count, get.")
def es_group() -> None:
    """A local Elasticsearch (G6_ELASTIC_URL, loopback only): mapping, search, count, get. Never writes."""


def _es_run(c: Ctx, index: str, as_json: bool, op: str, *args: Any) -> None:
    from g6.adapters.sources.elasticsearch import ElasticInputError
    from g6.fetch.elastic import EsIndex

    fields = args[0] if op in ("search", "count") else ()
    try:
        with c.evidence(need_key=True) as ev, \
                EsIndex(index, fields, home=ev, url=c.settings.values.get("G6_ELASTIC_URL") or None,
                        api_key=c.settings.secret("G6_ELASTIC_API_KEY")) as idx:
            if op == "mapping":
                answer = idx.mapping()
            elif op == "search":
                answer = idx.search(args[1], args[2], args[3])
            elif op == "count":
                answer = idx.count(args[1], args[2])
            else:
                answer = idx.get(args[0])
    except ElasticInputError as e:
        if as_json:
            emit_json(e.to_json())
        fail(f"{e.code}: {e}" + (f" {json.dumps(e.detail)}" if e.detail and not as_json else ""))
    r = answer.result
    if as_json:
        from g6.compat.ctx_elastic import reply_for

        emit_json(reply_for(answer))
    else:
        _es_text(op, r)
        info("receipts: " + " ".join(answer.receipt_ids))
    finish(r.outcome.is_success)


def _es_text(op: str, r: Any) -> None:
    """A read in text mode: what it found on stdout (for `es get`, only the document, so it pipes into jq);
    a read that found nothing to show (refused, not found, unreachable…) is a `g6:` line on stderr."""
    head = f"{r.outcome.value} {r.code}" + (f" reason={r.reason}" if r.reason else "")
    message = r.detail.get("message")
    if not (r.outcome.is_success or r.outcome.value == "partial"):
        click.echo(f"g6: {head}" + (f": {one_line(str(message))}" if message else ""), err=True)
        return
    if message:  # a partial answer: the server's words on what is missing
        click.echo(f"g6: {head}: {one_line(str(message))}", err=True)
    if op == "get":
        click.echo(json.dumps(r.document, indent=2, ensure_ascii=False))
        return
    click.echo(head)
    if op == "mapping" and r.mapping is not None:
        # one concrete index, or an alias over several: each index with its own fields
        per_index = {r.concrete_index: r.mapping} if r.concrete_index else dict(r.mapping)
        for index, fields in per_index.items():
            click.echo(f"index: {index}")
            for path, desc in fields.items():
                extra = f" fields={desc['fields']}" if "fields" in desc else ""
                nested = f" (nested in {desc['nested_in']})" if "nested_in" in desc else ""
                click.echo(f"  {path:<30} {desc['type']}{extra}{nested}")
    elif op == "search" and r.total is not None:
        click.echo(f"total={r.total} relation={r.total_relation}")
        for p in r.passages:
            click.echo(f"{p.rank:>3}. score={p.score} {p.address}")
            click.echo("     " + p.text.replace("\n", " | ")[:300])
    elif op == "count" and r.count is not None:
        click.echo(f"count={r.count}")


def _filters(items: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k:
            fail(f"--filter wants FIELD=VALUE, got {item!r}")
        out[k] = v
    return out


def _query_options(f: Any) -> Any:
    """What `es search` and `es count` match: --field (repeatable) and --filter FIELD=VALUE (repeatable)."""
    f = click.option("--filter", "filters", multiple=True, metavar="FIELD=VALUE", help="Exact filter (repeatable).")(f)
    return click.option("--field", "fields", multiple=True,
                        help="Field to match (repeatable; default: every text field).")(f)


@es_group.command("mapping", short_help="The fields of INDEX and their types.")
@click.argument("index")
@json_option("es-mapping.v1", help="Print the reply as JSON")
@pass_ctx
def es_mapping(c: Ctx, index: str, as_json: bool) -> None:
    """The fields of INDEX and their types, keyed by the concrete index."""
    _es_run(c, index, as_json, "mapping")


@es_group.command("search", short_help="Search chosen fields, each checked against the mapping.")
@click.argument("index")
@click.argument("query", required=False)
@_query_options
@click.option("--top-k", type=click.IntRange(1, 1000), default=10, show_default=True,
              help="Return at most this many hits.")
@json_option("es-search.v1", help="Print the reply as JSON")
@pass_ctx
def es_search(c: Ctx, index: str, query: str | None, fields: tuple[str, ...], filters: tuple[str, ...],
              top_k: int, as_json: bool) -> None:
    """Words over chosen fields plus exact filters; every field checked against the mapping first."""
    _es_run(c, index, as_json, "search", fields, query, _filters(filters), top_k)


@es_group.command("count", short_help="How many documents match (never a partial count).")
@click.argument("index")
@click.argument("query", required=False)
@_query_options
@json_option("es-count.v1", help="Print the reply as JSON")
@pass_ctx
def es_count(c: Ctx, index: str, query: str | None, fields: tuple[str, ...], filters: tuple[str, ...],
             as_json: bool) -> None:
    """How many documents match; a partial count is refused, never reported as the count."""
    _es_run(c, index, as_json, "count", fields, query, _filters(filters))


@es_group.command("get", short_help="Print one document's _source.")
@click.argument("index")
@click.argument("doc_id")
@json_option("es-get.v1", help="Print the whole reply as JSON ({}); without it only the document")
@pass_ctx
def es_get(c: Ctx, index: str, doc_id: str, as_json: bool) -> None:
    """One document's _source: only the document goes to stdout (`g6 es get hb 1 | jq .title`)."""
    _es_run(c, index, as_json, "get", doc_id)
