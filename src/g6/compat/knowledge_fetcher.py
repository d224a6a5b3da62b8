"""``g6.knowledge.knowledge_fetcher``: a page or a paper search as one ``fetch`` with a ``source``.

    from g6.knowledge.knowledge_fetcher import FetchRequest, fetch, SOURCES

    found = fetch(FetchRequest(source="arxiv", query="citation grounding", categories=["cs.CL"]))
    found.outcome, found.code, found.status, found.total, found.complete, found.documents

A thin face over the library, not a second implementation: ``source="http"`` is
``g6.fetch.capture.fetch`` (checked client, store, signed receipt), every other source is
``g6.fetch.capture.search`` over the registered paper source. What this module adds is the document's
shape: each document's ``source`` (the address read after redirects, the SHA-256 of the bytes
read, when they were fetched), ``media_type``, ``title``, ``locator``, ``unread``,
``converted_by``, ``trust``; ``kept`` for a binary body; ``total`` and ``complete``; the code
and the ``status`` word. Refusals are exceptions with ``.code``: ``G6_E_KNOWLEDGE_UNKNOWN_SOURCE``,
``G6_E_KNOWLEDGE_FETCH_INPUT`` and ``G6_E_KNOWLEDGE_FETCH_ADAPTER``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.search import SearchRequest, Source
from g6.compat import http
from g6.errors import FetchAdapterError, FetchInputError, G6Error, UnknownSourceError
from g6.fetch.capture import FetchResult as PageResult
from g6.fetch.capture import SearchResult
from g6.home import EvidenceHome

__all__ = ["SOURCES", "Document", "FetchRequest", "FetchResult", "HttpAdapter", "Sources", "fetch", "run"]

HTML_CONVERTER = "g6.knowledge html_to_text"
_HTML = ("text/html", "application/xhtml+xml")


_LISTS = ("categories", "fields", "allowlist")
_INTS = ("max_results", "max_bytes")


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """One fetch. ``url`` for ``http`` (the page) and ``oai_pmh`` (the repository's base URL);
    ``query`` (and for arXiv ``categories``) for the paper sources."""

    source: str
    url: str | None = None
    query: str | None = None
    categories: Sequence[str] = ()
    max_results: int = 25
    set_spec: str | None = None
    since: str | None = None
    until: str | None = None
    filters: Mapping[str, str] = field(default_factory=dict)
    fields: Sequence[str] = ()
    mode: str = "relevance"
    mailto: str | None = None
    extract: str = "text"
    max_bytes: int | None = None
    allowlist: Sequence[str] = ()

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> FetchRequest:
        """The request an MCP ``g6_invoke`` call names; an unknown argument is refused."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(args) - names)
        if unknown:
            raise FetchInputError(f"fetch takes no argument {', '.join(map(repr, unknown))}; "
                                  f"known: {', '.join(sorted(names))}")
        if "source" not in args:
            raise FetchInputError("fetch needs a source: http, arxiv, oai_pmh, openalex or semantic_scholar")
        for name, value in args.items():
            if value is None:
                continue
            if name in _LISTS:
                if isinstance(value, str) or not isinstance(value, list | tuple) \
                        or not all(isinstance(v, str) for v in value):
                    raise FetchInputError(f"{name} is a list of strings")
            elif name == "filters":
                if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                    raise FetchInputError("filters maps names to strings")
            elif name in _INTS:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise FetchInputError(f"{name} is a whole number")
            elif not isinstance(value, str):
                raise FetchInputError(f"{name} is a string")
        return cls(**{k: v for k, v in args.items() if v is not None})

    def search_request(self) -> SearchRequest:
        return SearchRequest(query=self.query, max_results=self.max_results, categories=tuple(self.categories),
                             filters=dict(self.filters), fields=tuple(self.fields), mode=self.mode,
                             endpoint=self.url if self.source == "oai_pmh" else None, set_spec=self.set_spec,
                             since=self.since, until=self.until)


@dataclass(frozen=True, slots=True)
class HttpAdapter:
    """The ``http`` source: one web page through the checked client (robots.txt applies)."""

    pause: float = 1.0
    name: str = "http"
    obey_robots: bool = True
    robots: bool = True
    needs: str = "a url; no key"
    key_env: str | None = None


class Sources:
    """The sources ``fetch`` knows: ``http``, the built-in paper sources (configured from the
    settings at fetch time, so ``G6_ARXIV_URL`` and friends apply) and any ``register``-ed one."""

    def __init__(self) -> None:
        self._own: dict[str, Any] = {}

    def register(self, adapter: Any, *, replace_existing: bool = False) -> Any:
        """Add a source of your own: the paper-source protocol of ``g6.adapters.sources.search.Source``
        (``name``, ``pause``, ``first_url``, ``next_url``, ``parse``, ``complete``, ``headers``).
        It reaches the network only through the client ``fetch`` gives it."""
        name = getattr(adapter, "name", None)
        if not isinstance(name, str) or not name:
            raise FetchInputError("a source adapter needs a name")
        if (name in self._own or name in _BUILT_IN) and not replace_existing:
            raise FetchInputError(f"a source named {name!r} is registered already")
        self._own[name] = adapter
        return adapter

    def unregister(self, name: str) -> None:
        self._own.pop(name, None)

    def names(self) -> list[str]:
        return sorted({*_BUILT_IN, *self._own})

    def get(self, name: str, values: Mapping[str, str] | None = None) -> Any:
        if name in self._own:
            return self._own[name]
        if name == "http":
            from g6.config import non_negative_number

            pause = non_negative_number("G6_HOST_PAUSE", (values or {}).get("G6_HOST_PAUSE"), float, 1.0)
            return HttpAdapter(pause=float(pause))  # type: ignore[arg-type]
        if name in _BUILT_IN:
            from g6.config import sources_from

            return sources_from(values or {}).get(name)
        raise UnknownSourceError(f"unknown source {name!r}; known: {', '.join(self.names())}")

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def describe(self, values: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """What each source needs, the pause it keeps and whether robots.txt applies."""
        out = []
        for name in self.names():
            a = self.get(name, values)
            out.append({"name": name, "needs": getattr(a, "needs", ""), "pause_seconds": getattr(a, "pause", None),
                        "robots_txt": obeys_robots(a), "key_env": getattr(a, "key_env", None)})
        return out


_BUILT_IN = ("arxiv", "http", "oai_pmh", "openalex", "semantic_scholar")
SOURCES = Sources()
"""The default registry: ``SOURCES.register(my_adapter)`` adds a source of your own."""


def obeys_robots(adapter: Any) -> bool:
    return bool(getattr(adapter, "obey_robots", getattr(adapter, "robots", False)))


class AdapterView:
    """A paper source as ``clients(adapter)`` sees it: its own attributes plus ``obey_robots``."""

    def __init__(self, source: Any) -> None:
        self._source = source

    @property
    def obey_robots(self) -> bool:
        return obeys_robots(self._source)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)


@dataclass(frozen=True, slots=True)
class Document:
    """One document that came back. Its text is untrusted data, never instructions."""

    source: Mapping[str, Any]  # {"url": address read after redirects, "sha256": of the bytes read, "fetched": when}
    media_type: str | None
    title: str | None
    locator: str | None
    text: str | None
    unread: Mapping[str, int] = field(default_factory=dict)
    converted_by: str | None = None
    trust: str = "untrusted"
    extra: Mapping[str, Any] = field(default_factory=dict)  # the source's own fields (authors, links…)

    def to_json(self) -> dict[str, Any]:
        return {**dict(self.extra), "trust": self.trust, "source": dict(self.source), "media_type": self.media_type,
                "title": self.title, "locator": self.locator, "text": self.text, "unread": dict(self.unread),
                "converted_by": self.converted_by}


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What one fetch said. ``outcome`` is ok, empty or the failure it was; ``status`` is
    ``qualified-draft`` or ``blocked-escalated``; ``total``/``complete`` are ``None`` for a page."""

    source: str
    outcome: Outcome
    reason: str
    documents: list[Document]
    kept: str | None
    total: int | None
    complete: bool | None
    http_status: int | None
    receipt_ids: tuple[str, ...]
    reply: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the full JSON (CLI --json, MCP)

    @property
    def code(self) -> str:
        return self.outcome.code("fetch")

    @property
    def status(self) -> str:
        return self.outcome.status

    def to_json(self) -> dict[str, Any]:
        return dict(self.reply)


# -- building the document's shape from the library's results ----------------------------------
_ORDER = ("outcome", "code", "status", "trust", "reason", "source", "request", "receipt_id", "receipt_ids",
          "requested_url", "final_url", "http_status", "byte_count", "truncated", "content", "kept", "total",
          "complete", "returned")


def _ordered(d: Mapping[str, Any]) -> dict[str, Any]:
    """The reply with the document's fields first, in one order for pages and searches."""
    return {**{k: d[k] for k in _ORDER if k in d}, **{k: v for k, v in d.items() if k not in _ORDER}}


def _fetched_at(home: EvidenceHome, receipt_id: str) -> str:
    return home.ledger.get(receipt_id).fetched_at


def page_result(home: EvidenceHome, r: PageResult) -> FetchResult:
    """A page fetch (``g6.fetch.capture.fetch``) in the knowledge fetcher's shape."""
    when = _fetched_at(home, r.receipt_id)
    sha = (r.content or {}).get("sha256")
    docs = []
    for d in r.documents:
        media = d.content_type
        docs.append(Document(
            source={"url": d.url, "sha256": sha, "fetched": when}, media_type=media, title=d.title, locator=d.url,
            text=d.text, unread=d.unread, converted_by=HTML_CONVERTER if media in _HTML else None,
            extra=d.to_json()))
    kept = sha if r.outcome is Outcome.OK and not docs and sha else None
    reply = r.to_json()
    reply["http_status"] = reply.pop("status")
    robots = reply.get("detail", {}).get("robots")
    if isinstance(robots, dict) and "status" in robots:  # robots.txt's HTTP status: http_status here too
        reply["detail"]["robots"] = {("http_status" if k == "status" else k): v for k, v in robots.items()}
    reply.update(source="http", status=r.outcome.status, documents=[d.to_json() for d in docs], kept=kept,
                 total=None, complete=None, receipt_ids=[r.receipt_id])
    return FetchResult("http", r.outcome, r.reason, docs, kept, None, None, r.status, (r.receipt_id,),
                       _ordered(reply))


def search_result(home: EvidenceHome, r: SearchResult) -> FetchResult:
    """A paper search (``g6.fetch.capture.search``) in the knowledge fetcher's shape: each paper's
    ``source`` is the result page it was read from."""
    pages = []
    for p in r.pages:
        receipt = home.ledger.get(p["receipt_id"])
        pages.append((receipt, int(p.get("returned") or 0)))
    owners: list[Any] = [rc for rc, n in pages for _ in range(n)]
    docs = []
    for i, paper in enumerate(r.papers):
        rc = owners[i] if i < len(owners) else pages[-1][0]
        ctype = (rc.detail or {}).get("content_type")
        extra = paper.to_json()
        extra.pop("source", None)
        docs.append(Document(
            source={"url": rc.final_url, "sha256": (rc.content or {}).get("sha256"), "fetched": rc.fetched_at},
            media_type=ctype.split(";", 1)[0].strip().lower() if isinstance(ctype, str) else None,
            title=paper.title, locator=paper.locator, text=paper.abstract, extra=extra))
    reply = r.to_json()
    reply["pages"] = [{**{k: v for k, v in p.items() if k != "status"}, "http_status": p.get("status")}
                      for p in reply["pages"]]
    last_status = pages[-1][0].http_status if pages else None
    reply.update(status=r.outcome.status, documents=[d.to_json() for d in docs], kept=None, http_status=last_status)
    return FetchResult(r.source, r.outcome, r.reason, docs, None, r.total, r.complete, last_status,
                       tuple(r.receipt_ids), _ordered(reply))


def sources_reply(values: Mapping[str, str] | None = None, registry: Sources | None = None) -> dict[str, Any]:
    return {"outcome": "ok", "code": "G6_E_KNOWLEDGE_SOURCES_LISTED", "status": "qualified-draft",
            "sources": (registry or SOURCES).describe(values)}


# -- the op ----------------------------------------------------------------------------------
ClientFor = Callable[[Any], http.Client]


def check_request(request: FetchRequest) -> None:
    """Refusals before anything is sent."""
    if not isinstance(request.source, str) or not request.source:
        raise FetchInputError("fetch needs a source: http, arxiv, oai_pmh, openalex or semantic_scholar")
    if request.source in ("http", "oai_pmh") and not (isinstance(request.url, str) and request.url.strip()):
        raise FetchInputError(f"a {request.source} fetch needs a url")
    if request.source == "http":
        if request.extract not in ("text", "metadata", "links"):
            raise FetchInputError("extract must be text, metadata or links")
    elif request.source in _BUILT_IN and request.source != "oai_pmh":
        if not (request.query and request.query.strip()) and not request.categories and not request.filters:
            raise FetchInputError(f"a {request.source} fetch needs a query")
    if request.source == "arxiv":
        from g6.adapters.sources.arxiv import search_query

        search_query(request.query, tuple(request.categories))  # a malformed category is refused here
    if not isinstance(request.max_results, int) or request.max_results < 1:
        raise FetchInputError("max_results must be at least 1")
    if request.max_bytes is not None and (not isinstance(request.max_bytes, int) or request.max_bytes < 0):
        raise FetchInputError("max_bytes must be 0 or more")


def run(home: EvidenceHome, request: FetchRequest, client_for: ClientFor, *, registry: Sources | None = None,
        values: Mapping[str, str] | None = None) -> FetchResult:
    """``fetch`` against an open evidence home with a client per source (the CLI and MCP use this)."""
    from g6.fetch.capture import fetch as fetch_page
    from g6.fetch.capture import search as run_search

    reg = registry or SOURCES
    adapter = reg.get(request.source, values)  # UnknownSourceError before anything else
    check_request(request)
    if isinstance(adapter, HttpAdapter):
        client = client_for(adapter)
        pol = dataclasses.replace(client.policy, max_bytes=request.max_bytes) if request.max_bytes is not None \
            else client.policy
        if request.allowlist:
            pol = dataclasses.replace(pol, allowlist=tuple(request.allowlist))
        page = fetch_page(home, client, request.url or "", extract=request.extract, policy=pol)
        return page_result(home, page)
    source: Source = adapter
    if request.mailto and hasattr(source, "mailto"):
        source = dataclasses.replace(source, mailto=request.mailto)  # type: ignore[type-var]
    try:
        client = client_for(adapter if hasattr(adapter, "obey_robots") else AdapterView(adapter))
        found = run_search(home, client, source, request.search_request())
    except G6Error:
        raise
    except Exception as e:  # noqa: BLE001 - an adapter's own bug is refused with its code, never a traceback
        raise FetchAdapterError(f"the {request.source!r} source adapter raised {type(e).__name__}: "
                                f"{str(e)[:200]}") from e
    return search_result(home, found)


def default_client_for(settings: Any) -> ClientFor:
    """A checked client per source from the operator's settings (loopback only when they allow it)."""
    def make(adapter: Any) -> http.Client:
        pol = settings.fetch_policy()
        if not isinstance(adapter, HttpAdapter):  # a page's byte cap is not a search page's
            pol = dataclasses.replace(pol, max_bytes=None)
        return http.Client(pol, obey_robots=obeys_robots(adapter))
    return make


def fetch(request: FetchRequest, clients: ClientFor | Mapping[str, http.Client] | None = None, *,
          home: EvidenceHome | str | None = None, registry: Sources | None = None) -> FetchResult:
    """Fetch a page or a search; keep the bytes and sign a receipt in the evidence home
    (``home``, else ``G6_HOME``). ``clients`` gives your own ``http.Client`` per source: a function
    of the source adapter, or a mapping from source name."""
    from g6.config import load_settings

    settings = load_settings()
    if clients is None:
        client_for: ClientFor = default_client_for(settings)
    elif isinstance(clients, Mapping):
        table = clients

        def client_for(adapter: Any) -> http.Client:
            try:
                return table[adapter.name]
            except KeyError:
                raise FetchInputError(f"clients= holds no client for {adapter.name!r}") from None
    else:
        client_for = clients
    if isinstance(home, EvidenceHome):
        ev = home
        if not ev.keys.exists():
            ev.keys.init()
    elif home is not None:
        ev = EvidenceHome(home)
        try:
            ev.keys.ensure()
        except BaseException:
            ev.close()
            raise
    else:
        ev = settings.open_home(need_key=True)
    try:
        return run(ev, request, client_for, registry=registry, values=settings.values)
    finally:
        if not isinstance(home, EvidenceHome):
            ev.close()
