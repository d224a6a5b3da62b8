"""Papers cited by DOI, arXiv id or OpenAlex id: resolved through the paper sources (the search page receipted),
then the paper's landing page (or its PDF, through its conversion) is where the quote is looked for."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.sources import build_sources
from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.openalex import OpenAlexSource
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.home import EvidenceHome
from g6.report.papers import is_paper
from tests.report.check_helpers import QUOTE, article, check, cite, report_of, same
from tests.test_convert import make_pdf

Site = Callable[..., LocalSite]
PDF_TEXT = "Bills rose by twelve percent in the survey"


class ToSite(httpx.BaseTransport):
    """Every request, whatever address the checked client connected to, sent to the loopback site instead: a
    public-looking name (doi.org, publisher.example) served by a loopback server, nothing sent elsewhere."""

    def __init__(self, site: LocalSite) -> None:
        self.site, self.inner = site, httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url.copy_with(scheme="http", host="127.0.0.1", port=self.site.port)
        return self.inner.handle_request(httpx.Request(request.method, url, headers=request.headers))


def works(site_url: Callable[[str], str]) -> Callable[[SeenRequest], Reply]:
    def answer(req: SeenRequest) -> Reply:
        f = parse_qs(urlsplit(req.path).query).get("filter", [""])[0]
        work = {"id": "https://openalex.org/W1", "display_name": "Bills", "doi": None,
                "primary_location": {"landing_page_url": site_url("/landing")}}
        if f == "doi:10.1000/bills":
            work = {**work, "doi": "https://doi.org/10.1000/bills"}
        elif f == "openalex:W2":
            work = {**work, "id": "https://openalex.org/W2", "primary_location": {"landing_page_url":
                                                                                site_url("/paper.pdf")}}
        elif f in ("doi:10.1000/other", "openalex:W3"):  # a source answering with another paper
            work = {**work, "doi": "https://doi.org/10.1000/bills"}
        elif f != "openalex:W1":
            return Reply(body=json.dumps({"meta": {"count": 0}, "results": []}).encode(),
                         content_type="application/json")
        return Reply(body=json.dumps({"meta": {"count": 1}, "results": [work]}).encode(),
                     content_type="application/json")
    return answer


def feed(site_url: Callable[[str], str]) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">
<opensearch:totalResults>1</opensearch:totalResults><opensearch:startIndex>0</opensearch:startIndex>
<entry><id>http://arxiv.org/abs/2401.00001v1</id><title>Bills</title><summary>{QUOTE}</summary></entry></feed>""".encode()


@pytest.fixture
def world(site: Site) -> tuple[LocalSite, object]:
    s = site({})
    s.routes = {"/works": works(s.url), "/api/query": Reply(body=feed(s.url), content_type="application/atom+xml"),
                "/landing": Reply(body=article(QUOTE)), "/abs/2401.00001v1": Reply(body=article(QUOTE)),
                "/paper.pdf": Reply(body=make_pdf(PDF_TEXT), content_type="application/pdf"),
                "/10.1000/bills": Reply(302, headers=(("Location", "https://publisher.example/article/1"),)),
                "/article/1": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)}
    return s, build_sources(OpenAlexSource(base_url=s.url("/works"), pause=0), ArxivSource(base_url=s.url("/api/query"),
                                                                                          pause=0))


@pytest.fixture
def routed(world: tuple[LocalSite, object]) -> Iterator[CheckedClient]:
    """A checked client whose every request (arxiv.org's abstract pages too) reaches the loopback site."""
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0)
    with CheckedClient(policy, transport=ToSite(world[0]), resolver=lambda host, port: ["127.0.0.1"]) as c:
        yield c


def test_papers_resolve_through_the_sources_to_their_landing_page(home: EvidenceHome, routed: CheckedClient,
                                                                  world: tuple[LocalSite, object]) -> None:
    client = routed
    s, sources = world
    report = report_of(cite("openalex:W1", QUOTE), cite("arxiv:2401.00001", QUOTE), cite("openalex:W404", QUOTE),
                       cite("openalex:W1", "Not in the paper."))
    run = check(home, report, client, sources=sources)
    w1, arxiv, unknown, not_there = run.verdicts
    assert (w1.verdict, arxiv.verdict, unknown.verdict, not_there.verdict) == \
        ("quote_found", "quote_found", "source_failed", "quote_not_found")
    search = home.ledger.get(w1.detail["search"])
    assert search.kind == "search" and search.source == "openalex"
    assert w1.read["url"] == s.url("/landing") and w1.citation is not None
    assert home.ledger.get(arxiv.detail["search"]).source == "arxiv" and arxiv.read["url"].endswith("/abs/2401.00001v1")
    assert "knows no paper" in unknown.reason and unknown.detail["search"]
    assert not_there.detail["search"] == w1.detail["search"]  # one search a paper, one read a page
    works_asked = [q for q in s.requests if q.path.startswith("/works")]
    assert len(works_asked) == 2
    again = check(home, report, None, sources=sources)  # receipts only: the search page and the page, from the home
    assert same(again) == same(run)


