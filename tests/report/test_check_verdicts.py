"""Each verdict of `g6 report check`, against real pages on a loopback site and a real home."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.report.verdicts import HINT, MAX_QUOTE
from tests.report.check_helpers import LEAD, QUOTE, article, check, cite, report_of, same

Site = Callable[..., LocalSite]
LOGIN = (Path(__file__).resolve().parents[2] / "fixtures" / "interstitial" / "login-page.html").read_bytes()


def test_quote_found_exactly_and_after_normalising_as_g6_cite_finds_it(home: EvidenceHome, client: CheckedClient,
                                                                       site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE))})
    shouted = "HOUSEHOLD bills   rose by 12% over the quarter."
    run = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), shouted)), client)
    exact, normalised = run.verdicts
    assert (exact.verdict, exact.found["match"], normalised.verdict, normalised.found["match"]) == \
        ("quote_found", "exact", "quote_found", "normalised")
    assert exact.found["text"] == QUOTE and exact.found["text_source"] == "main" and exact.found["passage_id"]
    # the same search as `g6 cite --quote`: the same span, the same citation id
    rid = exact.receipt_id
    assert rid is not None and home.ledger.get(rid).kind == "fetch"
    assert exact.citation is not None and exact.citation == normalised.citation.__class__(
        **{**cite_web(home, rid, quote=shouted).to_json(), "content": exact.citation.content,
           "added_at": exact.citation.added_at, "search": None, "failed_read": None})
    assert exact.read["how"] == "fetched" and run.fetched == 1


def test_a_quote_not_in_the_page_is_not_found_and_the_closest_span_is_only_a_hint(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE))})
    run = check(home, report_of(cite(s.url("/a"), "Household bills rose by 15% over the quarter.")), client)
    (v,) = run.verdicts
    assert v.verdict == "quote_not_found" and v.found is None and v.citation is None
    assert "not in the document" in v.reason
    (hint,) = v.hints
    assert hint["label"] == HINT == "a hint, not support"
    assert 0.8 < hint["similarity"] < 1 and "12%" in hint["text"]


def test_a_quote_only_in_structured_data_or_hidden_text_is_not_found_and_says_so(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    hidden = "Water bills fell by 3% in the same quarter."
    ld = json.dumps({"@context": "https://schema.org", "@type": "NewsArticle", "description": hidden})
    s = site({"/ld": Reply(body=article(QUOTE, extra=f'<script type="application/ld+json">{ld}</script>')),
              "/none": Reply(body=article(QUOTE, f'<span style="display:none">{hidden}</span>'))})
    run = check(home, report_of(cite(s.url("/ld"), hidden), cite(s.url("/none"), hidden)), client)
    ld_v, none_v = run.verdicts
    assert (ld_v.verdict, none_v.verdict) == ("quote_not_found", "quote_not_found")
    assert ld_v.detail["hidden_in"] == "structured_data" and "structured data" in ld_v.reason
    assert none_v.detail["hidden_in"] != "structured_data" and "hidden" in none_v.reason
    assert none_v.citation is None and ld_v.citation is None


def test_no_quote_lists_the_passages_most_like_the_claim_as_hints_and_calls_nothing_supported(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article("Water prices were flat.", QUOTE, "The council meets on Tuesdays."))})
    run = check(home, report_of(cite(s.url("/a"), None, "Household bills rose by 12% this quarter"),
                                cite(s.url("/a"), None, "")), client)
    v, bare = run.verdicts
    assert v.verdict == "no_quote" and v.found is None and v.citation is None and "nothing" in v.reason
    assert 1 <= len(v.hints) <= 3 and all(h["label"] == HINT for h in v.hints)
    assert v.hints[0]["text"] == QUOTE and v.hints[0]["similarity"] > v.hints[-1]["similarity"] - 1e-9
    assert bare.verdict == "no_quote" and bare.hints == ()
    assert run.fetched == 1  # one URL, one read


def test_source_failed_carries_the_reads_outcome(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/gone": Reply(404, b"<html><body>not here</body></html>"),
              "/forbidden": Reply(403, b"<html><body>no</body></html>"),
              "/wall": Reply(body=LOGIN),
              "/png": Reply(body=b"\x89PNG\r\n\x1a\n" + b"\0" * 64, content_type="image/png"),
              "/robots.txt": Reply(404)})
    urls = [s.url(p) for p in ("/gone", "/forbidden", "/wall", "/png")]
    run = check(home, report_of(*(cite(u, QUOTE) for u in urls), cite("ftp://example.org/x", QUOTE),
                                cite("document:2", QUOTE)), client)
    gone, forbidden, wall, png, ftp, doc = run.verdicts
    assert all(v.verdict == "source_failed" for v in run.verdicts)
    assert gone.detail == {"outcome": "not_found", "http_status": 404} and "not_found, HTTP 404" in gone.reason
    assert forbidden.detail["outcome"] == "blocked" and forbidden.receipt_id is not None
    assert wall.detail["interstitial"]["kind"] == "login" and "login page" in wall.reason
    assert png.detail["text"] == "not_text" and png.receipt_id is not None
    assert ftp.receipt_id is None and "not a source g6 reads" in ftp.reason
    assert doc.receipt_id is None and "--document 2=URL" in doc.reason
    for v in (gone, forbidden, wall, png):  # every read receipted, failed or not
        assert home.ledger.get(v.receipt_id).request["url"] in urls


def test_a_read_stopped_at_its_byte_cap_before_the_quote_is_too_large_to_check(
        home: EvidenceHome, site: Site) -> None:
    page = article(*[LEAD] * 20, QUOTE)
    s = site({"/long": Reply(body=page), "/robots.txt": Reply(404)})
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, max_bytes=len(page) // 2)
    with CheckedClient(policy) as c:
        run = check(home, report_of(cite(s.url("/long"), QUOTE), cite(s.url("/long"), LEAD)), c)
    late, early = run.verdicts
    assert late.verdict == "source_failed" and "byte cap" in late.reason and late.detail["truncated"] is True
    assert early.verdict == "quote_found" and early.detail["truncated"] is True  # what was read holds it


def test_a_document_mapped_to_a_url_or_a_receipt_is_checked(home: EvidenceHome, client: CheckedClient,
                                                            site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE))})
    first = check(home, report_of(cite("document:1", QUOTE)), client, documents={1: s.url("/a")})
    (v,) = first.verdicts
    assert v.verdict == "quote_found"
    again = check(home, report_of(cite("document:1", QUOTE)), None, documents={1: v.receipt_id})
    assert again.verdicts[0].verdict == "quote_found" and again.verdicts[0].read["how"] == "pinned"


def test_a_pinned_receipt_is_the_evidence_and_a_missing_one_is_none(home: EvidenceHome, client: CheckedClient,
                                                                    site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE))})
    rid = check(home, report_of(cite(s.url("/a"), QUOTE)), client).verdicts[0].receipt_id
    requests = len(s.requests)
    run = check(home, report_of(cite(s.url("/a"), QUOTE, receipt_id=rid),
                                cite(s.url("/a"), QUOTE, receipt_id="rcpt_00000000000000000000000000")), client)
    pinned, missing = run.verdicts
    assert (pinned.verdict, pinned.receipt_id, pinned.read["how"]) == ("quote_found", rid, "pinned")
    assert missing.verdict == "source_failed" and "not in this home" in missing.reason
    assert len(s.requests) == requests  # nothing fetched


def test_the_newest_ok_read_in_the_home_is_used_and_receipts_only_gives_the_same_verdicts(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/gone": Reply(404, b"no"), "/robots.txt": Reply(404)})
    report = report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), "Not on the page at all."),
                       cite(s.url("/a"), None), cite(s.url("/gone"), QUOTE), cite(s.url("/a#section"), QUOTE))
    fetched = check(home, report, client)
    assert [v.verdict for v in fetched.verdicts] == ["quote_found", "quote_not_found", "no_quote", "source_failed",
                                                     "quote_found"]
    assert fetched.fetched == 2  # /a (its fragment is not another page) and /gone
    receipts, requests = len(home.ledger), len(s.requests)
    stored = check(home, report, None)
    assert same(stored) == same(fetched)
    assert {v.read["how"] for v in stored.verdicts} == {"home"}
    assert (len(home.ledger), len(s.requests)) == (receipts, requests)
    # with a client too: a fitting read in the home is used; only the URL without an ok read is read again
    again = check(home, report, client)
    assert same(again)[:3] == same(fetched)[:3] and again.fetched == 1


def test_receipts_only_without_a_read_has_no_evidence(home: EvidenceHome) -> None:
    (v,) = check(home, report_of(cite("http://127.0.0.1:9/never-read", QUOTE)), None).verdicts
    assert v.verdict == "source_failed" and "no read of" in v.reason and v.receipt_id is None


def test_a_quote_of_a_megabyte_is_not_searched_and_the_verdict_stays_small(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE))})
    huge = ("Household bills rose. " * 50_000)[:1_000_000]
    wide = ("Hausbesitzer zahlten 12 % mehr für Strom. " * 25_000)[:1_000_000]  # not ASCII: the slow normaliser
    run = check(home, report_of(cite(s.url("/a"), huge, claim=huge), cite(s.url("/a"), wide, claim=wide)), client)
    for v, q in zip(run.verdicts, (huge, wide), strict=True):
        assert v.verdict == "quote_not_found" and f"{MAX_QUOTE:,}" in v.reason and v.detail["quote_chars"] == len(q)
        assert len(json.dumps(v.to_json())) < 10_000


def test_the_same_url_cited_500_times_is_read_once(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    run = check(home, report_of(*(cite(s.url("/a"), QUOTE if i % 2 else None) for i in range(500))), client)
    assert len(run.verdicts) == 500 and {v.verdict for v in run.verdicts} == {"quote_found", "no_quote"}
    assert [r.path for r in s.requests].count("/a") == 1
    assert len({v.receipt_id for v in run.verdicts}) == 1


def test_a_citation_of_a_loopback_address_is_refused_and_receipted_like_any_fetch(home: EvidenceHome,
                                                                                   site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE))})
    private = "http://10.11.12.13/internal"  # refused before any connection: nothing is sent anywhere
    with CheckedClient(FetchPolicy(host_pause=0.0)) as strict:  # loopback not allowed (the default)
        run = check(home, report_of(cite(s.url("/a"), QUOTE), cite(private, QUOTE)), strict)
    for v in run.verdicts:
        assert v.verdict == "source_failed" and v.detail["outcome"] == "refused"
        assert home.ledger.get(v.receipt_id).outcome == "refused"
    assert s.requests == []


def test_a_run_file_is_not_evidence(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """Resumed, a run reads no page it read, and decides each verdict again from the receipt: an edited run file
    changes no verdict, and a line naming a receipt as the read of another URL is not taken for one."""
    s = site({"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = report_of(cite(s.url("/a"), "Not on the page."), cite(s.url("/b"), QUOTE))
    first = check(home, report, client, run_id="run_edit")
    path = home.root / "knowledge" / "reports" / "run_edit.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0].update(verdict="quote_found", reason="trust me")  # a forged verdict
    lines[1]["read"]["url"] = s.url("/elsewhere")  # its receipt is a read of /b, not of this URL
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    asked = len([q for q in s.requests if q.path != "/robots.txt"])
    again = check(home, report, client, run_id="run_edit")
    assert again.resumed == 2 and same(again) == same(first)
    assert len([q for q in s.requests if q.path != "/robots.txt"]) == asked  # neither page read again


def test_a_resumed_run_does_not_read_a_failed_page_again_unless_a_newer_read_came_since(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """What a run file is for: a page this run read and failed on (a 404, no ok read to rest on) is not read again
    when the run is resumed; the run's line only spares that read while it is the newest read of the URL. Once a
    newer read of it is in the home (another fetch since), the rule chooses as it would without the file."""
    state = {"gone": True}
    s = site({"/gone": lambda req: Reply(404, article(QUOTE)) if state["gone"] else Reply(body=article(QUOTE)),
              "/robots.txt": Reply(404)})
    report = report_of(cite(s.url("/gone"), QUOTE))
    (first,) = check(home, report, client, run_id="run_gone").verdicts
    assert first.verdict == "source_failed" and first.detail["http_status"] == 404
    for _ in range(2):  # resumed, and resumed again
        (again,) = check(home, report, client, run_id="run_gone").verdicts
        assert again.receipt_id == first.receipt_id and again.read["how"] == "fetched"
    assert [q.path for q in s.requests].count("/gone") == 1
    state["gone"] = False
    newer = fetch(home, client, s.url("/gone"))
    (third,) = check(home, report, client, run_id="run_gone").verdicts
    assert third.verdict == "quote_found" and third.receipt_id == newer.receipt_id


def test_a_url_with_a_secret_parameter_rests_on_no_stored_read(home: EvidenceHome, client: CheckedClient,
                                                                site: Site) -> None:
    """Receipts record ``/doc?key=AAAA`` as ``/doc?key=REDACTED``, so a stored read of it cannot be told from one of
    ``/doc?key=BBBB`` (another document): the check reads such a URL now, each value once; with --receipts-only
    (and a pin) it has no evidence, and the reason shows the URL redacted (the attack test is finding 4's)."""
    s = site({"/doc": lambda req: Reply(body=article(f"Document {req.path[-4:]}: {QUOTE}")), "/robots.txt": Reply(404)})
    report = report_of(cite(s.url("/doc?key=AAAA"), QUOTE), cite(s.url("/doc?key=AAAA"), QUOTE),
                       cite(s.url("/doc?key=BBBB"), QUOTE))
    a1, a2, b = check(home, report, client).verdicts
    assert [v.verdict for v in (a1, a2, b)] == ["quote_found"] * 3
    assert a1.receipt_id == a2.receipt_id != b.receipt_id and [q.path for q in s.requests].count("/doc?key=AAAA") == 1
    again = check(home, report, client).verdicts  # nothing stored is reused: read again
    assert {v.receipt_id for v in again}.isdisjoint({a1.receipt_id, b.receipt_id})
    offline = check(home, report_of(cite(s.url("/doc?key=AAAA"), QUOTE),
                                    cite(s.url("/doc?key=AAAA"), QUOTE, receipt_id=a1.receipt_id)), None).verdicts
    assert [v.verdict for v in offline] == ["source_failed"] * 2
    assert all("secret parameter" in v.reason and "AAAA" not in v.reason for v in offline), [v.reason for v in offline]


def test_a_pinned_receipt_of_another_page_is_no_evidence_of_this_one(home: EvidenceHome, client: CheckedClient,
                                                                     site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article("Nothing about bills.")),
              "/old": Reply(301, headers=(("Location", "/a"),)), "/robots.txt": Reply(404)})
    a = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/old"), QUOTE)), client)
    rid_a, rid_old = (v.receipt_id for v in a.verdicts)
    run = check(home, report_of(cite(s.url("/b"), QUOTE, receipt_id=rid_a),   # /a's read, cited as /b's
                                cite(s.url("/a"), QUOTE, receipt_id=rid_old)), None)  # /old's read, ended at /a
    other, redirected = run.verdicts
    assert other.verdict == "source_failed" and "not of the cited URL" in other.reason
    assert redirected.verdict == "quote_found" and redirected.read["how"] == "pinned"


