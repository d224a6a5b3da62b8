"""The readers and the check as one: every citation a reader finds gets a verdict (those whose source cannot be
read too), an empty report is refused, the exit code fails closed, and what the readers say besides the source
(prefix and suffix, the author's read time and archived copy, the link as written) is used or shown."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.export.citations import memento_uri
from g6.export.report_html import render_report_check
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.report.model_json import report_from_json, report_to_json
from g6.report.result import ResultInputs, build_result, exit_code, figures, sign_result
from g6.report.run import load_report
from g6.schemas import load
from tests.report.check_helpers import QUOTE, article, check, cite, g6, report_of

Site = Callable[..., LocalSite]
INPUTS = ResultInputs("r", "sha256:" + "0" * 64, 1, {"source": "home", "receipts_only": False})


def _markdown(s: LocalSite) -> bytes:
    return (f"Bills rose ([Gazette]({s.url('/a')})). Click [here](javascript:alert(1)) for the rest of it. "
            "The chart [is here](data:text/html,hi) for anyone. See [the notes](/notes/today) about it. "
            f"Quoted as \"{QUOTE}\" by [the Gazette]({s.url('/a')}).\n").encode()


def test_every_unusable_citation_gets_a_verdict_in_its_place_and_counts_in_the_figures(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = load_report(_markdown(s), None, "r.md")
    assert [c.n for c in report.citations] == [1, 5] and [u.n for u in report.unusable] == [2, 3, 4]
    run = check(home, report, client)
    assert [(c.n, v.verdict) for c, v in zip(run.report.citations, run.verdicts, strict=True)] == [
        (1, "no_quote"), (2, "source_failed"), (3, "source_failed"), (4, "source_failed"), (5, "quote_found")]
    js, data, relative = run.verdicts[1:4]
    assert js.detail == {"unusable": "a javascript: address, not a source g6 reads (http, https, or a DOI, arXiv "
                                     "or OpenAlex id)", "written": "javascript:alert(1)"}
    assert "cannot be read" in js.reason and js.receipt_id is None and js.read is None
    assert data.detail["written"] == "data:text/html,hi" and "--base URL" in relative.detail["unusable"]
    assert run.report.citations[1].claim == "Click here for the rest of it."
    figs = figures(run)
    assert (figs["citations"], figs["source_failed"], figs["sources"], figs["sources_failed"]) == (5, 3, 4, 3)
    assert figs["quote_found_share"] == 0.2
    result = sign_result(build_result(run, INPUTS, None), home.signing_key())
    assert [c["n"] for c in result["citations"]] == [1, 2, 3, 4, 5] and result["exit_code"] == 1
    jsonschema.Draft202012Validator(load("report-check.v1")).validate(result)
    page = render_report_check(result, run.report.text)
    assert 'id="c-2"' in page and "javascript:alert(1)" in page and 'href="javascript' not in page


def test_unusable_citations_of_provider_formats_are_checked_in_their_places(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    perplexity = {"id": "x", "model": "sonar", "object": "chat.completion", "created": 1,
                  "choices": [{"index": 0, "finish_reason": "stop", "message": {
                      "role": "assistant", "content": "Bills rose 12% [2]. Water fell [1]. Gas held [2]."}}],
                  "citations": [s.url("/a")]}
    openai = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4.1", "output": [
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [
            {"type": "output_text", "text": "Bills rose 12%. See the file.", "annotations": [
                {"type": "url_citation", "start_index": 0, "end_index": 15, "url": s.url("/a"), "title": "A"},
                {"type": "file_citation", "file_id": "file-1", "filename": "notes.pdf", "index": 28}]}]}]}
    for raw, want in ((perplexity, [(1, "source_failed", "[2]"), (2, "no_quote", s.url("/a")),
                                    (3, "source_failed", "[2]")]),
                      (openai, [(1, "no_quote", s.url("/a")), (2, "source_failed", "file_citation")])):
        run = check(home, load_report(json.dumps(raw).encode()), client)
        assert [(c.n, v.verdict, c.source) for c, v in zip(run.report.citations, run.verdicts, strict=True)] == want
        assert all("unusable" in v.detail for v in run.verdicts if v.verdict == "source_failed")


def test_the_model_json_keeps_the_unusable_citations_and_every_field(site: Site) -> None:
    s = site({})
    report = load_report(_markdown(s), None, "r.md")
    back = report_from_json(json.dumps(report_to_json(report)).encode())
    assert back == report and back.unusable
    jsonschema.Draft202012Validator(load("report-model.v1")).validate(report_to_json(report))
    doi = load_report(b"Earlier work is in <https://doi.org/10.1000/183> and elsewhere.\n")
    assert report_from_json(json.dumps(report_to_json(doi)).encode()).citations[0].address == \
        "https://doi.org/10.1000/183"


@pytest.mark.parametrize("data", [b"", b" \n\t\r\n", b"\xef\xbb\xbf  \n", "\n".encode("utf-16")])
def test_an_empty_report_is_refused_as_input_before_anything(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "empty.md").write_bytes(data)
    r = g6(tmp_path / "home", "report", "check", str(tmp_path / "empty.md"))
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith(f"g6: {tmp_path / 'empty.md'}: empty") and "Traceback" not in err
    assert not (tmp_path / "home").exists()  # refused before the home is opened


def test_the_exit_code_fails_closed() -> None:
    def code(**counts: int) -> int:
        return exit_code({"citations": sum(counts.values()), **counts})

    assert code(quote_found=3) == 0
    for worse in ("quote_not_found", "no_quote", "source_failed", "redirected_elsewhere"):
        assert code(quote_found=3, **{worse: 1}) == 1
        assert code(**{worse: 2}) == 1
    assert code() == 1  # no citation at all: nothing was shown to hold


def test_exit_1_when_only_unchecked_citations_or_none_at_all(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    (tmp_path / "noquote.md").write_text(f"Bills rose 12% over the quarter ([Gazette]({s.url('/a')})).\n")
    (tmp_path / "prose.md").write_text("Bills rose by a lot this year, everyone agrees on that.\n")
    (tmp_path / "found.md").write_text(f"The Gazette wrote \"{QUOTE}\" ([Gazette]({s.url('/a')})).\n")
    home = tmp_path / "home"
    got = {name: g6(home, "report", "check", f"{name}.md", "--json") for name in ("noquote", "prose", "found")}
    assert {k: r.returncode for k, r in got.items()} == {"noquote": 1, "prose": 1, "found": 0}
    assert [json.loads(got[k].stdout)["exit_code"] for k in ("noquote", "prose", "found")] == [1, 1, 0]
    assert json.loads(got["prose"].stdout)["figures"]["citations"] == 0


def test_prefix_and_suffix_pick_among_the_places_a_quote_occurs(home: EvidenceHome, client: CheckedClient,
                                                                site: Site) -> None:
    q = "prices went up"
    s = site({"/a": Reply(body=article(f"In the north {q} in May.", f"In the south {q} in June.")),
              "/robots.txt": Reply(404)})
    run = check(home, report_of(cite(s.url("/a"), q), cite(s.url("/a"), q, prefix="In the SOUTH ", suffix=" in"),
                                cite(s.url("/a"), q, suffix=" in june"), cite(s.url("/a"), q, prefix="nowhere")),
                client)
    first, south, june, nowhere = run.verdicts
    assert [v.verdict for v in run.verdicts] == ["quote_found"] * 3 + ["quote_not_found"]
    assert (first.found["occurrence"], first.found["occurrences"], first.found["chosen_by"]) == (1, 2, "first")
    assert (south.found["occurrence"], south.found["chosen_by"]) == (2, "prefix_suffix")
    text = "".join(str(v.found["start"]) for v in run.verdicts[:3])
    assert south.found["start"] > first.found["start"] and june.found["start"] == south.found["start"], text
    # a prefix no place has before it: the selector selects nothing on this page (attack finding 13)
    assert nowhere.detail["context"] == "not_around" and "2 places" in nowhere.reason
    assert nowhere.hints[0]["start"] == first.found["start"] and nowhere.citation is None
    assert south.citation is not None and south.citation.citation_id != first.citation.citation_id
    assert south.citation.start == south.found["start"]  # the manifest cites the place taken
    once, line_break = check(home, report_of(cite(s.url("/a"), "in the north", suffix=" Prices   WENT"),
                                             cite(s.url("/a"), q, prefix="north\n", suffix="in\tmay.")),
                             client).verdicts
    assert once.verdict == "quote_found" and "occurrences" not in once.found
    assert line_break.verdict == "quote_found" and line_break.found["occurrence"] == 1  # whitespace is no difference


def test_the_read_made_when_the_author_read_the_page_is_the_evidence(home: EvidenceHome, client: CheckedClient,
                                                                    site: Site) -> None:
    body = {"now": article(QUOTE)}

    def page(_req: SeenRequest) -> Reply:
        return Reply(body=body["now"])

    s = site({"/a": page, "/robots.txt": Reply(404)})
    url = s.url("/a")
    then = home.ledger.get(fetch(home, client, url).receipt_id)
    body["now"] = article("The page was rewritten since.")
    newest = home.ledger.get(fetch(home, client, url).receipt_id)
    t = datetime.fromisoformat(then.fetched_at.replace("Z", "+00:00"))
    run = check(home, report_of(cite(url, QUOTE), cite(url, QUOTE, read_at=then.fetched_at),
                                cite(url, QUOTE, cached=memento_uri("https://g6.example", url, t)),
                                cite(url, QUOTE, read_at="2001-01-01T00:00:00Z"),
                                cite(url, QUOTE, cached=memento_uri("https://g6.example", url + "x", t))))
    plain, by_time, by_memento, no_match, other_url = run.verdicts
    assert (plain.verdict, plain.receipt_id) == ("quote_not_found", newest.receipt_id)
    for v in (by_time, by_memento):
        assert (v.verdict, v.receipt_id, v.detail["read_at"]["matched"]) == ("quote_found", then.receipt_id, True)
    assert (no_match.receipt_id, no_match.detail["read_at"]) == (newest.receipt_id,
                                                                 {"said": "2001-01-01T00:00:00Z", "matched": False})
    assert other_url.receipt_id == newest.receipt_id and "read_at" not in other_url.detail
    assert run.fetched == 0


def test_what_the_report_says_of_a_source_is_in_the_result_and_shown(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    (tmp_path / "r.md").write_text(f"Bills rose, as [the Gazette](a) says: \"{QUOTE}\".\n")
    r = g6(tmp_path / "home", "report", "check", "r.md", "--base", s.url("/"), "--html", "r.html", "-o", "r.json")
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr
    assert f"[1] quote_found          {s.url('/a')}" in out and "    written as a\n" in out
    cj = json.loads((tmp_path / "r.json").read_text())["citations"][0]
    assert cj["address"] == "a" and cj["source"] == s.url("/a")
    assert "written as" in (tmp_path / "r.html").read_text()
    bad = g6(tmp_path / "home", "report", "check", "r.md", "--base", "doi:10.1/x")
    assert bad.returncode == 2 and b"--base" in bad.stderr and bad.stderr.count(b"\n") == 1
