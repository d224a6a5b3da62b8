"""Every URL the client cannot parse is a typed outcome with a receipt (issue 14): the user's own
(``rejected``) or a server's Location (``http_error``/``bad_location``). Fuzzed from a grammar of
hostile forms: no exception escapes ``fetch`` and every call appends exactly one receipt. A text that
is not a URL at all, and an impossible setting, are input errors (exit 2) before anything is sent."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
PUBLIC = "93.184.216.34"  # what the injected resolver answers; the mock transport never sends anything

HOSTILE = [
    "http://[::1/", "http://[evil]/", "http://h.test:①/", "http://h.test:" + "9" * 5000 + "/", "http://a\x00b/",
    "http://[::ffff:127.0.0.1", "http://%zz/", "http://xn--/", "http://" + "a" * 300 + "/", "http://a..b/",
    "http://[v1.x]/", "//evil.test/", "http:/\\evil.test", "http://:80/", "http://@/", "http://u@:1/",
    "https://[fe80::1%25eth0]/", "http://1.2.3.4.5/", "http://0x100000000/", "http://h.test:0/",
    "http://h.test:65536/", "http://h.test:-1/", "http:", "", " ", "http://\u2028/", "http://ex\udc80ample/",
    "http://h.test/\ud800", "http://[" + "1:" * 20 + "]/", "http://h.test:８０/", "http://h.test:80:80/",
    "http://[::1]x/", "http://h.test/%", "http://h.test/?\udcff=1", "HTTP://H.TEST/", "http://h.test\\@evil/",
    "http://ｈ.test/", "http://h.test/" + "x" * 20000, "http://\u0000/", "http://-h-.test/", "http://h_.test/",
    "http://xn--zz-ll.test/", "http://\U0001F600.test/", "http://h.test#frag", "http://h.test?", "data:,x",
]
_HOSTS = st.sampled_from(["h.test", "[::1", "[evil]", "[::1]", "127.1", "0x7f.1", "xn--", "a" * 70, "ｈ.test",
                          "[fe80::1%eth0]", "h.test.", "", "@", "u:p@h.test", "\u00e9.test"])
_PORTS = st.sampled_from(["", ":", ":①", ":99999", ":" + "1" * 4400, ":0", ":80", ":-5", ":８０", ":8o"])
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=24)
URLS = st.one_of(
    st.sampled_from(HOSTILE),
    st.builds(lambda s, h, p, path: f"{s}://{h}{p}/{path}",
              st.sampled_from(["http", "https", "HTTP", "ftp", "", "javascript", "h\x00ttp"]),
              st.one_of(_HOSTS, _TEXT), st.one_of(_PORTS, _TEXT.map(lambda t: ":" + t)), _TEXT),
    _TEXT,
)
LOCATIONS = st.one_of(URLS, st.sampled_from(["/x", "//h.test/y", "?q=1", "#f", "\\\\h.test", "/\u00e9", "..//..",
                                             "http://h.test:①/", "http://[::1/"]))


@pytest.fixture(scope="module")
def fuzz_home() -> Iterator[EvidenceHome]:
    with tempfile.TemporaryDirectory() as d, EvidenceHome(d, fsync=False) as ev:
        ev.keys.init()
        yield ev


def mock_client(location: bytes | None = None) -> CheckedClient:
    def handler(request: httpx.Request) -> httpx.Response:
        if location is not None and request.url.path == "/start":
            return httpx.Response(302, headers=[(b"Location", location)])
        return httpx.Response(200, content=b"<p>fine</p>", headers={"Content-Type": "text/html"})

    return CheckedClient(FetchPolicy(host_pause=0, respect_robots=False), transport=httpx.MockTransport(handler),
                         resolver=lambda host, port: [PUBLIC])


def one_fetch(home: EvidenceHome, client: CheckedClient, url: str) -> Outcome:
    before = len(home.ledger)
    result = fetch(home, client, url)  # nothing may escape
    assert len(home.ledger) == before + 1, "exactly one receipt per call"
    assert home.ledger.get(result.receipt_id).outcome == result.outcome.value
    return result.outcome


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(url=URLS)
def test_fuzzed_user_urls_end_in_a_typed_outcome_with_one_receipt(fuzz_home: EvidenceHome, url: str) -> None:
    with mock_client() as c:
        assert isinstance(one_fetch(fuzz_home, c, url), Outcome)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(location=LOCATIONS)
def test_fuzzed_locations_end_in_a_typed_outcome_with_one_receipt(fuzz_home: EvidenceHome, location: str) -> None:
    raw = location.encode("utf-8", "backslashreplace")
    if b"\r" in raw or b"\n" in raw:
        raw = raw.replace(b"\r", b"").replace(b"\n", b"")
    with mock_client(raw) as c:
        outcome = one_fetch(fuzz_home, c, "http://start.test/start")
    assert outcome in (Outcome.OK, Outcome.EMPTY, Outcome.HTTP_ERROR, Outcome.REFUSED, Outcome.UNREACHABLE,
                       Outcome.POLICY_DENIED, Outcome.ROBOTS_DISALLOWED), outcome


BAD_LOCATIONS = [b"http://[::1/", b"http://[evil]/", "http://h.test:①/".encode(),
                 b"http://h.test:" + b"9" * 5000 + b"/", b"http://[::1]x/", b"http://h.test:65536/",
                 b"http://[" + b"1:" * 20 + b"]/"]


@pytest.mark.parametrize("location", BAD_LOCATIONS, ids=lambda b: b[:24].decode("utf-8", "replace"))
def test_unparseable_location_over_a_real_socket_is_bad_location(home: EvidenceHome, site: Site,
                                                                 location: bytes) -> None:
    raw = b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    s = site({"/r": Reply(raw=raw)})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c:
        r = fetch(home, c, s.url("/r"))
    assert (r.outcome, r.reason) == (Outcome.HTTP_ERROR, "bad_location"), (r.outcome, r.reason, r.detail)
    receipt = home.ledger.get(r.receipt_id)
    assert receipt.outcome == "http_error" and [h.status for h in receipt.hops] == [302]


def test_nul_in_location_is_a_typed_outcome(home: EvidenceHome, site: Site) -> None:
    raw = b"HTTP/1.1 302 Found\r\nLocation: http://a\x00b/\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    s = site({"/r": Reply(raw=raw)})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c:
        r = fetch(home, c, s.url("/r"))
    assert r.outcome is Outcome.HTTP_ERROR and r.reason in ("bad_location", "protocol_error")
    assert home.ledger.get(r.receipt_id).outcome == "http_error"


@pytest.mark.parametrize("url", ["http://[::1/", "http://[evil]/", "http://h.test:①/",
                                 "http://h.test:" + "9" * 5000 + "/", "http://a\x00b/", "http://h.test/\ud800"])
def test_unparseable_user_url_is_rejected_with_a_receipt(home: EvidenceHome, url: str) -> None:
    with mock_client() as c:
        r = fetch(home, c, url)
    assert r.outcome is Outcome.REJECTED, (r.reason, r.detail)
    assert home.ledger.get(r.receipt_id).outcome == r.outcome.value


# -- the command line ----------------------------------------------------------------------
def g6(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1", **(env or {})})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=e, timeout=120)


def test_text_that_is_not_a_url_is_an_input_error_with_a_hint(tmp_path: Path, site: Site) -> None:
    s = site({"/article": Reply(body=b"<p>x</p>")})
    home = tmp_path / "home"
    prose = g6(home, "fetch", "not a url")
    assert prose.returncode == 2 and prose.stderr.startswith(b"g6: ") and b"not a URL" in prose.stderr
    bare = g6(home, "fetch", f"127.0.0.1:{s.port}/article")
    assert bare.returncode == 2 and f"did you mean http://127.0.0.1:{s.port}/article".encode() in bare.stderr
    assert len(bare.stderr.strip().splitlines()) == 1 and b"Traceback" not in bare.stderr
    assert s.requests == [] and not home.exists()  # nothing sent, nothing receipted, no home made
    refused = g6(home, "fetch", "file:///etc/passwd", "--json")  # a URL of another scheme: refused, receipted
    assert refused.returncode == 1 and b'"refused"' in refused.stdout


@pytest.mark.parametrize(("args", "env", "needle"), [
    ((), {"G6_TIMEOUT": "0"}, b"G6_TIMEOUT"),
    ((), {"G6_TIMEOUT": "-3"}, b"G6_TIMEOUT"),
    ((), {"G6_TIMEOUT": "nan"}, b"G6_TIMEOUT"),
    ((), {"G6_TIMEOUT": "inf"}, b"G6_TIMEOUT"),
    ((), {"G6_MAX_BYTES": str(2**53 + 1)}, b"G6_MAX_BYTES"),
    ((), {"G6_HARD_CAP": "0"}, b"G6_HARD_CAP"),
    ((), {"G6_HARD_CAP": str(2**60)}, b"G6_HARD_CAP"),
    ((), {"G6_HOST_PAUSE": "inf"}, b"G6_HOST_PAUSE"),
    (("--max-bytes", str(2**53 + 1)), {}, b"--max-bytes"),
])
def test_impossible_settings_exit_2_before_anything_is_sent(tmp_path: Path, site: Site, args: tuple[str, ...],
                                                           env: dict[str, str], needle: bytes) -> None:
    s = site({"/": Reply(body=b"<p>x</p>")})
    r = g6(tmp_path / "home", "fetch", s.url("/"), *args, env=env)
    assert r.returncode == 2 and needle in r.stderr and b"Traceback" not in r.stderr, r.stderr
    assert s.requests == []