def test_a_receipt_edited_in_the_database_is_no_evidence(tmp_path: Path, client: CheckedClient, site: Site) -> None:
    """A row of the ledger rewritten to say /a's read was a read of /b (whose page lacks the quote) would make
    /b's citation `quote_found`; its signature no longer verifies, so it is no evidence."""
    import sqlite3

    s = site({"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article("Nothing here.")), "/robots.txt": Reply(404)})
    root = tmp_path / "h"
    with EvidenceHome(root, fsync=False) as ev:
        ev.keys.init()
        rid = check(ev, report_of(cite(s.url("/a"), QUOTE)), client).verdicts[0].receipt_id
    db = sqlite3.connect(root / "knowledge" / "ledger.sqlite")
    (text,) = db.execute("SELECT receipt FROM receipts WHERE receipt_id = ?", (rid,)).fetchone()
    d = json.loads(text)
    d["request"]["url"] = s.url("/b")
    db.execute("UPDATE receipts SET receipt = ? WHERE receipt_id = ?", (json.dumps(d), rid))
    db.commit()
    db.close()
    with EvidenceHome(root, fsync=False) as ev:
        stored = check(ev, report_of(cite(s.url("/b"), QUOTE), cite(s.url("/b"), QUOTE, receipt_id=rid)), None)
    unpinned, pinned = stored.verdicts
    assert unpinned.verdict == "source_failed" and "no read of" in unpinned.reason
    assert pinned.verdict == "source_failed" and "does not verify" in pinned.reason
