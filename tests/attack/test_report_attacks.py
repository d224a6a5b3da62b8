"""Attacks on `g6 report check` (issue 37) as a hostile report author and a hostile web page would make them:
every way found to get `quote_found` where the bytes do not support it. Each finding was a strict xfail that
failed on the code it was found on (the docstring says the attack and what is right) and is fixed now; the
attacks that were already defended are ordinary tests, so they stay defended. Hidden-text tricks are in
``test_report_hidden.py``, the command line, MCP and result file attacks in ``test_report_cli_attacks.py``,
the rendered capture in ``test_report_render_attacks.py``.

Real pages on loopback sites (``g6.demo.site.LocalSite``) and a real home; nothing leaves loopback (paper
sources and DOIs are served by a loopback site through an injected resolver and transport)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.sources import build_sources
from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.openalex import OpenAlexSource
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.errors import InputError, ReportMalformed
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.report.judge import ask_judge
from g6.report.model_json import report_from_json
from g6.report.read import read_report
from g6.report.runfile import Line, run_state
from g6.report.verdicts import Verdict, read_of
from tests.report.check_helpers import QUOTE, article, check, cite, report_of
from tests.report.test_check_papers import ToSite

Site = Callable[..., LocalSite]
NO_ROBOTS = Reply(404)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PUBLIC = "93.184.216.34"  # what an injected resolver answers for a public-looking name; nothing is sent there


def one(home: EvidenceHome, client: CheckedClient | None, *cites: dict[str, Any], **kw: Any) -> list[Verdict]:
    return list(check(home, report_of(*cites), client, **kw).verdicts)


# -- finding 1: a quote that starts or ends inside a word ----------------------------------------------------
def test_a_quote_that_starts_or_ends_inside_a_word_of_the_page_is_not_found(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """The page says the treatment was *in*effective and that bills rose by *12*%; the report quotes
    "effective in trials" and "2% over the quarter" and "rose by 1" (it says 1%). ``g6.cite.passages.find``
    looks for the normalised quote as a substring of the normalised page, so each is `quote_found`, with
    ``match: exact`` because the raw span cut out of the middle of the word is the quote itself. A quote is
    the source's words: the match must begin and end at word boundaries of the page's text (a quote that
    begins or ends inside a word of the page is not found; the closest whole-word span is a hint)."""
    s = site({"/a": Reply(body=article("The treatment was ineffective in trials of older patients.", QUOTE)),
              "/robots.txt": NO_ROBOTS})
    got = one(home, client, cite(s.url("/a"), "effective in trials of older patients"),
              cite(s.url("/a"), "2% over the quarter"), cite(s.url("/a"), "bills rose by 1"))
    assert [v.verdict for v in got] == ["quote_not_found"] * 3, [(v.verdict, v.found) for v in got]


# -- finding 2: a quote too short to say anything --------------------------------------------------------
def test_a_quote_too_short_to_say_anything_is_not_support(home: EvidenceHome, client: CheckedClient,
                                                          site: Site) -> None:
    """A W3C annotation whose ``exact`` is "e", a model report whose quote is "the" or ".": each is found on
    every page in English, so each citation is `quote_found` (counted in ``quote_found_share``, put in the
    signed manifest, exit 0 when all are). A quote that carries no words of its own is no evidence that the
    page supports anything: below a floor (say two words, or a few letters or digits) it must not be
    `quote_found` (`no_quote`, saying the quote is too short to check, is what the data supports)."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": NO_ROBOTS})
    got = one(home, client, cite(s.url("/a"), "e"), cite(s.url("/a"), "the"), cite(s.url("/a"), "."))
    assert "quote_found" not in [v.verdict for v in got], [(v.verdict, v.found) for v in got]


