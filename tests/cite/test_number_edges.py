"""A quote keeps every number as written: it may not begin or end inside a number the page writes with a decimal
point or comma, a group separator, a fraction slash or a colon ("rose by 1" is not in "rose by 1.9%", "Costs
reached $1,500" not in "$1,500,000"). ``g6.cite.passages.find`` directly, then the same rule through
``cite_web`` (``g6 cite --quote``) and ``g6 report check`` over a loopback site."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.cite.passages import find, find_all, find_places
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.report.check_helpers import check, cite, report_of

Site = Callable[..., LocalSite]
# the new user's page, word for word
HTML = ("<html><head><title>Energy</title></head><body><p>Household energy bills rose by 1.9% over the quarter.</p>"
        "<p>This applies to version 3.11 of the software.</p><p>Costs reached $1,500,000 by the end of the year.</p>"
        "</body></html>")
PAGE = ("Household energy bills rose by 1.9% over the quarter.\nThis applies to version 3.11 of the software.\n"
        "Costs reached $1,500,000 by the end of the year.")
# quotes that stop or start inside a number of PAGE
INSIDE = ["Household energy bills rose by 1", "applies to version 3", "Costs reached $1,500", "9% over the quarter",
          "500,000 by the end", "Household energy bills rose by 1.", ".9% over the quarter", "version 3.",
          ",500,000 by"]
# the same places taken whole
WHOLE = ["Household energy bills rose by 1.9%", "applies to version 3.11 of the software", "Costs reached $1,500,000",
         "1.9% over the quarter", "$1,500,000 by the end", "rose by 1.9% over the quarter.", "version 3.11"]


@pytest.mark.parametrize("quote", INSIDE)
def test_a_quote_cut_inside_a_number_of_the_page_is_not_found(quote: str) -> None:
    assert find(quote, PAGE) is None
    assert list(find_all(quote, PAGE)) == [] and find_places(quote, PAGE)[2] == []


@pytest.mark.parametrize("quote", WHOLE)
def test_the_whole_number_is_found(quote: str) -> None:
    got = find(quote, PAGE)
    assert got is not None and PAGE[got[0]:got[1]] == quote


@pytest.mark.parametrize(("quote", "page"), [
    ("the figure was 1.9 in", "the figure was 1.95 in all"),  # a decimal cut short
    ("the figure was 1,5", "the figure was 1,500 in all"),  # a decimal comma's reading of a grouped number
    ("the figure was 1,5", "the figure was 1,55 in all"),
    ("running version 3.11", "running version 3.11.2 today"),  # a version string
    ("the host at 10.0.0", "the host at 10.0.0.1 answered"),  # an address
    ("0.0.1 answered at once", "the host at 10.0.0.1 answered at once"),
    ("rose by 1.", "rose by 1.9 Then"),  # the period a quote ends a sentence with is the page's decimal point
    ("rose by １ over the year", "rose by １．９ over the year"),  # fullwidth digits and point (NFKC: 1.9)
    ("costs reached １", "costs reached １，５００，０００"),
    ("costs reached 1", "costs reached 1\u00a0500\u00a0000 €"),  # a no-break space between groups of three
    ("500 000 € in all", "costs reached 1\u202f500\u202f000 € in all"),  # a narrow no-break space
    ("costs reached 1 500", "costs reached 1\u2009500\u2009000"),  # a thin space
    ("costs reached CHF 1", "costs reached CHF 1'500'000"),  # the Swiss apostrophe, straight or curly
    ("costs reached CHF 1", "costs reached CHF 1’500’000"),
    ("a rise of 2", "a rise of 2·5 per cent"),  # the Lancet's decimal point
    ("bills rose by 1", "bills rose by 1/2 a point"),  # a fraction, as ½ is
    ("bills rose by 1", "bills rose by 1⁄2 a point"),
    ("the meeting starts at 10", "the meeting starts at 10:30 sharp"),  # a time
    ("the council met on 12/03", "the council met on 12/03/2024"),  # a date
    ("a rise of ١", "a rise of ١٫٥ in all"),  # Arabic-Indic digits and decimal separator
    ("about 10⁶", "about 10⁶.5 in all"),  # a superscript digit then a decimal
])
def test_a_quote_stopping_inside_a_number_written_another_way_is_not_found(quote: str, page: str) -> None:
    assert find(quote, page) is None


@pytest.mark.parametrize(("quote", "page"), [
    ("bills rose by 12.", "bills rose by 12. Then they fell."),  # a sentence-final period is not a decimal point
    ("bills rose by 12", "bills rose by 12. Then they fell."),
    ("bills rose by 12.", "bills rose by 12."),
    ("Then they fell by 3", "bills rose by 12.Then they fell by 3."),
    ("in 2019, 500 people", "in 2019, 500 people moved"),  # a comma and a space: a list, not a number
    ("in 2019", "in 2019, 500 people moved"),
    ("500 people moved", "in 2019,  500 people moved"),
    ("in the year 2019", "in the year 2019 500 people moved"),  # an ordinary space never groups digits
    ("in the year 2019", "in the year 2019\u00a0500 people moved"),  # four digits before: not a group
    ("see chapter 1", "see chapter 1\u00a050 times"),  # two digits after: not a group of three
    ("see chapter 1", "see chapter 1\u00a05000 times"),  # four after: not a group of three
    ("running version 3.11.2", "running version 3.11.2 today"),
    ("the host at 10.0.0.1", "the host at 10.0.0.1 answered"),
    ("costs reached 1 500 000 €", "costs reached 1\u00a0500\u00a0000 €"),
    ("costs reached １，５００，０００", "costs reached １，５００，０００"),
    ("costs reached 1,500,000", "costs reached １，５００，０００"),
    ("the meeting starts at 10:30", "the meeting starts at 10:30 sharp"),
    ("Chapter 3: Results of the survey", "Chapter 3: Results of the survey"),
])
def test_a_number_taken_whole_or_ended_by_punctuation_is_found(quote: str, page: str) -> None:
    assert find(quote, page) is not None


def test_a_quote_that_is_all_number_is_found_only_whole() -> None:
    """``find`` itself (g6 cite and report check refuse a quote this short before looking: quote_too_short)."""
    assert find("1,500", "costs reached $1,500,000 by") is None
    assert find("1,500", "costs reached $1,500 by") is not None
    assert find("500,000", "costs reached $1,500,000 by") is None
    assert find("1,500,000", "costs reached $1,500,000 by") is not None


def test_a_later_whole_number_is_found_after_one_cut_inside_a_number() -> None:
    page = "rose by 1.9% in March and rose by 1% in April"
    got = find("rose by 1", page)
    assert got is not None and got[0] == page.index("rose by 1%")
    assert [page[a:b] for a, b in find_all("rose by 1", page)] == ["rose by 1"]


@pytest.fixture
def receipt_id(home: EvidenceHome, client: CheckedClient, site: Site) -> str:
    s = site({"/energy": Reply(body=HTML.encode()), "/robots.txt": Reply(404, b"")})
    r = fetch(home, client, s.url("/energy"))
    assert r.outcome.value == "ok"
    return r.receipt_id


@pytest.mark.parametrize("quote", INSIDE)
def test_g6_cite_refuses_a_quote_cut_inside_a_number(home: EvidenceHome, receipt_id: str, quote: str) -> None:
    with pytest.raises(InputError, match="not in the document"):
        cite_web(home, receipt_id, quote=quote)


def test_g6_cite_cites_the_whole_number(home: EvidenceHome, receipt_id: str) -> None:
    for quote in WHOLE:
        assert cite_web(home, receipt_id, quote=quote).text == quote


def test_report_check_finds_no_quote_cut_inside_a_number(home: EvidenceHome, client: CheckedClient,
                                                         site: Site) -> None:
    s = site({"/energy": Reply(body=HTML.encode())})
    url = s.url("/energy")
    run = check(home, report_of(*(cite(url, q) for q in INSIDE + WHOLE)), client)
    got = [(v.verdict, (v.found or {}).get("text")) for v in run.verdicts]
    assert got == [("quote_not_found", None)] * len(INSIDE) + [("quote_found", q) for q in WHOLE]
    assert all("not in the document" in v.reason and v.citation is None for v in run.verdicts[:len(INSIDE)])
    assert run.fetched == 1


SIGNED = "It rose by 10-12% in 2024-03-01, fell to -5 degrees below zero, was \u22127 at night and \u00b13 by day; " \
         "COVID-19 cases rose; the range 3\u20135 held; ages 18 - 25 came."


@pytest.mark.parametrize("quote", ["It rose by 10", "12% in 2024", "in 2024", "5 degrees below zero",
                                   "7 at night and", "3 by day", "range 3", "5 held"])
def test_a_quote_cut_inside_a_range_or_a_date_or_after_a_sign_is_not_found(quote: str) -> None:
    """A range's or a date's dash joins its numbers (10-12%, 2024-03-01, 3–5), and a quote does not begin after a
    number's sign (-5, −7, ±3): "5 degrees below zero" is not what "-5 degrees below zero" says."""
    assert find(quote, SIGNED) is None


@pytest.mark.parametrize("quote", ["It rose by 10-12%", "in 2024-03-01, fell", "-5 degrees below zero",
                                   "fell to -5 degrees", "\u22127 at night", "\u00b13 by day", "19 cases rose",
                                   "COVID-19 cases rose", "the range 3-5 held", "25 came", "ages 18"])
def test_a_range_a_date_or_a_signed_number_taken_whole_is_found(quote: str) -> None:
    """Whole, with its sign, or after a dash inside a word (COVID-19) or a dash between spaces (18 - 25)."""
    assert find(quote, SIGNED) is not None
