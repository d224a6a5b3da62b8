"""Markdown reports: the fixture (fixtures/reports/report.md) citation by citation, then each rule of the reader
on its own: markers, quotes (attributed blockquote, introduced blockquote, footnote, quoted sentence), paper ids,
what is not a citation, and which sentences count as claims without a citation."""

from __future__ import annotations

from pathlib import Path

import pytest

from g6.errors import ReportMalformed
from g6.report.formats.markdown import MAX_NESTING
from g6.report.model import Report
from g6.report.read import read_report

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reports"
A, B = "http://127.0.0.1:8421", "http://127.0.0.2:8421"


def md(text: str, **kw: str) -> Report:
    r = read_report(text.encode(), format="markdown", **kw)
    for c in r.citations:
        assert c.claim_start is None or r.text[c.claim_start:c.claim_end] == c.claim
    return r


def test_the_fixture_citation_by_citation() -> None:
    r = read_report((FIXTURES / "report.md").read_bytes())
    assert r.format == "markdown"
    got = [(c.source, c.claim, c.quote, c.title, c.where, c.address) for c in r.citations]
    energy = "Of those asked, 12% said they had changed energy supplier in the past year."
    bills = "Household bills rose by 12% over the quarter."
    essay = ('A short essay argues that "the answer should be a receipt" whenever a reader asks where a sentence '
             'came from.')
    gone = "The survey's raw tables are no longer online, and its private notes were never published."
    papers = "Earlier work on verifiable citations is in doi:10.1000/182 and arXiv:2401.01234, and in."
    assert got == [
        (f"{A}/news/energy.html", energy, None, "Harbour Gazette", "line 3, citation 1", None),
        (f"{A}/news/energy.html", bills, bills, None, "line 3, footnote [^bills]", None),
        (f"{A}/news/energy.html", "Most of the switchers cited price as the main reason, according to the same "
         "report.", None, "Households switch energy supplier", "line 3, citation 3", None),
        (f"{B}/news/energy.html", "The study's lead did not expect the result:",
         "“We expected people to stay put,” said Renée Dubois, who led the study.", "Harbour Gazette",
         "line 11, citation 1", None),
        (f"{A}/article", essay, "the answer should be a receipt", None, "line 13, citation 1", None),
        (f"{B}/article", "The same essay puts the case this way:", "Content-addressed storage keeps the bytes; a "
         "signed, hash-chained ledger keeps the story of how they were read.", None, "line 15, citation 1", None),
        (f"{A}/paper.pdf", "Receipts survive in a PDF too", None, None, "line 21, citation 1", None),
        (f"{A}/missing", gone, None, None, "line 23, citation 1", None),
        (f"{A}/private/notes", gone, None, "notes", "line 23, citation 2", None),
        ("doi:10.1000/182", papers, None, None, "line 25, doi:10.1000/182", None),
        ("arxiv:2401.01234", papers, None, None, "line 25, arXiv:2401.01234", "arXiv:2401.01234"),
        ("doi:10.1000/183", papers, None, None, "line 25, citation 3", "https://doi.org/10.1000/183"),
    ]
    assert r.citations[7].claim is r.citations[8].claim
    assert r.uncited_claims == ("A local survey ran for six weeks in the spring.",
                                "Researchers expect more households to switch next year.")
    assert r.unusable == ()
    # the markers are out of the text, the headings and quotations are in it
    assert "](" not in r.text and "[^" not in r.text and "http" not in r.text
    assert r.text.startswith("Who switches energy supplier, and why\n\nA local survey")


def test_markers_are_cut_with_their_parentheses_and_prose_links_keep_their_text() -> None:
    r = md("Bills rose 12% ([Gazette](http://a.example/1); [Herald](http://b.example/2)). Rates fell "
           "[reuters.com](http://c.example/3). A [survey](http://d.example/4) found more. See "
           "http://e.example/5 and [1](http://f.example/6) too.")
    assert r.text == "Bills rose 12%. Rates fell. A survey found more. See and too."
    assert [(c.source, c.claim, c.title) for c in r.citations] == [
        ("http://a.example/1", "Bills rose 12%.", "Gazette"), ("http://b.example/2", "Bills rose 12%.", "Herald"),
        ("http://c.example/3", "Rates fell.", None), ("http://d.example/4", "A survey found more.", None),
        ("http://e.example/5", "See and too.", None), ("http://f.example/6", "See and too.", None)]


