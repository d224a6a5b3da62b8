"""The Elasticsearch reader.

Against noida-db (an ES-compatible server on loopback): mapping, search, count, get_doc, every
refusal before sending, missing index/document, nothing answering.
Against recorded real bodies (and labelled derived ones) served over a real loopback socket:
shard failures inside a 200, timed_out, relation gte, security errors, all-shards-failed 400,
redirects, timeouts, replies that are not Elasticsearch's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.elasticsearch import ElasticInputError, ElasticReader, check_index_name, check_loopback_url
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.elastic import ElasticIndex, ElasticReadError
from g6.home import EvidenceHome

FIX = Path(__file__).resolve().parent.parent.parent / "fixtures" / "http"
Site = Callable[..., LocalSite]
JSON = "application/json"


def rec(name: str, folder: str = "elasticsearch") -> bytes:
    return (FIX / folder / name).read_bytes()


@pytest.fixture
def hb(home: EvidenceHome, elastic_url: str) -> ElasticIndex:
    return ElasticIndex("hb", home=home, url=elastic_url)


# -- against noida-db -------------------------------------------------------------------------
def test_mapping_through_alias_is_keyed_by_concrete_index(hb: ElasticIndex) -> None:
    a = hb.mapping()
    r = a.result
    assert r.outcome is Outcome.OK and r.concrete_index == "handbook"
    m = r.mapping
    assert m["title"] == {"type": "text", "fields": {"raw": "keyword"}}
    assert m["title.raw"] == {"type": "keyword"}
    assert m["author"] == {"type": "object"} and m["author.name"] == {"type": "text"}
    assert m["comments"] == {"type": "nested"} and m["comments.text"] == {"type": "text", "nested_in": "comments"}
    receipt = hb.home.ledger.get(a.receipt_ids[0])
    assert receipt.kind == "es" and receipt.request["op"] == "mapping" and receipt.content is not None


def test_search_builds_the_query_and_returns_untrusted_passages(hb: ElasticIndex, elastic_url: str) -> None:
    hb.fields = ("title", "body")
    a = hb.search("retention policy", top_k=5)
    r = a.result
    assert r.outcome is Outcome.OK and r.total == 2 and r.total_relation == "eq"
    top = r.passages[0]
    assert top.rank == 1 and top.score_scale == "es_bm25" and top.trust == "untrusted"
    assert top.address == f"{elastic_url}/handbook/_doc/{top.doc_id}"
    assert top.source_sha256.startswith("sha256:")
    assert "retention" in top.text.lower()
    assert r.detail["query"] == {"bool": {"must": [{"multi_match": {"query": "retention policy",
                                                                    "fields": ["title", "body"]}}], "filter": []}}
    assert {p.doc_id for p in r.passages} == {"1", "3"}
    receipts = [hb.home.ledger.get(i) for i in a.receipt_ids]
    assert receipts[-1].detail["total"] == 2 and receipts[-1].outcome_code == "G6_E_KNOWLEDGE_ELASTIC_SEARCHED"


def test_search_every_text_field_by_default_with_filters(hb: ElasticIndex) -> None:
    r = hb.search("retention", filters={"tag": "hr", "year": 2023}).result
    assert r.outcome is Outcome.OK and [p.doc_id for p in r.passages] == ["3"]
    fields = r.detail["query"]["bool"]["must"][0]["multi_match"]["fields"]
    assert fields == ["author.name", "body", "title"]  # every text field, none inside a nested object
    assert hb.find("retention", tag="policy")[0].doc_id == "1"


def test_explicit_empty(hb: ElasticIndex) -> None:
    r = hb.search("zebra unicorn").result
    assert r.outcome is Outcome.EMPTY and r.total == 0 and r.passages == ()


def test_refusals_before_sending(hb: ElasticIndex, home: EvidenceHome) -> None:
    hb.mapping()
    n = len(home.ledger)
    with pytest.raises(ElasticInputError) as e:
        hb.search("x", filters={"title": "Retention policy"})
    assert e.value.code == "G6_E_KNOWLEDGE_FILTER_ON_TEXT" and e.value.detail["keyword_subfield"] == "title.raw"
    assert "'title.raw'" in str(e.value)
    with pytest.raises(ElasticInputError) as e:
        hb.search("x", filters={"body": "x"})
    assert e.value.code == "G6_E_KNOWLEDGE_FILTER_ON_TEXT" and "no keyword sub-field" in str(e.value)
    hb.fields = ("summary",)
    with pytest.raises(ElasticInputError) as e:
        hb.search("x")
    assert e.value.code == "G6_E_KNOWLEDGE_FIELD_NOT_IN_MAPPING"
    assert e.value.detail["fields"]["title"]["type"] == "text"  # lists what the index does hold
    hb.fields = ("comments.text",)
    with pytest.raises(ElasticInputError) as e:
        hb.search("x")
    assert e.value.code == "G6_E_KNOWLEDGE_NESTED_FIELD"
    hb.fields = ("year",)
    with pytest.raises(ElasticInputError):
        hb.search("x")
    hb.fields = ()
    with pytest.raises(ElasticInputError) as e:
        hb.search("x", filters={"comments.by": "bob"})
    assert e.value.code == "G6_E_KNOWLEDGE_NESTED_FIELD"
    assert len(home.ledger) == n  # nothing was sent, nothing receipted


def test_index_without_text_fields(home: EvidenceHome, elastic_url: str) -> None:
    with ElasticIndex("numbers", home=home, url=elastic_url) as numbers:
        with pytest.raises(ElasticInputError) as e:
            numbers.search("anything")
        assert e.value.code == "G6_E_KNOWLEDGE_NO_TEXT_FIELDS"
        assert numbers.count(None, {"code": "a"}).result.count == 1


def test_count_and_get(hb: ElasticIndex) -> None:
    c = hb.count("retention").result
    assert c.outcome is Outcome.OK and c.count == 2
    g = hb.get("2").result
    assert g.outcome is Outcome.OK and g.document["author"]["name"] == "Grace Hopper"
    assert g.detail["concrete_index"] == "handbook" and g.detail["source_sha256"].startswith("sha256:")
    missing = hb.get("999")
    assert missing.result.outcome is Outcome.NOT_FOUND and missing.result.reason == "document_not_found"
    assert hb.home.ledger.get(missing.receipt_ids[-1]).outcome_code == "G6_E_KNOWLEDGE_ELASTIC_NOT_FOUND"


def test_missing_index_is_not_found_not_empty(home: EvidenceHome, elastic_url: str) -> None:
    with ElasticIndex("no-such-index", home=home, url=elastic_url) as idx:
        r = idx.search("x").result
        assert r.outcome is Outcome.NOT_FOUND and r.reason == "index_not_found"
        assert idx.get("1").result.outcome is Outcome.NOT_FOUND
        with pytest.raises(ElasticReadError) as e:
            idx.find("x")
        assert e.value.code == "G6_E_KNOWLEDGE_ELASTIC_NOT_FOUND"


def test_alias_over_two_indices(home: EvidenceHome, elastic_url: str) -> None:
    with ElasticIndex("both", home=home, url=elastic_url) as both:
        m = both.mapping().result
        assert m.concrete_index is None and sorted(m.detail["concrete_indices"]) == ["handbook", "handbook2"]
        assert both.search("citation").result.total == 1


@pytest.mark.parametrize("name", ["hand*", "a,b", "a/b", "../etc", ".security", "_all", "Upper", "remote:idx", ""])
def test_index_name_input_errors(name: str) -> None:
    with pytest.raises(ElasticInputError) as e:
        check_index_name(name)
    assert e.value.code == "G6_E_KNOWLEDGE_ELASTIC_INPUT"


def test_only_loopback_servers(home: EvidenceHome) -> None:
    for url in ("http://10.0.0.5:9200", "http://es.example.org:9200", "http://user:pw@127.0.0.1:9200", "ftp://x"):
        with pytest.raises(ElasticInputError):
            check_loopback_url(url)
    assert check_loopback_url("http://localhost:9200/") == "http://localhost:9200"


def test_nothing_answering_says_how_to_start_one(home: EvidenceHome) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with ElasticIndex("handbook", home=home, url=f"http://127.0.0.1:{port}") as idx:
        a = idx.search("x")
    assert a.result.outcome is Outcome.UNREACHABLE and "noida-db start" in a.result.detail["message"]
    assert home.ledger.get(a.receipt_ids[0]).outcome == "unreachable"


# -- against recorded bodies over a real socket ----------------------------------------------
MAPPING = {"my-index-000001": {"mappings": {"properties": {"full_text": {"type": "text"},
                                                           "message": {"type": "text"}}}}}


def es_site(site: Site, search: Reply | None = None, count: Reply | None = None) -> LocalSite:
    routes = {"/my-index-000001/_mapping": Reply(body=json.dumps(MAPPING).encode(), content_type=JSON)}
    if search:
        routes["/my-index-000001/_search"] = search
    if count:
        routes["/my-index-000001/_count"] = count
    return site(routes)


def reader(home: EvidenceHome, s: LocalSite, **kw) -> ElasticReader:
    return ElasticReader(home.store, s.base_url, **kw)


def test_recorded_one_hit_and_request_shape(home: EvidenceHome, site: Site) -> None:
    s = es_site(site, Reply(body=rec("search_match_one_hit_docs_testresponse.json"), content_type=JSON))
    r = reader(home, s).search("my-index-000001", "quick brown", fields=("full_text",))
    assert r.outcome is Outcome.OK and r.passages[0].text == "Quick Brown Foxes!" and r.passages[0].score == 0.8630463
    sent = [q for q in s.requests if q.path.endswith("_search")][0]
    assert sent.method == "POST" and "?" not in sent.path
    body = json.loads(sent.body)
    assert body == {"query": {"bool": {"must": [{"multi_match": {"query": "quick brown", "fields": ["full_text"]}}],
                                       "filter": []}}, "size": 10}
    for forbidden in ("ignore_unavailable", "allow_no_indices", "expand_wildcards"):
        assert all(forbidden not in q.path and forbidden.encode() not in q.body for q in s.requests)


@pytest.mark.parametrize(("name", "reason"), [("search_shard_failure_inside_200.json", "shard_failures"),
                                              ("search_timed_out_200.json", "timed_out")])
def test_partial_search_is_never_a_plain_result(home: EvidenceHome, site: Site, name: str, reason: str) -> None:
    s = es_site(site, Reply(body=rec(name, "elasticsearch-derived"), content_type=JSON))
    r = reader(home, s).search("my-index-000001", "get")
    # the document's PARTIAL: the hits and the count come back, marked as not the whole of the index
    assert r.outcome is Outcome.PARTIAL and r.reason == reason and len(r.passages) == 1
    assert r.code == "G6_E_KNOWLEDGE_ELASTIC_PARTIAL" and r.detail["hits_in_partial_reply"] == 1


def test_count_partial(home: EvidenceHome, site: Site) -> None:
    s = es_site(site, count=Reply(body=rec("count_shard_failure_200.json", "elasticsearch-derived"),
                                  content_type=JSON))
    from g6.fetch.capture import es_read

    r, ids = es_read(home, reader(home, s).count("my-index-000001", "get"), {"index": "my-index-000001"})
    assert r.outcome is Outcome.PARTIAL and r.count is None and r.code == "G6_E_KNOWLEDGE_ELASTIC_COUNT_PARTIAL"
    last = home.ledger.get(ids[-1])
    assert last.detail["partial_count"] == 7 and "count" not in last.detail
    assert last.outcome_code == "G6_E_KNOWLEDGE_ELASTIC_COUNT_PARTIAL"


def test_relation_gte_is_kept(home: EvidenceHome, site: Site) -> None:
    s = es_site(site, Reply(body=rec("search_total_relation_gte_200.json", "elasticsearch-derived"),
                            content_type=JSON))
    r = reader(home, s).search("my-index-000001", "get")
    assert r.outcome is Outcome.OK and (r.total, r.total_relation) == (10000, "gte")


@pytest.mark.parametrize(("reply", "outcome", "reason"), [
    (Reply(401, rec("security_exception_status401.json", "elasticsearch-derived"), content_type=JSON),
     Outcome.BLOCKED, "http_401"),
    (Reply(403, rec("security_exception_status403.json", "elasticsearch-derived"), content_type=JSON),
     Outcome.BLOCKED, "http_403"),
    (Reply(400, rec("error_search_phase_execution_all_shards_failed_status400.json"), content_type=JSON),
     Outcome.REJECTED, "http_400"),
    (Reply(500, b'{"error": {"type": "x", "reason": "boom"}, "status": 500}', content_type=JSON),
     Outcome.SERVER_ERROR, "http_500"),
    (Reply(200, b"<html>not elasticsearch</html>", content_type="text/html"), Outcome.PARSE_FAILED,
     "not_elasticsearch"),
    (Reply(200, b'{"took": 1}', content_type=JSON), Outcome.PARSE_FAILED, "no_hits_in_reply"),
])
def test_server_answers_are_typed(home: EvidenceHome, site: Site, reply: Reply, outcome: Outcome, reason: str) -> None:
    s = es_site(site, reply)
    r = reader(home, s).search("my-index-000001", "get")
    assert r.outcome is outcome and r.reason == reason
    if reply.status == 400:
        assert r.detail["message"].startswith("all shards failed")
    if reply.status == 401:
        assert "missing authentication credentials" in r.detail["message"]


def test_redirect_is_never_followed(home: EvidenceHome, site: Site) -> None:
    target = site({"*": Reply(body=b"{}", content_type=JSON)}, host="127.0.0.2")
    s = es_site(site, Reply(302, headers=(("Location", target.url("/my-index-000001/_search")),)))
    r = reader(home, s).search("my-index-000001", "get")
    assert r.outcome is Outcome.REFUSED and r.reason == "redirect_not_followed"
    assert target.requests == []


def test_timeout(home: EvidenceHome, site: Site) -> None:
    def slow(req: SeenRequest) -> Reply:
        time.sleep(1.0)
        return Reply(body=b"{}", content_type=JSON)

    s = es_site(site, slow)  # type: ignore[arg-type]
    r = reader(home, s, timeout=0.2).search("my-index-000001", "get")
    assert r.outcome is Outcome.UNREACHABLE and r.reason == "timeout"


def test_api_key_sent_to_the_server_never_receipted(home: EvidenceHome, site: Site) -> None:
    s = es_site(site, Reply(body=rec("search_match_one_hit_docs_testresponse.json"), content_type=JSON))
    with ElasticIndex("my-index-000001", home=home, url=s.base_url, api_key="es-KEY-SECRET") as idx:
        a = idx.search("quick")
    assert all(q.headers["authorization"] == "ApiKey es-KEY-SECRET" for q in s.requests)
    for rid in a.receipt_ids:
        assert "es-KEY-SECRET" not in home.ledger.get(rid).canonical_bytes(with_signature=True).decode()


def test_recorded_mapping_with_index_false(home: EvidenceHome, site: Site) -> None:
    s = site({"/my-index-000001/_mapping": Reply(body=rec("get_mapping_docs_testresponse.json"), content_type=JSON)})
    r = reader(home, s).mapping("my-index-000001")
    assert r.mapping["employee-id"] == {"type": "keyword", "index": False}
    assert r.mapping["age"] == {"type": "integer"}


# -- fuzzing the reply parsers (MockTransport: parsing only) ---------------------------------
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(
        st.sampled_from(["hits", "total", "value", "relation", "_shards", "failed", "timed_out", "_source",
                         "_score", "_id", "_index", "count", "found", "error", "mappings", "properties", "type",
                         "fields", "my-index-000001", "full_text"]), c, max_size=5)),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["search", "count", "get", "mapping"]), st.sampled_from([200, 400, 404, 500]),
       st.one_of(json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=100)))
def test_fuzz_reply_parsers(tmp_path_factory: pytest.TempPathFactory, op: str, status: int, body: bytes) -> None:
    from g6.store import BlobStore

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("_mapping") and op != "mapping":
            return httpx.Response(200, content=json.dumps(MAPPING).encode())
        return httpx.Response(status, content=body)

    store = BlobStore(tmp_path_factory.mktemp("fz"), fsync=False)
    with ElasticReader(store, "http://127.0.0.1:9", transport=httpx.MockTransport(handler)) as r:
        result = {"search": lambda: r.search("my-index-000001", "q"), "count": lambda: r.count("my-index-000001", "q"),
                  "get": lambda: r.get_doc("my-index-000001", "1"),
                  "mapping": lambda: r.mapping("my-index-000001")}[op]()
    assert isinstance(result.outcome, Outcome)
    if result.outcome is Outcome.OK and op == "count":
        assert isinstance(result.count, int)
