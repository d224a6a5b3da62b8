"""Paper sources over a real socket: recorded real replies served by a loopback HTTP server."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.oaipmh import OaiPmhSource
from g6.adapters.sources.openalex import OpenAlexSource
from g6.adapters.sources.search import SearchInputError, SearchRequest
from g6.adapters.sources.semantic_scholar import SemanticScholarSource
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.capture import search
from g6.home import EvidenceHome

FIX = Path(__file__).resolve().parent.parent.parent / "fixtures" / "http"
Site = Callable[..., LocalSite]
XML = "application/atom+xml; charset=utf-8"
JSON = "application/json"


def body(folder: str, name: str) -> bytes:
    return (FIX / folder / name).read_bytes()


def status_of(name: str) -> int:
    return int(name.split("status")[1][:3]) if "status" in name else 200


def serve(folder: str, name: str, ctype: str, headers: tuple = ()) -> Reply:
    return Reply(status_of(name), body(folder, name), headers=headers, content_type=ctype)


def q(req: SeenRequest) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(req.path).query).items()}


@pytest.fixture
def client() -> CheckedClient:
    return CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, total_timeout=10))


# -- arXiv ----------------------------------------------------------------------------------
def arxiv(site: LocalSite) -> ArxivSource:
    return ArxivSource(base_url=site.url("/api/query"), pause=0)


def test_arxiv_pages_and_keeps_the_total(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    def route(req: SeenRequest) -> Reply:
        start = q(req)["start"]
        name = {"0": "search_q_testing_start0_max10_status200.xml",
                "10": "search_q_testing_start50_max10_status200.xml"}[start]
        return serve("arxiv", name, XML)

    s = site({"/api/query": route})
    r = search(home, client, arxiv(s), SearchRequest("testing", max_results=20, page_size=10))
    assert r.outcome is Outcome.OK and r.total == 214881 and not r.complete
    assert len(r.papers) == 20 and len(r.receipt_ids) == 2
    assert r.papers[0].locator == "https://arxiv.org/abs/2202.12139v1"
    assert r.papers[0].identifiers == {"arxiv": "2202.12139v1", "doi": "10.1109/ICSTW55395.2022.00035"}
    assert [q(x)["start"] for x in s.requests] == ["0", "10"]
    assert q(s.requests[0])["search_query"] == "all:testing"
    first, last = (home.ledger.get(i) for i in r.receipt_ids)
    assert first.kind == "search" and first.detail["total"] == 214881 and first.outcome_code == "G6_E_KNOWLEDGE_FETCHED"
    assert last.links == {"previous_page": first.receipt_id}
    assert last.detail["run"] == {"outcome": "ok", "total": 214881, "complete": False, "returned": 20, "pages": 2}
    assert home.store.read(first.content["blake3"]) == body("arxiv", "search_q_testing_start0_max10_status200.xml")
    assert home.verify().ok


def test_arxiv_explicit_empty_and_single(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/api/query": serve("arxiv", "empty_id_list_0000.0000_status200.xml", XML),
              "/one/api/query": serve("arxiv", "id_list_1605.08386_status200.xml", XML)})
    empty = search(home, client, arxiv(s), SearchRequest("nothing"))
    assert empty.outcome is Outcome.EMPTY and empty.total == 0 and empty.complete
    assert empty.code == "G6_E_KNOWLEDGE_FETCH_EMPTY"
    one = search(home, client, ArxivSource(base_url=s.url("/one/api/query"), pause=0), SearchRequest("x"))
    assert one.outcome is Outcome.OK and one.total == 1 and one.complete


@pytest.mark.parametrize("status", [400, 200])
def test_arxiv_error_feed_is_rejected_not_a_result(home: EvidenceHome, client: CheckedClient, site: Site,
                                                   status: int) -> None:
    s = site({"/api/query": Reply(status, body("arxiv", "error_bad_id_abc_status400.xml"), content_type=XML)})
    r = search(home, client, arxiv(s), SearchRequest("abc"))
    assert r.outcome is Outcome.REJECTED and r.papers == () and r.total is None
    assert home.ledger.get(r.receipt_ids[0]).detail["message"] == "incorrect id format for abc"


def test_arxiv_reply_without_total_is_parse_failed(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    raw = body("arxiv", "search_q_testing_start0_max10_status200.xml").replace(
        b"<opensearch:totalResults>214881</opensearch:totalResults>", b"")
    s = site({"/api/query": Reply(200, raw, content_type=XML),
              "/html": serve("oai-pmh", "not_oai_html_page_status200.html", "text/html")})
    assert search(home, client, arxiv(s), SearchRequest("t")).outcome is Outcome.PARSE_FAILED
    html = search(home, client, ArxivSource(base_url=s.url("/html"), pause=0), SearchRequest("t"))
    assert html.outcome is Outcome.PARSE_FAILED


def test_arxiv_category_checked_before_anything_is_sent(home: EvidenceHome, client: CheckedClient,
                                                        site: Site) -> None:
    s = site({"/api/query": serve("arxiv", "empty_id_list_0000.0000_status200.xml", XML)})
    with pytest.raises(SearchInputError, match="unknown arXiv category 'cs.XX'"):
        search(home, client, arxiv(s), SearchRequest("q", categories=("cs.XX",)))
    with pytest.raises(SearchInputError):
        search(home, client, arxiv(s), SearchRequest("q", categories=("cs.CL; DROP",)))
    assert s.requests == [] and len(home.ledger) == 0
    search(home, client, arxiv(s), SearchRequest("citation grounding", categories=("cs.CL",)))
    assert q(s.requests[0])["search_query"] == "(all:citation AND all:grounding) AND cat:cs.CL"


@pytest.mark.parametrize(("status", "outcome"), [(429, Outcome.RATE_LIMITED), (503, Outcome.SERVER_ERROR),
                                                 (403, Outcome.BLOCKED)])
def test_arxiv_http_failures_are_typed(home: EvidenceHome, client: CheckedClient, site: Site, status: int,
                                       outcome: Outcome) -> None:
    s = site({"/api/query": Reply(status, b"busy", headers=(("Retry-After", "30"),), content_type="text/plain")})
    r = search(home, client, arxiv(s), SearchRequest("t"))
    assert r.outcome is outcome and r.papers == ()
    if status == 429:
        assert home.ledger.get(r.receipt_ids[0]).detail["retry_after"] == "30"


# -- OAI-PMH --------------------------------------------------------------------------------
def test_oai_pmh_follows_resumption_tokens_to_the_end(home: EvidenceHome, client: CheckedClient,
                                                      site: Site) -> None:
    pages = {None: "zenodo_ListIdentifiers_from_until_first_page_status200.xml"}

    def route(req: SeenRequest) -> Reply:
        args = q(req)
        if "resumptionToken" not in args:
            assert args["metadataPrefix"] == "oai_dc" and args["from"] == "2026-04-01"
            return serve("oai-pmh", pages[None], "text/xml")
        if args["resumptionToken"].startswith(".eJxNjkFvgjAAhf9Lz7q"):
            return serve("oai-pmh", "zenodo_ListIdentifiers_resumption_cursor50_status200.xml", "text/xml")
        return serve("oai-pmh", "zenodo_ListIdentifiers_final_page_no_token_status200.xml", "text/xml")

    s = site({"/oai2d": route})
    req = SearchRequest(endpoint=s.url("/oai2d"), verb="ListIdentifiers", since="2026-04-01", until="2026-04-02",
                        max_results=1000)
    r = search(home, client, OaiPmhSource(pause=0), req)
    assert len(r.papers) == 50 + 3 + 3 and len(r.receipt_ids) == 3
    assert r.total == 8084640  # the last completeListSize the source sent (this cassette's token was edited)
    # the list ended (no token), but the source's own count says 8,084,640: not every match came back
    assert r.outcome is Outcome.OK and not r.complete
    assert r.papers[0].identifiers == {"oai": "oai:zenodo.org:18842410"}


def test_oai_pmh_records_deleted_and_page_limit(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    def route(req: SeenRequest) -> Reply:
        token = q(req).get("resumptionToken")
        return serve("oai-pmh", "ListRecords.xml" if token is None else "ListRecords4.xml", "text/xml")

    s = site({"/oai": route})
    whole = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai")))
    assert [p.title for p in whole.papers] == ["Sample Title", "Sample Title"]
    # the list ended (page 4 has no token) but completeListSize said 8: not every match came back
    assert whole.total == 8 and not whole.complete
    assert whole.papers[0].locator == "http://test.example.com/publication/1585322"
    cut = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai"), max_pages=1))
    assert cut.outcome is Outcome.OK and not cut.complete and cut.detail["stopped_at_page_limit"] == 1
    assert cut.total == 8


def test_oai_pmh_deleted_records_count_towards_complete_list_size(home: EvidenceHome, client: CheckedClient,
                                                                  site: Site) -> None:
    """completeListSize counts deleted records too (OAI-PMH 2.0, 3.5): a list read to its end whose live and
    deleted records make up that count is complete, and says how many were deleted."""
    def route(req: SeenRequest) -> Reply:
        token = q(req).get("resumptionToken")
        return serve("oai-pmh", "ListIdentifiers.xml" if token is None else "ListIdentifiers2.xml", "text/xml")

    s = site({"/oai": route})
    r = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai"), verb="ListIdentifiers"))
    # completeListSize=4: one live and one deleted header on each of the two pages, and no token at the end
    assert r.total == 4 and len(r.papers) == 2 and r.detail["deleted"] == 2
    assert r.outcome is Outcome.OK and r.complete
    cut = search(home, client, OaiPmhSource(pause=0),
                 SearchRequest(endpoint=s.url("/oai"), verb="ListIdentifiers", max_pages=1))
    assert not cut.complete and cut.detail["deleted"] == 1


def test_oai_pmh_deleted_in_the_cli_result(tmp_path: Path, site: Site) -> None:
    """`g6 search oai_pmh --json` says `complete: true` and `detail.deleted` (valid search-result.v1); the text
    line says deleted=N."""
    import os
    import subprocess
    import sys

    import jsonschema

    from g6.schemas import load

    def route(req: SeenRequest) -> Reply:
        token = q(req).get("resumptionToken")
        return serve("oai-pmh", "ListIdentifiers.xml" if token is None else "ListIdentifiers2.xml", "text/xml")

    s = site({"/oai": route})
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update(G6_HOME=str(tmp_path / "home"), G6_ALLOW_LOOPBACK="1", G6_HOST_PAUSE="0", G6_OAI_PMH_PAUSE="0")
    args = [sys.executable, "-m", "g6", "search", "oai_pmh", "--endpoint", s.url("/oai"), "--verb", "ListIdentifiers"]
    r = subprocess.run([*args, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    reply = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("search-result.v1"), format_checker=jsonschema.FormatChecker()).validate(reply)
    assert reply["complete"] is True and reply["total"] == 4 and reply["returned"] == 2
    assert reply["detail"]["deleted"] == 2
    text = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == ("ok G6_E_KNOWLEDGE_FETCHED total=4 returned=2 complete=yes pages=2 "
                                           "deleted=2")


def test_oai_pmh_count_above_what_came_stays_incomplete(home: EvidenceHome, client: CheckedClient,
                                                        site: Site) -> None:
    """A list whose count exceeds every record delivered, live and deleted, is not whole however it ended."""
    def route(req: SeenRequest) -> Reply:
        token = q(req).get("resumptionToken")
        return serve("oai-pmh", "ListRecords.xml" if token is None else "ListRecords4.xml", "text/xml")

    s = site({"/oai": route})
    r = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai")))
    assert r.total == 8 and len(r.papers) == 2 and r.detail["deleted"] == 2 and not r.complete


@pytest.mark.parametrize("name", ["zenodo_noRecordsMatch_status422.xml",
                                  "zenodo_noRecordsMatch_unknown_set_status422.xml", "noRecordsMatch.xml"])
def test_oai_pmh_no_records_match_is_empty_even_with_422(home: EvidenceHome, client: CheckedClient, site: Site,
                                                         name: str) -> None:
    s = site({"/oai": serve("oai-pmh", name, "text/xml")})
    r = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai"), set_spec="XXX"))
    assert r.outcome is Outcome.EMPTY and r.reason == "no_records_match" and r.complete


@pytest.mark.parametrize(("name", "reason"), [
    ("zenodo_badArgument_unknown_metadataPrefix_status422.xml", "oai_badArgument"),
    ("zenodo_idDoesNotExist_status422.xml", "oai_idDoesNotExist"),
    ("cannotDisseminateFormat.xml", "oai_cannotDisseminateFormat"),
    ("noSetHierarchy.xml", "oai_noSetHierarchy"),
])
def test_oai_pmh_errors_are_rejected(home: EvidenceHome, client: CheckedClient, site: Site, name: str,
                                     reason: str) -> None:
    s = site({"/oai": serve("oai-pmh", name, "text/xml")})
    r = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai")))
    assert r.outcome is Outcome.REJECTED and r.reason == reason


def test_oai_pmh_failure_mid_list_keeps_what_came_and_is_not_complete(home: EvidenceHome, client: CheckedClient,
                                                                      site: Site) -> None:
    def route(req: SeenRequest) -> Reply:
        if "resumptionToken" in q(req):
            return serve("oai-pmh", "zenodo_badResumptionToken_status422.xml", "text/xml")
        return serve("oai-pmh", "zenodo_ListRecords_oai_dc_from_until_first_page_status200.xml", "text/xml")

    s = site({"/oai": route})
    r = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url("/oai"), max_results=500))
    assert r.outcome is Outcome.REJECTED and r.reason == "oai_badResumptionToken"
    assert len(r.papers) == 50 and not r.complete and r.total == 6380


def test_oai_pmh_not_oai_and_broken(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/html": serve("oai-pmh", "not_oai_html_page_status200.html", "text/html"),
              "/broken": serve("oai-pmh", "ListRecordsBroken.xml", "text/xml")})
    for path in ("/html", "/broken"):
        r = search(home, client, OaiPmhSource(pause=0), SearchRequest(endpoint=s.url(path)))
        assert r.outcome is Outcome.PARSE_FAILED


def test_oai_pmh_input_checks(home: EvidenceHome, client: CheckedClient) -> None:
    for bad in (SearchRequest(), SearchRequest(endpoint="http://127.0.0.1:1/", since="yesterday"),
                SearchRequest(endpoint="http://127.0.0.1:1/", metadata_prefix="a&b=c")):
        with pytest.raises(SearchInputError):
            search(home, client, OaiPmhSource(pause=0), bad)


# -- OpenAlex -------------------------------------------------------------------------------
def test_openalex_search_complete_and_mailto_only_when_given(home: EvidenceHome, client: CheckedClient,
                                                             site: Site) -> None:
    s = site({"/works": serve("openalex", "works_search_49_results_per_page200_status200.json", JSON)})
    r = search(home, client, OpenAlexSource(base_url=s.url("/works"), pause=0),
               SearchRequest("climate", max_results=100, filters={"publication_year": "2014"}))
    assert r.outcome is Outcome.OK and r.total == 49 and r.complete and len(r.papers) == 49
    assert r.papers[0].locator == "https://doi.org/10.4081/gh.2014.294"
    assert r.papers[0].abstract.startswith("Existing climate classification")
    args = q(s.requests[0])
    assert args["filter"] == "publication_year:2014" and args["cursor"] == "*" and "mailto" not in args
    search(home, client, OpenAlexSource(base_url=s.url("/works"), pause=0, mailto="me@example.org"),
           SearchRequest("climate"))
    assert q(s.requests[1])["mailto"] == "me@example.org"


def test_openalex_api_key_is_sent_but_never_receipted(home: EvidenceHome, client: CheckedClient,
                                                      site: Site) -> None:
    s = site({"/works": serve("openalex", "works_search_49_results_per_page200_status200.json", JSON)})
    r = search(home, client, OpenAlexSource(base_url=s.url("/works"), pause=0, api_key="oa-SECRET-KEY-123"),
               SearchRequest("climate"))
    assert q(s.requests[0])["api_key"] == "oa-SECRET-KEY-123"
    text = home.ledger.get(r.receipt_ids[0]).canonical_bytes(with_signature=True).decode()
    assert "oa-SECRET-KEY-123" not in text and "api_key=REDACTED" in text
    assert "oa-SECRET-KEY-123" not in json.dumps(r.to_json())


def test_openalex_page_past_end_is_not_empty(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/works": serve("openalex", "works_page_past_end_results_empty_count340_status200.json", JSON)})
    r = search(home, client, OpenAlexSource(base_url=s.url("/works"), pause=0), SearchRequest("x"))
    assert r.outcome is Outcome.OK and r.total == 340 and r.papers == () and not r.complete


def test_openalex_missing_count_timed_out_and_error(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    data = json.loads(body("openalex", "works_search_49_results_per_page200_status200.json"))
    no_count = json.dumps({**data, "meta": {k: v for k, v in data["meta"].items() if k != "count"}}).encode()
    timed_out = json.dumps({**data, "meta": {**data["meta"], "timed_out": True}}).encode()
    err = b'{"error": "Invalid query parameters error.", "message": "filter is not a valid field"}'
    s = site({"/a": Reply(200, no_count, content_type=JSON), "/b": Reply(200, timed_out, content_type=JSON),
              "/c": Reply(400, err, content_type=JSON)})
    src = lambda p: OpenAlexSource(base_url=s.url(p), pause=0)  # noqa: E731
    assert search(home, client, src("/a"), SearchRequest("x")).outcome is Outcome.PARSE_FAILED
    partial = search(home, client, src("/b"), SearchRequest("x", max_results=100))
    assert partial.outcome is Outcome.OK and not partial.complete and partial.detail["partial"]
    rejected = search(home, client, src("/c"), SearchRequest("x"))
    assert rejected.outcome is Outcome.REJECTED and "not a valid field" in \
        home.ledger.get(rejected.receipt_ids[0]).detail["message"]


# -- Semantic Scholar -----------------------------------------------------------------------
def s2(site: LocalSite, **kw) -> SemanticScholarSource:
    return SemanticScholarSource(base_url=site.url("/graph/v1"), pause=0, **kw)


def test_s2_relevance_pages_and_can_never_be_complete_past_1000(home: EvidenceHome, client: CheckedClient,
                                                                site: Site) -> None:
    def route(req: SeenRequest) -> Reply:
        off = q(req)["offset"]
        return serve("semanticscholar", f"relevance_search_turing_offset{off}_limit100_status200.json", JSON)

    s = site({"/graph/v1/paper/search": route})
    r = search(home, client, s2(s), SearchRequest("turing", max_results=200))
    assert r.outcome is Outcome.OK and len(r.papers) == 200 and r.total == 70498 and not r.complete
    assert [q(x)["offset"] for x in s.requests] == ["0", "100"]


def test_s2_last_page_complete_and_empty(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/graph/v1/paper/search": serve("semanticscholar",
                                              "relevance_search_last_page_no_next_total89_status200.json", JSON),
              "/e/graph/v1/paper/search": serve("semanticscholar", "relevance_search_empty_total0_status200.json",
                                                JSON)})
    r = search(home, client, s2(s), SearchRequest("ulam", max_results=500))
    assert r.outcome is Outcome.OK and r.total == 89 and r.complete and len(r.papers) == 89
    e = search(home, client, SemanticScholarSource(base_url=s.url("/e/graph/v1"), pause=0), SearchRequest("zz"))
    assert e.outcome is Outcome.EMPTY and e.total == 0


def test_s2_bulk_ends_on_null_token(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    def route(req: SeenRequest) -> Reply:
        token = q(req).get("token")
        name = ("bulk_search_kubernetes_last_page_token_null_status200.json" if token == "second"
                else "bulk_search_kubernetes_first_page_status200.json")
        reply = serve("semanticscholar", name, JSON)
        if token is not None and token != "second":  # the middle page: hand out the token for the last one
            data = json.loads(reply.body)
            return replace(reply, body=json.dumps({**data, "token": "second"}).encode())
        return reply

    s = site({"/graph/v1/paper/search/bulk": route})
    r = search(home, client, s2(s), SearchRequest("kubernetes", mode="bulk", max_results=5000))
    assert r.outcome is Outcome.OK and r.complete and r.total == 2674 and len(r.papers) == 2674
    assert len(r.receipt_ids) == 3


@pytest.mark.parametrize(("name", "outcome"), [("error_unrecognized_fields_status400.json", Outcome.REJECTED),
                                               ("error_forbidden_status403.json", Outcome.BLOCKED),
                                               ("error_paper_not_found_status404.json", Outcome.NOT_FOUND)])
def test_s2_errors(home: EvidenceHome, client: CheckedClient, site: Site, name: str, outcome: Outcome) -> None:
    s = site({"/graph/v1/paper/search": serve("semanticscholar", name, JSON)})
    assert search(home, client, s2(s), SearchRequest("x")).outcome is outcome


def test_s2_rate_limit_keeps_retry_after_and_key_goes_only_to_its_host(home: EvidenceHome, client: CheckedClient,
                                                                       site: Site) -> None:
    s = site({"/graph/v1/paper/search": Reply(429, b'{"message": "Too Many Requests"}', content_type=JSON,
                                              headers=(("Retry-After", "7"),))})
    r = search(home, client, s2(s, api_key="s2-SECRET"), SearchRequest("x"))
    assert r.outcome is Outcome.RATE_LIMITED
    assert home.ledger.get(r.receipt_ids[0]).detail["retry_after"] == "7"
    assert s.requests[0].headers["x-api-key"] == "s2-SECRET"
    assert "s2-SECRET" not in home.ledger.get(r.receipt_ids[0]).canonical_bytes(with_signature=True).decode()
    # a redirect to another host must not carry the key
    other = site({"/graph/v1/paper/search": serve("semanticscholar", "relevance_search_empty_total0_status200.json",
                                                  JSON)}, host="127.0.0.2")
    hop = site({"/graph/v1/paper/search": Reply(302, headers=(("Location", other.url("/graph/v1/paper/search")),))})
    search(home, client, s2(hop, api_key="s2-SECRET"), SearchRequest("x"))
    assert hop.requests[0].headers["x-api-key"] == "s2-SECRET"
    assert "x-api-key" not in other.requests[0].headers
