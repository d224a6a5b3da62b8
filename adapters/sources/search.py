"""What every paper source shares: the request, the parsed page, the paging loop, the registry.

A source builds each page's URL and parses each page's bytes (a pure function, fuzzed); the loop
here fetches every page through the checked client it is given, so searches get the same address,
allowlist, size and pause checks as a web fetch. Only a source's own explicit empty answer is
``empty``; a failed page is its typed failure, never "no results".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from g6.adapters.net.checked_client import CheckedClient, FetchResponse
from g6.adapters.outcomes import Outcome, outcome_for_status
from g6.errors import SearchInputError, UnknownSourceError
from g6.ledger.receipts import utc_now
from g6.store import BlobBackend

# One page of a source's reply is parsed whole (JSON or XML): about 8x its size in memory (an 8 MB
# OpenAlex page: +62 MiB). Past this a page is ``too_large``, keeping a search's peak RSS under the
# same 128 MiB bound as a fetch. Real pages are far smaller (2,000 arXiv entries are ~4 MB).
SEARCH_REPLY_CAP = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Paper:
    """One search hit. Its text fields are untrusted data from the source."""

    source: str
    title: str | None
    authors: tuple[str, ...] = ()
    abstract: str | None = None
    locator: str | None = None  # the paper's own address
    identifiers: Mapping[str, str] = field(default_factory=dict)
    published: str | None = None
    trust: str = "untrusted"

    def to_json(self) -> dict[str, Any]:
        return {"trust": self.trust, "source": self.source, "title": self.title, "authors": list(self.authors),
                "abstract": self.abstract, "locator": self.locator, "identifiers": dict(self.identifiers),
                "published": self.published}


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str | None = None
    max_results: int = 25
    page_size: int | None = None
    max_pages: int = 20
    categories: tuple[str, ...] = ()  # arXiv
    filters: Mapping[str, str] = field(default_factory=dict)  # OpenAlex
    fields: tuple[str, ...] = ()  # Semantic Scholar
    mode: str = "relevance"  # Semantic Scholar: relevance | bulk
    endpoint: str | None = None  # OAI-PMH
    set_spec: str | None = None
    since: str | None = None
    until: str | None = None
    metadata_prefix: str = "oai_dc"
    verb: str = "ListRecords"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SearchRequest:
        """The request a receipt recorded (to re-run a search or re-read its pages)."""
        return cls(query=d.get("query"), max_results=int(d.get("max_results", 25)),
                   categories=tuple(d.get("categories", ())), filters=dict(d.get("filters", {})),
                   fields=tuple(d.get("fields", ())), mode=d.get("mode", "relevance"), endpoint=d.get("endpoint"),
                   set_spec=d.get("set_spec"), since=d.get("since"), until=d.get("until"),
                   metadata_prefix=d.get("metadata_prefix", "oai_dc"), verb=d.get("verb", "ListRecords"))

    def to_json(self) -> dict[str, Any]:
        """What a receipt records of the request: the user's words and parameters, never keys."""
        d: dict[str, Any] = {"query": self.query, "max_results": self.max_results}
        if self.mode != "relevance":
            d["mode"] = self.mode
        if self.verb != "ListRecords":
            d["verb"] = self.verb
        for name in ("categories", "fields"):
            if getattr(self, name):
                d[name] = list(getattr(self, name))
        if self.filters:
            d["filters"] = dict(self.filters)
        if self.metadata_prefix != "oai_dc":
            d["metadata_prefix"] = self.metadata_prefix
        for name in ("endpoint", "set_spec", "since", "until"):
            if getattr(self, name):
                d[name] = getattr(self, name)
        return d


@dataclass(frozen=True, slots=True)
class ParsedPage:
    outcome: Outcome
    reason: str = ""
    papers: tuple[Paper, ...] = ()
    total: int | None = None
    next_cursor: str | None = None  # None: no further page
    partial: bool = False  # the source says this page is incomplete (e.g. timed_out)
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PageRead:
    response: FetchResponse
    parsed: ParsedPage
    url: str
    read_at: str = field(default_factory=utc_now)  # when this page's read ended, for its receipt


@dataclass(frozen=True, slots=True)
class SearchRun:
    """Every page read for one search, and what they add up to."""

    source: str
    request: SearchRequest
    pages: tuple[PageRead, ...]
    outcome: Outcome
    reason: str
    papers: tuple[Paper, ...]
    total: int | None
    complete: bool
    detail: Mapping[str, Any] = field(default_factory=dict)


class Source(Protocol):
    name: str
    pause: float
    robots: bool
    needs: str
    key_env: str | None

    def first_url(self, request: SearchRequest) -> str: ...
    def next_url(self, request: SearchRequest, previous: ParsedPage, collected: int) -> str | None: ...
    def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage: ...
    def complete(self, request: SearchRequest, total: int | None, collected: int, last: ParsedPage) -> bool: ...
    def headers(self) -> tuple[dict[str, str], str | None]: ...


def fetch_failure(resp: FetchResponse) -> ParsedPage:
    """A page that failed before its body meant anything: keep the fetch's typed outcome."""
    d: dict[str, Any] = {}
    if resp.retry_after is not None:
        d["retry_after"] = resp.retry_after
    return ParsedPage(resp.outcome, resp.reason, detail=d)


def status_failure(status: int, reason: str = "") -> ParsedPage:
    return ParsedPage(outcome_for_status(status), reason or f"http_{status}")


