"""``--render auto`` starts a shell's render from the raw read's bytes (``g6.fetch.render.RawDocument``): the page's
own first request in the browser is answered with what the raw read kept, not read again, and its receipt says so
(``links.answered_from``, the raw read's time). Whatever the raw read cannot stand for is read again: a redirect, a
body cut short, a request for another page, a reload."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits, SubRequest
from g6.adapters.browser.pool import BrowserPool
from g6.adapters.outcomes import Outcome
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.capture import prepare_fetch
from g6.fetch.render import RENDER_HEADERS, RawDocument, Renderer, _SubFetcher, prepare_page
from g6.home import EvidenceHome
from g6.ledger.receipts import Hop, new_receipt_id

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
WORDS = "The words a script wrote once the shell had loaded."
SHELL = (f'<!doctype html><html><head><title>Shell</title></head><body><div id="app"></div>'
         f'<script>document.getElementById("app").textContent = {json.dumps(WORDS)};</script></body></html>').encode()


def counted_site(site: Site, routes: dict[str, Any]) -> tuple[LocalSite, Counter[str]]:
    seen: Counter[str] = Counter()

    def count(reply: Any) -> Callable[[SeenRequest], Reply]:
        def answer(req: SeenRequest) -> Reply:
            seen[req.path] += 1
            return reply(req) if callable(reply) else reply
        return answer

    return site({"/robots.txt": ROBOTS, **{p: count(r) for p, r in routes.items()}}), seen


def rendered(home: EvidenceHome, client: CheckedClient, pool: BrowserPool, url: str) -> list[Any]:
    """`g6 fetch URL --render auto` of a shell, its receipts appended: the raw read, the requests, the capture."""
    page = prepare_page(home.store, client, url, render_mode="auto", renderer=Renderer(pool, RenderLimits(deadline=20)))
    return home.ledger.append_many(list(page.receipts), home.signing_key())


def test_the_shell_is_read_once_and_its_render_starts_from_those_bytes(home: EvidenceHome, client: CheckedClient,
                                                                      pool: BrowserPool, site: Site) -> None:
    s, seen = counted_site(site, {"/": Reply(body=SHELL)})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert seen["/"] == 1  # before: 2, the raw read and the browser's
    assert capture.outcome == "ok" and WORDS in home.store.read_as(capture.capture["text"]).decode()
    assert capture.links["raw"] == raw.receipt_id and raw.outcome == "empty"
    doc = subs[0]
    assert [x["receipt_id"] for x in capture.capture["resources"]][0] == doc.receipt_id
    assert doc.links == {"capture": capture.receipt_id, "answered_from": raw.receipt_id}
    assert doc.request["resource_type"] == "Document" and doc.outcome == "ok" and doc.http_status == 200
    assert doc.content == raw.content and doc.fetched_at == raw.fetched_at  # the very bytes, read then
    assert "not read again" in doc.detail["message"]
    assert capture.final_url == raw.final_url and capture.hops == raw.hops
    assert home.verify().ok


def test_the_raw_reads_headers_that_restrict_the_page_still_reach_the_browser(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    # the page's Content-Security-Policy forbids its inline script: the render started from the raw read must obey it
    csp = (("Content-Security-Policy", "script-src 'none'"),)
    s, seen = counted_site(site, {"/": Reply(body=SHELL, headers=csp)})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert seen["/"] == 1 and subs[0].links.get("answered_from") == raw.receipt_id
    assert capture.outcome == "empty" and capture.detail["reason"] == "no_text_rendered", capture.detail


def test_a_redirected_raw_read_is_not_the_document_the_browser_is_given(home: EvidenceHome, client: CheckedClient,
                                                                        pool: BrowserPool, site: Site) -> None:
    s, seen = counted_site(site, {"/": Reply(302, headers=(("Location", "/app"),)), "/app": Reply(body=SHELL)})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert len(raw.hops) == 2 and capture.outcome == "ok"
    assert (seen["/"], seen["/app"]) == (2, 2)  # the browser asks for every hop itself, each checked
    assert not any("answered_from" in x.links for x in subs)


def test_a_raw_read_cut_at_the_byte_cap_is_read_again(home: EvidenceHome, client: CheckedClient,
                                                     pool: BrowserPool, site: Site) -> None:
    body = SHELL.replace(b"</body>", b"<!--" + b"x" * 3000 + b"--></body>")
    s, seen = counted_site(site, {"/": Reply(body=body)})
    raw = prepare_fetch(home.store, client, s.url("/"), policy=replace(client.policy, max_bytes=1000),
                        pass_headers=RENDER_HEADERS)
    assert raw.receipt.truncated
    assert not RawDocument(s.url("/"), raw.receipt, raw.page.response).usable


def request(url: str, **kw: Any) -> SubRequest:
    d: dict[str, Any] = {"url": url, "method": "GET", "resource_type": "Document", "main_frame": True,
                         "service_worker_script": False, "accept": None, "max_bytes": 1 << 20, "time_left": 20.0}
    return SubRequest(**{**d, **kw})


@pytest.fixture
def raw_shell(home: EvidenceHome, client: CheckedClient, site: Site) -> tuple[RawDocument, Counter[str], LocalSite]:
    s, seen = counted_site(site, {"/": Reply(body=SHELL), "/other": Reply(body=SHELL)})
    raw = prepare_fetch(home.store, client, s.url("/"), pass_headers=RENDER_HEADERS)
    return RawDocument(s.url("/"), raw.receipt, raw.page.response), seen, s


def test_only_the_first_top_frame_request_for_that_very_page_is_answered_from_it(
        home: EvidenceHome, client: CheckedClient, raw_shell: tuple[RawDocument, Counter[str], LocalSite]) -> None:
    first, seen, s = raw_shell
    assert first.usable and seen["/"] == 1
    url = s.url("/")
    # what it never answers: a frame's, a POST, a service worker's script, another page, more than the budget left
    for req in (request(url, main_frame=False), request(url, method="POST"),
                request(url, service_worker_script=True), request(s.url("/other")),
                request(url, max_bytes=len(SHELL) - 1)):
        assert not first.answers(req), req
    assert first.answers(request(url.rstrip("/")))  # the same page once normalised (the browser adds the slash)

    fetcher = _SubFetcher(home.store, client, client.policy, new_receipt_id(), (), first)
    a = fetcher(request(url))
    assert a.status == 200 and a.body == SHELL and seen["/"] == 1  # from the raw read: nothing sent
    assert ("content-type", "text/html; charset=utf-8") in a.headers
    b = fetcher(request(url))  # a reload: read again
    assert b.status == 200 and b.body == SHELL and seen["/"] == 2
    assert [r.links.get("answered_from") for r in fetcher.seal()] == [first.receipt.receipt_id, None]


def test_a_first_request_for_another_page_uses_the_raw_read_up(
        home: EvidenceHome, client: CheckedClient, raw_shell: tuple[RawDocument, Counter[str], LocalSite]) -> None:
    first, seen, s = raw_shell
    fetcher = _SubFetcher(home.store, client, client.policy, new_receipt_id(), (), first)
    fetcher(request(s.url("/other")))
    fetcher(request(s.url("/")))  # no longer the page's first request: read
    assert (seen["/other"], seen["/"]) == (1, 2)
    assert not any("answered_from" in r.links for r in fetcher.seal())


@pytest.mark.parametrize("change", [
    {"status": 203}, {"status": 206}, {"status": 304}, {"outcome": Outcome.HTTP_ERROR}, {"truncated": True},
    {"detail": {"content_encoding": "br"}}, {"body": None}, {"hops": (Hop("http://a/", None, None),) * 2},
])
def test_what_the_raw_read_cannot_stand_for(raw_shell: tuple[RawDocument, Counter[str], LocalSite],
                                            change: dict[str, Any]) -> None:
    first, _, _ = raw_shell
    assert first.usable
    changed = RawDocument(first.url, first.receipt, replace(first.response, **change))
    assert changed.usable is (change == {"status": 203})  # a 2xx with a body is whole (206 is a part); the rest not


def test_a_page_given_with_non_ascii_or_userinfo_is_the_page_the_browser_asks_for(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """The browser asks for a page in the form a request goes out in (non-ASCII and spaces percent-encoded, no
    userinfo), as the raw read asked for it: matched (before, read a second time)."""
    s, seen = counted_site(site, {"/%C3%A9t%C3%A9": Reply(body=SHELL), "/a%20b": Reply(body=SHELL)})
    for given, asked, path in ((s.url("/été"), s.url("/%C3%A9t%C3%A9"), "/%C3%A9t%C3%A9"),
                               (s.url("/a b"), s.url("/a%20b"), "/a%20b"),
                               (s.url("/a b").replace("http://", "http://reader:pw@"), s.url("/a%20b"), "/a%20b")):
        raw = prepare_fetch(home.store, client, given, pass_headers=RENDER_HEADERS)
        assert raw.receipt.http_status == 200, (given, raw.receipt.detail)  # a shell: "empty" read raw
        first = RawDocument(given, raw.receipt, raw.page.response)
        before = seen[path]
        assert first.usable and first.answers(request(asked)), given
        fetcher = _SubFetcher(home.store, client, client.policy, new_receipt_id(), (), first)
        assert fetcher(request(asked)).body == SHELL and seen[path] == before  # nothing sent
    # and what differs on the wire is another page: an encoded slash, a case in the path, an unreserved escape
    first = RawDocument(s.url("/a b"), raw.receipt, raw.page.response)
    for other in ("/a%2Fb", "/A%20b", "/a%20B", "/%61%20b"):
        assert not first.answers(request(s.url(other))), other


def test_a_shell_at_a_non_ascii_path_is_read_once(home: EvidenceHome, client: CheckedClient,
                                                  pool: BrowserPool, site: Site) -> None:
    s, seen = counted_site(site, {"/%C3%A9t%C3%A9": Reply(body=SHELL)})
    raw, *subs, capture = rendered(home, client, pool, s.url("/été"))
    assert seen["/%C3%A9t%C3%A9"] == 1, seen  # before: 2
    assert subs[0].links.get("answered_from") == raw.receipt_id
    assert capture.outcome == "ok" and WORDS in home.store.read_as(capture.capture["text"]).decode()
