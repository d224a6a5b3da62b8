"""A page that sends its reader on at once is no evidence of its own words (red-team finding 16): ``g6 cite``
refuses it, ``g6 report check`` does not call its quote found; a slow refresh, or one to the page itself, is
read as the page. Real home, a loopback site."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.cite.page_text import SENT_ON
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.report.check_helpers import QUOTE, article, check, cite, report_of

Site = Callable[..., LocalSite]


@pytest.mark.parametrize("meta", ['<meta http-equiv="refresh" content="0; url=/">',
                                  "<meta http-equiv=REFRESH content='2;URL=https://other.example/'>"])
def test_a_page_that_sends_its_reader_on_is_not_cited(home: EvidenceHome, client: CheckedClient, site: Site,
                                                      meta: str) -> None:
    s = site({"/a": Reply(body=article(QUOTE, extra=meta)), "/robots.txt": Reply(404)})
    (v,) = check(home, report_of(cite(s.url("/a"), QUOTE)), client).verdicts
    assert v.verdict == "source_failed" and SENT_ON in v.reason, v
    with pytest.raises(InputError, match="sends a reader on at once.*a refresh to"):
        cite_web(home, v.receipt_id, quote=QUOTE)


@pytest.mark.parametrize("meta", ['<meta http-equiv="refresh" content="60; url=/">',
                                  '<meta http-equiv="refresh" content="300">',
                                  '<noscript><meta http-equiv="refresh" content="0; url=/nojs"></noscript>'])
def test_a_slow_refresh_a_reload_or_one_for_readers_without_scripts_is_the_page(
        home: EvidenceHome, client: CheckedClient, site: Site, meta: str) -> None:
    s = site({"/a": Reply(body=article(QUOTE, extra=meta)), "/robots.txt": Reply(404)})
    r = fetch(home, client, s.url("/a"))
    assert cite_web(home, r.receipt_id, quote=QUOTE).text == QUOTE
