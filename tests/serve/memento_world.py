"""A home of real fetches from a LocalSite for the Memento tests, with captures at chosen times.

Each read is a real fetch over a socket (``prepare_fetch``); its receipt is then dated by the test before it
is appended (``fetched_at`` is a field of the unsigned receipt, signed with the rest), so captures stand in
distinct seconds without waiting. The dates are within ``ID_SKEW`` of the receipts' ids and increase in
append order, so ``ledger verify`` finds nothing odd (the test checks it).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.capture import prepare_fetch
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from tests.serve.server import served

BINARY = bytes(range(256)) * 40 + b"\r\n\x00end"


@dataclass
class World:
    home: Path
    site: LocalSite
    base: str  # the site's base URL
    t0: datetime  # the first capture's second
    ids: dict[str, list[str]] = field(default_factory=dict)  # label -> receipt ids, oldest first
    times: dict[str, datetime] = field(default_factory=dict)  # receipt id -> its fetched_at
    bodies: dict[str, bytes] = field(default_factory=dict)  # receipt id -> the body the site sent


def _version(n: list[int]) -> Reply:
    n[0] += 1
    return Reply(body=f"<html><body><p>Version {n[0]} of the page.</p></body></html>".encode())


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): a fetch of it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def build(root: Path) -> World:
    counter = [0]
    site = LocalSite({
        "/page": lambda _r: _version(counter),
        "/moved": Reply(302, headers=(("Location", "/page"),), content_type=None),
        "/search": lambda r: Reply(body=f"results for {r.path.partition('?')[2]}".encode(), content_type="text/plain"),
        "/data.bin": Reply(body=BINARY, content_type="application/octet-stream"),
        "/forbidden": Reply(403, b"<h1>Forbidden</h1>"),
        "/missing": Reply(404, b"<h1>Not found</h1><script>document.title='pwned'</script>"),
        "/robots.txt": Reply(404, b""),
    }).start()
    ev = EvidenceHome(root, fsync=False)
    ev.keys.init()
    t0 = (datetime.now(UTC) - timedelta(seconds=400)).replace(microsecond=0)
    world = World(root, site, site.base_url, t0)
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=2, read_timeout=2, total_timeout=5)
    dead = f"http://127.0.0.1:{closed_port()}/gone"
    plan: list[tuple[str, str, float]] = [  # label, URL, seconds after t0
        ("page", site.url("/page"), 0.25), ("page", site.url("/page"), 60.5),
        ("moved", site.url("/moved"), 90.0),  # redirected to /page: version 3
        ("page", site.url("/page"), 120.125), ("page", site.url("/page"), 120.875),  # one second, twice
        ("search", site.url("/search?q=memento&lang=en"), 130.0), ("search2", site.url("/search?q=other"), 131.0),
        ("bin", site.url("/data.bin"), 140.0), ("forbidden", site.url("/forbidden"), 150.0),
        ("missing", site.url("/missing"), 160.0), ("dead", dead, 170.0), ("page", site.url("/page"), 180.0),
    ]
    with CheckedClient(policy) as client:
        for label, url, after in plan:
            seen = len(site.requests)
            prepared = prepare_fetch(ev.store, client, url)
            when = t0 + timedelta(seconds=after)
            stamp = when.isoformat(timespec="microseconds").replace("+00:00", "Z")
            signed: Receipt = ev.record(replace(prepared.receipt, fetched_at=stamp))
            world.ids.setdefault(label, []).append(signed.receipt_id)
            world.times[signed.receipt_id] = when
            if signed.content:
                world.bodies[signed.receipt_id] = ev.store.read(str(signed.content["blake3"]))
            assert all(isinstance(r, SeenRequest) for r in site.requests[seen:])
    ev.close()
    return world


# the fixtures of the Memento tests (imported by each test module): one home, one server per module
@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = build(tmp_path_factory.mktemp("memento") / "home")
    yield w
    w.site.stop()


@pytest.fixture(scope="module")
def server(world: World) -> Iterator[str]:
    with served(world.home) as base:
        yield base.rstrip("/")


@pytest.fixture(scope="module")
def http(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, trust_env=False, follow_redirects=False, timeout=30) as c:
        yield c
