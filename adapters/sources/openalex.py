"""OpenAlex ``/works``: search + filters, cursor paging, ``mailto`` only when given, API key from the key file.

Traps from real replies: a page past the end has empty ``results`` with a positive ``meta.count``;
``meta.count`` is always sent, so a reply without it is ``parse_failed``; ``meta.timed_out: true``
marks a partial answer; errors come back as ``{"error": …, "message": …}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.jsonsafe import JSONParseError, as_int, as_str, parse_json_object
from g6.adapters.sources.search import Paper, ParsedPage, SearchInputError, SearchRequest, status_failure, unreadable

DEFAULT_URL = "https://api.openalex.org/works"
_FILTER_KEY = re.compile(r"^[a-z_.]+$")


def abstract_from_index(index: Any) -> str | None:
    if not isinstance(index, dict) or not index:
        return None
    positions: dict[int, str] = {}
    for word, places in index.items():
        if isinstance(places, list):
            for p in places:
                if isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 100_000:
                    positions[p] = str(word)
    return " ".join(positions[i] for i in sorted(positions)) or None


def _paper(w: dict[str, Any], source: str) -> Paper:
    ids: dict[str, str] = {}
    if as_str(w.get("id")):
        ids["openalex"] = w["id"]
    doi = as_str(w.get("doi"))
    if doi:
        ids["doi"] = doi.removeprefix("https://doi.org/")
    extra = w.get("ids") if isinstance(w.get("ids"), dict) else {}
    for k in ("pmid", "pmcid", "mag"):
        if as_str(extra.get(k)) or as_int(extra.get(k)) is not None:
            ids[k] = str(extra[k])
    authors = []
    for a in w.get("authorships") or []:
        if isinstance(a, dict) and isinstance(a.get("author"), dict) and as_str(a["author"].get("display_name")):
            authors.append(a["author"]["display_name"])
    loc = w.get("primary_location") if isinstance(w.get("primary_location"), dict) else {}
    locator = doi or as_str(loc.get("landing_page_url")) or as_str(w.get("id"))
    return Paper(source=source, title=as_str(w.get("display_name")) or as_str(w.get("title")),
                 authors=tuple(authors), abstract=abstract_from_index(w.get("abstract_inverted_index")),
                 locator=locator, identifiers=ids, published=as_str(w.get("publication_date")))


def parse_works(status: int, content_type: str | None, body: bytes, source: str = "openalex") -> ParsedPage:
    try:
        data = parse_json_object(body)
    except JSONParseError as e:
        return unreadable(status, "not_json", str(e))
    if "error" in data and status >= 400 or (status < 300 and "error" in data and "results" not in data):
        msg = " ".join(str(data.get(k) or "") for k in ("error", "message")).strip()[:500]
        if status in (400, 422) or status < 300:
            return ParsedPage(Outcome.REJECTED, "openalex_error", detail={"message": msg, "http_status": status})
        return ParsedPage(status_failure(status).outcome, f"http_{status}", detail={"message": msg})
    if status >= 300:
        return status_failure(status)
    meta = data.get("meta")
    count = as_int(meta.get("count")) if isinstance(meta, dict) else None
    results = data.get("results")
    if count is None or count < 0 or not isinstance(results, list):
        return ParsedPage(Outcome.PARSE_FAILED, "missing_meta_count" if count is None else "bad_results")
    assert isinstance(meta, dict)
    papers = tuple(_paper(w, source) for w in results if isinstance(w, dict))
    if count == 0 and not papers:
        return ParsedPage(Outcome.EMPTY, "source_reports_no_match", total=0)
    cursor = as_str(meta.get("next_cursor"))
    partial = meta.get("timed_out") is True
    detail: dict[str, Any] = {}
    if partial:
        detail["timed_out"] = True
    if not papers and count > 0:
        detail["page_past_end"] = True
    return ParsedPage(Outcome.OK, papers=papers, total=count, next_cursor=cursor if papers else None,
                      partial=partial, detail=detail)


@dataclass
class OpenAlexSource:
    base_url: str = DEFAULT_URL
    mailto: str | None = None
    api_key: str | None = None
    pause: float = 0.2
    name: str = "openalex"
    robots: bool = False
    needs: str = "a query and/or --filter key:value; optional mailto; key G6_OPENALEX_API_KEY"
    key_env: str | None = "G6_OPENALEX_API_KEY"

    def _url(self, request: SearchRequest, cursor: str) -> str:
        params: dict[str, str | int] = {}
        if request.query:
            params["search"] = request.query
        if request.filters:
            for k, v in request.filters.items():
                if not _FILTER_KEY.match(k) or not v or "," in k:
                    raise SearchInputError(f"bad OpenAlex filter {k!r}:{v!r}")
            params["filter"] = ",".join(f"{k}:{v}" for k, v in request.filters.items())
        if not params:
            raise SearchInputError("an OpenAlex search needs a query or a filter")
        params["per-page"] = min(request.page_size or min(request.max_results, 200), 200)
        params["cursor"] = cursor
        if self.mailto:
            params["mailto"] = self.mailto
        if self.api_key:
            params["api_key"] = self.api_key  # redacted from every receipt (g6.adapters.net.urls.redact_url)
        return f"{self.base_url}?{urlencode(params)}"

    def first_url(self, request: SearchRequest) -> str:
        return self._url(request, "*")

    def next_url(self, request: SearchRequest, previous: ParsedPage, collected: int) -> str | None:
        if previous.next_cursor is None or (previous.total is not None and collected >= previous.total):
            return None
        return self._url(request, previous.next_cursor)

    def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage:
        return parse_works(status, content_type, body, self.name)

    def complete(self, request: SearchRequest, total: int | None, collected: int, last: ParsedPage) -> bool:
        return total is not None and collected >= total

    def headers(self) -> tuple[dict[str, str], str | None]:
        return {}, urlsplit(self.base_url).hostname
