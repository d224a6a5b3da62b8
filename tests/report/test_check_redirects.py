"""``redirected_elsewhere``: the rule as a pure function (both sides of each clause), then over real redirects."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.report.verdicts import elsewhere
from tests.report.check_helpers import QUOTE, article, check, cite, report_of

Site = Callable[..., LocalSite]
A = "https://news.example.org/2026/bills"


@pytest.mark.parametrize(("final", "why"), [
    ("https://news.example.org/", "the site's home page"),
    ("https://www.news.example.org/index.html", "the site's home page"),
    ("https://news.example.org/en-gb/", "the site's home page"),
    ("https://news.example.org/account/login", "a sign-in page"),
    ("https://news.example.org/users/sign_in", "a sign-in page"),
    ("https://accounts.example.org/o/x", "a sign-in page"),
    ("https://news.example.org/paywall?return_to=%2F2026%2Fbills", "a page that sends the reader back"),
    ("https://news.example.org/gate?next=https%3A%2F%2Fnews.example.org%2F2026%2Fbills", "a page that sends"),
    ("https://news.example.org/errors/404", "an error page"),
])
def test_a_read_that_ends_on_another_kind_of_page_is_elsewhere(final: str, why: str) -> None:
    got = elsewhere(A, final)
    assert got is not None and got.startswith(why)


@pytest.mark.parametrize("final", [
    None, A, "http://news.example.org/2026/bills", "https://www.news.example.org/2026/bills/",
    "https://news.example.org/2026/bills#comments", "https://news.example.org/2026/bills-updated",
    "https://publisher.example.com/article/10.1000/xyz",  # a DOI or a short link resolving to its page
    "https://news.example.org/2026/bills?page=2", "https://news.example.org/archive/login-tips-for-readers",
    "https://news.example.org/search?q=bills",
])
def test_a_redirect_that_reaches_the_page_is_not_elsewhere(final: str | None) -> None:
    assert elsewhere(A, final) is None


@pytest.mark.parametrize(("final", "why"), [
    ("https://news.example.org/?from=2026-bills", "the site's home page"),
    ("https://news.example.org/home.html", "the site's home page"),
    ("https://news.example.org/index.asp?ref=old", "the site's home page"),
    ("https://news.example.org/en/index.html", "the site's home page"),
    ("https://news.example.org/Default.aspx", "the site's home page"),
    ("https://news.example.org/login.php", "a sign-in page"),
    ("https://news.example.org/blog/wp-login.php?redirect_to=x", "a sign-in page"),
    ("https://news.example.org/404.html", "an error page"),
    ("https://news.example.org/errors/500.html", "an error page"),
])
def test_a_segment_is_compared_by_its_stem_and_the_home_page_with_a_query_is_the_home_page(final: str,
                                                                                           why: str) -> None:
    """Finding 9 of the attack tests, as the pure rule: ``login.php``, ``404.html``, ``home.html``, ``index.*`` are
    what ``login``, ``404``, ``home``, ``index`` are, and the site's root with any query is its home page."""
    got = elsewhere(A, final)
    assert got is not None and got.startswith(why), got


@pytest.mark.parametrize(("requested", "final"), [
    (A, "https://news.example.org/2026/bills.html"), (A, "https://news.example.org/2026/home"),
    (A, "https://news.example.org/2026/index-of-bills"), (A, "https://news.example.org/homework/bills"),
    (A, "https://news.example.org/2026/bills.php?id=4"),
    ("https://example.org/", "https://example.org/?lang=en"), ("https://example.org/", "https://example.org/home.html"),
    ("https://example.org/?p=1", "https://example.org/?p=1&lang=en"),
])
def test_a_stem_or_a_query_alone_does_not_make_a_page_elsewhere(requested: str, final: str) -> None:
    assert elsewhere(requested, final) is None


def test_the_home_page_of_a_home_page_is_the_page() -> None:
    assert elsewhere("https://example.org/", "https://www.example.org/en/") is None
    assert elsewhere("https://example.org/?p=1", "https://example.org/") == "the site's home page"


def test_over_real_redirects_both_sides(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/old": Reply(301, headers=(("Location", "/new"),)), "/new": Reply(body=article(QUOTE)),
              "/gone": Reply(302, headers=(("Location", "/"),)), "/": Reply(body=article(QUOTE)),
              "/member": Reply(302, headers=(("Location", "/login?next=/member"),)),
              "/login": Reply(body=article(QUOTE)), "/slash": Reply(301, headers=(("Location", "/slash/"),)),
              "/slash/": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    run = check(home, report_of(*(cite(s.url(p), QUOTE) for p in ("/old", "/gone", "/member", "/slash"))), client)
    moved, home_page, login, slash = run.verdicts
    assert moved.verdict == "quote_found" and moved.read["final_url"].endswith("/new")
    assert slash.verdict == "quote_found"
    # the quote is on the home page and on the sign-in page too: still not the cited page
    assert home_page.verdict == "redirected_elsewhere" and home_page.detail["rule"] == "the site's home page"
    assert login.verdict == "redirected_elsewhere" and login.detail["rule"] == "a sign-in page"
    assert home_page.found is None and home_page.citation is None and home_page.receipt_id is not None
