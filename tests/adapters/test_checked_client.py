"""The checked client over real sockets on loopback. No test here sends traffic anywhere else:
non-loopback addresses only ever appear in resolver answers or redirects that must be refused."""

from __future__ import annotations

import contextlib
import gzip
import itertools
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.net.pacing import HostPacer
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reliability"))
from hostile_servers import resetting_listener  # noqa: E402

Site = Callable[..., LocalSite]
HTML = b"<html><head><title>t</title></head><body><p>Hello, reader. This is the page text.</p></body></html>"
ROBOTS_OK = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")


def fixed_resolver(mapping: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        if host not in mapping:
            raise OSError(f"no such host {host}")
        return mapping[host]
    return resolve


def test_ok_page_is_stored_and_receipted(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/": Reply(body=HTML), "/robots.txt": ROBOTS_OK})
    r = fetch(home, client, s.url("/"))
    assert r.outcome is Outcome.OK and r.code == "G6_E_KNOWLEDGE_FETCHED"
    assert r.documents[0].text == "Hello, reader. This is the page text."
    assert home.store.read(r.content["blake3"]) == HTML
    receipt = home.ledger.get(r.receipt_id)
    assert receipt.hops[0].connected_address == "127.0.0.1"
    assert receipt.byte_count == len(HTML) and receipt.http_status == 200
    assert home.verify().ok


@pytest.mark.parametrize(
    ("status", "outcome"),
    [(401, Outcome.BLOCKED), (403, Outcome.BLOCKED), (407, Outcome.BLOCKED), (451, Outcome.BLOCKED),
     (404, Outcome.NOT_FOUND), (410, Outcome.NOT_FOUND), (429, Outcome.RATE_LIMITED),
     (500, Outcome.SERVER_ERROR), (503, Outcome.SERVER_ERROR), (418, Outcome.HTTP_ERROR),
     (400, Outcome.HTTP_ERROR)],
)
def test_status_outcomes_keep_the_body_and_a_receipt(home: EvidenceHome, client: CheckedClient, site: Site,
                                                     status: int, outcome: Outcome) -> None:
    body = f"error page {status}".encode()
    s = site({"/p": Reply(status, body, headers=(("Retry-After", "120"),)), "/robots.txt": ROBOTS_OK})
    r = fetch(home, client, s.url("/p"))
    assert r.outcome is outcome
    assert r.code == f"G6_E_KNOWLEDGE_FETCH_{outcome.name}"
    assert r.outcome.trust == "no_evidence" and r.documents == ()
    assert home.store.read(r.content["blake3"]) == body
    receipt = home.ledger.get(r.receipt_id)
    assert receipt.http_status == status and receipt.outcome == outcome.value
    if status == 429:
        assert receipt.detail["retry_after"] == "120"


def test_loopback_is_refused_without_the_operator_setting(home: EvidenceHome, site: Site) -> None:
    s = site({"/": Reply(body=HTML)})
    with CheckedClient(FetchPolicy(host_pause=0)) as strict:
        r = fetch(home, strict, s.url("/"))
    assert r.outcome is Outcome.REFUSED and r.reason == "address_not_public"
    assert "G6_ALLOW_LOOPBACK" in r.detail["message"]
    assert s.requests == []


def test_rebinding_cannot_switch_the_connected_address(home: EvidenceHome, policy: FetchPolicy,
                                                        site: Site) -> None:
    a = site({"/": Reply(body=b"<p>site A, the checked address</p>")})
    b = site({"/": Reply(body=b"<p>site B, the rebound address</p>")}, host="127.0.0.2", port=a.port)
    answers = itertools.chain([["127.0.0.1"]], itertools.repeat(["127.0.0.2"]))
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False),
                       resolver=rebinding) as c:
        r = fetch(home, c, f"http://rebind.test:{a.port}/")
    assert r.outcome is Outcome.OK and "site A" in r.documents[0].text
    assert calls == ["rebind.test"]  # resolved once; the connection used that answer
    assert len(a.requests) == 1 and b.requests == []
    assert a.requests[0].headers["host"] == f"rebind.test:{a.port}"
    assert home.ledger.get(r.receipt_id).hops[0].connected_address == "127.0.0.1"


