# ruff: noqa: F811 (the fixtures world, server and http are imported from memento_world)
"""``memento-client`` (PyPI, the Memento team's own Python client; nobody here wrote it) asks ``g6 serve``'s
TimeGate for a URL at several datetimes and must find the memento we expect: the nearest capture, its
Memento-Datetime, and the first/last/prev/next mementos the TimeGate names."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import requests

from tests.serve.memento_world import World, http, server, world  # noqa: F401

memento_client = pytest.importorskip("memento_client", reason="pip install -e '.[test]' (memento-client)")


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[object]:
    session = requests.Session()
    session.trust_env = False  # loopback only: no proxy from the environment
    mc = memento_client.MementoClient(timegate_uri=f"{server}/web/", check_native_timegate=False, session=session)
    yield mc
    session.close()


def naive(t: datetime) -> datetime:
    """memento-client takes and gives naive datetimes meaning UTC, to the second."""
    return t.astimezone(UTC).replace(tzinfo=None, microsecond=0)


def uri_m(server: str, world: World, rid: str, url: str) -> str:
    t = world.times[rid]
    same = [i for i in world.times if world.times[i].replace(microsecond=0) == t.replace(microsecond=0)
            and url == world.site.url("/page") and i in world.ids["page"]]
    digits = t.strftime("%Y%m%d%H%M%S") + (f"{t.microsecond:06d}" if len(same) > 1 else "")
    return f"{server}/web/{digits}id_/{url}"


# the captures of /page (seconds after t0): 0.25, 60.5, 90 (via /moved), 120.125, 120.875, 180
@pytest.mark.parametrize("offset, which", [(-86_400, 0), (10, 0), (45, 1), (100, 2), (121, 4), (170, 5),
                                          (86_400, 5)])
def test_memento_client_finds_the_nearest_memento(world: World, server: str, client: object, offset: int,
                                                  which: int) -> None:
    url = world.site.url("/page")
    order = sorted([*world.ids["page"], world.ids["moved"][0]], key=lambda i: world.times[i])
    info = client.get_memento_info(url, naive(world.t0 + timedelta(seconds=offset)))  # type: ignore[attr-defined]
    mementos = info["mementos"]
    closest = mementos["closest"]
    rid = order[which]
    assert closest["uri"] == [uri_m(server, world, rid, url)]
    assert closest["datetime"] == naive(world.times[rid]) and closest["http_status_code"] == 200
    assert mementos["first"]["datetime"] == naive(world.times[order[0]])
    assert mementos["last"]["datetime"] == naive(world.times[order[-1]])
    if which > 0:
        assert mementos["prev"]["uri"] == [uri_m(server, world, order[which - 1], url)]
    else:
        assert "prev" not in mementos
    if which + 1 < len(order):
        assert mementos["next"]["uri"] == [uri_m(server, world, order[which + 1], url)]
    else:
        assert "next" not in mementos
    assert info["original_uri"] == url and info["timegate_uri"] == f"{server}/web/{url}"


def test_memento_client_follows_a_redirect_memento(world: World, server: str, client: object) -> None:
    """/moved was captured once, redirected to /page: the client lands on /page's memento of that read."""
    rid = world.ids["moved"][0]
    info = client.get_memento_info(world.site.url("/moved"), naive(world.times[rid]))  # type: ignore[attr-defined]
    closest = info["mementos"]["closest"]
    assert closest["uri"] == [uri_m(server, world, rid, world.site.url("/page"))]
    assert closest["datetime"] == naive(world.times[rid]) and closest["http_status_code"] == 200


def test_memento_client_sees_no_memento_of_a_failed_read(world: World, server: str, client: object,
                                                        http: httpx.Client) -> None:
    url = world.site.url("/missing")
    assert http.get(f"/web/timemap/link/{url}").status_code == 200  # listed, as a failed read
    info = client.get_memento_info(url, naive(world.times[world.ids["missing"][0]]))  # type: ignore[attr-defined]
    assert "mementos" not in info  # the TimeGate said 404: nothing to replay
    assert info["timegate_uri"] == f"{server}/web/{url}"