def unreadable(status: int, reason: str, message: str | None = None) -> ParsedPage:
    """A body that is not the source's format: on an HTTP failure the status says what happened
    (an error page in another format); on a 2xx the reply itself is ``parse_failed``."""
    if status >= 300:
        return status_failure(status)
    return ParsedPage(Outcome.PARSE_FAILED, reason, detail={"message": message} if message else {})


def run_search(source: Source, client: CheckedClient, store: BlobBackend, request: SearchRequest,
               on_page: Callable[[PageRead], None] | None = None) -> SearchRun:
    """Read page after page. ``on_page`` sees each page as soon as it is read (the caller receipts
    it then, so an interrupted run keeps what it read); a page whose parse was interrupted (Ctrl-C)
    is handed over as ``parse_failed``/``interrupted`` before the interruption goes on."""
    if request.max_results < 1 or request.max_pages < 1:
        raise SearchInputError("max_results and max_pages must be at least 1")
    pages: list[PageRead] = []
    papers: list[Paper] = []
    url: str | None = source.first_url(request)
    headers, secret_host = source.headers()
    total: int | None = None
    partial = False
    policy = replace(client.policy, hard_cap=min(client.policy.hard_cap, SEARCH_REPLY_CAP), max_bytes=None)
    while url is not None and len(pages) < request.max_pages:
        resp = client.fetch(url, store, source=source.name, robots=source.robots, pause=source.pause, policy=policy,
                            accept="application/json, application/atom+xml, application/xml;q=0.9, */*;q=0.5",
                            headers=headers, secret_headers_for=secret_host)
        read_at = utc_now()
        try:
            parsed = _parse(source, request, resp, store)
        except BaseException:
            if on_page is not None:
                on_page(PageRead(resp, ParsedPage(Outcome.PARSE_FAILED, "interrupted"), url, read_at))
            raise
        pages.append(PageRead(resp, parsed, url, read_at))
        if on_page is not None:
            on_page(pages[-1])
        if not parsed.outcome.is_success:
            break
        if parsed.total is not None:
            total = parsed.total
        partial = partial or parsed.partial
        papers.extend(parsed.papers)
        if len(papers) >= request.max_results:
            break
        url = source.next_url(request, parsed, len(papers))
    dropped = max(0, len(papers) - request.max_results)  # read but cut by --max-results
    papers = papers[: request.max_results]
    last = pages[-1].parsed
    failed = next((p for p in pages if not p.parsed.outcome.is_success), None)
    if failed is not None:
        outcome, reason = failed.parsed.outcome, failed.parsed.reason
    elif not papers and all(p.parsed.outcome is Outcome.EMPTY for p in pages):
        outcome, reason = Outcome.EMPTY, last.reason or "source_reports_no_match"
    else:
        outcome, reason = Outcome.OK, ""
    # Records the source listed as deleted (OAI-PMH headers with status="deleted"): not returned, but
    # counted in the source's own total (OAI-PMH's completeListSize counts them), so a list read to its
    # end holds total == returned + deleted.
    deleted = sum(int(p.parsed.detail.get("deleted", 0)) for p in pages if p.parsed.outcome.is_success)
    # complete: every match the source holds came back. Never when results were read and dropped,
    # and never when the source's own count says otherwise, whatever the source's paging says.
    complete = (failed is None and not partial and not dropped
                and (total is None or len(papers) + deleted == total)
                and source.complete(request, total, len(papers), last))
    detail: dict[str, Any] = {"pages": len(pages)}
    if deleted:
        detail["deleted"] = deleted
    if dropped:
        detail["dropped_by_max_results"] = dropped
    if partial:
        detail["partial"] = True
    if url is not None and len(pages) >= request.max_pages and failed is None and len(papers) < request.max_results:
        detail["stopped_at_page_limit"] = request.max_pages
    return SearchRun(source.name, request, tuple(pages), outcome, reason, tuple(papers), total, complete, detail)


def _parse(source: Source, request: SearchRequest, resp: FetchResponse, store: BlobBackend) -> ParsedPage:
    if resp.body is None or resp.status is None:
        return fetch_failure(resp)
    if resp.truncated:
        return ParsedPage(Outcome.TOO_LARGE if resp.outcome is Outcome.TOO_LARGE else Outcome.PARSE_FAILED,
                          "reply_truncated")
    body = store.read(resp.body.blake3)
    try:
        parsed = source.parse(request, resp.status, resp.content_type, body)
    except RecursionError:
        return ParsedPage(Outcome.PARSE_FAILED, "reply_too_deep")
    except Exception as e:  # noqa: BLE001 - a parser bug must not cost the receipts of the run
        return ParsedPage(Outcome.PARSE_FAILED, "parser_error", detail={"error": type(e).__name__})
    if resp.retry_after is not None:
        parsed = replace(parsed, detail={**parsed.detail, "retry_after": resp.retry_after})
    return parsed


class SourceRegistry:
    """The sources ``g6 search`` knows. ``register`` adds a user's own."""

    def __init__(self) -> None:
        self._sources: dict[str, Source] = {}

    def register(self, source: Source, *, replace_existing: bool = False) -> Source:
        if source.name in self._sources and not replace_existing:
            raise ValueError(f"a source named {source.name!r} is registered already")
        self._sources[source.name] = source
        return source

    def get(self, name: str) -> Source:
        try:
            return self._sources[name]
        except KeyError:
            raise UnknownSourceError(f"unknown source {name!r}; known: {', '.join(sorted(self._sources))}") from None

    def __iter__(self) -> Iterator[Source]:
        return iter(self._sources.values())

    def names(self) -> list[str]:
        return sorted(self._sources)