def test_redirect_hop_is_checked_again(home: EvidenceHome, site: Site) -> None:
    s = site({"/": Reply(302, headers=(("Location", "/next"),))})
    answers = iter([["127.0.0.1"], ["10.0.0.5"]])
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False),
                       resolver=lambda h, p: next(answers)) as c:
        r = fetch(home, c, f"http://twice.test:{s.port}/")
    assert r.outcome is Outcome.REFUSED and r.reason == "address_not_public"
    assert r.detail["addresses"] == [{"address": "10.0.0.5", "category": "private"}]
    assert [q.path for q in s.requests] == ["/"]


def test_mixed_dns_answer_is_refused(home: EvidenceHome, site: Site) -> None:
    s = site({"/": Reply(body=HTML)})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0),
                       resolver=fixed_resolver({"mixed.test": ["127.0.0.1", "169.254.169.254"]})) as c:
        r = fetch(home, c, f"http://mixed.test:{s.port}/")
    assert r.outcome is Outcome.REFUSED
    assert s.requests == []


@pytest.mark.parametrize(
    ("location", "reason"),
    [("http://10.1.2.3/", "address_not_public"), ("http://169.254.169.254/latest/meta-data/", "address_not_public"),
     ("http://[::ffff:127.0.0.1]/", "address_not_public"), ("http://0x7f000001:RESET/", None),
     ("file:///etc/passwd", "redirect_scheme"), ("gopher://127.0.0.1:70/", "redirect_scheme"),
     ("data:text/html,hi", "redirect_scheme")],
)
def test_redirects_to_refused_targets(home: EvidenceHome, client: CheckedClient, site: Site,
                                      location: str, reason: str | None) -> None:
    with resetting_listener() as port:  # no fixed port is assumed closed: this one resets every connection
        location = location.replace("RESET", str(port))
        s = site({"/": Reply(302, headers=(("Location", location),)), "/robots.txt": ROBOTS_OK})
        r = fetch(home, client, s.url("/"))
    if reason is None:
        # 127.0.0.1 in hex is loopback, allowed here; the listener resets, so its robots.txt is
        # unreachable (RFC 9309: disallow all) and the page is never asked for
        assert r.outcome is Outcome.UNREACHABLE
        robots = dict(r.detail["robots"])
        assert robots.pop("detail") in ("connect", "network", "protocol_error")  # how a reset shows varies
        assert robots == {"origin": f"http://127.0.0.1:{port}", "state": "disallow_all", "status": None}
    else:
        assert r.outcome is Outcome.REFUSED and r.reason == reason
    assert [q.path for q in s.requests] == ["/robots.txt", "/"]


@contextlib.contextmanager
def closing_listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback port that reads each request and closes the connection without a reply (a FIN, so
    the client sees "disconnected without sending a response": a protocol error, not a reset)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    seen: list[bytes] = []

    def run() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(65536).split(b"\r\n", 1)[0])

    threading.Thread(target=run, daemon=True).start()
    try:
        yield int(sock.getsockname()[1]), seen
    finally:
        sock.close()


def test_robots_closed_without_a_reply_is_unreachable_and_not_remembered(home: EvidenceHome,
                                                                          client: CheckedClient) -> None:
    with closing_listener() as (port, seen):
        first = fetch(home, client, f"http://127.0.0.1:{port}/page")
        second = fetch(home, client, f"http://127.0.0.1:{port}/page")
    for r in (first, second):  # the server did not answer: not "robots said no", and asked again next time
        assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "protocol_error"), (r.outcome, r.reason)
        assert r.detail["robots"]["state"] == "disallow_all"
    assert seen == [b"GET /robots.txt HTTP/1.1"] * 2  # the page itself was never asked for


def test_redirects_are_followed_and_recorded(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(301, headers=(("Location", "/b"),)), "/b": Reply(307, headers=(("Location", "/c"),)),
              "/c": Reply(body=HTML), "/robots.txt": ROBOTS_OK})
    r = fetch(home, client, s.url("/a"))
    receipt = home.ledger.get(r.receipt_id)
    assert r.outcome is Outcome.OK and r.final_url == s.url("/c")
    assert [(h.url, h.status) for h in receipt.hops] == [(s.url("/a"), 301), (s.url("/b"), 307), (s.url("/c"), 200)]


