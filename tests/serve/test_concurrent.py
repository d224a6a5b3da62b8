"""``g6 serve`` under 50 concurrent clients: every answer right (not timed; the rates are ``python -m bench
serve``'s).

50 threads, each its own connection, released together by a barrier, each asks every path of the list three
times in its own order: mementos, the TimeMap, a TimeGate redirect, receipts, proofs, tiles, the checkpoint,
a 404 and a 400. Each answer is compared with what is known independently: the bytes the site sent, the
receipt as the ledger holds it, the files publish wrote, the proof verified with the log's key; the TimeMap
and TimeGate with what one client alone got before the crowd came.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from g6.home import EvidenceHome
from g6.ledger.proofs import verify_inclusion_proof
from g6.prove.publish import publish
from g6.prove.publish_dest import open_destination
from tests.serve.memento_world import World, build
from tests.serve.server import served

CLIENTS = 50
ROUNDS = 3


@dataclass(frozen=True)
class Ask:
    path: str
    check: Callable[[httpx.Response], bool]
    headers: tuple[tuple[str, str], ...] = ()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = build(tmp_path_factory.mktemp("crowd") / "home")
    with EvidenceHome(w.home, fsync=False) as ev:
        ev.ledger.checkpoint(ev.signing_key())
        publish(ev, open_destination(str(w.home.parent / "tiles"), {}), latest_only=True)
    yield w
    w.site.stop()


def stamp(world: World, rid: str) -> str:
    return world.times[rid].strftime("%Y%m%d%H%M%S")


def asks(world: World, base: str) -> list[Ask]:
    tiles = world.home.parent / "tiles"
    with EvidenceHome(world.home, readonly=True) as ev:
        receipts = {e.receipt.receipt_id: e.receipt for e in ev.ledger.entries()}
        key = ev.signing_key().public
        origin = ev.ledger.origin
        width = len(ev.ledger)  # fewer than 256 receipts: one partial tile and bundle, this wide
    page = world.site.url("/page")
    with httpx.Client(base_url=base, follow_redirects=False, timeout=60) as alone:
        timemap = alone.get(f"/web/timemap/link/{page}").content
        gate = alone.get(f"/web/{page}").headers["location"]
    out = [Ask(f"/web/timemap/link/{page}", lambda r: r.status_code == 200 and r.content == timemap),
           Ask(f"/web/{page}", lambda r: r.status_code == 302 and r.headers["location"] == gate),
           Ask("/checkpoint", lambda r: r.status_code == 200 and r.content == (tiles / "checkpoint").read_bytes()),
           Ask(f"/tile/0/000.p/{width}", lambda r: r.status_code == 200
               and r.content == (tiles / f"tile/0/000.p/{width}").read_bytes()),
           Ask(f"/tile/entries/000.p/{width}", lambda r: r.status_code == 200
               and r.headers.get("content-encoding") == "gzip"
               and r.content == (tiles / f"tile/entries/000.p/{width}").read_bytes(), (("accept-encoding", "gzip"),)),
           Ask("/receipt/rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAV", lambda r: r.status_code == 404),
           Ask("/receipt/nope/proof", lambda r: r.status_code == 400)]
    for rid in world.ids["page"][:2] + world.ids["bin"]:
        body = world.bodies[rid]
        url = page if rid in world.ids["page"] else world.site.url("/data.bin")
        out.append(Ask(f"/web/{stamp(world, rid)}id_/{url}", lambda r, b=body: r.status_code == 200 and r.content == b))
    for rid in world.ids["page"][:2] + world.ids["missing"]:
        shown = receipts[rid].shown().encode()
        out.append(Ask(f"/receipt/{rid}", lambda r, s=shown: r.status_code == 200 and r.content == s))
        out.append(Ask(f"/receipt/{rid}/proof", lambda r, s=shown: r.status_code == 200
                       and verify_inclusion_proof(r.content, s, key, origin).ok))
    return out


def test_fifty_concurrent_clients_all_get_right_answers(world: World) -> None:
    with served(world.home, "--tiles", str(world.home.parent / "tiles")) as base:
        todo = asks(world, base.rstrip("/"))
        assert all(a.check(httpx.get(base.rstrip("/") + a.path, headers=dict(a.headers))) for a in todo)
        start = threading.Barrier(CLIENTS)
        wrong: list[str] = []
        answered = [0] * CLIENTS

        def client(n: int) -> None:
            order = [a for _ in range(ROUNDS) for a in todo]
            random.Random(n).shuffle(order)
            with httpx.Client(base_url=base.rstrip("/"), follow_redirects=False, timeout=120) as c:
                start.wait()
                for a in order:
                    try:
                        r = c.get(a.path, headers=dict(a.headers))
                        ok = a.check(r)
                        why = f"HTTP {r.status_code}, {len(r.content)} bytes"
                    except httpx.HTTPError as e:
                        ok, why = False, repr(e)
                    if not ok:
                        wrong.append(f"client {n}: GET {a.path}: {why}")
                    answered[n] += 1

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not wrong, f"{len(wrong)} wrong answers, first: {wrong[:5]}"
    assert answered == [ROUNDS * len(todo)] * CLIENTS  # every client asked everything, and was answered