def test_an_empty_or_blank_quote_is_no_quote(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """Defended: an annotation whose ``exact`` is empty, or only spaces and zero-width characters, gives no
    quote to look for: `no_quote`, never `quote_found`."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": NO_ROBOTS})
    got = one(home, client, cite(s.url("/a"), ""), cite(s.url("/a"), " \u200b\u200d \t"))
    assert [v.verdict for v in got] == ["no_quote", "no_quote"]


# -- finding 3: NFKC turns superscripts into plain digits --------------------------------------------------
def test_a_quote_whose_number_is_a_superscript_on_the_page_is_not_found(home: EvidenceHome, client: CheckedClient,
                                                                        site: Site) -> None:
    """The page says "About 10⁶ people were affected" (a million); the report quotes "About 106 people were
    affected". NFKC maps ⁶ to 6, so after normalising the two are equal and the verdict is `quote_found`
    (``match: normalised``, which a reader of the exit code or the figures never sees). The same holds for
    subscripts, circled and fullwidth-free compatibility digits (① → 1) and fractions. Compatibility folding
    must not change a number: a match whose raw span holds a character with a <super>, <sub>, <circle> or
    <fraction> decomposition where the quote has a plain digit (or the other way round) is not a match."""
    s = site({"/a": Reply(body=article("About 10⁶ people were affected by the outage in the north.")),
              "/robots.txt": NO_ROBOTS})
    (v,) = one(home, client, cite(s.url("/a"), "About 106 people were affected by the outage"))
    assert v.verdict != "quote_found", v.found


def test_typographic_quotes_case_and_whitespace_still_match(home: EvidenceHome, client: CheckedClient,
                                                            site: Site) -> None:
    """Defended (and to stay so when findings 1-3 are fixed): the normaliser's intended equivalences, curly
    quotes, case, runs of whitespace, a zero-width space inside a word, still find the quote."""
    s = site({"/a": Reply(body=article("The minister said \u201cthe plan is working\u201d on Tuesday.")),
              "/robots.txt": NO_ROBOTS})
    got = one(home, client, cite(s.url("/a"), 'THE MINISTER said   "the plan is wor\u200bking"'))
    assert [v.verdict for v in got] == ["quote_found"]


# -- finding 4: two URLs that differ only in a secret-named parameter are one URL ---------------------------
def test_a_url_whose_secret_parameter_differs_is_another_page(home: EvidenceHome, client: CheckedClient,
                                                              site: Site) -> None:
    """Many sites name a document by a parameter g6 redacts as a secret (``?key=``, ``?token=``, ``?sig=``).
    The report cites ``/doc?key=AAAA`` (which says the budget was cut) and ``/doc?key=BBBB`` (which says it
    rose) with the same quote "the budget was cut". ``url_key`` redacts both to ``/doc?key=REDACTED``, so the
    check reads the URL once and judges B's citation on A's page: `quote_found`, and B is never requested.
    Two URLs that differ are two pages: each is read (or, when a stored read cannot be told apart because its
    URL was redacted, none is reused and the page is fetched, or `source_failed` with --receipts-only)."""

    def doc(req: SeenRequest) -> Reply:
        said = "the budget was cut" if "key=AAAA" in req.path else "the budget rose"
        return Reply(body=article(f"Document {req.path[-4:]} says {said} this year."))

    s = site({"/doc": doc, "/robots.txt": NO_ROBOTS})
    a, b = one(home, client, cite(s.url("/doc?key=AAAA"), "the budget was cut"),
               cite(s.url("/doc?key=BBBB"), "the budget was cut"))
    assert a.verdict == "quote_found"
    assert b.verdict != "quote_found" and any("key=BBBB" in r.path for r in s.requests), \
        (b.verdict, [r.path for r in s.requests])


# -- finding 5: a pinned receipt of any page stands for a paper ----------------------------------------------
def test_a_receipt_pinned_to_a_paper_must_be_a_read_of_that_paper(home: EvidenceHome, client: CheckedClient,
                                                                 site: Site) -> None:
    """A report (g6's model JSON, or a manifest; the publisher's bundle holds the read) cites
    ``doi:10.1000/real`` and ``arxiv:2401.00001`` and pins the receipt of ``http://…/evil``, a page the author
    wrote. ``_Check._pinned`` checks that a pinned read is of the cited URL only when the source is a URL; for
    a paper (and ``document:N``) any read of any page is accepted, so both citations are `quote_found` on the
    author's page while the result names the DOI and the arXiv id. A pin on a paper citation must be a read of
    that paper's landing page (as the paper sources resolve it), else `source_failed`."""
    s = site({"/evil": Reply(body=article("The vaccine cures every known disease.")), "/robots.txt": NO_ROBOTS})
    r = fetch(home, client, s.url("/evil"))
    got = one(home, None, cite("doi:10.1000/real", "The vaccine cures every known disease.", receipt_id=r.receipt_id),
              cite("arxiv:2401.00001", "The vaccine cures every known disease.", receipt_id=r.receipt_id))
    assert [v.verdict for v in got] == ["source_failed", "source_failed"], [v.reason for v in got]


def test_a_pinned_receipt_of_another_url_a_failed_read_or_a_wall_is_no_evidence(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """Defended: a pin on a URL citation must be a read of that URL (requested or final); a pinned failed read
    (a 404 page that holds the quote) and a pinned read that met a login wall are `source_failed`; a pinned id
    that is not in the home, or is a search receipt, too."""
    login = (FIXTURES / "interstitial" / "login-page.html").read_bytes()
    s = site({"/a": Reply(body=article(QUOTE)), "/other": Reply(body=article(QUOTE)),
              "/gone": Reply(404, article(QUOTE)), "/wall": Reply(body=login), "/robots.txt": NO_ROBOTS})
    other, gone, wall = (fetch(home, client, s.url(p)) for p in ("/other", "/gone", "/wall"))
    got = one(home, None, cite(s.url("/a"), QUOTE, receipt_id=other.receipt_id),
              cite(s.url("/gone"), QUOTE, receipt_id=gone.receipt_id),
              cite(s.url("/wall"), "Sign in", receipt_id=wall.receipt_id),
              cite(s.url("/a"), QUOTE, receipt_id="rcpt_00000000000000000000000000"))
    assert [v.verdict for v in got] == ["source_failed"] * 4, [v.reason for v in got]
    assert "not of the cited URL" in got[0].reason and got[1].detail["http_status"] == 404
    assert "interstitial" in got[2].detail


# -- finding 6: an edited run file picks an older read ------------------------------------------------------
def test_an_edited_run_file_does_not_choose_the_evidence(home: EvidenceHome, client: CheckedClient,
                                                         site: Site) -> None:
    """The home holds two ok reads of ``/a``: an old one, when the page said the quote, and a newer one, after
    it was corrected. A check rests on the newest: `quote_not_found`. A run file (plain JSON lines in
    ``knowledge/reports/``, which anyone who can write there can edit) with one line naming the old receipt as
    this run's fetch of ``/a`` makes ``--run`` rest the citation on the old read: `quote_found`.
    ``_Check._run_read`` only checks that the receipt is a read of that URL, not that this run made it (nor
    that it is the newest). A run file may save a re-read, never choose which read is evidence: a run read is
    used only when it is the newest read of the URL in the home (or was appended after the run started)."""
    state = {"page": article(QUOTE)}
    s = site({"/a": lambda req: Reply(body=state["page"]), "/robots.txt": NO_ROBOTS})
    old = fetch(home, client, s.url("/a"))
    state["page"] = article("Household bills fell over the quarter, the council says.")
    fetch(home, client, s.url("/a"))
    report = report_of(cite(s.url("/a"), QUOTE))
    (honest,) = check(home, report, client).verdicts
    assert honest.verdict == "quote_not_found"
    forged = Verdict("source_failed", "whatever", old.receipt_id, read_of(home.ledger.get(old.receipt_id), "fetched"))
    run_state(home, "run_forged").add_many([Line("1:0000000000000000", forged)])
    (again,) = check(home, report, client, run_id="run_forged").verdicts
    assert again.verdict == honest.verdict, (again.verdict, again.receipt_id == old.receipt_id)


# -- finding 9: redirects the rule does not see as another page -----------------------------------------------
@pytest.mark.parametrize("location", ["/?from=news-2024-article-7", "/home.html", "/index.asp", "/login.php",
                                      "/wp-login.php", "/404.html"])
def test_a_redirect_to_the_home_page_a_login_page_or_an_error_page_is_redirected_elsewhere(
        home: EvidenceHome, client: CheckedClient, site: Site, location: str) -> None:
    """The cited article is gone; the site redirects it to its home page (``/?from=…``, ``/home.html``,
    ``/index.asp``), to a sign-in page (``/login.php``, ``/wp-login.php``: the paywall that shows the
    article's lede) or to an error page (``/404.html``), and that page carries the article's teaser, which
    is the quote. ``elsewhere`` compares whole path segments against fixed words (``login``, ``404``, ``home``
    without an extension) and treats any query as "not the home page", so each read "reaches the page":
    `quote_found` on a page that is not the cited one. The rule should match a segment's stem (``login.php``,
    ``404.html``, ``home.html``, ``index.*``, ``default.*``) and call the site's root with any query the home
    page unless the requested page was the root."""
    s = site({"/news/2024/article-7": Reply(301, headers=(("Location", location),)),
              location.split("?")[0]: Reply(body=article(QUOTE)), "/robots.txt": NO_ROBOTS})
    (v,) = one(home, client, cite(s.url("/news/2024/article-7"), QUOTE))
    assert v.verdict == "redirected_elsewhere", (v.verdict, v.read and v.read["final_url"])


def test_the_redirects_the_rule_names_are_redirected_elsewhere(home: EvidenceHome, client: CheckedClient,
                                                                site: Site) -> None:
    """Defended: the home page, a locale home, a ``/login?next=`` gate and an ``/errors/`` page."""
    s = site({"/a": Reply(301, headers=(("Location", "/"),)), "/b": Reply(302, headers=(("Location", "/en-GB/"),)),
              "/c": Reply(302, headers=(("Location", "/account/login?next=/c"),)),
              "/d": Reply(301, headers=(("Location", "/errors/not-found"),)), "/": Reply(body=article(QUOTE)),
              "/en-GB/": Reply(body=article(QUOTE)), "/account/login": Reply(body=article(QUOTE)),
              "/errors/not-found": Reply(body=article(QUOTE)), "/robots.txt": NO_ROBOTS})
    got = one(home, client, *(cite(s.url(p), QUOTE) for p in ("/a", "/b", "/c", "/d")))
    assert [v.verdict for v in got] == ["redirected_elsewhere"] * 4


# -- finding 12: Markdown nested past markdown-it's limit is dropped --------------------------------------------
def test_a_citation_nested_deep_in_lists_or_quotes_is_read_or_the_report_refused() -> None:
    """A report's second citation sits in a list nested 10 levels deep (or a blockquote 20 deep). GitHub and
    other renderers show it; markdown-it stops at its ``maxNesting`` and emits nothing past it, so the reader
    gives one citation, no unusable one and no uncited claim: the check never sees the citation whose source
    would fail, and a report whose other citations hold exits 0. A report is read whole or not at all: the
    citation is read, or the report is refused (``G6_E_REPORT_MALFORMED``: nested deeper than the reader
    reads)."""
    for nested in ("".join("  " * i + "- item\n" for i in range(10)) + "  " * 10 + "- Cures all [b](http://b.example/).\n",
                   "> " * 20 + "The vaccine cures all [b](http://b.example/).\n"):
        text = "Bills rose [a](http://a.example/).\n\n" + nested
        try:
            r = read_report(text.encode(), format="markdown")
        except ReportMalformed:
            continue
        assert len(r.citations) + len(r.unusable) == 2, [c.source for c in r.citations]


# -- finding 13: a TextQuoteSelector's prefix and suffix ---------------------------------------------------
def test_an_annotation_whose_prefix_and_suffix_are_not_around_the_exact_text_is_not_found(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """A W3C TextQuoteSelector selects the ``exact`` text *with* its ``prefix`` before it and ``suffix`` after
    it (the Web Annotation Data Model, 4.2.4): that context is what makes "effective" mean "not effective".
    An annotation says prefix "The drug was not ", exact "effective in trials", suffix " at all"; the page says
    "The drug was effective in trials." The selector selects nothing on that page, but the reader keeps prefix
    and suffix as hints only and the quote is `quote_found`. When an annotation gives them, the quote is found
    only where they surround it (compared after the same normaliser), else `quote_not_found` with the exact
    text's place as a hint."""
    s = site({"/a": Reply(body=article("The drug was effective in trials.")), "/robots.txt": NO_ROBOTS})
    ann = {"@context": "http://www.w3.org/ns/anno.jsonld", "type": "Annotation", "bodyValue": "The drug failed.",
           "target": {"source": s.url("/a"), "selector": {"type": "TextQuoteSelector", "prefix": "The drug was not ",
                                                          "exact": "effective in trials", "suffix": " at all"}}}
    report = read_report(json.dumps(ann).encode())
    (v,) = check(home, report, client).verdicts
    assert v.verdict != "quote_found"


def test_an_annotations_cached_copy_is_never_fetched(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """Defended: a TimeState's ``cached`` address (an archived copy the annotation points at) is a hint: it is
    never read, so an annotation cannot send the check to a host of its choosing through it."""
    s = site({"/robots.txt": NO_ROBOTS})
    cache = site({"/copy": Reply(body=article(QUOTE)), "/robots.txt": NO_ROBOTS}, host="127.0.0.2")
    ann = {"@context": "http://www.w3.org/ns/anno.jsonld", "type": "Annotation", "bodyValue": "Bills rose.",
           "target": {"source": s.url("/gone"), "selector": {"type": "TextQuoteSelector", "exact": QUOTE},
                      "state": {"type": "TimeState", "cached": cache.url("/copy"),
                                "sourceDate": "2024-01-01T00:00:00Z"}}}
    (v,) = check(home, read_report(json.dumps(ann).encode()), client).verdicts
    assert v.verdict == "source_failed" and cache.requests == []


# -- finding 14: a paper source that answers with another paper ---------------------------------------------
@pytest.fixture
def other_paper(site: Site) -> tuple[LocalSite, Any]:
    """Paper sources that answer every request with another paper than the one asked for (a loose match, a
    mirror or a proxy that is wrong): OpenAlex's W9 for any filter, arXiv's 2999.99999 for any id."""
    s = site({})
    work = {"id": "https://openalex.org/W9", "display_name": "Another paper", "doi": None,
            "primary_location": {"landing_page_url": s.url("/other")}}
    feed = f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">
<opensearch:totalResults>1</opensearch:totalResults><opensearch:startIndex>0</opensearch:startIndex>
<entry><id>{s.url("/abs/2999.99999v1")}</id><title>Another paper</title><summary>x</summary></entry></feed>"""
    s.routes = {"/works": Reply(body=json.dumps({"meta": {"count": 1}, "results": [work]}).encode(),
                                content_type="application/json"),
                "/api/query": Reply(body=feed.encode(), content_type="application/atom+xml"),
                "/other": Reply(body=article(QUOTE)), "/abs/2999.99999v1": Reply(body=article(QUOTE)),
                "/robots.txt": NO_ROBOTS}
    return s, build_sources(OpenAlexSource(base_url=s.url("/works"), pause=0),
                            ArxivSource(base_url=s.url("/api/query"), pause=0))


def test_a_paper_source_that_answers_with_another_paper_is_no_evidence(
        home: EvidenceHome, client: CheckedClient, other_paper: tuple[LocalSite, Any]) -> None:
    """``papers._resolve`` asks arXiv for ``id:2401.00001`` and OpenAlex for ``openalex:W1`` and reads the
    landing page of ``parsed.papers[0]``, whatever paper that is. A source that answers with another paper
    (arXiv's ``search_query=id:`` is a search, not a lookup; a proxy, a stale mirror) makes the check look for
    the quote in that paper: `quote_found` for a paper that may not say it. The paper read must be the one
    cited: its arXiv id (without version), OpenAlex id or DOI must equal the citation's, else
    `source_failed` ("the source answered with another paper")."""
    _, sources = other_paper
    got = one(home, client, cite("arxiv:2401.00001", QUOTE), cite("openalex:W1", QUOTE), sources=sources)
    assert [v.verdict for v in got] == ["source_failed", "source_failed"], [(v.verdict, v.read) for v in got]


def test_a_papers_landing_page_or_doi_redirect_on_a_private_address_is_refused(home: EvidenceHome,
                                                                                site: Site) -> None:
    """Defended (SSRF through a paper id): under the default policy (no loopback), OpenAlex (a public name,
    served by the loopback site through an injected resolver and transport) answers with a landing page on
    ``publisher.example``, which resolves to 127.0.0.1, and with a DOI whose doi.org redirect goes to
    ``http://127.0.0.1/``; a citation of a literal loopback URL too. Each is refused by the address check
    and receipted (``address_not_public``); the loopback page is never asked for."""
    s = site({})
    work = {"id": "https://openalex.org/W1", "display_name": "B", "doi": "https://doi.org/10.1000/bills",
            "primary_location": {"landing_page_url": "http://publisher.example/landing"}}
    s.routes = {"/works": lambda req: Reply(body=json.dumps(
        {"meta": {"count": 1}, "results": [work if "doi" in req.path else {**work, "doi": None}]}).encode(),
        content_type="application/json"),
        "/10.1000/bills": Reply(302, headers=(("Location", "http://127.0.0.1/landing"),)),
        "/landing": Reply(body=article(QUOTE)), "/robots.txt": NO_ROBOTS}
    sources = build_sources(OpenAlexSource(base_url="https://api.openalex.example/works", pause=0))

    def resolve(host: str, port: int) -> list[str]:
        return [PUBLIC] if host in ("api.openalex.example", "doi.org") else ["127.0.0.1"]

    with CheckedClient(FetchPolicy(host_pause=0.0), transport=ToSite(s), resolver=resolve) as c:
        got = one(home, c, cite("openalex:W1", QUOTE), cite("doi:10.1000/bills", QUOTE),
                  cite("http://127.0.0.1:9/x", QUOTE), sources=sources)
    assert [v.verdict for v in got] == ["source_failed"] * 3
    assert all(v.receipt_id and "address_not_public" in v.reason for v in got), [v.reason for v in got]
    assert not any(r.path.startswith("/landing") for r in s.requests)


# -- finding 15: a model report whose claim is not the text at its offsets ------------------------------------
def test_a_model_report_whose_claim_is_not_the_text_at_its_offsets_is_refused() -> None:
    """In g6's own model JSON the author gives the text, each claim and the claim's offsets. The reader checks
    that the offsets are inside the text but not that ``text[claim_start:claim_end] == claim`` (which the docs
    say always holds). The author writes the claim "Bills rose 12%." and points its offsets at "The drug cures
    cancer."; the judge is asked about the first, ``--html`` marks the second in green as `quote_found` (seen
    in the page this test's report gives). A claim that is not the text at its offsets is refused
    (``G6_E_REPORT_OFFSET``), as the other formats' readers refuse a segment whose text is not at its
    offsets."""
    d = {"schema": "g6.report-model.v1", "text": "The drug cures cancer. Bills rose.",
         "citations": [{"source": "http://a.example/", "claim": "Bills rose 12%.", "claim_start": 0,
                        "claim_end": 22, "quote": QUOTE}]}
    with pytest.raises(InputError):
        report_from_json(json.dumps(d).encode())



# -- finding 23 (fixed): a judge's answer taken for the next pair -----------------------------------------------------
def test_a_judges_extra_line_is_not_taken_as_the_next_pairs_answer(tmp_path: Path) -> None:
    """The judge answers each pair with two lines (a chatty model, a wrapper that echoes). ``_Process.ask`` takes
    the first line in its buffer as the answer, so pair 2 gets the second line said about pair 1, pair 3 the
    first line about pair 2, and so on: the result records, signed, that the judge said of citation 2 what it
    said of citation 1. A line already waiting when a pair is sent (or one whose ``n`` is another pair's, when
    the judge echoes it) answers no pair: ``judge_garbage``, and the judge is started again."""
    script = tmp_path / "chatty.py"
    script.write_text("import json, sys\nfor line in sys.stdin:\n    n = json.loads(line)['n']\n"
                      "    print(json.dumps({'label': 'supports', 'n': n}))\n"
                      "    print(json.dumps({'label': 'neutral', 'n': n}), flush=True)\n")
    items = [(i, {"n": i + 1, "claim": f"claim {i + 1}", "passage": "p", "passage_is": "found"}) for i in range(3)]
    got = ask_judge([sys.executable, str(script)], items, 30)
    said = {i: o.answer["n"] for i, o in got.items() if o.answer is not None}
    assert all(n == i + 1 for i, n in said.items()), said
