"""OAI-PMH 2.0 (ListRecords / ListIdentifiers) against any endpoint, with resumption-token paging.

Traps from real replies: Zenodo sends OAI errors, ``noRecordsMatch`` included, with HTTP 422; an
unknown set gives ``noRecordsMatch``, not ``badArgument``; the last page carries an empty
``resumptionToken`` or none at all; ``completeListSize`` is optional (``total`` is then null).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from g6.adapters.net.urls import not_a_url
from g6.adapters.outcomes import Outcome
from g6.adapters.sources.search import Paper, ParsedPage, SearchInputError, SearchRequest, status_failure, unreadable
from g6.adapters.sources.xmlsafe import XMLParseError, parse_xml, text_of

OAI = "{http://www.openarchives.org/OAI/2.0/}"
DC = "{http://purl.org/dc/elements/1.1/}"
VERBS = ("ListRecords", "ListIdentifiers")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?$")
_DOI = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)?(10\.\d{4,9}/\S+)$", re.I)


def parse_oai(status: int, content_type: str | None, body: bytes, source: str = "oai_pmh") -> ParsedPage:
    try:
        root = parse_xml(body)
    except XMLParseError as e:
        return unreadable(status, "not_xml", str(e))
    if root.tag != f"{OAI}OAI-PMH":
        return unreadable(status, "not_oai_pmh")
    errors = root.findall(f"{OAI}error")
    if errors:
        codes = [e.get("code") or "" for e in errors]
        message = "; ".join(filter(None, (text_of(e) for e in errors)))
        if codes == ["noRecordsMatch"]:
            return ParsedPage(Outcome.EMPTY, "no_records_match", total=0, detail={"http_status": status})
        return ParsedPage(Outcome.REJECTED, f"oai_{codes[0] or 'error'}",
                          detail={"codes": codes, "message": message, "http_status": status})
    if status >= 300:
        return status_failure(status)
    container = root.find(f"{OAI}ListRecords")
    if container is None:
        container = root.find(f"{OAI}ListIdentifiers")
    if container is None:
        return ParsedPage(Outcome.PARSE_FAILED, "no_list_element")
    papers: list[Paper] = []
    deleted = 0
    headers = (
        [(r.find(f"{OAI}header"), r.find(f"{OAI}metadata")) for r in container.findall(f"{OAI}record")]
        if container.tag == f"{OAI}ListRecords"
        else [(h, None) for h in container.findall(f"{OAI}header")]
    )
    for header, metadata in headers:
        if header is None:
            continue
        if header.get("status") == "deleted":
            deleted += 1
            continue
        papers.append(_paper(header, metadata, source))
    token_el = container.find(f"{OAI}resumptionToken")
    token = (token_el.text or "").strip() if token_el is not None else ""
    total = None
    if token_el is not None and token_el.get("completeListSize"):
        try:
            total = int(token_el.get("completeListSize", ""))
        except ValueError:
            return ParsedPage(Outcome.PARSE_FAILED, "bad_complete_list_size")
    detail = {"deleted": deleted} if deleted else {}
    return ParsedPage(Outcome.OK, papers=tuple(papers), total=total, next_cursor=token or None, detail=detail)


def _paper(header, metadata, source: str) -> Paper:  # type: ignore[no-untyped-def]
    ident = text_of(header.find(f"{OAI}identifier"))
    ids = {"oai": ident} if ident else {}
    title = abstract = locator = published = None
    authors: tuple[str, ...] = ()
    if metadata is not None:
        title = text_of(metadata.find(f".//{DC}title"))
        authors = tuple(t for c in metadata.iter(f"{DC}creator") if (t := text_of(c)))
        abstract = text_of(metadata.find(f".//{DC}description"))
        published = text_of(metadata.find(f".//{DC}date"))
        for el in metadata.iter(f"{DC}identifier"):
            value = text_of(el) or ""
            m = _DOI.match(value)
            if m and "doi" not in ids:
                ids["doi"] = m.group(1)
            if value.startswith(("http://", "https://")) and locator is None:
                locator = value
    if published is None:
        published = text_of(header.find(f"{OAI}datestamp"))
    return Paper(source=source, title=title, authors=authors, abstract=abstract, locator=locator,
                 identifiers=ids, published=published)


@dataclass
class OaiPmhSource:
    pause: float = 1.0
    name: str = "oai_pmh"
    robots: bool = False
    needs: str = "--endpoint URL; optional --set, --since, --until, --metadata-prefix"
    key_env: str | None = None

    @staticmethod
    def _check(request: SearchRequest) -> None:
        if not request.endpoint:
            raise SearchInputError("an OAI-PMH search needs --endpoint (the repository's base URL)")
        why = not_a_url(request.endpoint)
        if why is not None:
            raise SearchInputError(f"--endpoint: {why}")
        if request.verb not in VERBS:
            raise SearchInputError(f"verb must be one of {VERBS}")
        for name in ("since", "until"):
            v = getattr(request, name)
            if v and not _DATE.match(v):
                raise SearchInputError(f"--{name} must be YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ, got {v!r}")
        if not re.match(r"^[A-Za-z0-9_.!~*'()-]+$", request.metadata_prefix):
            raise SearchInputError(f"bad metadata prefix {request.metadata_prefix!r}")

    def first_url(self, request: SearchRequest) -> str:
        self._check(request)
        params = {"verb": request.verb, "metadataPrefix": request.metadata_prefix}
        if request.set_spec:
            params["set"] = request.set_spec
        if request.since:
            params["from"] = request.since
        if request.until:
            params["until"] = request.until
        sep = "&" if "?" in request.endpoint else "?"  # type: ignore[operator]
        return f"{request.endpoint}{sep}{urlencode(params)}"

    def next_url(self, request: SearchRequest, previous: ParsedPage, collected: int) -> str | None:
        if previous.next_cursor is None:
            return None
        sep = "&" if "?" in (request.endpoint or "") else "?"
        return f"{request.endpoint}{sep}{urlencode({'verb': request.verb, 'resumptionToken': previous.next_cursor})}"

    def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage:
        return parse_oai(status, content_type, body, self.name)

    def complete(self, request: SearchRequest, total: int | None, collected: int, last: ParsedPage) -> bool:
        # The list is whole when the last page read had no resumption token.
        return last.next_cursor is None

    def headers(self) -> tuple[dict[str, str], str | None]:
        return {}, None
