# ruff: noqa: F811 (the fixtures world, server and http are imported from memento_world)
"""Memento (RFC 7089) from ``g6 serve`` over the real socket: the TimeGate, both TimeMaps, mementos byte for
byte, redirects, failed reads, same-second captures, query strings, every header, 400 and 404, and a home
left byte for byte as it was."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from g6.home import EvidenceHome
from g6.schemas import load
from tests.serve.memento_world import BINARY, World, http, server, world  # noqa: F401
from tests.serve.server import served

FAILED_REL = "https://g6-evidence.invalid/rel/failed-read"


def http_date(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


def stamp(t: datetime) -> str:
    return t.strftime("%Y%m%d%H%M%S")


def links(header: str) -> list[dict[str, str]]:
    """A Link header (or a link-format body) as a list of {"uri", attribute: value}."""
    out = []
    for part in header.replace(",\n", ", ").split(", <"):
        uri, _, rest = part.strip().lstrip("<").partition(">")
        d = {"uri": uri}
        for attr in rest.split(";"):
            k, _, v = attr.strip().partition("=")
            if k:
                d[k] = v.strip('"')
        out.append(d)
    return out


def rel(ls: list[dict[str, str]], name: str) -> list[dict[str, str]]:
    return [d for d in ls if name in d.get("rel", "").split()]


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_timemap_lists_every_capture_as_what_it_was(world: World, server: str, http: httpx.Client) -> None:
    url = world.site.url("/page")
    r = http.get(f"/web/timemap/link/{url}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/link-format")
    ls = links(r.text)
    assert rel(ls, "original")[0]["uri"] == url
    assert rel(ls, "timegate")[0]["uri"] == f"{server}/web/{url}"
    assert rel(ls, "self")[0]["type"] == "application/link-format"
    mems = [d for d in ls if "memento" in d.get("rel", "").split()]
    # four reads of /page, two in one second, and the redirected read of /moved that landed there
    page_ids = world.ids["page"]
    want = sorted([*page_ids, world.ids["moved"][0]], key=lambda i: world.times[i])
    assert [d["receipt"].rsplit("/", 1)[1] for d in mems] == want
    assert [d["datetime"] for d in mems] == [http_date(world.times[i]) for i in want]
    assert "first" in mems[0]["rel"] and "last" in mems[-1]["rel"]
    same = [d["uri"] for d in mems if d["datetime"] == http_date(world.times[page_ids[2]])]
    t2, t3 = world.times[page_ids[2]], world.times[page_ids[3]]
    assert same == [f"{server}/web/{stamp(t)}{t.microsecond:06d}id_/{url}" for t in (t2, t3)]
    assert all(d["status"] == "200" and d["outcome"] == "ok" for d in mems)


def test_failed_reads_are_listed_as_failed_reads(world: World, server: str, http: httpx.Client) -> None:
    for label, status, outcome in (("forbidden", "403", "blocked"), ("missing", "404", "not_found"),
                                   ("dead", None, "unreachable")):
        rid = world.ids[label][0]
        r = http.get(f"/web/timemap/link/{_url(world, label)}")
        assert r.status_code == 200
        ls = links(r.text)
        assert not [d for d in ls if "memento" in d.get("rel", "")]
        (failed,) = [d for d in ls if d.get("rel") == FAILED_REL]
        assert failed.get("status") == status and failed["outcome"] == outcome
        assert failed["receipt"] == f"{server}/receipt/{rid}" and failed["code"].startswith("G6_E_")
        # its URI answers what it was, never the page: the real status of an HTTP error, else 404
        got = http.get(failed["uri"].removeprefix(server), headers={"accept": "application/json"})
        assert got.status_code == (int(status) if status else 404)
        assert "memento-datetime" not in got.headers
        body = got.json()
        assert body["code"] == "failed_read" and outcome in body["message"] and rid in body["message"]
        assert b"Not found</h1>" not in got.content and "pwned" not in got.text
        # and no TimeGate lands on it
        tg = http.get(f"/web/{_url(world, label)}")
        assert tg.status_code == 404 and "failed read" in tg.text and tg.headers["vary"] == "accept-datetime"


def _url(world: World, label: str) -> str:
    home = EvidenceHome(world.home, readonly=True)
    try:
        r = home.ledger.get(world.ids[label][0])
    finally:
        home.close()
    return r.hops[0].url if r.hops else str(r.request["url"])


def test_timemap_json_has_its_schema(world: World, server: str, http: httpx.Client) -> None:
    import jsonschema

    r = http.get(f"/web/timemap/json/{world.site.url('/page')}")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc = r.json()
    jsonschema.Draft202012Validator(load("serve-timemap.v1")).validate(doc)
    assert [m["receipt_id"] for m in doc["mementos"]["list"]] == sorted(
        [*world.ids["page"], world.ids["moved"][0]], key=lambda i: world.times[i])
    assert doc["mementos"]["first"] == doc["mementos"]["list"][0]
    missing = http.get(f"/web/timemap/json/{_url(world, 'missing')}").json()
    jsonschema.Draft202012Validator(load("serve-timemap.v1")).validate(missing)
    assert missing["mementos"]["list"] == [] and missing["failed_reads"][0]["status"] == 404


# the captures of /page (seconds after t0): 0.25, 60.5, 90 (via /moved), 120.125, 120.875, 180
@pytest.mark.parametrize("offset, which", [(-3600, 0), (0, 0), (30, 0), (31, 1), (60, 1), (95, 2), (120, 3),
                                          (121, 4), (150, 4), (151, 5), (10_000, 5)])
def test_timegate_redirects_to_the_nearest(world: World, server: str, http: httpx.Client, offset: int,
                                           which: int) -> None:
    url = world.site.url("/page")
    order = sorted([*world.ids["page"], world.ids["moved"][0]], key=lambda i: world.times[i])
    asked = world.t0 + timedelta(seconds=offset)
    r = http.get(f"/web/{url}", headers={"accept-datetime": http_date(asked)})
    assert r.status_code == 302 and r.headers["vary"] == "accept-datetime"
    rid = order[which]  # the nearest; within one second, by the microsecond
    t = world.times[rid]
    same_second = sum(1 for i in order if stamp(world.times[i]) == stamp(t)) > 1
    want = f"{server}/web/{stamp(t)}{f'{t.microsecond:06d}' if same_second else ''}id_/{url}"
    assert r.headers["location"] == want
    ls = links(r.headers["link"])
    assert rel(ls, "original")[0]["uri"] == url
    assert rel(ls, "timegate")[0]["uri"] == f"{server}/web/{url}"
    assert {d["type"] for d in rel(ls, "timemap")} == {"application/link-format", "application/json"}
    assert rel(ls, "first")[0]["datetime"] == http_date(world.times[order[0]])
    assert rel(ls, "last")[0]["datetime"] == http_date(world.times[order[-1]])
    chosen = [d for d in ls if d["uri"] == want]
    assert chosen and "memento" in chosen[0]["rel"].split()
    i = order.index(rid)
    if i > 0:
        assert rel(ls, "prev")[0]["datetime"] == http_date(world.times[order[i - 1]])
    if i + 1 < len(order):
        assert rel(ls, "next")[0]["datetime"] == http_date(world.times[order[i + 1]])


def test_timegate_without_accept_datetime_gives_the_latest(world: World, http: httpx.Client) -> None:
    r = http.head(f"/web/{world.site.url('/page')}")
    assert r.status_code == 302 and stamp(world.times[world.ids["page"][-1]]) in r.headers["location"]


@pytest.mark.parametrize("bad", ["yesterday", "Thu, 31 Feb 2026 10:00:00 GMT", "2026-12-04T10:00:00Z",
                                 "Mon, 04 Dec 2026 10:00:00 GMT", "Fri, 04 Dec 2026 10:00:00 +0000", ""])
def test_malformed_accept_datetime_is_400(world: World, http: httpx.Client, bad: str) -> None:
    r = http.get(f"/web/{world.site.url('/page')}", headers={"accept-datetime": bad, "accept": "application/json"})
    assert r.status_code == 400 and r.json()["code"] == "bad_request" and "Accept-Datetime" in r.json()["message"]


def test_mementos_serve_the_stored_bytes(world: World, server: str, http: httpx.Client) -> None:
    url = world.site.url("/page")
    for n, rid in enumerate(world.ids["page"][:2], 1):
        t = world.times[rid]
        r = http.get(f"/web/{stamp(t)}id_/{url}")
        assert r.status_code == 200
        assert r.content == world.bodies[rid] and f"Version {n} of".encode() in r.content
        assert r.headers["memento-datetime"] == http_date(t)
        assert r.headers["content-type"] == "text/html; charset=utf-8"
        assert r.headers["content-length"] == str(len(world.bodies[rid]))
        assert r.headers["content-security-policy"].split("; ")[:2] == ["sandbox", "default-src 'none'"]
        ls = links(r.headers["link"])
        assert rel(ls, "describedby")[0]["uri"] == f"{server}/receipt/{rid}"
        assert rel(ls, "original")[0]["uri"] == url and rel(ls, "timegate") and rel(ls, "timemap")
    bin_id = world.ids["bin"][0]
    r = http.get(f"/web/{stamp(world.times[bin_id])}id_/{world.site.url('/data.bin')}")
    assert r.content == BINARY and r.headers["content-type"] == "application/octet-stream"
    head = http.head(f"/web/{stamp(world.times[bin_id])}id_/{world.site.url('/data.bin')}")
    assert head.status_code == 200 and head.headers["content-length"] == str(len(BINARY)) and head.content == b""


def test_same_second_captures(world: World, http: httpx.Client) -> None:
    url = world.site.url("/page")
    first, second = world.ids["page"][2], world.ids["page"][3]
    t1, t2 = world.times[first], world.times[second]
    assert stamp(t1) == stamp(t2) and world.bodies[first] != world.bodies[second]
    assert http.get(f"/web/{stamp(t1)}id_/{url}").content == world.bodies[first]  # the second's first
    assert http.get(f"/web/{stamp(t1)}{t1.microsecond:06d}id_/{url}").content == world.bodies[first]
    assert http.get(f"/web/{stamp(t2)}{t2.microsecond:06d}id_/{url}").content == world.bodies[second]


def test_query_strings_are_kept(world: World, http: httpx.Client) -> None:
    url = world.site.url("/search?q=memento&lang=en")
    rid = world.ids["search"][0]
    tm = http.get(f"/web/timemap/link/{url}")
    assert tm.status_code == 200 and rid in tm.text and world.ids["search2"][0] not in tm.text
    r = http.get(f"/web/{stamp(world.times[rid])}id_/{url}")
    assert r.content == b"results for q=memento&lang=en"
    assert http.get(f"/web/timemap/link/{world.site.url('/search')}").status_code == 404
    assert http.get(f"/web/timemap/link/{world.site.url('/search?q=nothing')}").status_code == 404


def test_redirect_captures_replay_as_redirects(world: World, server: str, http: httpx.Client) -> None:
    rid = world.ids["moved"][0]
    t = world.times[rid]
    r = http.get(f"/web/{stamp(t)}id_/{world.site.url('/moved')}")
    assert r.status_code == 302 and r.headers["memento-datetime"] == http_date(t)
    assert r.headers["location"] == f"{server}/web/{stamp(t)}id_/{world.site.url('/page')}"
    landed = http.get(r.headers["location"].removeprefix(server))
    assert landed.content == world.bodies[rid] and b"Version 3 of" in landed.content


def test_unknown_urls_and_timestamps_are_404_saying_why(world: World, http: httpx.Client) -> None:
    url = world.site.url("/page")
    j = {"accept": "application/json"}
    for path in (f"/web/{world.site.url('/never')}", f"/web/timemap/link/{world.site.url('/never')}",
                 f"/web/timemap/json/{world.site.url('/never')}", f"/web/20010101000000id_/{world.site.url('/never')}"):
        r = http.get(path, headers=j)
        assert r.status_code == 404 and "never captured" in r.json()["message"], path
    r = http.get(f"/web/20010101000000id_/{url}", headers=j)
    assert r.status_code == 404 and "no capture" in r.json()["message"] and "20010101000000" in r.json()["message"]
    r = http.get(f"/web/20010101000000id_/{url}", headers={"accept": "text/html"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    for bad in ("/web/not-a-url", "/web/ftp://example.org/", "/web/"):
        r = http.get(bad, headers=j)
        assert r.status_code == 400 and "http(s) URL" in r.json()["message"], bad


def test_url_forms(world: World, http: httpx.Client) -> None:
    """Scheme and host in any case, a collapsed ``http:/``, the default port: the same URL as stored."""
    url = world.site.url("/page")
    upper = url.replace("http://", "HTTP://")
    collapsed = url.replace("http://", "http:/")
    for form in (upper, collapsed):
        assert http.get(f"/web/timemap/link/{form}").text == http.get(f"/web/timemap/link/{url}").text


def test_the_server_never_writes_to_the_home(world: World, tmp_path: Path) -> None:
    before = snapshot(world.home)
    with served(world.home) as base, httpx.Client(base_url=base.rstrip("/"), trust_env=False) as c:
        for label in world.ids:
            u = _url(world, label)
            for path in (f"/web/{u}", f"/web/timemap/link/{u}", f"/web/timemap/json/{u}"):
                c.get(path)
            for rid in world.ids[label]:
                c.get(f"/web/{stamp(world.times[rid])}id_/{u}")
        c.get("/web/timemap/link/http://nowhere.invalid/")
    assert snapshot(world.home) == before
    home = EvidenceHome(world.home, readonly=True)
    try:
        report = home.verify()
    finally:
        home.close()
    assert report.ok and not report.warnings(), report.checks  # the chosen dates look like any other
    assert snapshot(world.home) == before