def test_a_doi_resolves_by_redirect_to_the_publishers_page(home: EvidenceHome, world: tuple[LocalSite, object]) -> None:
    s, sources = world
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0)
    with CheckedClient(policy, transport=ToSite(s), resolver=lambda host, port: ["127.0.0.1"]) as c:
        run = check(home, report_of(cite("doi:10.1000/bills", QUOTE)), c, sources=sources)
    (v,) = run.verdicts
    assert v.verdict == "quote_found", v.reason
    assert v.read["url"] == "https://doi.org/10.1000/bills"
    assert v.read["final_url"] == "https://publisher.example/article/1"


def test_a_pdf_is_read_through_its_conversion(home: EvidenceHome, client: CheckedClient,
                                              world: tuple[LocalSite, object]) -> None:
    _, sources = world
    run = check(home, report_of(cite("openalex:W2", PDF_TEXT), cite("openalex:W2", "Bills fell.")), client,
                sources=sources)
    found, not_found = run.verdicts
    assert found.verdict == "quote_found" and not_found.verdict == "quote_not_found"
    conv = home.ledger.get(found.detail["converted"])
    assert conv.kind == "convert" and conv.links["from"]["blake3"] == found.read["content"]["blake3"]
    assert found.citation is None and "not in the manifest" in found.detail["manifest"]
    again = check(home, report_of(cite("openalex:W2", PDF_TEXT)), None, sources=sources)
    assert again.verdicts[0].detail["converted"] == conv.receipt_id  # the conversion is reused, not made again


def test_a_source_answering_with_another_paper_is_no_evidence_of_the_cited_one(
        home: EvidenceHome, routed: CheckedClient, world: tuple[LocalSite, object]) -> None:
    s, sources = world
    client = routed
    run = check(home, report_of(cite("doi:10.1000/other", QUOTE), cite("openalex:W3", QUOTE),
                                cite("arxiv:2401.00002", QUOTE), cite("arxiv:2401.00001v2", QUOTE),
                                cite("arxiv:2401.00001", QUOTE)), client, sources=sources)
    *others, arxiv = run.verdicts
    for v in others:
        assert v.verdict == "source_failed" and "answered with another paper" in v.reason and v.receipt_id is None
        assert home.ledger.get(v.detail["search"]).kind == "search"
    assert "doi 10.1000/bills" in others[0].reason and "arxiv 2401.00001v1" in others[2].reason
    assert arxiv.verdict == "quote_found"
    assert not [q for q in s.requests if q.path == "/landing"]  # another paper's page is not read


@pytest.mark.parametrize(("ids", "source", "same"), [
    ({"arxiv": "2401.00001v3"}, "arxiv:2401.00001", True), ({"arxiv": "2401.00001v3"}, "arxiv:2401.00001v3", True),
    ({"arxiv": "2401.00001v3"}, "arxiv:2401.00001v2", False), ({"arxiv": "2401.000011"}, "arxiv:2401.00001", False),
    ({"arxiv": "hep-th/9901001v1"}, "arxiv:hep-th/9901001", True),
    ({"doi": "https://doi.org/10.1000/ABC"}, "doi:10.1000/abc", True),
    ({"doi": "10.1000/abc"}, "doi:10.1000/ab", False),
    ({"doi": "10.1000/a%2Fb"}, "doi:10.1000/a/b", True), ({}, "doi:10.1000/abc", False),
    ({"openalex": "https://openalex.org/W12"}, "openalex:W12", True), ({"openalex": "W123"}, "openalex:W12", False),
])
def test_the_paper_answered_must_be_the_one_cited(ids: dict, source: str, same: bool) -> None:
    assert is_paper(ids, source) is same


def test_a_pin_on_a_paper_holds_when_it_is_a_read_of_the_papers_page(
        home: EvidenceHome, routed: CheckedClient, world: tuple[LocalSite, object]) -> None:
    """A pinned receipt on a paper citation is checked against the page the paper sources name for it (the
    attack test of finding 5 is the other side): a read of that page is the evidence, with the search page
    that named it in ``detail.search`` (so a bundle carries it); a read of another page is not."""
    s, sources = world
    client = routed
    first = check(home, report_of(cite("doi:10.1000/bills", QUOTE), cite(s.url("/landing"), QUOTE)), client,
                  sources=sources)
    paper, other = first.verdicts
    run = check(home, report_of(cite("doi:10.1000/bills", QUOTE, receipt_id=paper.receipt_id),
                                cite("doi:10.1000/bills", QUOTE, receipt_id=other.receipt_id),
                                cite("arxiv:2401.00001", QUOTE, receipt_id=paper.receipt_id)), None, sources=sources)
    pinned, wrong, arxiv = run.verdicts
    assert pinned.verdict == "quote_found" and pinned.read["how"] == "pinned"
    assert pinned.detail["search"] == paper.detail["search"]
    assert wrong.verdict == "source_failed" and "not of the page of doi:10.1000/bills" in wrong.reason
    assert wrong.detail["search"] == paper.detail["search"]
    # no arXiv search page in the home and nothing fetched: the pin cannot be shown to be the paper's
    assert arxiv.verdict == "source_failed" and "cannot be shown to be a read of arxiv:" in arxiv.reason