def test_redirect_loop_and_too_many_redirects(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    routes: dict = {"/loop1": Reply(302, headers=(("Location", "/loop2"),)),
                    "/loop2": Reply(302, headers=(("Location", "/loop1"),)), "/robots.txt": ROBOTS_OK}
    for i in range(30):
        routes[f"/r{i}"] = Reply(302, headers=(("Location", f"/r{i + 1}"),))
    s = site(routes)
    loop = fetch(home, client, s.url("/loop1"))
    assert loop.outcome is Outcome.HTTP_ERROR and loop.reason == "redirect_loop"
    chain = fetch(home, client, s.url("/r0"))
    assert chain.outcome is Outcome.HTTP_ERROR and chain.reason == "too_many_redirects"
    assert len(home.ledger.get(chain.receipt_id).hops) == 11


def test_allowlist_checked_before_traffic_and_on_each_redirect(home: EvidenceHome, site: Site) -> None:
    s = site({"/": Reply(302, headers=(("Location", "/away"),)), "/away": Reply(body=HTML),
              "/to-other": Reply(302, headers=(("Location", "http://other.test:PORT/"),))})
    routes = dict(s.routes)
    routes["/to-other"] = Reply(302, headers=(("Location", f"http://other.test:{s.port}/"),))
    s.routes = routes
    resolver = fixed_resolver({"good.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    pol = FetchPolicy(allowlist=("good.test", "*.docs.test"), allow_loopback=True, host_pause=0,
                      respect_robots=False)
    with CheckedClient(pol, resolver=resolver) as c:
        denied = fetch(home, c, f"http://other.test:{s.port}/")
        assert denied.outcome is Outcome.POLICY_DENIED and s.requests == []
        assert denied.detail["hop"] == 0 and denied.detail["patterns"] == ["good.test", "*.docs.test"]
        ok = fetch(home, c, f"http://good.test:{s.port}/")
        assert ok.outcome is Outcome.OK
        assert home.ledger.get(ok.receipt_id).allowlist.decision == "allowed"
        hop = fetch(home, c, f"http://good.test:{s.port}/to-other")
    assert hop.outcome is Outcome.POLICY_DENIED and hop.detail["hop"] == 1
    assert hop.content is None
    receipt = home.ledger.get(hop.receipt_id)
    assert receipt.allowlist.decision == "denied" and receipt.allowlist.host == "other.test"
    assert [q.path for q in s.requests] == ["/", "/away", "/to-other"]


def test_max_bytes_truncates_and_digests_what_was_read(home: EvidenceHome, policy: FetchPolicy,
                                                       site: Site) -> None:
    body = b"<p>" + b"x" * 100_000 + b"</p>"
    s = site({"/": Reply(body=body), "/robots.txt": ROBOTS_OK})
    with CheckedClient(policy) as c:
        from dataclasses import replace

        r = fetch(home, c, s.url("/"), policy=replace(policy, max_bytes=1000))
    assert r.outcome is Outcome.OK and r.truncated and r.byte_count == 1000
    assert home.store.read(r.content["blake3"]) == body[:1000]


def test_hard_cap_by_declared_length_and_by_stream(home: EvidenceHome, policy: FetchPolicy, site: Site) -> None:
    from dataclasses import replace

    s = site({"/declared": Reply(body=b"y" * 5000), "/robots.txt": ROBOTS_OK,
              "/stream": Reply(chunks=lambda: (b"z" * 1000 for _ in range(10)))})
    with CheckedClient(replace(policy, hard_cap=2048)) as c:
        declared = fetch(home, c, s.url("/declared"))
        streamed = fetch(home, c, s.url("/stream"))
    assert declared.outcome is Outcome.TOO_LARGE and declared.reason == "declared_length_over_cap"
    assert declared.byte_count == 0
    assert streamed.outcome is Outcome.TOO_LARGE and streamed.truncated and streamed.byte_count == 2048


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compression_bomb_stops_at_the_cap(home: EvidenceHome, policy: FetchPolicy, site: Site,
                                           encoding: str) -> None:
    from dataclasses import replace

    raw = b"\0" * (64 * 1024 * 1024)
    packed = gzip.compress(raw, 9) if encoding == "gzip" else zlib.compress(raw, 9)
    assert len(packed) < 100_000
    s = site({"/bomb": Reply(body=packed, headers=(("Content-Encoding", encoding),)), "/robots.txt": ROBOTS_OK})
    with CheckedClient(replace(policy, hard_cap=1 << 20)) as c:
        r = fetch(home, c, s.url("/bomb"))
    assert r.outcome is Outcome.TOO_LARGE and r.byte_count == 1 << 20


def test_endless_body_with_max_bytes(home: EvidenceHome, policy: FetchPolicy, site: Site) -> None:
    from dataclasses import replace

    s = site({"/endless": Reply(chunks=lambda: itertools.repeat(b"<p>more</p>" * 100)), "/robots.txt": ROBOTS_OK})
    with CheckedClient(replace(policy, max_bytes=50_000)) as c:
        r = fetch(home, c, s.url("/endless"))
    assert r.outcome is Outcome.OK and r.truncated and r.byte_count == 50_000


def test_slow_drip_hits_the_total_timeout(home: EvidenceHome, site: Site) -> None:
    s = site({"/drip": Reply(chunks=lambda: (b"." for _ in range(200)), chunk_delay=0.05)})
    pol = FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False, read_timeout=2, total_timeout=1)
    with CheckedClient(pol) as c:
        r = fetch(home, c, s.url("/drip"))
    assert r.outcome is Outcome.UNREACHABLE and r.reason == "total_timeout"
    assert r.content is None


def test_silent_server_hits_the_read_timeout(home: EvidenceHome, site: Site) -> None:
    def slow() -> Reply:
        time.sleep(1.5)
        return Reply(body=HTML)

    s = site({"/slow": lambda req: slow()})
    pol = FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False, read_timeout=0.3)
    with CheckedClient(pol) as c:
        r = fetch(home, c, s.url("/slow"))
    assert r.outcome is Outcome.UNREACHABLE and r.reason == "read_timeout"


