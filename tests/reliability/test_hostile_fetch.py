"""A table of hostile fetches over loopback. Each case must end in its typed outcome, with a
receipt, nothing sent where nothing should be, and nothing lost (the ledger verifies).
The suite reports how many cases it tried and how many held (see the terminal summary)."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.net.urls import normalise_url
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_servers import bombs  # noqa: E402

Site = Callable[..., LocalSite]
TALLY: dict[str, list[bool]] = {"hostile fetches": []}


@dataclass
class Case:
    name: str
    url: Callable[[LocalSite], str]
    outcomes: tuple[Outcome, ...]
    routes: dict[str, Any] = field(default_factory=dict)
    resolver: dict[str, list[str]] | None = None
    allow_loopback: bool = True
    sent: tuple[str, ...] | None = None  # the only paths the site may see (None: not checked)
    policy: dict[str, Any] = field(default_factory=dict)


def redirect(to: str) -> Reply:
    return Reply(302, headers=(("Location", to),))



def bomb(name: str) -> Reply:
    """A bomb body built once per process (bombs()), never compressed when the request arrives."""
    enc, body = bombs()[name]
    return Reply(body=body, headers=(("Content-Encoding", enc),))


CASES = [
    Case("loopback without the operator setting", lambda s: s.url("/"), (Outcome.REFUSED,), allow_loopback=False,
         sent=()),
    *[Case(f"loopback literal {form}", lambda s, f=form: f"http://{f}:{s.port}/", (Outcome.REFUSED,),
           allow_loopback=False, sent=())
      for form in ("2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1", "[::ffff:127.0.0.1]", "[::1]",
                   "localhost.", "public.example@127.0.0.1")],
    Case("0.0.0.0", lambda s: f"http://0.0.0.0:{s.port}/", (Outcome.REFUSED,), sent=()),
    Case("IPv4-mapped loopback even with loopback allowed", lambda s: f"http://[::ffff:127.0.0.1]:{s.port}/",
         (Outcome.REFUSED,), sent=()),
    Case("IDNA lookalike resolving to a private address", lambda s: f"http://ехаmple.test:{s.port}/",
         (Outcome.REFUSED,), resolver={normalise_url("http://ехаmple.test/").host: ["10.0.0.7"]}, sent=()),
    Case("DNS answer mixing public and private", lambda s: f"http://mixed.test:{s.port}/", (Outcome.REFUSED,),
         resolver={"mixed.test": ["127.0.0.1", "192.168.1.1"]}, sent=()),
    Case("redirect to loopback in another form", lambda s: s.url("/r"), (Outcome.REFUSED,),
         routes={"/r": lambda s: redirect(f"http://[::ffff:7f00:1]:{s.port}/")}, sent=("/r",)),
    Case("redirect to metadata service", lambda s: s.url("/r"), (Outcome.REFUSED,),
         routes={"/r": lambda s: redirect("http://169.254.169.254/latest/meta-data/")}, sent=("/r",)),
    *[Case(f"redirect to {scheme}", lambda s: s.url("/r"), (Outcome.REFUSED,),
           routes={"/r": lambda s, t=target: redirect(t)}, sent=("/r",))
      for scheme, target in (("file", "file:///etc/passwd"), ("gopher", "gopher://127.0.0.1:70/_x"),
                             ("data", "data:text/html,<p>x</p>"), ("ftp", "ftp://127.0.0.1/"))],
    Case("redirect chain over 10", lambda s: s.url("/c0"), (Outcome.HTTP_ERROR,),
         routes={f"/c{i}": (lambda s, i=i: redirect(f"/c{i + 1}")) for i in range(20)}),
    Case("redirect loop", lambda s: s.url("/l1"), (Outcome.HTTP_ERROR,),
         routes={"/l1": lambda s: redirect("/l2"), "/l2": lambda s: redirect("/l1")}, sent=("/l1", "/l2")),
    Case("gzip bomb", lambda s: s.url("/gz"), (Outcome.TOO_LARGE,),
         routes={"/gz": lambda s: bomb("gzip")},
         policy={"hard_cap": 1 << 20}),
    Case("deflate bomb", lambda s: s.url("/df"), (Outcome.TOO_LARGE,),
         routes={"/df": lambda s: bomb("deflate")}, policy={"hard_cap": 1 << 20}),
    Case("stacked gzip, gzip bomb (1.8 KiB -> 1 GiB)", lambda s: s.url("/gzgz"), (Outcome.PARSE_FAILED,),
         routes={"/gzgz": lambda s: bomb("gzip,gzip")}),
    Case("brotli-encoded body (never inflated)", lambda s: s.url("/br"), (Outcome.PARSE_FAILED,),
         routes={"/br": lambda s: Reply(body=b"\x1b\xff\xff\x0f" * 100, headers=(("Content-Encoding", "br"),))}),
    Case("endless body", lambda s: s.url("/endless"), (Outcome.TOO_LARGE,),
         routes={"/endless": lambda s: Reply(chunks=lambda: itertools.repeat(b"x" * 65536))},
         policy={"hard_cap": 2 << 20}),
    Case("slow drip", lambda s: s.url("/drip"), (Outcome.UNREACHABLE,),
         routes={"/drip": lambda s: Reply(chunks=lambda: (b"." for _ in range(100)), chunk_delay=0.05)},
         policy={"total_timeout": 0.8}),
    Case("huge headers", lambda s: s.url("/hh"), (Outcome.HTTP_ERROR,),
         routes={"/hh": lambda s: Reply(raw=b"HTTP/1.1 200 OK\r\n" + b"X-A: " + b"a" * 300_000 + b"\r\n\r\n")}),
    Case("malformed status line", lambda s: s.url("/ms"), (Outcome.HTTP_ERROR,),
         routes={"/ms": lambda s: Reply(raw=b"HTTP/1.1 twohundred OK\r\n\r\n")}),
    Case("no status line at all", lambda s: s.url("/ns"), (Outcome.HTTP_ERROR,),
         routes={"/ns": lambda s: Reply(raw=b"\r\n\r\n")}),
    Case("invalid UTF-8", lambda s: s.url("/u8"), (Outcome.OK,),
         routes={"/u8": lambda s: Reply(body=b"<p>caf\xe9 \xff\xfe broken \xc3 text here</p>")}),
    Case("deeply nested HTML", lambda s: s.url("/deep"), (Outcome.OK, Outcome.EMPTY),
         routes={"/deep": lambda s: Reply(body=b"<div>" * 100_000 + b"deep" + b"</div>" * 100_000)}),
    Case("robots.txt that is a bomb", lambda s: s.url("/page"), (Outcome.OK, Outcome.ROBOTS_DISALLOWED),
         routes={"/robots.txt": lambda s: Reply(chunks=lambda: itertools.repeat(b"Disallow: /x\n" * 1000)),
                 "/page": lambda s: Reply(body=b"<p>page</p>")}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_fetch(home: EvidenceHome, site: Site, case: Case) -> None:
    bombs()  # built before the site starts, so no request handler waits on it
    held = False
    try:
        holder: dict[str, LocalSite] = {}
        routes = {"/robots.txt": Reply(404, b""),
                  **{p: (lambda req, f=f: f(holder["s"])) for p, f in case.routes.items()}}
        s = holder["s"] = site(routes)
        kwargs: dict[str, Any] = {}
        if case.resolver is not None:
            table = case.resolver

            def resolver(host: str, port: int) -> list[str]:
                if host not in table:
                    raise OSError(f"unknown {host}")
                return table[host]
            kwargs["resolver"] = resolver
        pol = FetchPolicy(**{"allow_loopback": case.allow_loopback, "host_pause": 0, "connect_timeout": 2,
                             "read_timeout": 2, "total_timeout": 10, **case.policy})
        with CheckedClient(pol, **kwargs) as client:
            result = fetch(home, client, case.url(s))
        receipt = home.ledger.get(result.receipt_id)
        assert result.outcome in case.outcomes, (result.outcome, result.reason, result.detail)
        assert receipt.outcome == result.outcome.value
        if case.sent is not None:
            assert {q.path for q in s.requests} - {"/robots.txt"} <= set(case.sent), [q.path for q in s.requests]
        assert home.verify().ok  # nothing lost: every receipt signed, chained, its blob whole
        held = True
    finally:
        TALLY["hostile fetches"].append(held)
