# ruff: noqa: F811 (the fixtures world, server and http are imported from memento_world)
"""pywb (its own venv: tests/pywb_server.py) with one collection, ``memento+{g6 serve}/web/``:
pywb's "remote Memento archive" source, which reads our TimeMaps to list captures and our TimeGate's Link
header to replay one. It lists exactly our mementos (failed reads are not mementos, so none), and replays
each byte for byte; a redirect memento replays as a redirect."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest

from tests.pywb_server import wayback
from tests.serve.memento_world import BINARY, World, http, server, world  # noqa: F401

PATHS = ("/page", "/moved", "/search?q=memento&lang=en", "/data.bin")
FAILED = ("/forbidden", "/missing")


@pytest.fixture(scope="module")
def pywb(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``wayback`` on a free loopback port, its one collection ``g6`` our Memento endpoint; stopped by PID."""
    root = tmp_path_factory.mktemp("pywb")
    (root / "config.yaml").write_text(f"collections:\n  g6: memento+{server}/web/\n")
    with wayback(root, root / "wayback.log") as url:
        yield url + "/g6"


def cdx(wb: httpx.Client, pywb: str, url: str) -> list[dict[str, str]]:
    import json

    r = wb.get(f"{pywb}/cdx", params={"url": url, "output": "json"})
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in r.text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def wb() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, follow_redirects=False, timeout=60) as c:
        yield c


def ours(http: httpx.Client, url: str) -> list[dict]:
    return http.get(f"/web/timemap/json/{url}").json()["mementos"]["list"]


@pytest.mark.parametrize("path", PATHS)
def test_pywb_lists_our_mementos(world: World, http: httpx.Client, wb: httpx.Client, pywb: str, path: str) -> None:
    url = world.site.url(path)
    listed = cdx(wb, pywb, url)
    mine = ours(http, url)
    assert mine, path
    assert [c["memento_url"] for c in listed] == [m["uri"] for m in mine]
    assert [c["timestamp"] for c in listed] == [m["datetime"].translate({ord(ch): None for ch in "-T:Z"})
                                                for m in mine]
    assert {c["url"] for c in listed} == {url}


@pytest.mark.parametrize("path", FAILED)
def test_pywb_lists_no_failed_read(world: World, http: httpx.Client, wb: httpx.Client, pywb: str, path: str) -> None:
    url = world.site.url(path)
    assert http.get(f"/web/timemap/json/{url}").json()["failed_reads"]  # we list it, as a failed read
    assert cdx(wb, pywb, url) == []
    assert wb.get(f"{pywb}/{world.times[world.ids[path[1:]][0]].strftime('%Y%m%d%H%M%S')}id_/{url}").status_code == 404


@pytest.mark.parametrize("path", PATHS)
def test_pywb_replays_each_memento_byte_for_byte(world: World, http: httpx.Client, wb: httpx.Client, pywb: str,
                                                 path: str) -> None:
    url = world.site.url(path)
    for m in ours(http, url):
        ts = m["datetime"].translate({ord(ch): None for ch in "-T:Z"})
        got = wb.get(f"{pywb}/{ts}id_/{url}")
        if m["redirect_to"]:  # replayed as the redirect it was, to where it led
            assert got.status_code == m["status"] and got.headers["location"] == m["redirect_to"]
            continue
        direct = http.get(f"/web/{ts}id_/{url}")  # the 14-digit form: the second's first capture
        assert got.status_code == 200 and got.content == direct.content
        assert got.headers["memento-datetime"] == direct.headers["memento-datetime"]
        assert got.headers["content-type"] == direct.headers["content-type"]
        if m["uri"].endswith(f"{ts}id_/{url}"):  # a capture alone in its second: exactly its own bytes
            assert got.content == world.bodies[m["receipt_id"]]
    if path == "/data.bin":
        assert wb.get(f"{pywb}/{ts}id_/{url}").content == BINARY


def test_pywb_replays_by_our_timegate(world: World, wb: httpx.Client, pywb: str) -> None:
    """Asked for a second with no capture, pywb asks our TimeGate and replays the nearest memento."""
    url = world.site.url("/page")
    for offset, n in ((40, 2), (61, 2)):  # nearest: the capture at +60.5 s, version 2
        ts = (world.t0 + timedelta(seconds=offset)).strftime("%Y%m%d%H%M%S")
        got = wb.get(f"{pywb}/{ts}id_/{url}", follow_redirects=True)
        assert got.status_code == 200 and f"Version {n} of".encode() in got.content

