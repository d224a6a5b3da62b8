"""The checked client as a browser's fetcher: a redirect answered as itself, the headers a browser needs."""

from __future__ import annotations

from collections.abc import Callable

from g6.adapters import CheckedClient, Outcome
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")


def test_a_redirect_not_followed_is_the_answer_and_its_target_is_not_asked(home: EvidenceHome, client: CheckedClient,
                                                                          site: Site) -> None:
    s = site({"/a": Reply(302, b"moved", headers=(("Location", "/b?x=1"),)), "/b": Reply(body=b"B"),
              "/robots.txt": ROBOTS})
    r = client.fetch(s.url("/a"), home.store, follow_redirects=False, pass_headers=("location", "content-type"))
    assert (r.outcome, r.reason, r.status) == (Outcome.OK, "redirect", 302)
    assert r.detail["location"] == s.url("/b?x=1")  # absolute, normalised
    assert dict(r.passed_headers)["location"] == s.url("/b?x=1")
    assert home.store.read(r.body.blake3) == b"moved"
    assert [q.path for q in s.requests if q.path != "/robots.txt"] == ["/a"]  # /b was never asked for
    assert "passed_headers" not in str(r.receipt_detail()) and "location" in r.receipt_detail()


def test_a_redirect_to_another_scheme_is_refused_not_handed_over(home: EvidenceHome, client: CheckedClient,
                                                                 site: Site) -> None:
    s = site({"/a": Reply(302, b"", headers=(("Location", "file:///etc/passwd"),)), "/robots.txt": ROBOTS})
    r = client.fetch(s.url("/a"), home.store, follow_redirects=False, pass_headers=("location",))
    assert (r.outcome, r.reason) == (Outcome.REFUSED, "redirect_scheme")
    assert r.passed_headers == ()


def test_only_the_headers_asked_for_are_passed(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    headers = (("Set-Cookie", "sid=secret"), ("Access-Control-Allow-Origin", "*"))
    s = site({"/": Reply(body=b"<p>x</p>", headers=headers), "/robots.txt": ROBOTS})
    r = client.fetch(s.url("/"), home.store, pass_headers=("content-type", "access-control-allow-origin"))
    assert dict(r.passed_headers) == {"content-type": "text/html; charset=utf-8", "access-control-allow-origin": "*"}
    plain = client.fetch(s.url("/"), home.store)
    assert plain.passed_headers == ()


def test_following_is_unchanged_by_default(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(302, b"", headers=(("Location", "/b"),)), "/b": Reply(body=b"B"), "/robots.txt": ROBOTS})
    r = client.fetch(s.url("/a"), home.store)
    assert (r.outcome, r.status, [h.status for h in r.hops]) == (Outcome.OK, 200, [302, 200])
