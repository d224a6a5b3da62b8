"""hypothesis: every reply parser gives a typed outcome for any bytes, never an exception."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.arxiv import parse_feed
from g6.adapters.sources.oaipmh import parse_oai
from g6.adapters.sources.openalex import parse_works
from g6.adapters.sources.search import ParsedPage
from g6.adapters.sources.semantic_scholar import parse_search

FIX = Path(__file__).resolve().parent.parent.parent / "fixtures" / "http"
SEEDS = {
    "arxiv": (FIX / "arxiv" / "search_q_testing_start0_max10_status200.xml").read_bytes(),
    "oai": (FIX / "oai-pmh" / "ListRecords.xml").read_bytes(),
    "openalex": (FIX / "openalex" / "works_search_49_results_per_page200_status200.json").read_bytes()[:6000],
    "s2": (FIX / "semanticscholar" / "relevance_search_last_page_no_next_total89_status200.json").read_bytes(),
}
PARSERS = {
    "arxiv": lambda st_, b: parse_feed(st_, None, b),
    "oai": lambda st_, b: parse_oai(st_, None, b),
    "openalex": lambda st_, b: parse_works(st_, None, b),
    "s2": lambda st_, b: parse_search(st_, None, b),
    "s2bulk": lambda st_, b: parse_search(st_, None, b, mode="bulk"),
}
statuses = st.sampled_from([200, 204, 400, 403, 404, 422, 429, 500])


def check(page: ParsedPage) -> None:
    assert isinstance(page.outcome, Outcome)
    if page.outcome is Outcome.OK:
        assert page.total is None or page.total >= 0
        assert all(p.trust == "untrusted" for p in page.papers)
    if page.outcome is Outcome.EMPTY:
        assert page.papers == () and page.total in (0, None)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(PARSERS)), statuses, st.binary(max_size=400))
def test_random_bytes(name: str, status: int, raw: bytes) -> None:
    check(PARSERS[name](status, raw))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(SEEDS)), statuses, st.integers(0, 10**6), st.integers(0, 64), st.binary(max_size=20))
def test_mutated_real_replies(name: str, status: int, pos: int, cut: int, insert: bytes) -> None:
    seed = SEEDS[name]
    pos %= len(seed)
    mutated = seed[:pos] + insert + seed[pos + cut:]
    check(PARSERS["s2" if name == "s2" else name](status, mutated))


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.text(max_size=10)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(["meta", "count", "results", "total", "data", "next",
                                                                "token", "error", "next_cursor", "timed_out",
                                                                "title", "authors", "offset", "display_name"]),
                                               children, max_size=5)),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["openalex", "s2", "s2bulk"]), statuses, json_values)
def test_structured_json(name: str, status: int, value: object) -> None:
    check(PARSERS[name](status, json.dumps(value).encode()))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["arxiv", "oai"]), st.lists(st.sampled_from([
    "<feed xmlns='http://www.w3.org/2005/Atom' xmlns:opensearch='http://a9.com/-/spec/opensearch/1.1/'>",
    "</feed>", "<entry>", "</entry>", "<opensearch:totalResults>", "</opensearch:totalResults>", "-3", "7",
    "<id>https://arxiv.org/api/errors#x</id>", "<title>", "</title>", "<OAI-PMH xmlns='http://www.openarchives.org/OAI/2.0/'>",
    "</OAI-PMH>", "<error code='noRecordsMatch'/>", "<ListRecords>", "</ListRecords>", "<record>", "</record>",
    "<header status='deleted'/>", "<header>", "</header>", "<resumptionToken completeListSize='x'>", "tok",
    "</resumptionToken>", "<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]>", "&e;"]), max_size=14))
def test_structured_xml(name: str, parts: list[str]) -> None:
    check(PARSERS[name](200, "".join(parts).encode()))


def test_external_entities_are_never_resolved() -> None:
    evil = (b"<?xml version='1.0'?><!DOCTYPE feed [<!ENTITY e SYSTEM 'file:///etc/hostname'>]>"
            b"<feed xmlns='http://www.w3.org/2005/Atom' xmlns:opensearch='http://a9.com/-/spec/opensearch/1.1/'>"
            b"<opensearch:totalResults>1</opensearch:totalResults><entry><id>http://arxiv.org/abs/1</id>"
            b"<title>&e;</title></entry></feed>")
    page = parse_feed(200, None, evil)
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else "\0"
    assert all(hostname not in (p.title or "") for p in page.papers)
