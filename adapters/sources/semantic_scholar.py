"""Semantic Scholar Graph API: relevance search (``/paper/search``) and bulk search (``/paper/search/bulk``).

Traps from real replies: relevance search never goes past 1,000 results, so a larger ``total`` can
never be complete; bulk search ends on ``"token": null``; an empty answer is ``{"total": 0}`` with
no ``data``; errors are ``{"error": …}`` (400, 404) or ``{"message": "Forbidden"}`` (403); 429
carries Retry-After. The API key goes in ``x-api-key``, only to the API's own host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.jsonsafe import JSONParseError, as_int, as_str, parse_json_object
from g6.adapters.sources.search import Paper, ParsedPage, SearchInputError, SearchRequest, status_failure, unreadable

DEFAULT_URL = "https://api.semanticscholar.org/graph/v1"
RELEVANCE_LIMIT = 1000
DEFAULT_FIELDS = ("title", "authors", "abstract", "url", "externalIds", "publicationDate")
_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")


def _paper(p: dict[str, Any], source: str) -> Paper:
    ids: dict[str, str] = {}
    if as_str(p.get("paperId")):
        ids["s2"] = p["paperId"]
    ext = p.get("externalIds") if isinstance(p.get("externalIds"), dict) else {}
    for k, v in ext.items():
        if isinstance(v, str | int) and not isinstance(v, bool):
            ids[str(k).lower()] = str(v)
    authors = tuple(a["name"] for a in p.get("authors") or [] if isinstance(a, dict) and as_str(a.get("name")))
    locator = as_str(p.get("url")) or (f"https://www.semanticscholar.org/paper/{ids['s2']}" if "s2" in ids else None)
    return Paper(source=source, title=as_str(p.get("title")), authors=authors, abstract=as_str(p.get("abstract")),
                 locator=locator, identifiers=ids, published=as_str(p.get("publicationDate")))


def parse_search(status: int, content_type: str | None, body: bytes, source: str = "semantic_scholar",
                 mode: str = "relevance") -> ParsedPage:
    try:
        data = parse_json_object(body)
    except JSONParseError as e:
        return unreadable(status, "not_json", str(e))
    if status >= 300:
        msg = str(data.get("error") or data.get("message") or "")[:500]
        if status == 400 and "error" in data:
            return ParsedPage(Outcome.REJECTED, "s2_error", detail={"message": msg, "http_status": status})
        failed = status_failure(status)
        return ParsedPage(failed.outcome, failed.reason, detail={"message": msg} if msg else {})
    if "error" in data and "data" not in data:
        return ParsedPage(Outcome.REJECTED, "s2_error", detail={"message": str(data["error"])[:500]})
    total = as_int(data.get("total"))
    if total is None or total < 0:
        return ParsedPage(Outcome.PARSE_FAILED, "missing_total")
    rows = data.get("data")
    if rows is None:
        if total == 0:
            return ParsedPage(Outcome.EMPTY, "source_reports_no_match", total=0)
        return ParsedPage(Outcome.PARSE_FAILED, "missing_data")
    if not isinstance(rows, list):
        return ParsedPage(Outcome.PARSE_FAILED, "bad_data")
    papers = tuple(_paper(p, source) for p in rows if isinstance(p, dict))
    if total == 0 and not papers:
        return ParsedPage(Outcome.EMPTY, "source_reports_no_match", total=0)
    if mode == "bulk":
        token = as_str(data.get("token"))
        return ParsedPage(Outcome.OK, papers=papers, total=total, next_cursor=token if papers else None)
    nxt = as_int(data.get("next"))
    return ParsedPage(Outcome.OK, papers=papers, total=total,
                      next_cursor=str(nxt) if nxt is not None and nxt < RELEVANCE_LIMIT and papers else None)


@dataclass
class SemanticScholarSource:
    base_url: str = DEFAULT_URL
    api_key: str | None = None
    pause: float = 1.0
    name: str = "semantic_scholar"
    robots: bool = False
    needs: str = "a query; --mode relevance|bulk; optional --field; key G6_SEMANTIC_SCHOLAR_API_KEY"
    key_env: str | None = "G6_SEMANTIC_SCHOLAR_API_KEY"

    def _check(self, request: SearchRequest) -> None:
        if not request.query or not request.query.strip():
            raise SearchInputError("a Semantic Scholar search needs a query")
        if request.mode not in ("relevance", "bulk"):
            raise SearchInputError("mode must be relevance or bulk")
        for f in request.fields:
            if not _FIELD.match(f):
                raise SearchInputError(f"bad field name {f!r}")

    def _params(self, request: SearchRequest) -> dict[str, str | int]:
        return {"query": request.query or "", "fields": ",".join(request.fields or DEFAULT_FIELDS)}

    def first_url(self, request: SearchRequest) -> str:
        self._check(request)
        params = self._params(request)
        if request.mode == "bulk":
            return f"{self.base_url}/paper/search/bulk?{urlencode(params)}"
        params["offset"] = 0
        params["limit"] = min(request.page_size or min(request.max_results, 100), 100)
        return f"{self.base_url}/paper/search?{urlencode(params)}"

    def next_url(self, request: SearchRequest, previous: ParsedPage, collected: int) -> str | None:
        if previous.next_cursor is None:
            return None
        params = self._params(request)
        if request.mode == "bulk":
            params["token"] = previous.next_cursor
            return f"{self.base_url}/paper/search/bulk?{urlencode(params)}"
        offset = int(previous.next_cursor)
        params["offset"] = offset
        params["limit"] = min(request.page_size or 100, 100, RELEVANCE_LIMIT - offset)
        return f"{self.base_url}/paper/search?{urlencode(params)}"

    def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage:
        return parse_search(status, content_type, body, self.name, request.mode)

    def complete(self, request: SearchRequest, total: int | None, collected: int, last: ParsedPage) -> bool:
        if total is None:
            return False
        if request.mode == "bulk":
            return last.next_cursor is None  # bulk search says it is done with "token": null
        if total > RELEVANCE_LIMIT:
            return False  # relevance search stops at 1,000: the rest can never come back
        return collected >= total

    def headers(self) -> tuple[dict[str, str], str | None]:
        if not self.api_key:
            return {}, None
        return {"x-api-key": self.api_key}, urlsplit(self.base_url).hostname
