"""arXiv's Atom API (``/api/query``): search_query, start, max_results; one request per 3 s.

Traps from real replies: an error comes back as a feed with one entry titled "Error" whose id is
``…/api/errors#…`` and ``totalResults`` 1 (with HTTP 400, sometimes 200); ``itemsPerPage`` echoes
the request rather than counting entries; ``totalResults`` is always sent, so its absence means
the reply is not arXiv's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlencode

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.search import Paper, ParsedPage, SearchInputError, SearchRequest, status_failure, unreadable
from g6.adapters.sources.xmlsafe import XMLParseError, parse_xml, text_of

ATOM = "{http://www.w3.org/2005/Atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
ARXIV = "{http://arxiv.org/schemas/atom}"
DEFAULT_URL = "https://export.arxiv.org/api/query"

_GROUPS = {
    "astro-ph": "CO EP GA HE IM SR",
    "cond-mat": "dis-nn mes-hall mtrl-sci other quant-gas soft stat-mech str-el supr-con",
    "cs": "AI AR CC CE CG CL CR CV CY DB DC DL DM DS ET FL GL GR GT HC IR IT LG LO MA MM MS NA NE NI OH OS PF "
          "PL RO SC SD SE SI SY",
    "econ": "EM GN TH",
    "eess": "AS IV SP SY",
    "math": "AC AG AP AT CA CO CT CV DG DS FA GM GN GR GT HO IT KT LO MG MP NA NT OA OC PR QA RA RT SG SP ST",
    "nlin": "AO CD CG PS SI",
    "physics": "acc-ph ao-ph app-ph atm-clus atom-ph bio-ph chem-ph class-ph comp-ph data-an ed-ph flu-dyn "
               "gen-ph geo-ph hist-ph ins-det med-ph optics plasm-ph pop-ph soc-ph space-ph",
    "q-bio": "BM CB GN MN NC OT PE QM SC TO",
    "q-fin": "CP EC GN MF PM PR RM ST TR",
    "stat": "AP CO ME ML OT TH",
}
_STANDALONE = ("astro-ph", "cond-mat", "gr-qc", "hep-ex", "hep-lat", "hep-ph", "hep-th", "math-ph", "nlin",
               "nucl-ex", "nucl-th", "physics", "quant-ph")
# arXiv's category taxonomy (arxiv.org/category_taxonomy), checked locally before anything is sent.
CATEGORIES = frozenset([*_STANDALONE, *(f"{g}.{s}" for g, subs in _GROUPS.items() for s in subs.split())])
_FIELD_SYNTAX = re.compile(r"\b(ti|au|abs|co|jr|cat|rn|id|all):", re.I)
_ERROR_ID = re.compile(r"^https?://arxiv\.org/api/errors", re.I)
_ARXIV_ID = re.compile(r"arxiv\.org/abs/(.+?)(v\d+)?$")


def search_query(query: str | None, categories: tuple[str, ...]) -> str:
    for c in categories:
        if c not in CATEGORIES:
            close = sorted(x for x in CATEGORIES if x.lower().startswith(c.split(".")[0].lower()))[:8]
            raise SearchInputError(f"unknown arXiv category {c!r}" + (f"; e.g. {', '.join(close)}" if close else ""))
    parts = []
    if query and query.strip():
        q = query.strip()
        parts.append(q if _FIELD_SYNTAX.search(q) else " AND ".join(f"all:{w}" for w in q.split()))
    if categories:
        cats = " OR ".join(f"cat:{c}" for c in categories)
        parts.append(f"({cats})" if len(categories) > 1 else cats)
    if not parts:
        raise SearchInputError("an arXiv search needs a query or a category")
    return " AND ".join(f"({p})" if " " in p and not p.startswith("(") else p for p in parts)


def parse_feed(status: int, content_type: str | None, body: bytes, source: str = "arxiv") -> ParsedPage:
    try:
        root = parse_xml(body)
    except XMLParseError as e:
        return unreadable(status, "not_xml", str(e))
    if root.tag != f"{ATOM}feed":
        return unreadable(status, "not_an_atom_feed")
    entries = root.findall(f"{ATOM}entry")
    for e in entries:
        if _ERROR_ID.match((e.findtext(f"{ATOM}id") or "").strip()):  # not the title: a paper may be called "Error"
            return ParsedPage(Outcome.REJECTED, "arxiv_error",
                              detail={"message": text_of(e.find(f"{ATOM}summary")) or "", "http_status": status})
    if status >= 300:
        return status_failure(status)
    total_text = root.findtext(f"{OPENSEARCH}totalResults")
    start_text = root.findtext(f"{OPENSEARCH}startIndex")
    try:
        total = int((total_text or "").strip())
        start = int((start_text or "0").strip())
    except ValueError:
        return ParsedPage(Outcome.PARSE_FAILED, "missing_total_results")
    if total < 0:
        return ParsedPage(Outcome.PARSE_FAILED, "negative_total_results")
    papers = tuple(_paper(e, source) for e in entries)
    if total == 0 and not papers:
        return ParsedPage(Outcome.EMPTY, "source_reports_no_match", total=0)
    nxt = start + len(papers)
    more = bool(papers) and nxt < total
    detail = {} if papers or start >= total else {"short_page": True}
    return ParsedPage(Outcome.OK, papers=papers, total=total, next_cursor=str(nxt) if more else None,
                      detail=detail)


def _paper(e, source: str) -> Paper:  # type: ignore[no-untyped-def]
    abs_url = (e.findtext(f"{ATOM}id") or "").strip() or None
    ids: dict[str, str] = {}
    m = _ARXIV_ID.search(abs_url or "")
    if m:
        ids["arxiv"] = m.group(1) + (m.group(2) or "")
    doi = text_of(e.find(f"{ARXIV}doi"))
    if doi:
        ids["doi"] = doi
    return Paper(
        source=source,
        title=text_of(e.find(f"{ATOM}title")),
        authors=tuple(n for a in e.findall(f"{ATOM}author") if (n := text_of(a.find(f"{ATOM}name")))),
        abstract=text_of(e.find(f"{ATOM}summary")),
        locator=abs_url.replace("http://arxiv.org/", "https://arxiv.org/", 1) if abs_url else None,
        identifiers=ids,
        published=(e.findtext(f"{ATOM}published") or "").strip() or None,
    )


@dataclass
class ArxivSource:
    base_url: str = DEFAULT_URL
    pause: float = 3.0
    name: str = "arxiv"
    robots: bool = False
    needs: str = "a query and/or --category; no key"
    key_env: str | None = None

    def _url(self, request: SearchRequest, start: int) -> str:
        size = min(request.page_size or min(request.max_results, 100), 2000)
        q = search_query(request.query, request.categories)
        return f"{self.base_url}?{urlencode({'search_query': q, 'start': start, 'max_results': size})}"

    def first_url(self, request: SearchRequest) -> str:
        return self._url(request, 0)

    def next_url(self, request: SearchRequest, previous: ParsedPage, collected: int) -> str | None:
        return None if previous.next_cursor is None else self._url(request, int(previous.next_cursor))

    def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage:
        return parse_feed(status, content_type, body, self.name)

    def complete(self, request: SearchRequest, total: int | None, collected: int, last: ParsedPage) -> bool:
        return total is not None and collected >= total

    def headers(self) -> tuple[dict[str, str], str | None]:
        return {}, None