def test_a_blockquote_attributed_after_it_and_one_introduced_by_a_link() -> None:
    r = md("The lead said:\n\n> We expected people to stay put.\n\nSource: [Gazette](http://a.example/g)\n\n"
           "The [essay](http://b.example/e) says:\n\n> Receipts matter.\n> They last.\n\n"
           "> A quotation nobody attributes.\n")
    assert [(c.source, c.claim, c.quote) for c in r.citations] == [
        ("http://a.example/g", "The lead said:", "We expected people to stay put."),
        ("http://b.example/e", "The essay says:", "Receipts matter. They last.")]
    assert r.uncited_claims == ()  # quotations and attributions are not claims


def test_an_attributed_blockquote_with_no_paragraph_before_it_has_no_claim() -> None:
    r = md("> Twelve percent changed supplier.\n>\n> — [A](http://a.example/1), [B](http://b.example/2)\n")
    assert [(c.source, c.claim, c.claim_start, c.quote) for c in r.citations] == [
        ("http://a.example/1", "", None, "Twelve percent changed supplier."),
        ("http://b.example/2", "", None, "Twelve percent changed supplier.")]


def test_footnotes_quote_blockquote_several_sources_and_none() -> None:
    r = md("Bills rose.[^1] Rates fell.[^2] Prices held.[^3] Again bills rose.[^1]\n\n"
           "[^1]: Gazette, “household bills rose by twelve percent” http://a.example/1\n"
           "[^2]: See [A](http://b.example/2) and doi:10.1000/99.\n"
           "[^3]: A conversation with the author.\n")
    got = [(c.source, c.claim, c.quote, c.where) for c in r.citations]
    assert got == [
        ("http://a.example/1", "Bills rose.", "household bills rose by twelve percent", "line 1, footnote [^1]"),
        ("http://b.example/2", "Rates fell.", None, "line 1, footnote [^2], source 1"),
        ("doi:10.1000/99", "Rates fell.", None, "line 1, footnote [^2], source 2"),
        ("http://a.example/1", "Again bills rose.", "household bills rose by twelve percent",
         "line 1, footnote [^1]")]
    assert [(u.n, u.written, u.claim) for u in r.unusable] == [(4, "[^3]", "Prices held.")]
    assert "names no link" in r.unusable[0].reason
    quoted = md("It rose.[^q]\n\n[^q]: http://a.example/q\n\n    > It rose by twelve percent.\n")
    assert quoted.citations[0].quote == "It rose by twelve percent."


def test_a_quoted_sentence_needs_one_citation_and_one_passage_of_three_words() -> None:
    r = md('He said "prices will keep rising" [a](http://a.example/1). '
           'She said "no" [b](http://b.example/2). '
           '"One two three" and "four five six" [c](http://c.example/3). '
           'Both "seven eight nine" [d](http://d.example/4) and [e](http://e.example/5).')
    assert [c.quote for c in r.citations] == ["prices will keep rising", None, None, None, None]


def test_what_is_not_a_citation_and_what_is_unusable() -> None:
    r = md("See [above](#top), [mail](mailto:a@b.example), [call](tel:123), ![chart](http://img.example/c.png) "
           "and `http://code.example/x`.\n\n```\nhttp://fenced.example/y\n```\n\n<p>http://html.example/z</p>\n\n"
           "Bad [js](javascript:alert(1)), [data](data:text/html,hi), [rel](notes/a.md) and [ftp](ftp://x.example/f).")
    assert r.citations == ()
    assert [(u.written, u.reason.split(" ")[1]) for u in r.unusable] == [
        ("javascript:alert(1)", "javascript:"), ("data:text/html,hi", "data:"), ("notes/a.md", "relative"),
        ("ftp://x.example/f", "ftp:")]
    assert r.text.startswith("See above, mail, call, and http://code.example/x.")
    based = md("Bad [rel](notes/a.md).", base="http://127.0.0.1:8421/reports/r.md")
    assert [(c.source, c.address) for c in based.citations] == [("http://127.0.0.1:8421/reports/notes/a.md",
                                                                "notes/a.md")]


