"""One URL length limit (8,192 characters, RFC 9110 §4.1) for every URL g6 sends: checked before anything is sent,
and every refusal receipted with a receipt that fits a published log's entry (65,535 bytes)."""

from __future__ import annotations

import hashlib
from urllib.parse import parse_qs, urlsplit

import pytest

from g6.adapters.net.checked_client import MAX_CHAIN_URLS, CheckedClient, FetchPolicy
from g6.adapters.net.urls import MAX_URL_LENGTH, URLError, counted_length, normalise_url, recorded_url, sent_length
from g6.adapters.outcomes import Outcome
from g6.demo.site import Reply, SeenRequest
from g6.fetch.capture import fetch
from g6.ledger.transparency.tiles import MAX_ENTRY
from g6.report.sources import MAX_URL

PAGE = Reply(body=b"<html><body><p>The page at the end of the chain.</p></body></html>")


def of_length(base: str, n: int, query: str = "") -> str:
    """``base`` + "/p?" + ``query`` padded with ``b`` to a URL of exactly ``n`` counted characters."""
    url = f"{base}/p?{query}pad="
    pad = n - counted_length(url)
    assert pad > 0
    return url + "b" * pad


def test_one_limit_shared_with_the_report_sources() -> None:
    assert MAX_URL == MAX_URL_LENGTH == 8192


def test_a_url_over_the_limit_is_refused_in_one_line_that_never_quotes_it() -> None:
    url = "http://example.org/p?q=" + "b" * 30_000
    with pytest.raises(URLError) as e:
        normalise_url(url)
    assert e.value.reason == "url_too_long"
    assert str(e.value) == "a URL of 30,023 characters is over the 8,192-character limit"
    assert normalise_url(of_length("http://example.org", MAX_URL_LENGTH)).url  # the longest accepted


def test_the_length_counted_is_as_sent_and_as_recorded() -> None:
    assert sent_length("http://a/é") == len("http://a/") + 6  # %C3%A9
    # "key=a" is recorded "key=REDACTED": the longer form counts, so a receipt never holds more than the limit
    url = "http://a/?" + "key=a&" * 2000
    assert counted_length(url) > sent_length(url)
    with pytest.raises(URLError):
        normalise_url(url)


def test_the_callers_url_over_the_limit_is_rejected_nothing_sent_and_receipted(site, client, home) -> None:
    s = site({"/p": PAGE, "/robots.txt": Reply(404, b"")})
    url = s.url("/p?q=" + "b" * 30_000)
    result = fetch(home, client, url)
    assert result.outcome is Outcome.REJECTED and result.reason == "url_too_long"
    assert s.requests == []  # not even robots.txt
    receipt = home.ledger.get(result.receipt_id)
    assert receipt.request["url"] == url[:1024] + "…"
    assert receipt.detail["url_length"] == len(url)
    assert receipt.detail["url_sha256"] == hashlib.sha256(url.encode()).hexdigest()
    assert "nothing was sent" in receipt.detail["message"] and "bbbb" not in receipt.detail["message"]
    assert result.requested_url == receipt.request["url"]


def test_a_redirect_to_a_location_over_the_limit_is_the_redirects_failure(site, client, home) -> None:
    s = site({"/robots.txt": Reply(404, b"")})
    long_location = "/p?q=" + "b" * 9000
    s.routes["/r"] = Reply(302, b"", headers=(("Location", long_location),))  # type: ignore[index]
    s.routes["/p"] = PAGE  # type: ignore[index]
    result = fetch(home, client, s.url("/r"))
    assert result.outcome is Outcome.HTTP_ERROR and result.reason == "bad_location"
    assert result.detail["url_error"] == "url_too_long"
    assert [r.path for r in s.requests] == ["/robots.txt", "/r"]  # the long Location never asked for


@pytest.mark.parametrize("hop_length", [MAX_URL_LENGTH, 1500, 200])
def test_the_worst_receipt_fits_max_url_max_hops_secrets_redacted(site, home, hop_length: int) -> None:
    """The URL asked for is of the longest accepted length, every hop too (or shorter, so the hops are as many as
    the client follows), each carrying secret parameters the receipt redacts: the receipt is appended."""
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, total_timeout=20, max_redirects=10)
    s = site({"/robots.txt": Reply(404, b"")})

    def hop(req: SeenRequest) -> Reply:
        n = int(parse_qs(urlsplit(req.path).query).get("n", ["0"])[0])
        target = of_length(s.base_url, hop_length, f"n={n + 1}&key=abcd{n}&token=a&sig=b&")
        return Reply(302, b"", headers=(("Location", target),))

    s.routes["/p"] = hop  # type: ignore[index]
    url = of_length(s.base_url, MAX_URL_LENGTH, "n=0&key=abcd&token=a&")
    with CheckedClient(policy) as client:
        result = fetch(home, client, url)
    assert result.outcome is Outcome.HTTP_ERROR
    receipt = home.ledger.get(result.receipt_id)  # appended: it fits
    assert len(receipt.canonical_bytes(with_signature=True)) < MAX_ENTRY
    assert "abcd" not in receipt.request["url"] and "REDACTED" in receipt.request["url"]
    if hop_length == MAX_URL_LENGTH:
        assert result.reason == "redirect_chain_too_long" and result.detail["limit"] == MAX_CHAIN_URLS
        assert len(s.requests) - 1 == len(receipt.hops)  # the hop past the budget never asked for
    else:
        assert result.reason == "too_many_redirects" and len(receipt.hops) == 11


def test_recorded_url_within_the_limit_is_whole() -> None:
    assert recorded_url("http://example.org/") == ("http://example.org/", {})
