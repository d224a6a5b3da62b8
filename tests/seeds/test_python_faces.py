"""The Python faces the documents name, each over the real library: a source of your own through
``SOURCES.register``, ``clients(adapter)`` for the built-in sources, ``http.Client`` with a plain
function as transport, ``ElasticIndex.find``/``search`` and the read-only ``index_backends``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.search import Paper, ParsedPage
from g6.core import http
from g6.demo.site import Reply
from g6.home import EvidenceHome
from g6.knowledge.knowledge_fetcher import SOURCES, FetchRequest, fetch


@pytest.fixture
def ev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EvidenceHome:
    monkeypatch.setenv("G6_HOME", str(tmp_path / "home"))
    for k in ("G6_ARXIV_URL", "G6_ELASTIC_URL"):
        monkeypatch.delenv(k, raising=False)
    home = EvidenceHome(tmp_path / "home", fsync=False)
    home.keys.init()
    return home


class Catalogue:
    """A source of one's own: a JSON list of titles."""

    name = "catalogue"
    pause = 0.0
    robots = False
    needs = "a query"
    key_env = None

    def __init__(self, url: str) -> None:
        self.url = url

    def first_url(self, request: Any) -> str:
        return f"{self.url}?q={request.query}"

    def next_url(self, request: Any, previous: Any, collected: int) -> None:
        return None

    def parse(self, request: Any, status: int, content_type: Any, body: bytes) -> ParsedPage:
        titles = json.loads(body)["titles"]
        return ParsedPage(Outcome.OK, papers=tuple(Paper(self.name, t, locator=f"{self.url}/{i}")
                                                    for i, t in enumerate(titles)), total=len(titles))

    def complete(self, request: Any, total: Any, collected: int, last: Any) -> bool:
        return collected == total

    def headers(self) -> tuple[dict[str, str], None]:
        return {}, None


def loopback(adapter: Any) -> http.Client:
    return http.Client(http.FetchPolicy(allow_loopback=True, host_pause=0), obey_robots=adapter.obey_robots)


def test_a_registered_source_fetches_through_the_client_it_is_given(ev: EvidenceHome, site: Any) -> None:
    s = site({"/cat": Reply(body=b'{"titles": ["Receipts", "Ledgers"]}', content_type="application/json")})
    SOURCES.register(Catalogue(s.url("/cat")))
    try:
        assert "catalogue" in SOURCES.names()
        seen: list[Any] = []

        def clients(adapter: Any) -> http.Client:
            seen.append(adapter)
            return loopback(adapter)

        found = fetch(FetchRequest(source="catalogue", query="receipts"), clients=clients, home=ev)
    finally:
        SOURCES.unregister("catalogue")
    assert found.code == "G6_E_KNOWLEDGE_FETCHED" and found.total == 2 and found.complete is True
    assert [d.title for d in found.documents] == ["Receipts", "Ledgers"]
    assert found.documents[0].source["url"] == s.url("/cat") + "?q=receipts"
    assert seen[0].obey_robots is False and [q.path for q in s.requests] == ["/cat?q=receipts"]
    assert ev.ledger.get(found.receipt_ids[0]).outcome_code == "G6_E_KNOWLEDGE_FETCHED"


def test_built_in_sources_show_clients_their_robots_rule(ev: EvidenceHome, site: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    feed = (Path(__file__).resolve().parents[2] / "fixtures" / "http" / "arxiv" /
            "search_q_testing_start0_max10_status200.xml").read_bytes()
    s = site({"/api/query": Reply(body=feed, content_type="application/atom+xml")})
    monkeypatch.setenv("G6_ARXIV_URL", s.url("/api/query"))
    monkeypatch.setenv("G6_ARXIV_PAUSE", "0")
    seen: list[Any] = []

    def clients(adapter: Any) -> http.Client:
        seen.append((adapter.name, adapter.obey_robots, adapter.pause))
        return loopback(adapter)

    found = fetch(FetchRequest(source="arxiv", query="testing", max_results=2), clients=clients, home=ev)
    assert seen == [("arxiv", False, 0.0)] and found.code == "G6_E_KNOWLEDGE_FETCHED" and len(found.documents) == 2


def test_a_plain_function_transport_sees_the_named_url(ev: EvidenceHome) -> None:
    asked: list[str] = []

    def answers(request: http.Request) -> http.Response:
        asked.append(request.url)
        if request.url.endswith("/robots.txt"):
            return http.Response(200, {"content-type": "text/plain"}, b"User-agent: *\nAllow: /", request.url)
        return http.Response(200, {"content-type": "text/html"}, b"<title>T</title><p>Words.</p>", request.url)

    def clients(adapter: Any) -> http.Client:
        return http.Client(http.FetchPolicy(host_pause=0), transport=answers,
                           resolver=lambda host, port: ["93.184.216.34"], obey_robots=adapter.obey_robots)

    found = fetch(FetchRequest(source="http", url="https://example.org:8443/a?b=1"), clients=clients, home=ev)
    assert asked == ["https://example.org:8443/robots.txt", "https://example.org:8443/a?b=1"]
    (doc,) = found.documents
    assert found.code == "G6_E_KNOWLEDGE_FETCHED" and doc.title == "T" and doc.text.strip() == "Words."
    assert doc.converted_by == "g6.knowledge html_to_text" and doc.media_type == "text/html"


def test_a_binary_body_is_kept_by_its_hash(ev: EvidenceHome) -> None:
    pdf = b"%PDF-1.4 not really a pdf"

    def answers(request: http.Request) -> http.Response:
        return http.Response(200, {"content-type": "application/pdf"}, pdf, request.url)

    found = fetch(FetchRequest(source="http", url="https://example.org/p.pdf"),
                  clients=lambda a: http.Client(http.FetchPolicy(host_pause=0), transport=answers,
                                                resolver=lambda h, p: ["93.184.216.34"], obey_robots=False),
                  home=ev)
    import hashlib

    assert found.documents == [] and found.kept == "sha256:" + hashlib.sha256(pdf).hexdigest()
    assert ev.store.info(found.kept).size == len(pdf)


def test_elastic_index_find_and_search(ev: EvidenceHome, handbook_url: str) -> None:
    from g6.knowledge._index import index_backends
    from g6.knowledge.ctx_elastic import ElasticIndex

    assert set(index_backends) == {"elastic"} and index_backends["elastic"] is ElasticIndex
    with pytest.raises(TypeError):
        index_backends["other"] = ElasticIndex  # type: ignore[index]
    with ElasticIndex("handbook", fields=("title", "body"), url=handbook_url, home=ev) as handbook:
        searched = handbook.find("leave", {"team": "hr"})
        hits = handbook.search("parental leave", top_k=1)
        counted = handbook.count()
    assert searched.code == "G6_E_KNOWLEDGE_ELASTIC_SEARCHED" and searched.total == 2 and searched.complete
    assert [h.rank for h in searched.hits] == [1, 2]
    assert len(hits) == 1 and hits[0].passage.doc_id == "leave-1" and hits[0].score_scale == "es_bm25"
    assert counted.code == "G6_E_KNOWLEDGE_ELASTIC_COUNTED" and counted.count == 3  # no query: every document
