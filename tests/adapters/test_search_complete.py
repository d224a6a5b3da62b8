"""``complete`` means every match the source holds came back, for every source (issue 14), and a
search interrupted half-way keeps a receipt for every page it read, each with its own read time."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.oaipmh import OaiPmhSource
from g6.adapters.sources.openalex import OpenAlexSource
from g6.adapters.sources.search import Paper, ParsedPage, SearchRequest
from g6.adapters.sources.semantic_scholar import SemanticScholarSource
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.capture import search
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]


@dataclass
class Catalogue:
    """What the fake source holds, and how it pages: honest about its count."""

    size: int = 0
    cap: int = 3  # the most records the server puts on one page, whatever was asked
    oai_count: bool = True  # OAI-PMH: send completeListSize
    deleted_every: int = 0  # OAI-PMH: every n-th record (0: none) is a deleted header, counted in completeListSize
    served: int = 0  # records sent in replies so far
    lock: threading.Lock = field(default_factory=threading.Lock)

    def is_deleted(self, i: int) -> bool:
        return self.deleted_every > 0 and i % self.deleted_every == 0

    def live(self) -> int:
        return sum(not self.is_deleted(i) for i in range(self.size))

    def page(self, start: int, asked: int | None) -> list[int]:
        n = self.cap if asked is None else min(self.cap, asked)
        rows = list(range(start, min(self.size, start + n)))
        with self.lock:
            self.served += len(rows)
        return rows


def _args(req: SeenRequest) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(req.path).query).items()}


def routes(cat: Catalogue) -> dict[str, Any]:
    def arxiv(req: SeenRequest) -> Reply:
        a = _args(req)
        start = int(a["start"])
        rows = cat.page(start, int(a["max_results"]))
        entries = "".join(f"<entry><id>http://arxiv.org/abs/2101.{i:05d}v1</id><title>paper {i}</title></entry>"
                          for i in rows)
        body = ('<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
                f"<opensearch:totalResults>{cat.size}</opensearch:totalResults>"
                f"<opensearch:startIndex>{start}</opensearch:startIndex>{entries}</feed>")
        return Reply(body=body.encode(), content_type="application/atom+xml")

    def oai(req: SeenRequest) -> Reply:
        a = _args(req)
        start = int(a.get("resumptionToken", "0"))
        rows = cat.page(start, None)
        if cat.size == 0:
            body = '<error code="noRecordsMatch">none</error>'
        else:
            gone = ' status="deleted"'
            recs = "".join(f"<record><header{gone if cat.is_deleted(i) else ''}>"
                           f"<identifier>oai:x:{i}</identifier></header></record>" for i in rows)
            nxt = start + len(rows)
            size = f' completeListSize="{cat.size}"' if cat.oai_count else ""
            token = f"<resumptionToken{size}>{nxt if nxt < cat.size else ''}</resumptionToken>"
            body = f"<ListRecords>{recs}{token}</ListRecords>"
        xml = f'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">{body}</OAI-PMH>'
        return Reply(body=xml.encode(), content_type="text/xml")

    def openalex(req: SeenRequest) -> Reply:
        a = _args(req)
        start = 0 if a["cursor"] == "*" else int(a["cursor"])
        rows = cat.page(start, int(a["per-page"]))
        nxt = start + len(rows)
        data = {"meta": {"count": cat.size, "next_cursor": str(nxt) if rows and nxt < cat.size else None},
                "results": [{"id": f"https://openalex.org/W{i}", "display_name": f"paper {i}"} for i in rows]}
        return Reply(body=json.dumps(data).encode(), content_type="application/json")

    def s2(req: SeenRequest) -> Reply:
        a = _args(req)
        bulk = urlsplit(req.path).path.endswith("/bulk")
        start = int(a.get("token", "0")) if bulk else int(a["offset"])
        rows = cat.page(start, None if bulk else int(a["limit"]))
        nxt = start + len(rows)
        more = bool(rows) and nxt < cat.size
        data: dict[str, Any] = {"total": cat.size}
        if cat.size:
            data["data"] = [{"paperId": f"p{i}", "title": f"paper {i}"} for i in rows]
        data["token" if bulk else "next"] = (str(nxt) if bulk else nxt) if more else None
        if not bulk and not more:
            data.pop("next")
        return Reply(body=json.dumps(data).encode(), content_type="application/json")

    return {"/arxiv": arxiv, "/oai": oai, "/works": openalex, "/s2/paper/search": s2, "/s2/paper/search/bulk": s2}


SOURCES = ["arxiv", "oai_pmh", "openalex", "semantic_scholar", "semantic_scholar_bulk"]


def source_and_request(name: str, base: str, max_results: int, page_size: int | None) -> tuple[Any, SearchRequest]:
    if name == "arxiv":
        return ArxivSource(base_url=base + "/arxiv", pause=0), SearchRequest(query="x", max_results=max_results,
                                                                             page_size=page_size)
    if name == "oai_pmh":
        return OaiPmhSource(pause=0), SearchRequest(endpoint=base + "/oai", max_results=max_results)
    if name == "openalex":
        return OpenAlexSource(base_url=base + "/works", pause=0), SearchRequest(query="x", max_results=max_results,
                                                                                page_size=page_size)
    mode = "bulk" if name.endswith("bulk") else "relevance"
    return SemanticScholarSource(base_url=base + "/s2", pause=0), SearchRequest(
        query="x", max_results=max_results, page_size=page_size, mode=mode)


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[Catalogue, LocalSite, EvidenceHome, CheckedClient]]:
    cat = Catalogue()
    s = LocalSite(routes(cat)).start()
    with tempfile.TemporaryDirectory() as d, EvidenceHome(d, fsync=False) as home, \
            CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as client:
        home.keys.init()
        yield cat, s, home, client
    s.stop()


@pytest.mark.parametrize("name", SOURCES)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(0, 12), cap=st.integers(1, 5), max_results=st.integers(1, 14),
       page_size=st.one_of(st.none(), st.integers(1, 6)), oai_count=st.booleans(), deleted_every=st.integers(0, 4))
def test_complete_means_every_match_came_back(world: Any, name: str, size: int, cap: int, max_results: int,
                                              page_size: int | None, oai_count: bool, deleted_every: int) -> None:
    cat, s, home, client = world
    cat.size, cat.cap, cat.oai_count, cat.served = size, cap, oai_count, 0
    cat.deleted_every = deleted_every if name == "oai_pmh" else 0  # only OAI-PMH lists deleted records
    src, req = source_and_request(name, s.base_url, max_results, page_size)
    r = search(home, client, src, req)
    assert r.outcome in (Outcome.OK, Outcome.EMPTY), (r.outcome, r.reason)
    deleted = r.detail.get("deleted", 0)
    if r.complete:
        # the source's count holds the deleted records too (OAI-PMH's completeListSize does)
        assert r.total is None or len(r.papers) + deleted == r.total, (r.total, len(r.papers), deleted)
        assert len(r.papers) + deleted == cat.served, "complete, yet results that came back were dropped"
        assert len(r.papers) == cat.live() and deleted == size - cat.live()
    if size <= max_results:
        # everything fits: an honest source paged to its end must be called complete
        assert r.complete, (r.total, len(r.papers), r.detail)
    elif cat.live() > max_results:
        assert not r.complete and len(r.papers) == max_results


@pytest.mark.parametrize("name", SOURCES)
def test_max_results_cutting_the_last_page_is_not_complete(world: Any, name: str) -> None:
    """3 records on the only page, 2 asked for, no token: what OAI-PMH and S2 bulk called complete."""
    cat, s, home, client = world
    cat.size, cat.cap, cat.oai_count, cat.served = 3, 3, False, 0
    src, req = source_and_request(name, s.base_url, 2, 3)
    r = search(home, client, src, req)
    assert len(r.papers) == 2 and not r.complete
    assert r.detail.get("dropped_by_max_results", 0) == cat.served - 2


# -- interrupted runs ----------------------------------------------------------------------
@dataclass
class ScriptedSource:
    """A source whose parser stops on page ``stop_at`` with ``error`` (Ctrl-C, or a bug)."""

    base: str
    stop_at: int
    error: BaseException
    name: str = "scripted"
    pause: float = 0.0
    robots: bool = False
    needs: str = ""
    key_env: str | None = None

    def first_url(self, request: SearchRequest) -> str:
        return f"{self.base}/p?n=1"

    def next_url(self, request: SearchRequest, previous: ParsedPage, collected: int) -> str | None:
        return None if previous.next_cursor is None else f"{self.base}/p?n={previous.next_cursor}"

    def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage:
        n = int(body)
        if n == self.stop_at:
            raise self.error
        return ParsedPage(Outcome.OK, papers=(Paper("scripted", f"paper {n}"),), total=9, next_cursor=str(n + 1))

    def complete(self, request: SearchRequest, total: int | None, collected: int, last: ParsedPage) -> bool:
        return collected >= (total or 0)

    def headers(self) -> tuple[dict[str, str], str | None]:
        return {}, None


def scripted_site(site: Site) -> tuple[LocalSite, list[datetime]]:
    arrivals: list[datetime] = []

    def page(req: SeenRequest) -> Reply:
        from datetime import UTC

        arrivals.append(datetime.now(UTC))
        return Reply(body=_args(req)["n"].encode(), content_type="text/plain")

    return site({"/p": page}), arrivals


def _when(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def test_interrupted_search_keeps_a_receipt_per_page_read_each_with_its_read_time(home: EvidenceHome,
                                                                                   site: Site) -> None:
    s, arrivals = scripted_site(site)
    src = ScriptedSource(s.base_url, stop_at=3, error=KeyboardInterrupt())
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c, \
            pytest.raises(KeyboardInterrupt):
        search(home, c, src, SearchRequest(query="x", max_results=9))
    receipts = [e.receipt for e in home.ledger.entries()]
    assert [(r.detail["page"], r.outcome) for r in receipts] == [(1, "ok"), (2, "ok"), (3, "parse_failed")]
    assert receipts[-1].detail["reason"] == "interrupted"
    assert receipts[-1].detail["run"]["outcome"] == "interrupted" and receipts[-1].detail["run"]["pages"] == 3
    assert receipts[1].links == {"previous_page": receipts[0].receipt_id}
    # each page's receipt carries the time that page was read: before the next page was asked for
    for i in (0, 1):
        assert _when(receipts[i].fetched_at) <= arrivals[i + 1]
    assert home.verify().ok


def test_a_parser_crash_is_a_typed_page_and_the_run_keeps_its_receipts(home: EvidenceHome, site: Site) -> None:
    s, _ = scripted_site(site)
    src = ScriptedSource(s.base_url, stop_at=2, error=ValueError("bug in a parser"))
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c:
        r = search(home, c, src, SearchRequest(query="x", max_results=9))
    assert (r.outcome, r.reason) == (Outcome.PARSE_FAILED, "parser_error") and len(r.receipt_ids) == 2
    assert not r.complete and len(home.ledger) == 2


def test_page_receipts_are_appended_as_pages_are_read(home: EvidenceHome, site: Site) -> None:
    """While page 3 is being parsed, pages 1 and 2 are already in the ledger."""
    s, _ = scripted_site(site)
    seen: list[int] = []

    class Watching(ScriptedSource):
        def parse(self, request: SearchRequest, status: int, content_type: str | None, body: bytes) -> ParsedPage:
            with EvidenceHome(home.root, fsync=False) as other:  # another reader of the same ledger
                seen.append(len(other.ledger))
            return super().parse(request, status, content_type, body)

    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c:
        search(home, c, Watching(s.base_url, stop_at=99, error=RuntimeError()), SearchRequest(query="x",
                                                                                              max_results=4))
    assert seen == [0, 0, 1, 2]  # the newest page waits for the run's summary; the ones before are in


@pytest.mark.parametrize("endpoint", ["not a url", "127.0.0.1:8421/oai", "example.org/oai"])
def test_an_oai_endpoint_that_is_not_a_url_is_an_input_error(home: EvidenceHome, endpoint: str) -> None:
    from g6.adapters.sources.search import SearchInputError

    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c, \
            pytest.raises(SearchInputError, match="--endpoint: .*(not a URL|no scheme)"):
        search(home, c, OaiPmhSource(pause=0), SearchRequest(endpoint=endpoint))
    assert len(home.ledger) == 0  # nothing sent, nothing receipted


def test_a_search_reply_past_the_page_cap_is_too_large(home: EvidenceHome, site: Site) -> None:
    from g6.adapters.sources.search import SEARCH_REPLY_CAP

    huge = b'{"meta": {"count": 1}, "results": [' + b'{"id": "x"},' * (SEARCH_REPLY_CAP // 12 + 10) + b'{}]}'
    s = site({"/works": Reply(body=huge, content_type="application/json")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c:
        r = search(home, c, OpenAlexSource(base_url=s.url("/works"), pause=0), SearchRequest(query="x"))
    assert r.outcome is Outcome.TOO_LARGE and not r.complete and r.papers == ()
    assert home.ledger.get(r.receipt_ids[0]).outcome == "too_large"
