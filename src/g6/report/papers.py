"""Papers a report cites by identifier, resolved through g6's paper sources to the page a quote is looked for in.

* ``arxiv:ID`` — the arXiv source, ``search_query=id:ID`` (one result, one page);
* ``doi:DOI`` — the OpenAlex source, ``filter=doi:DOI``;
* ``openalex:W…`` — the OpenAlex source, ``filter=openalex:W…``.

The paper the source answers with must be the one cited (its arXiv id, DOI or OpenAlex id; :func:`is_paper`):
another paper is no evidence of the cited one's words, whatever its page says. The search page is read as
``g6 search`` reads one (kept and receipted; in a home that holds a search page
for the very same request, that page is used instead, as a stored read of a URL is). Its first paper's
*locator* (the source's own address for it: arXiv's abstract page; for OpenAlex the DOI URL, else the
landing page, else the work's OpenAlex address) is then read like any cited URL, and the quote is looked for
in that page's text; a landing page that is a PDF is read through its conversion to text (``g6 convert``).
A DOI's address resolves by redirect to the publisher's page, which is what is checked. A search that fails,
or finds no such paper, leaves the citation ``source_failed`` with the search's receipt.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from g6.adapters.sources.search import SearchRequest
from g6.cite.cite import read_failure, read_words
from g6.errors import G6Error
from g6.ledger.receipts import Receipt
from g6.report.verdicts import Verdict, failed


def paper_search(source: str) -> tuple[str, SearchRequest]:
    """The paper source and the request that finds the paper ``source`` (``doi:…``, ``arxiv:…``, ``openalex:…``)."""
    kind, ident = source.split(":", 1)
    ident = ident.strip()
    if kind.lower() == "arxiv":
        return "arxiv", SearchRequest(query=f"id:{ident}", max_results=1, max_pages=1)
    key = "doi" if kind.lower() == "doi" else "openalex"
    return "openalex", SearchRequest(filters={key: ident}, max_results=1, max_pages=1)


_VERSION = re.compile(r"v\d+$")


def is_paper(identifiers: Mapping[str, Any], source: str) -> bool:
    """Whether a search hit is the paper ``source`` names: its arXiv id (any version when none is cited), DOI
    (case-insensitive, as DOIs are) or OpenAlex work id is the cited one. A source answering with another paper
    (a search that matched loosely, a stale mirror) is no evidence of the cited one's words."""
    kind, ident = source.split(":", 1)
    want = ident.strip().lower()
    if kind.lower() == "arxiv":
        got = str(identifiers.get("arxiv") or "").strip().lower().removeprefix("arxiv:")
        return bool(got) and (got == want or (not _VERSION.search(want) and _VERSION.sub("", got) == want))
    if kind.lower() == "doi":
        got = str(identifiers.get("doi") or "").strip().lower()
        for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"):
            got = got.removeprefix(prefix)
        return bool(got) and unquote(got) == unquote(want)
    got = str(identifiers.get("openalex") or "").strip().rstrip("/").rsplit("/", 1)[-1].lower()
    return bool(got) and got == want


def _answered(page: Receipt) -> bool:
    """A search page the source answered: ok, or its explicit "no such paper" (``empty``), with a 2xx status."""
    return read_failure("ok" if page.outcome == "empty" else page.outcome, page.http_status) is None \
        and bool(page.content)


def _search_page(chk: Any, name: str, src: Any, request: SearchRequest) -> Receipt | Verdict:
    """The search page a paper rests on: the newest ok one this evidence source holds for the same request,
    else (when the check may fetch) one read now, else the newest one whatever its outcome."""
    pages = chk.ev.search_pages(name, request.to_json())
    page = next((p for p in pages if _answered(p)), None)
    if page is None and chk.may_fetch:
        from g6.fetch.capture import search

        try:
            result = search(chk.home, chk.client, src, request)
        except G6Error as e:
            return failed(f"the paper search could not be sent ({str(e)[:200]})", source=name)
        made = [chk.home.ledger.get(rid) for rid in result.receipt_ids]
        chk.ev.add(made)
        page = made[0] if made else None
    elif page is None and pages:
        page = pages[0]
    if page is None:
        return failed(f"no {name} search page for this paper in this {chk.ev.name} (nothing is fetched with "
                      "--receipts-only or from a bundle)", source=name)
    return page


def resolve(chk: Any, source: str) -> tuple[str, str] | Verdict:
    """(the paper's landing URL, the search receipt it came from), or the citation's verdict when it cannot
    be had. Each paper is searched once a run."""
    if source not in chk.papers:
        chk.papers[source] = _resolve(chk, source)
    return chk.papers[source]  # type: ignore[no-any-return]


def _resolve(chk: Any, source: str) -> tuple[str, str] | Verdict:
    name, request = paper_search(source)
    registry = chk.sources
    if registry is None:
        from g6.adapters.sources import SOURCES as registry  # noqa: N811
    try:
        src = registry.get(name)
    except G6Error as e:
        return failed(f"{source[:80]}: {e}", source=name)
    page = _search_page(chk, name, src, request)
    if isinstance(page, Verdict):
        return page
    if page.outcome == "empty" and _answered(page):
        return failed(f"{name} knows no paper {source[:80]} (it says so: empty)", search=page.receipt_id)
    why = read_failure(page.outcome, page.http_status)
    if why is not None or not page.content:
        return failed(f"the {name} search for {source[:80]} failed ({why or read_words(page.outcome, None)})",
                      search=page.receipt_id)
    try:
        parsed = src.parse(request, int(page.http_status or 0), page.detail.get("content_type"),
                           chk.ev.body(page.content))
    except G6Error as e:
        return failed(f"the {name} search page for {source[:80]} cannot be read: {str(e)[:200]}",
                      search=page.receipt_id)
    if not parsed.papers:
        return failed(f"{name} knows no paper {source[:80]} ({parsed.outcome.value})", search=page.receipt_id)
    paper = next((p for p in parsed.papers if is_paper(p.identifiers, source)), None)
    if paper is None:
        other = parsed.papers[0].identifiers
        said = ", ".join(f"{k} {str(v)[:80]}" for k, v in other.items() if k in ("arxiv", "doi", "openalex"))
        return failed(f"the {name} search for {source[:80]} answered with another paper ({said or 'no identifier'}), "
                      "not the one cited: nothing of it is read", search=page.receipt_id)
    if not paper.locator:
        return failed(f"{name} gives no address for {source[:80]}", search=page.receipt_id)
    return paper.locator, page.receipt_id