def test_paper_ids_in_prose_and_links_become_paper_sources() -> None:
    r = md("Shown by doi:10.1000/xyz. Also (arXiv:2401.01234v2). Also https://arxiv.org/abs/hep-th/9901001v1 and "
           "[the work](https://openalex.org/W2741809807) and [pdf](https://arxiv.org/pdf/2401.01234.pdf) and "
           "[that](https://dx.doi.org/10.1000/abc%2Fdef).")
    assert [(c.source, c.address) for c in r.citations] == [
        ("doi:10.1000/xyz", None), ("arxiv:2401.01234v2", "arXiv:2401.01234v2"),
        ("arxiv:hep-th/9901001v1", "https://arxiv.org/abs/hep-th/9901001v1"),
        ("openalex:W2741809807", "https://openalex.org/W2741809807"),
        ("arxiv:2401.01234", "https://arxiv.org/pdf/2401.01234.pdf"),
        ("doi:10.1000/abc/def", "https://dx.doi.org/10.1000/abc%2Fdef")]
    assert r.text.startswith("Shown by doi:10.1000/xyz. Also. Also and the work and pdf and that.")
    openalex = md("Cited as OpenAlex W2741809807 and openalex:W123456 here.")
    assert [(c.source, c.address) for c in openalex.citations] == [
        ("openalex:W2741809807", "OpenAlex W2741809807"), ("openalex:W123456", None)]
    assert openalex.unusable == ()


def test_uncited_claims_leave_out_headings_questions_short_lines_and_tables_headers() -> None:
    r = md("# A heading with many words\n\nWhy does it matter?\n\nIt matters a lot.\n\nShort one.\n\n"
           "Setext heading with words\n---\n\n| a header cell | another one here |\n| --- | --- |\n"
           "| a plain cell with words | x |\n\n- a list item with words\n- cited item [x](http://a.example/x)\n")
    assert r.uncited_claims == ("It matters a lot.", "a plain cell with words | x", "a list item with words")


def test_a_link_alone_in_a_paragraph_claims_nothing() -> None:
    r = md("## Sources\n\n1. [Harbour Gazette](http://a.example/g)\n2. [The essay](http://b.example/e)\n")
    assert [(c.source, c.claim, c.claim_start) for c in r.citations] == [("http://a.example/g", "", None),
                                                                         ("http://b.example/e", "", None)]


def test_deep_nesting_is_read_to_the_bound_and_refused_past_it() -> None:
    """markdown-it drops whatever is nested past its maxNesting without a word (attack finding 12): here a list 40
    deep, a quotation 90 deep and a link inside emphasis 90 deep are read with their citations; past the bound
    (100 levels) the report is refused whole, never read with a citation missing."""
    lists = "".join("  " * i + "- item\n" for i in range(40)) + "  " * 40 + f"- Cures all [b]({B}/b).\n"
    quotes = "> " * 90 + f"The vaccine cures all [b]({B}/b).\n"
    spans = "*" * 45 + "_" * 45 + f"Cures [b]({B}/b)." + "_" * 45 + "*" * 45 + "\n"
    for nested in (lists, quotes, spans):
        r = md(f"Bills rose [a]({A}/a).\n\n" + nested)
        assert [c.source for c in r.citations] == [f"{A}/a", f"{B}/b"]
    for nested in ("> " * MAX_NESTING + f"Cures all [b]({B}/b).\n", "- " * (MAX_NESTING // 2) + f"[b]({B}/b)\n",
                   "[" * MAX_NESTING + f"[b]({B}/b)" + "]" * MAX_NESTING + "\n", "> " * 100_000 + "x\n"):
        with pytest.raises(ReportMalformed, match="nested"):
            md(f"Bills rose [a]({A}/a).\n\n" + nested)


def test_a_marker_alone_in_the_last_paragraph_claims_nothing() -> None:
    """Found by the fuzz test (``[^1]: \\n\\na\\n\\n[^1]``): the text's trailing line breaks are cut after the markers'
    offsets were taken, so a marker alone in the last paragraph sat past the text's end (an IndexError, exit 70)."""
    r = md(f"a [b]({A}/b)\n\n[^1]\n\n[^1]: {B}/n\n")
    assert [(c.source, c.claim) for c in r.citations] == [(f"{A}/b", "a b"), (f"{B}/n", "")]
    assert [u.written for u in md("[^1]: \n\na\n\n[^1]").unusable] == ["[^1]"]
