"""Cite passages, then re-check them against a local site whose pages change between fetches."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.search import SearchRequest, SourceRegistry
from g6.cite.cite import chunk_receipt, cite_paper, cite_web
from g6.cite.manifest import Manifest, load_manifest, save_manifest
from g6.cite.passages import chunk, normalise, passage_id, text_hash
from g6.cite.recheck import recheck, verdict_run
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch, search
from g6.home import EvidenceHome
from g6.schemas import load

Site = Callable[..., LocalSite]
P1 = "Receipts make every read provable: the address, the time and the bytes are kept together."
P2 = "A citation names a passage by the hash of its normalised text, so it survives re-flowed whitespace."
P3 = "Re-checking fetches the page again and compares the cited passage with what is there now."


def page(*paras: str, stamp: str = "2026-01-01", ad: str = "Buy now") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (f"<html><head><title>Notes</title></head><body><header>Updated {stamp}</header>"
            f"<article>{body}</article><aside>{ad}</aside></body></html>").encode()


@pytest.fixture
def client() -> CheckedClient:
    return CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, total_timeout=5, read_timeout=2))


def cite_all(home: EvidenceHome, client: CheckedClient, s: LocalSite, path: str) -> list:
    r = fetch(home, client, s.url(path))
    return [cite_web(home, r.receipt_id, quote=q) for q in (P1, P2, P3)]


def test_normalisation_and_ids() -> None:
    a = "“Receipts”  make\n every read—provable…"
    b = '"receipts" MAKE every read-provable...'
    assert normalise(a) == normalise(b) == '"receipts" make every read-provable...'
    assert passage_id(a) == passage_id(b) and text_hash(a) == text_hash(b)
    assert normalise("a\u200bb\u00adc") == "abc"
    text = "First line\n\nSecond line"
    ps = chunk(text)
    assert [(p.start, p.end) for p in ps] == [(0, 10), (12, 23)]
    assert [p.passage_id for p in chunk("Second line\nFirst line")] == [ps[1].passage_id, ps[0].passage_id]


def test_chunk_and_cite(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=page(P1, P2, P3)), "/robots.txt": Reply(404, b"")})
    r = fetch(home, client, s.url("/a"))
    _, passages = chunk_receipt(home, r.receipt_id)
    by_text = {p.text: p for p in passages}
    assert P2 in by_text
    c = cite_web(home, r.receipt_id, passage=by_text[P2].passage_id)
    assert (c.start, c.end, c.text) == (by_text[P2].start, by_text[P2].end, P2)
    assert c.content == r.content and c.source_url == s.url("/a") and c.kind == "web"
    q = cite_web(home, r.receipt_id, quote="SO IT SURVIVES   re-flowed whitespace")
    assert q.text == "so it survives re-flowed whitespace" and q.passage_id == by_text[P2].passage_id
    with pytest.raises(InputError, match="not on the page"):
        cite_web(home, r.receipt_id, quote="words that are not on the page")
    with pytest.raises(InputError, match="no passage"):
        cite_web(home, r.receipt_id, passage="p_0000000000000000")
    m = Manifest.new().with_citation(c).with_citation(q).with_citation(c)
    assert len(m.citations) == 2
    jsonschema.Draft202012Validator(load("manifest.v1")).validate(m.to_json())


def test_manifest_signing(home: EvidenceHome, tmp_path: Path) -> None:
    m = Manifest.new().signed(home.signing_key())
    keys = home.keys.trusted()
    assert m.verify_signature(keys) == (True, "ok")
    save_manifest(m, tmp_path / "m.json")
    back = load_manifest(tmp_path / "m.json")
    assert back == m and back.verify_signature(keys)[0]
    data = json.loads((tmp_path / "m.json").read_text())
    data["created_at"] = "2000-01-01T00:00:00Z"
    assert Manifest.from_json(data).verify_signature(keys) == (False, "signature does not match the manifest")
    jsonschema.Draft202012Validator(load("manifest.v1")).validate(data)


def test_every_verdict(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    paths = ("/same", "/stamp", "/ad", "/moved", "/edited", "/removed", "/blocked", "/missing", "/limited",
             "/broken")
    routes = {p: Reply(body=page(P1, P2, P3)) for p in paths}
    routes["/robots.txt"] = Reply(404, b"")
    s = site(routes)
    cites = {p: cite_web(home, fetch(home, client, s.url(p)).receipt_id, quote=P2) for p in paths}
    m = Manifest(manifest_id="mfst_test", created_at="2026-12-02T00:00:00Z", citations=tuple(cites.values()))

    s.routes = {
        **routes,
        "/stamp": Reply(body=page(P1, P2, P3, stamp="2026-12-02")),
        "/ad": Reply(body=page(P1, P2, P3, ad="A different advert entirely")),
        "/moved": Reply(body=page(P3, P1, P2)),
        "/edited": Reply(body=page(P1, P2.replace("survives re-flowed whitespace", "survives changed spacing"), P3)),
        "/removed": Reply(body=page(P1, P3)),
        "/blocked": Reply(403, b"no"),
        "/missing": Reply(404, b"gone away"),
        "/limited": Reply(429, b"slow down", headers=(("Retry-After", "60"),)),
        "/broken": Reply(500, b"oops"),
    }
    report = recheck(home, client, m, workers=4)
    got = {v.citation_id: v for v in report.verdicts}
    verdict = {p: got[c.citation_id] for p, c in cites.items()}
    assert verdict["/same"].verdict == "unchanged"
    assert verdict["/stamp"].verdict == "current" and verdict["/stamp"].moved is False
    assert verdict["/ad"].verdict == "current"
    assert verdict["/moved"].verdict == "current" and verdict["/moved"].moved is True
    assert verdict["/edited"].verdict == "changed" and 0.6 <= verdict["/edited"].similarity < 1
    assert "survives changed spacing" in verdict["/edited"].new_text
    assert verdict["/removed"].verdict == "gone"
    assert {p: verdict[p].verdict for p in ("/blocked", "/missing", "/limited", "/broken")} == {
        "/blocked": "blocked", "/missing": "not_found", "/limited": "rate_limited", "/broken": "server_error"}
    assert report.exit_code == 1
    jsonschema.Draft202012Validator(load("recheck-report.v1")).validate(report.to_json())
    rr = home.ledger.get(verdict["/edited"].receipt_id)
    assert rr.kind == "recheck" and rr.links["rechecks"] == [cites["/edited"].receipt_id]
    assert rr.detail["verdicts"] == {cites["/edited"].citation_id: "changed"}
    assert home.verify().ok


def test_unreachable_is_never_gone_and_exit_codes(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=page(P1, P2, P3)), "/robots.txt": Reply(404, b"")})
    cs = cite_all(home, client, s, "/a")
    m = Manifest("mfst_x", "2026-12-02T00:00:00Z", tuple(cs))
    assert recheck(home, client, m).exit_code == 0
    s.stop()
    report = recheck(home, client, m)
    assert {v.verdict for v in report.verdicts} == {"unreachable"}
    assert report.exit_code == 3


def test_one_fetch_per_url_and_resume(home: EvidenceHome, client: CheckedClient, site: Site, tmp_path: Path) -> None:
    s = site({"/a": Reply(body=page(P1, P2, P3)), "/b": Reply(body=page(P1, P2, P3)),
              "/robots.txt": Reply(404, b"")})
    cs = cite_all(home, client, s, "/a") + cite_all(home, client, s, "/b")
    m = Manifest("mfst_r", "2026-12-02T00:00:00Z", tuple(cs))
    before = len(s.requests)
    first = recheck(home, client, m, run_id="run_1", state_dir=tmp_path)
    assert [q.path for q in s.requests[before:]].count("/a") == 1  # three citations, one fetch
    assert first.resumed == 0 and len(first.verdicts) == 6
    # a crash left the run file with two verdicts and a torn line: the rest are checked again
    state = tmp_path / "mfst_r.run_1.jsonl"
    lines = state.read_text().splitlines()
    state.write_text("\n".join(lines[:2]) + '\n{"citation_id": "c_torn', )
    before = len(s.requests)
    second = recheck(home, client, m, run_id="run_1", state_dir=tmp_path)
    assert second.resumed == 2 and len(second.verdicts) == 6
    assert len(verdict_run(state).load()) == 6
    again = recheck(home, client, m, run_id="run_1", state_dir=tmp_path)
    assert again.resumed == 6
    assert len(s.requests) - before == 2  # only the fetches the torn run still owed
    # another run's verdicts copied into a run file are not this run's: their receipts say so, all checked again
    (tmp_path / "mfst_r.run_2.jsonl").write_text("\n".join(lines) + "\n")
    assert recheck(home, client, m, run_id="run_2", state_dir=tmp_path).resumed == 0


def test_search_citation_refetches_the_locator_and_compares_the_total(home: EvidenceHome, client: CheckedClient,
                                                                      site: Site) -> None:
    fix = Path(__file__).resolve().parent.parent / "fixtures" / "http" / "arxiv" / "id_list_1605.08386_status200.xml"
    paper_page = b"<html><body><h1>Heat-bath random walks with Markov bases</h1><p>Abstract.</p></body></html>"
    s = site({"/abs/1605.08386v1": Reply(body=paper_page), "/robots.txt": Reply(404, b"")})
    feed = fix.read_bytes().replace(b"http://arxiv.org/abs/1605.08386v1", s.url("/abs/1605.08386v1").encode())
    routes = dict(s.routes)
    routes["/api/query"] = Reply(body=feed, content_type="application/atom+xml")
    s.routes = routes
    src = ArxivSource(base_url=s.url("/api/query"), pause=0)
    reg = SourceRegistry()
    reg.register(src)
    result = search(home, client, src, SearchRequest("markov"))
    c = cite_paper(home, result.receipt_ids[0], 1)
    assert c.kind == "search" and c.source_url == s.url("/abs/1605.08386v1")
    assert c.text == "Heat-bath random walks with Markov bases" and c.search["total"] == 1
    report = recheck(home, client, Manifest("mfst_s", "2026-12-02T00:00:00Z", (c,)), sources=reg)
    v = report.verdicts[0]
    assert v.verdict == "current" and v.detail["total_then"] == 1 and v.detail["total_now"] == 1
    with pytest.raises(InputError):
        cite_paper(home, result.receipt_ids[0], 2)


def _definition(text: str) -> str:
    """The README's definition, applied to the whole string at once."""
    import unicodedata

    from g6.cite.passages import _MAP

    return " ".join(unicodedata.normalize("NFKC", text).casefold().translate(_MAP).split())


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB c\t\n.\x0b\x1c\u00a0É“”—…\u200bﬁ\u0301\u0327e\u00adİ\u1100\u1161\u11a8"
                                             "\uac00\u0b47\u0b3e")), max_size=40))
def test_property_normalisation_is_whole_string_nfkc_with_a_map_back(text: str) -> None:
    from g6.cite.passages import normalised

    n = normalised(text)
    assert n.text == _definition(text)
    assert len(n.starts) == len(n.ends) == len(n.text)
    # every normalised character maps back to a raw span whose own normalisation holds it
    for i, ch in enumerate(n.text):
        if ch != " ":
            assert 0 <= n.starts[i] < n.ends[i] <= len(text)
            assert ch in _definition(text[n.starts[i]:n.ends[i]]) or n.ends[i] - n.starts[i] > 1


def test_ascii_normalise_is_the_offset_maps_text() -> None:
    """``normalise`` (behind every ``text_hash``) takes a short cut for ASCII text: it must give exactly
    the text ``normalised`` maps offsets for, every ASCII whitespace and control character included."""
    from g6.cite.passages import normalise, normalised

    every = "".join(chr(i) for i in range(128))
    for text in (every, f"  A\tquote{every}ends \x1c\x1f here\r\n", "One  Two\x0bthree\x0cFOUR", "", " \t\n"):
        assert normalise(text) == normalised(text).text
