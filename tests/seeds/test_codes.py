"""A test per code in the two documents' code lists, each produced by the real path: the knowledge
fetcher's ``fetch`` against the local site (recorded arXiv replies for the paper codes) and the
Elasticsearch reader against noida-db's ``handbook`` or a loopback server answering as
Elasticsearch does. Each code's ``status`` and its receipt's ``outcome_code`` are checked too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from documents import ELASTIC, FETCHER, codes_named
from seedkit import env_for, invoke_all

from g6.adapters.outcomes import status_of
from g6.core import http, outside
from g6.demo.site import Reply
from g6.errors import G6Error
from g6.home import EvidenceHome
from g6.knowledge.ctx_elastic import ElasticIndex, elastic
from g6.knowledge.knowledge_fetcher import FetchRequest, Sources, fetch

ARXIV = Path(__file__).resolve().parents[2] / "fixtures" / "http" / "arxiv"
ATOM = "application/atom+xml; charset=utf-8"
QUALIFIED = {"G6_E_KNOWLEDGE_FETCHED", "G6_E_KNOWLEDGE_FETCH_EMPTY", "G6_E_KNOWLEDGE_ELASTIC_SEARCHED",
             "G6_E_KNOWLEDGE_ELASTIC_PARTIAL", "G6_E_KNOWLEDGE_ELASTIC_NO_MATCH"}
ROBOTS_404 = Reply(404, b"")


@pytest.fixture
def ev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EvidenceHome:
    for k in ("G6_ARXIV_URL", "G6_ELASTIC_URL", "G6_MCP_SENSITIVE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("G6_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("G6_ARXIV_PAUSE", "0")
    home = EvidenceHome(tmp_path / "home", fsync=False)
    home.keys.init()
    return home


def loopback(loop: bool = True, **kw: Any) -> Callable[[Any], http.Client]:
    def make(adapter: Any) -> http.Client:
        pol = http.FetchPolicy(allow_loopback=loop, host_pause=0, connect_timeout=5, read_timeout=5, **kw)
        return http.Client(pol, obey_robots=adapter.obey_robots)
    return make


def page(site: Any, reply: Reply, robots: Reply = ROBOTS_404) -> FetchRequest:
    s = site({"/p": reply, "/robots.txt": robots})
    return FetchRequest(source="http", url=s.url("/p"))


def arxiv(site: Any, monkeypatch: pytest.MonkeyPatch, reply: Reply) -> FetchRequest:
    s = site({"/api/query": reply})
    monkeypatch.setenv("G6_ARXIV_URL", s.url("/api/query"))
    return FetchRequest(source="arxiv", query="testing", max_results=3)


def fixture(name: str) -> bytes:
    return (ARXIV / name).read_bytes()


def no_dns(host: str, port: int) -> list[str]:
    raise OSError("no DNS answer (the test's resolver)")


FETCH_CASES: dict[str, Callable[[Any, Any], tuple[FetchRequest, Callable[[Any], http.Client]]]] = {
    "G6_E_KNOWLEDGE_FETCHED": lambda site, mp: (page(site, Reply(body=b"<p>hello</p>")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_EMPTY": lambda site, mp: (page(site, Reply(body=b"<script>draw()</script>")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_REFUSED": lambda site, mp: (page(site, Reply(body=b"x")), loopback(loop=False)),
    "G6_E_KNOWLEDGE_FETCH_ROBOTS_DISALLOWED": lambda site, mp: (
        page(site, Reply(body=b"x"), Reply(body=b"User-agent: *\nDisallow: /", content_type="text/plain")),
        loopback()),
    "G6_E_KNOWLEDGE_FETCH_BLOCKED": lambda site, mp: (page(site, Reply(403, b"no")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_NOT_FOUND": lambda site, mp: (page(site, Reply(410, b"gone")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_RATE_LIMITED": lambda site, mp: (
        arxiv(site, mp, Reply(429, b"slow down", headers=(("Retry-After", "3"),))), loopback()),
    "G6_E_KNOWLEDGE_FETCH_SERVER_ERROR": lambda site, mp: (arxiv(site, mp, Reply(503, b"down")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_HTTP_ERROR": lambda site, mp: (page(site, Reply(418, b"teapot")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_TOO_LARGE": lambda site, mp: (page(site, Reply(body=b"x" * 5000)), loopback(hard_cap=100)),
    "G6_E_KNOWLEDGE_FETCH_UNREACHABLE": lambda site, mp: (
        FetchRequest(source="http", url="http://unresolvable.invalid/p"),
        lambda adapter: http.Client(http.FetchPolicy(host_pause=0), resolver=no_dns)),
    "G6_E_KNOWLEDGE_FETCH_PARSE_FAILED": lambda site, mp: (
        arxiv(site, mp, Reply(body=b"<html>not a feed</html>", content_type="text/html")), loopback()),
    "G6_E_KNOWLEDGE_FETCH_REJECTED": lambda site, mp: (
        arxiv(site, mp, Reply(400, fixture("error_bad_id_abc_status400.xml"), content_type=ATOM)), loopback()),
}
REFUSALS = {"G6_E_KNOWLEDGE_UNKNOWN_SOURCE", "G6_E_KNOWLEDGE_FETCH_INPUT", "G6_E_KNOWLEDGE_FETCH_ADAPTER"}


def test_the_fetcher_document_names_exactly_these_codes() -> None:
    assert codes_named(FETCHER) == set(FETCH_CASES) | REFUSALS


@pytest.mark.parametrize("code", sorted(FETCH_CASES))
def test_fetch_code(code: str, ev: EvidenceHome, site: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    request, clients = FETCH_CASES[code](site, monkeypatch)
    found = fetch(request, clients=clients, home=ev)
    assert found.code == code, (found.outcome, found.reason)
    assert found.status == status_of(code) == ("qualified-draft" if code in QUALIFIED else "blocked-escalated")
    reply = found.to_json()
    assert reply["code"] == code and reply["status"] == found.status and "http_status" in reply
    assert ev.ledger.get(found.receipt_ids[-1]).outcome_code == code
    if code != "G6_E_KNOWLEDGE_FETCHED":
        assert found.documents == []  # a failure or an empty answer never carries documents


@pytest.mark.parametrize("request_", [FetchRequest(source="http"),
                                      FetchRequest(source="arxiv", query="x", categories=["cs.XX"]),
                                      FetchRequest(source="arxiv"), FetchRequest(source="oai_pmh", set_spec="cs")],
                         ids=["no url", "bad arXiv category", "no query", "no OAI-PMH url"])
def test_fetch_input_refusal(request_: FetchRequest, ev: EvidenceHome) -> None:
    with pytest.raises(G6Error) as e:
        fetch(request_, home=ev)
    assert e.value.code == "G6_E_KNOWLEDGE_FETCH_INPUT" and status_of(e.value.code) == "blocked-escalated"
    assert list(ev.ledger.entries()) == []  # refused before anything was sent


def test_unknown_source_refusal(ev: EvidenceHome) -> None:
    with pytest.raises(G6Error) as e:
        fetch(FetchRequest(source="gopher", url="gopher://x"), home=ev)
    assert e.value.code == "G6_E_KNOWLEDGE_UNKNOWN_SOURCE" and "arxiv, http, oai_pmh" in str(e.value)
    assert list(ev.ledger.entries()) == []


class Broken:
    """A registered source whose parser has a bug."""

    name = "broken"
    pause = 0.0
    robots = False
    obey_robots = False
    needs = "a query"
    key_env = None

    def __init__(self, url: str) -> None:
        self.url = url

    def first_url(self, request: Any) -> str:
        return self.url

    def next_url(self, request: Any, previous: Any, collected: int) -> None:
        return None

    def parse(self, request: Any, status: int, content_type: Any, body: bytes) -> Any:
        raise KeyError("entries")

    def complete(self, request: Any, total: Any, collected: int, last: Any) -> bool:
        return True

    def headers(self) -> tuple[dict[str, str], None]:
        return {}, None


def test_parser_crash_is_that_pages_parse_failed(ev: EvidenceHome, site: Any) -> None:
    # A parser that raises on a page it read makes that page parse_failed (receipted), not a lost run.
    s = site({"/feed": Reply(body=b"{}", content_type="application/json")})
    reg = Sources()
    reg.register(Broken(s.url("/feed")))
    found = fetch(FetchRequest(source="broken", query="x"), clients=loopback(), home=ev, registry=reg)
    assert (found.outcome.value, found.reason, found.status) == ("parse_failed", "parser_error", "blocked-escalated")
    assert [q.path for q in s.requests] == ["/feed"]  # it read only through the client it was given
    assert [(e.receipt.outcome, e.receipt.detail.get("reason")) for e in ev.ledger.entries()] == [
        ("parse_failed", "parser_error")]


class BrokenBeforeSending(Broken):
    """A registered source whose request builder has a bug: it breaks before anything is sent."""

    def first_url(self, request: Any) -> str:
        raise KeyError("base")


def test_fetch_adapter_refusal(ev: EvidenceHome, site: Any) -> None:
    s = site({"/feed": Reply(body=b"{}", content_type="application/json")})
    reg = Sources()
    reg.register(BrokenBeforeSending(s.url("/feed")))
    with pytest.raises(G6Error) as e:
        fetch(FetchRequest(source="broken", query="x"), clients=loopback(), home=ev, registry=reg)
    assert e.value.code == "G6_E_KNOWLEDGE_FETCH_ADAPTER" and "KeyError" in str(e.value)
    assert s.requests == []


def test_fetch_refusals_over_mcp(tmp_path: Path) -> None:
    replies = invoke_all(env_for(tmp_path, G6_MCP_SENSITIVE="knowledge_fetcher"), [
        ("knowledge_fetcher", "fetch", {"source": "gopher", "url": "gopher://x"}),
        ("knowledge_fetcher", "fetch", {"source": "arxiv", "query": "x", "categories": ["cs.XX"]}),
        ("knowledge_fetcher", "fetch", {"source": "http"}),
        ("knowledge_fetcher", "fetch", {"source": "http", "url": "http://x", "cookies": "a=b"}),
        ("knowledge_fetcher", "fetch", {"source": "arxiv", "query": 3}),
        ("knowledge_fetcher", "fetch", {"source": "arxiv", "query": "x", "categories": "cs.CL"}),
    ])
    assert [r["code"] for r in replies] == ["G6_E_KNOWLEDGE_UNKNOWN_SOURCE"] + ["G6_E_KNOWLEDGE_FETCH_INPUT"] * 5
    assert {r["status"] for r in replies} == {"blocked-escalated"}


# -- the Elasticsearch reader ---------------------------------------------------------------------
JSON = "application/json"
MAPPING = {"handbook": {"mappings": {"properties": {
    "title": {"type": "text"}, "body": {"type": "text"}, "team": {"type": "keyword"},
    "notes": {"type": "nested", "properties": {"by": {"type": "keyword"}}}}}}}
KEYWORDS_ONLY = {"handbook": {"mappings": {"properties": {"team": {"type": "keyword"}}}}}


def es_site(site: Any, search: Reply | None = None, mapping: Any = MAPPING, status: int = 200,
            count: Reply | None = None) -> str:
    routes: dict[str, Any] = {"/handbook/_mapping": Reply(status, json.dumps(mapping).encode(), content_type=JSON)}
    if search is not None:
        routes["/handbook/_search"] = search
    if count is not None:
        routes["/handbook/_count"] = count
    return str(site(routes).base_url)


def shards(failed: int) -> dict[str, int]:
    return {"total": 2, "successful": 2 - failed, "skipped": 0, "failed": failed}


def hit(src: dict[str, Any]) -> dict[str, Any]:
    return {"_index": "handbook", "_id": "1", "_score": 1.5, "_source": src}


def search_reply(hits: list[dict[str, Any]], failed: int = 0, status: int = 200) -> Reply:
    body = {"took": 1, "timed_out": False, "_shards": shards(failed),
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": 1.5, "hits": hits}}
    return Reply(status, json.dumps(body).encode(), content_type=JSON)


def error(status: int, etype: str) -> Reply:
    return Reply(status, json.dumps({"error": {"type": etype, "reason": etype}, "status": status}).encode(),
                 content_type=JSON)


def missing(program: str, method: str, path: str, **_: Any) -> outside.ServiceReply:
    raise outside.ProgramMissing("no elasticsearch answers at http://127.0.0.1:9200")


def slow(program: str, method: str, path: str, **_: Any) -> outside.ServiceReply:
    raise outside.ProgramTimeout("elasticsearch did not answer in time")


# code -> the read that ends in it: `es_site` is a loopback server answering as Elasticsearch, `hb` noida-db
ES_CASES: dict[str, Callable[[Any, str, Path], Any]] = {
    "G6_E_KNOWLEDGE_ELASTIC_SEARCHED": lambda site, hb, home: ElasticIndex(
        "handbook", ("title", "body"), url=hb, home=home).find("parental leave", {"team": "hr"}),
    "G6_E_KNOWLEDGE_ELASTIC_NO_MATCH": lambda site, hb, home: ElasticIndex(
        "handbook", url=hb, home=home).find("zeppelin"),
    "G6_E_KNOWLEDGE_ELASTIC_PARTIAL": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, search_reply([hit({"title": "a"})], failed=1)), home=home).find("a"),
    "G6_E_KNOWLEDGE_ELASTIC_COUNT_PARTIAL": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, count=Reply(200, json.dumps({"count": 3, "_shards": shards(1)}).encode(),
                                                  content_type=JSON)), home=home).count("a"),
    "G6_E_OUTSIDE_PROGRAM_MISSING": lambda site, hb, home: elastic.search("handbook", "a", caller=missing,
                                                                           home=home),
    "G6_E_KNOWLEDGE_ELASTIC_TIMEOUT": lambda site, hb, home: elastic.mapping("handbook", caller=slow, home=home),
    "G6_E_KNOWLEDGE_ELASTIC_DENIED": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, status=401, mapping={"error": {"type": "security_exception"}}),
        home=home).mapping(),
    "G6_E_KNOWLEDGE_ELASTIC_NOT_FOUND": lambda site, hb, home: ElasticIndex(
        "handbook", url=hb, home=home).get_doc("no-such-doc"),
    "G6_E_KNOWLEDGE_ELASTIC_REJECTED": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, error(400, "search_phase_execution_exception")), home=home).find("a"),
    "G6_E_KNOWLEDGE_ELASTIC_SERVER_ERROR": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, error(500, "boom")), home=home).find("a"),
    "G6_E_KNOWLEDGE_ELASTIC_REDIRECTED": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, Reply(302, b"", headers=(("Location", "http://127.0.0.1:1/"),))),
        home=home).find("a"),
    "G6_E_KNOWLEDGE_ELASTIC_PARSE_FAILED": lambda site, hb, home: ElasticIndex(
        "handbook", ("title",), url=es_site(site, search_reply([hit({"other": "x"})])), home=home).find("a"),
    "G6_E_KNOWLEDGE_FIELD_NOT_IN_MAPPING": lambda site, hb, home: ElasticIndex(
        "handbook", ("content",), url=hb, home=home).find("a"),
    "G6_E_KNOWLEDGE_FILTER_ON_TEXT": lambda site, hb, home: ElasticIndex(
        "handbook", url=hb, home=home).find("leave", {"title": "Parental leave"}),
    "G6_E_KNOWLEDGE_NESTED_FIELD": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site), home=home).find("a", {"notes.by": "bob"}),
    "G6_E_KNOWLEDGE_NO_TEXT_FIELDS": lambda site, hb, home: ElasticIndex(
        "handbook", url=es_site(site, mapping=KEYWORDS_ONLY), home=home).find("words"),
    "G6_E_KNOWLEDGE_ELASTIC_INPUT": lambda site, hb, home: ElasticIndex("hand*", url=hb, home=home).find("a"),
}


def test_the_elastic_document_names_exactly_these_codes() -> None:
    assert codes_named(ELASTIC) == set(ES_CASES)


@pytest.mark.parametrize("code", sorted(ES_CASES))
def test_elastic_code(code: str, ev: EvidenceHome, site: Any, handbook_url: str) -> None:
    try:
        got = ES_CASES[code](site, handbook_url, ev)
    except elastic.ElasticError as e:
        assert e.code == code, e.reason
        assert e.reply["code"] == code and e.reply["status"] == "blocked-escalated" == status_of(code)
        assert code not in QUALIFIED and e.reason
        if e.receipt_ids:  # a read the server answered (or did not) is receipted with the same code
            assert ev.ledger.get(e.receipt_ids[-1]).outcome_code == code
        else:  # refused before the query was sent: no receipt of a query
            assert code.startswith(("G6_E_KNOWLEDGE_FIELD", "G6_E_KNOWLEDGE_FILTER", "G6_E_KNOWLEDGE_NESTED",
                                    "G6_E_KNOWLEDGE_NO_TEXT", "G6_E_KNOWLEDGE_ELASTIC_INPUT"))
        return
    assert got.code == code and code in QUALIFIED and got.status == "qualified-draft" == status_of(code)
    if code == "G6_E_KNOWLEDGE_ELASTIC_PARTIAL":  # the hits come back, marked as not the whole index
        assert len(got.hits) == 1 and got.complete is False and got.total == 1
    assert ev.ledger.get(got.receipt_ids[-1]).outcome_code == code
    for h in got.hits:
        assert h.score_scale == "es_bm25" and h.trust == "untrusted" and h.source["sha256"].startswith("sha256:")


def test_outside_program_missing_says_how_to_run_it(ev: EvidenceHome) -> None:
    with pytest.raises(elastic.ElasticError) as e:
        elastic.count("handbook", caller=missing, home=ev)
    assert e.value.code == "G6_E_OUTSIDE_PROGRAM_MISSING" and "noida-db start" in e.value.reason


def test_call_service_reads_only_loopback_and_reports_the_reply(handbook_url: str) -> None:
    reply = outside.call_service("elasticsearch", "GET", "/handbook/_mapping",
                                 values={"G6_ELASTIC_URL": handbook_url})
    assert reply.status == 200 and b'"team"' in reply.body
    with pytest.raises(G6Error) as e:
        outside.call_service("elasticsearch", "GET", "/", values={"G6_ELASTIC_URL": "http://10.0.0.8:9200"})
    assert e.value.code == "G6_E_KNOWLEDGE_ELASTIC_INPUT"
