"""A quoted passage of several sentences stays one claim: the sentence splitter does not end a sentence inside
a quotation that closes on the same line (for Markdown: the same paragraph), so rule 4 of the Markdown reader
("one citation and one quoted passage in the sentence") applies to it. Quote marks: "…", “…”, „…“, «…»; single
quotes are apostrophes as often as quotes and are not quote marks. An unclosed quote changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.export.report_html import render_report_check
from g6.home import EvidenceHome
from g6.report.model import Report
from g6.report.read import read_report
from g6.report.result import ResultInputs, build_result, sign_result
from g6.report.run import load_report
from g6.report.sentences import sentence_spans
from tests.report.check_helpers import article, check

Site = Callable[..., LocalSite]
URL = "http://127.0.0.1:8531/a.html"
BARRAGE = ("Output from the barrage was not effective at reducing winter peak demand. Engineers measured a "
           "capacity factor of 31 percent")


def md(text: str) -> Report:
    r = read_report(text.encode(), format="markdown")
    for c in r.citations:
        assert c.claim_start is not None and r.text[c.claim_start:c.claim_end] == c.claim
    return r


def one(r: Report) -> tuple[str, str | None]:
    assert len(r.citations) == 1
    return r.citations[0].claim, r.citations[0].quote


def spans(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def test_a_two_sentence_straight_quote_is_one_claim_and_the_quote() -> None:
    r = md(f'The [survey]({URL}) says "{BARRAGE}".')
    assert one(r) == (f'The survey says "{BARRAGE}".', BARRAGE)
    c = r.citations[0]
    assert (c.claim_start, c.claim_end) == (0, len(r.text))
    assert r.uncited_claims == ()


@pytest.mark.parametrize(("opening", "closing"), [("“", "”"), ("«", "»"), ("« ", " »"), ("„", "“"), ("„", "”"),
                                                  ("»", "«")])
def test_curly_quotes_guillemets_and_german_quotes(opening: str, closing: str) -> None:
    passage = "First paragraph ends here. Second paragraph starts here."
    r = md(f"Before this one. The [note]({URL}) reads {opening}{passage}{closing} After that one.")
    claim = f"The note reads {opening}{passage}{closing}"
    assert one(r) == (claim, passage)
    assert r.text[r.citations[0].claim_start:r.citations[0].claim_end] == claim
    assert r.uncited_claims == ("Before this one.", "After that one.")


def test_reversed_guillemets_as_german_and_danish_print_them() -> None:
    # »…« opens with » (German and Danish books and papers); «…» stays the French way round
    passage = "Die Leistung war gering. Die Ingenieure maßen sie"
    r = md(f"Der [Bericht]({URL}) sagt »{passage}« im Mai.")
    assert one(r) == (f"Der Bericht sagt »{passage}« im Mai.", passage)
    assert spans("Er sagte »nein. Nie wieder.« Dann ging er.") == ["Er sagte »nein. Nie wieder.«", "Dann ging er."]
    # a » closing a French quotation is not read as opening one
    assert spans("Il dit « non. Jamais » hier. Puis il part. » Fin.") == ["Il dit « non. Jamais » hier.",
                                                                         "Puis il part. »", "Fin."]
    # an unclosed » changes nothing
    assert spans("Er sagte »nein. Dann ging er.") == ["Er sagte »nein.", "Dann ging er."]


def test_the_quote_may_end_in_its_own_full_stop_then_a_new_sentence_starts() -> None:
    r = md(f'The [clerk]({URL}) said "no more today. The office is closed." Then he left the building.')
    assert one(r) == ('The clerk said "no more today. The office is closed."', "no more today. The office is closed.")
    assert r.uncited_claims == ("Then he left the building.",)
    assert spans('He said "no." Then left.') == ['He said "no."', "Then left."]


def test_apostrophes_are_not_quote_marks() -> None:
    passage = "O'Brien's team didn't win. The '90s were better, and the 90's too"
    r = md(f'The [memo]({URL}) says "{passage}" in its summary.')
    assert one(r) == (f'The memo says "{passage}" in its summary.', passage)
    # outside quotes apostrophes split nothing and join nothing
    assert spans("It's the '90s here. O'Brien left. The students' fees rose. Don't go.") == [
        "It's the '90s here.", "O'Brien left.", "The students' fees rose.", "Don't go."]
    assert spans("In the ‘90s it rose. The students’ fees fell.") == ["In the ‘90s it rose.",
                                                                      "The students’ fees fell."]


def test_nested_single_quotes_inside_double_quotes() -> None:
    passage = "she wrote 'we won. They lost' that day. Nobody replied"
    r = md(f'The [memo]({URL}) says "{passage}" to all.')
    assert one(r) == (f'The memo says "{passage}" to all.', passage)
    passage = "she wrote ‘we won. They lost’ that day. Nobody replied"
    r = md(f"The [memo]({URL}) says “{passage}” to all.")
    assert one(r) == (f"The memo says “{passage}” to all.", passage)


def test_a_quote_across_a_source_line_break_is_one_sentence() -> None:
    r = md(f'The [survey]({URL}) says "Output from the barrage was not effective.\nEngineers measured a '
           'capacity factor" in May.')
    passage = "Output from the barrage was not effective. Engineers measured a capacity factor"
    assert one(r) == (f'The survey says "{passage}" in May.', passage)


def test_an_unclosed_quote_is_bounded_by_its_paragraph() -> None:
    r = md(f'The [survey]({URL}) says "output was low. Engineers measured it.\n\nA new paragraph starts here. '
           'It has "two sentences. And a stray" mark. Then more words here.')
    assert one(r) == ('The survey says "output was low.', None)
    assert r.uncited_claims == ("Engineers measured it.", "A new paragraph starts here.",
                                'It has "two sentences. And a stray" mark.', "Then more words here.")
    # a blank line (and any line break of the text) ends a quote that is open
    assert spans('One "two three. Four\nFive six." Seven.') == ['One "two three.', "Four", 'Five six."', "Seven."]
    # inch marks and a lone quote open nothing
    assert spans('A 12" pipe. Then "a lone mark. Then more.') == ['A 12" pipe.', 'Then "a lone mark.', "Then more."]


def test_a_quote_holding_a_link() -> None:
    r = md(f'The report says "bills rose by [12 percent]({URL}) in May. Prices fell after that" in June.')
    passage = "bills rose by 12 percent in May. Prices fell after that"
    assert one(r) == (f'The report says "{passage}" in June.', passage)


def test_several_quotes_in_one_sentence_give_no_quote() -> None:
    r = md(f'The [memo]({URL}) says "one two three. Four five" and "six seven eight. Nine ten" today.')
    assert one(r) == ('The memo says "one two three. Four five" and "six seven eight. Nine ten" today.', None)


def test_the_same_quote_in_a_footnote() -> None:
    r = md(f'The barrage did not help.[^1]\n\n[^1]: [Survey]({URL}): "{BARRAGE}".\n')
    assert one(r) == ("The barrage did not help.", BARRAGE)


def test_a_perplexity_marker_after_a_quoted_passage_claims_the_whole_sentence() -> None:
    content = f'The survey says "{BARRAGE}" [1]. Nothing else was said.'
    r = read_report(json.dumps({"choices": [{"message": {"content": content}}], "citations": [URL]}).encode())
    assert r.format == "perplexity"
    assert r.citations[0].claim == f'The survey says "{BARRAGE}".'


def test_report_check_finds_the_two_sentence_quote_and_marks_the_whole_claim(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a.html": Reply(body=article(BARRAGE + ".")), "/robots.txt": Reply(404)})
    text = (f'The [survey]({s.url("/a.html")}) says "{BARRAGE}".\n\n'
            f'The [survey]({s.url("/a.html")}) says “{BARRAGE}” in the spring.\n')
    report = load_report(text.encode(), None, "r.md")
    run = check(home, report, client)
    assert [v.verdict for v in run.verdicts] == ["quote_found", "quote_found"]
    assert run.report.uncited_claims == ()
    result = sign_result(build_result(run, ResultInputs("r", "sha256:" + "0" * 64, 1, {"source": "home",
                                                        "receipts_only": False}), None), home.signing_key())
    page = render_report_check(result, run.report.text)
    assert f'title="[1] quote_found">The survey says &quot;{BARRAGE}&quot;.</mark>' in page
    assert f'title="[2] quote_found">The survey says “{BARRAGE}” in the spring.</mark>' in page
