"""The typed Elasticsearch tools (``es_mapping``, ``es_search``, ``es_count``, ``es_get_doc``) on the
server's configured cluster, and :func:`es_reply`, which they and ``g6_invoke``'s ``ctx_elastic`` share:
every read is receipted and its hits come back as untrusted passages."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import Field

from g6.mcp.context import ToolContext, ToolSet, untrusted
from g6.mcp.gate import gate_note

TOOLS = ToolSet()

# Parameter types shared by several tools, each with the description an agent reads in the tool's schema.
Index = Annotated[str, Field(min_length=1, description=(
    "The Elasticsearch index (or alias) name on the server's configured cluster (G6_ELASTIC_URL)."))]
EsFields = Annotated[list[str] | None, Field(description=(
    "Fields to match the words in, e.g. [\"title\", \"body\"]; checked against the mapping first. "
    "Default: every text field."))]
EsFilters = Annotated[dict[str, str | int | float | bool] | None, Field(description=(
    "Exact filters on keyword, number, date or boolean fields, as {field: value}, e.g. {\"team\": \"hr\"}; "
    "a filter on a text field is refused."))]
EsQuery = Annotated[str | None, Field(description=(
    "Plain words to match (not Elasticsearch query DSL); none matches every document."))]


def es_reply(ctx: ToolContext, index: str, fields: Sequence[str], call: Callable[[Any], Any]) -> dict[str, Any]:
    """``call(idx)``'s answer as a reply, on the index opened in the evidence home. An input the index
    refuses (raised by ``call`` too) is its own typed reply; nothing after it is sent."""
    from g6.compat.ctx_elastic import reply_for
    from g6.errors import ElasticInputError
    from g6.fetch.elastic import EsIndex

    try:
        with ctx.home() as ev, EsIndex(index, tuple(fields), home=ev,
                                       url=ctx.settings.values.get("G6_ELASTIC_URL") or None,
                                       api_key=ctx.settings.secret("G6_ELASTIC_API_KEY")) as idx:
            return untrusted(reply_for(call(idx)))
    except ElasticInputError as e:
        return e.to_json()


@TOOLS.tool(title="Elasticsearch mapping", description="The fields of an Elasticsearch index and their types. "
                                                       + gate_note("es_mapping"),
            open_world=True)
def es_mapping(ctx: ToolContext, index: Index) -> dict[str, Any]:
    return es_reply(ctx, index, (), lambda idx: idx.mapping())


@TOOLS.tool(title="Elasticsearch search",
            description="Words over chosen fields plus exact filters, checked against the mapping first; the "
                        "hits come back as passages. " + gate_note("es_search"),
            open_world=True)
def es_search(ctx: ToolContext, index: Index, query: EsQuery = None, fields: EsFields = None,
              filters: EsFilters = None,
              top_k: Annotated[int, Field(ge=1, le=1000, description="Most hits to return.")] = 10,
              ) -> dict[str, Any]:
    return es_reply(ctx, index, fields or (), lambda idx: idx.search(query, filters or {}, top_k))


@TOOLS.tool(title="Elasticsearch count", description="How many documents match; a partial count is refused. "
                                                     + gate_note("es_count"),
            open_world=True)
def es_count(ctx: ToolContext, index: Index, query: EsQuery = None, fields: EsFields = None,
             filters: EsFilters = None) -> dict[str, Any]:
    return es_reply(ctx, index, fields or (), lambda idx: idx.count(query, filters or {}))


@TOOLS.tool(title="Elasticsearch document", description="One document's _source. " + gate_note("es_get_doc"),
            open_world=True)
def es_get_doc(ctx: ToolContext, index: Index,
               id: Annotated[str, Field(min_length=1, description="The document's _id in the index.")],  # noqa: A002
               ) -> dict[str, Any]:
    return es_reply(ctx, index, (), lambda idx: idx.get(id))
