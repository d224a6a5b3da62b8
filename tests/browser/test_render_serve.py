"""`g6 serve` of a rendered capture: its page shows the screenshot (served from the blob its receipt names, refused
when the blob is not those bytes), the text the reader saw with the rendered citation marked in it, and every
request the page made; those requests are parts of the capture, never listed as captures of their URLs."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from tests.conftest import validate  # noqa: E402
from tests.serve.server import served  # noqa: E402

ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
PAGE = b"""<!doctype html><html><head><title>Shown</title></head>
<body><div id="app"></div><script src="/app.js"></script></body></html>"""
APP_JS = b"""fetch("/data.json").then((r) => r.json()).then((d) => {
  document.getElementById("app").textContent = d.text; });"""
WORDS = "A sentence only the browser ever showed."


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, pool: BrowserPool) -> Iterator[dict]:
    tmp = tmp_path_factory.mktemp("render-serve")
    home = EvidenceHome(tmp / "home", fsync=False)
    home.keys.init()
    s = LocalSite({"/": Reply(body=PAGE), "/robots.txt": ROBOTS,
                   "/app.js": Reply(body=APP_JS, content_type="text/javascript"),
                   "/data.json": Reply(body=b'{"text": "%s"}' % WORDS.encode(), content_type="application/json"),
                   "/plain": Reply(body=b"<html><body><p>A plain page.</p></body></html>")}).start()
    base = s.base_url
    try:
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
            cap = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=30))
            plain = fetch(home, client, s.url("/plain"))
    finally:
        s.stop()
    assert cap.outcome.value == "ok"
    citation = cite_web(home, cap.receipt_id, quote=WORDS)
    assert citation.text_source == "rendered"
    manifest = tmp / "m.json"
    save_manifest(Manifest.new().with_citation(citation), manifest)
    parts = [e.receipt for e in home.ledger.entries() if e.receipt.links.get("capture") == cap.receipt_id]
    r = home.ledger.get(cap.receipt_id)
    home.close()
    with served(tmp / "home", "--manifest", str(manifest)) as url, httpx.Client(base_url=url, timeout=60) as c:
        yield {"c": c, "home": tmp / "home", "base": base, "capture": r, "plain": plain.receipt_id, "parts": parts,
               "citation": citation}


def api(c: httpx.Client, path: str, schema: str) -> dict:
    got = c.get(path)
    assert got.status_code == 200, got.text
    body = got.json()
    validate(body, schema)
    return body


def test_the_requests_are_parts_of_the_capture_not_captures_of_their_urls(world: dict) -> None:
    c, cap, base = world["c"], world["capture"], world["base"]
    home = api(c, "/api/home", "serve-home.v1")
    listed = [x["receipt_id"] for x in home["newest_captures"]["items"]]
    assert sorted(listed) == sorted([cap.receipt_id, world["plain"]])
    assert home["counts"]["captures"] == 2
    script = api(c, "/api/captures?url=" + quote(base + "/app.js", safe=""), "serve-captures.v1")
    assert script["total"] == 0
    page = api(c, "/api/captures?url=" + quote(base + "/", safe=""), "serve-captures.v1")
    assert [x["receipt_id"] for x in page["captures"]] == [cap.receipt_id]
    js = next(p for p in world["parts"] if p.request["url"] == base + "/app.js")
    by_digest = api(c, "/api/captures?digest=" + js.content["sha256"].split(":")[1], "serve-captures.v1")
    assert [x["receipt_id"] for x in by_digest["captures"]] == [js.receipt_id]  # a body is still found by digest
    part = api(c, f"/api/capture/{js.receipt_id}", "serve-capture.v1")
    assert part["part_of"] == cap.receipt_id and part["rendered"] is None
    assert f'href="/capture/{cap.receipt_id}"' in c.get(f"/capture/{js.receipt_id}").text


def test_the_capture_page_shows_the_screenshot_the_text_and_every_request(world: dict) -> None:
    c, cap = world["c"], world["capture"]
    v = api(c, f"/api/capture/{cap.receipt_id}", "serve-capture.v1")
    rendered = v["rendered"]
    assert rendered["screenshot"] == f"/capture/{cap.receipt_id}/screenshot" and rendered["ended"] == "settled"
    assert [x["receipt_id"] for x in rendered["resources"]] == [x["receipt_id"] for x in cap.capture["resources"]]
    assert {x["url"] for x in rendered["resources"]} >= {world["base"] + p for p in ("/", "/app.js", "/data.json")}
    assert not any(x["missing"] for x in rendered["resources"])
    assert WORDS in v["text"] and v["part_of"] is None
    (cited,) = v["citations"]
    assert cited["found"] and v["text"][cited["start"]:cited["end"]] == world["citation"].text
    page = c.get(f"/capture/{cap.receipt_id}").text
    assert f'<img class=shot src="/capture/{cap.receipt_id}/screenshot"' in page
    for x in rendered["resources"]:
        assert f'href="/capture/{x["receipt_id"]}"' in page
    assert f'<mark id="{cited["citation_id"]}"' in page
    shot = c.get(rendered["screenshot"])
    ref = cap.capture["screenshot"]
    assert shot.status_code == 200 and shot.headers["content-type"] == "image/png"
    assert shot.content[:8] == b"\x89PNG\r\n\x1a\n" and len(shot.content) == ref["size"]
    assert shot.headers["repr-digest"].startswith("sha-256=:")
    assert c.get(f"/capture/{world['plain']}/screenshot").status_code == 404  # a raw read has none


def test_a_screenshot_that_is_not_the_receipts_bytes_is_refused(world: dict) -> None:
    c, cap = world["c"], world["capture"]
    home = EvidenceHome(world["home"], fsync=False)
    try:
        path = home.store.path(cap.capture["screenshot"]["blake3"])
    finally:
        home.close()
    keep = path.read_bytes()
    os.chmod(path, 0o644)
    try:
        path.write_bytes(keep[:-1] + bytes([keep[-1] ^ 1]))
        got = c.get(f"/capture/{cap.receipt_id}/screenshot")
        assert got.status_code == 500 and b"PNG" not in got.content[:8]
    finally:
        path.write_bytes(keep)