def test_nothing_listening_is_unreachable(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({})
    port = s.port
    s.stop()
    r = fetch(home, client, f"http://127.0.0.1:{port}/")
    assert r.outcome is Outcome.UNREACHABLE and r.reason == "connect"


def test_dns_failure_is_unreachable(home: EvidenceHome) -> None:
    with CheckedClient(FetchPolicy(host_pause=0), resolver=fixed_resolver({})) as c:
        r = fetch(home, c, "http://no-such-host.test/")
    assert r.outcome is Outcome.UNREACHABLE and r.reason == "dns"


@pytest.mark.parametrize("raw", [b"HTTP/1.1 abc\r\n\r\n", b"garbage\r\n\r\n",
                                 b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"])
def test_malformed_replies_are_http_errors(home: EvidenceHome, client: CheckedClient, site: Site,
                                           raw: bytes) -> None:
    s = site({"/bad": Reply(raw=raw), "/robots.txt": ROBOTS_OK})
    r = fetch(home, client, s.url("/bad"))
    assert r.outcome is Outcome.HTTP_ERROR and r.reason == "protocol_error"


def test_broken_gzip_is_parse_failed(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/": Reply(body=b"this is not gzip at all", headers=(("Content-Encoding", "gzip"),)),
              "/robots.txt": ROBOTS_OK})
    r = fetch(home, client, s.url("/"))
    assert r.outcome is Outcome.PARSE_FAILED and r.reason == "content_decoding"


def test_empty_outcomes_say_which(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/nobody": Reply(200, b""), "/204": Reply(204, b"", content_type=None),
              "/scripts": Reply(body=b"<html><body><script>render()</script></body></html>"),
              "/blank": Reply(body=b"<html><body><div>   </div></body></html>"), "/robots.txt": ROBOTS_OK})
    assert fetch(home, client, s.url("/nobody")).reason == "no_body"
    assert fetch(home, client, s.url("/204")).outcome is Outcome.EMPTY
    scripts = fetch(home, client, s.url("/scripts"))
    assert scripts.outcome is Outcome.EMPTY and scripts.reason == "no_text_without_scripts"
    blank = fetch(home, client, s.url("/blank"))
    assert blank.outcome is Outcome.EMPTY and blank.reason == "no_text"
    assert blank.code == "G6_E_KNOWLEDGE_FETCH_EMPTY" and blank.outcome.trust == "explicit_empty"


def test_no_cookies_no_credentials_only_stated_headers(home: EvidenceHome, client: CheckedClient,
                                                        site: Site) -> None:
    s = site({"/": Reply(body=HTML, headers=(("Set-Cookie", "session=abc; Path=/"),)), "/robots.txt": ROBOTS_OK})
    url = s.url("/").replace("http://", "http://alice:hunter2@")
    fetch(home, client, url)
    r = fetch(home, client, url)
    page_requests = [q for q in s.requests if q.path == "/"]
    assert len(page_requests) == 2
    for q in page_requests:
        assert set(q.headers) <= {"host", "user-agent", "accept", "accept-encoding"}
        assert q.headers["user-agent"].startswith("g6-evidence/")
    receipt_text = home.ledger.get(r.receipt_id).canonical_bytes(with_signature=True).decode()
    assert "hunter2" not in receipt_text and "alice" not in receipt_text and "session=abc" not in receipt_text


@pytest.mark.parametrize(
    ("robots", "outcome", "state"),
    [(Reply(body=b"User-agent: *\nDisallow: /private/\n", content_type="text/plain"), Outcome.ROBOTS_DISALLOWED,
      "parsed"),
     (Reply(404, b"no robots"), Outcome.OK, "allow_all"),
     (Reply(403, b"forbidden"), Outcome.OK, "allow_all"),
     (Reply(500, b"oops"), Outcome.ROBOTS_DISALLOWED, "disallow_all"),
     (Reply(503, b"later"), Outcome.ROBOTS_DISALLOWED, "disallow_all"),
     (Reply(raw=b"not http\r\n\r\n"), Outcome.ROBOTS_DISALLOWED, "disallow_all")],
)
def test_robots_txt_per_rfc_9309(home: EvidenceHome, client: CheckedClient, site: Site, robots: Reply,
                                 outcome: Outcome, state: str) -> None:
    s = site({"/robots.txt": robots, "/private/page": Reply(body=HTML)})
    r = fetch(home, client, s.url("/private/page"))
    assert r.outcome is outcome
    assert r.detail["robots"]["state"] == state
    if outcome is Outcome.ROBOTS_DISALLOWED:
        assert [q.path for q in s.requests] == ["/robots.txt"]


def test_robots_are_cached_per_origin(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/robots.txt": ROBOTS_OK, "/": Reply(body=HTML)})
    for _ in range(3):
        fetch(home, client, s.url("/"))
    assert [q.path for q in s.requests].count("/robots.txt") == 1


def test_host_pacer_spaces_requests_per_source_and_host() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(d: float) -> None:
        slept.append(d)
        now[0] += d

    pacer = HostPacer(clock=lambda: now[0], sleep=sleep)
    assert pacer.wait("web", "a.test", 1.0) == 0
    assert pacer.wait("web", "a.test", 1.0) == pytest.approx(1.0)
    assert pacer.wait("web", "b.test", 1.0) == 0
    assert pacer.wait("arxiv", "a.test", 3.0) == 0
    now[0] += 5
    assert pacer.wait("web", "a.test", 1.0) == 0
    assert slept == [pytest.approx(1.0)]


def test_pause_is_applied_between_real_requests(home: EvidenceHome, site: Site) -> None:
    slept: list[float] = []
    pacer = HostPacer(clock=lambda: 1000.0, sleep=slept.append)  # a clock that stands still: exact waits
    s = site({"/": Reply(body=HTML)})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.3, respect_robots=False), pacer=pacer) as c:
        fetch(home, c, s.url("/"))
        fetch(home, c, s.url("/"))
        fetch(home, c, s.url("/"))
    assert slept == [pytest.approx(0.3), pytest.approx(0.6)]  # each request waits its turn per host
    assert len(s.requests) == 3
