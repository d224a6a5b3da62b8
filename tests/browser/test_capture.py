"""What a rendered capture keeps, and that it verifies like any receipt."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cli import cli
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
LIMITS = RenderLimits(deadline=30)

APP = b"""<!doctype html><html><head><title>The app</title><link rel="stylesheet" href="/s.css"></head><body>
<div id="app"></div>
<my-card><span slot="note">slotted light words</span></my-card>
<div id="closed-host"></div>
<script src="/app.js"></script>
</body></html>"""
APP_JS = b"""
customElements.define("my-card", class extends HTMLElement {
  constructor() { super(); this.attachShadow({mode: "open"}).innerHTML =
    "<p>Words inside an open shadow root. <slot name='note'></slot></p>"; }
});
document.getElementById("closed-host").attachShadow({mode: "closed"}).innerHTML =
  "<p>Words inside a closed shadow root.</p>";
fetch("/data.json").then((r) => r.json()).then((d) => {
  document.getElementById("app").innerHTML = "<p>" + d.text + "</p>";
});
"""


def app_site(site: Site) -> LocalSite:
    return site({"/": Reply(body=APP), "/robots.txt": ROBOTS,
                 "/app.js": Reply(body=APP_JS, content_type="text/javascript"),
                 "/s.css": Reply(body=b"p { color: #333 }", content_type="text/css"),
                 "/data.json": Reply(body=b'{"text": "Words that came from a JSON endpoint."}',
                                     content_type="application/json")})


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_a_capture_keeps_every_subresource_the_dom_the_text_and_a_screenshot(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = app_site(site)
    result = fetch_rendered(home, client, pool, s.url("/"), limits=LIMITS)
    assert result.outcome.value == "ok" and result.documents[0].text_source == "rendered"
    r = home.ledger.get(result.receipt_id)
    cap = r.capture
    assert cap is not None and cap["ended"] == "settled" and cap["page_url"] == s.url("/")
    assert cap["engine"]["name"] == "chromium" and cap["engine"]["version"] and cap["engine"]["user_agent"]
    assert cap["viewport"] == {"width": 1280, "height": 800} and cap["render_ms"] > 0
    text = home.store.read_as(cap["text"]).decode()
    for words in ("Words that came from a JSON endpoint.", "Words inside an open shadow root.",
                  "slotted light words", "Words inside a closed shadow root."):
        assert words in text
    dom = home.store.read_as(cap["dom"])
    assert r.content == cap["dom"] and b"Words that came from a JSON endpoint." in dom
    assert b'shadowrootmode="closed"' in dom  # the closed root is in the DOM kept, declared
    width, height = png_size(home.store.read_as(cap["screenshot"]))
    assert width == 1280 and height >= 1
    # every request has a receipt of its own, named in the capture with its body's digest
    subs = {e.receipt.request["url"]: e.receipt for e in home.ledger.entries()
            if e.receipt.links.get("capture") == r.receipt_id}
    assert {s.url(p) for p in ("/", "/app.js", "/s.css", "/data.json")} <= set(subs)
    assert sorted(x["receipt_id"] for x in cap["resources"]) == sorted(x.receipt_id for x in subs.values())
    for x in cap["resources"]:
        sub = home.ledger.get(x["receipt_id"])
        assert x["sha256"] == (sub.content["sha256"] if sub.content else None)
    assert home.store.read_as(subs[s.url("/data.json")].content).startswith(b'{"text"')
    assert subs[s.url("/app.js")].request["resource_type"] == "Script"
    assert r.hops[-1].status == 200 and r.hops[-1].connected_address == "127.0.0.1"
    assert home.verify().ok


def test_the_capture_verifies_and_shows_like_any_receipt_and_a_lost_blob_fails(
        tmp_path: Path, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = app_site(site)
    home = EvidenceHome(tmp_path / "h", fsync=False)
    home.keys.init()
    result = fetch_rendered(home, client, pool, s.url("/"), limits=LIMITS)
    root = str(home.root)
    home.close()
    shown = CliRunner().invoke(cli, ["--home", root, "receipt", "show", result.receipt_id])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["capture"]["screenshot"]["sha256"].startswith("sha256:")
    ok = CliRunner().invoke(cli, ["--home", root, "ledger", "verify"])
    assert ok.exit_code == 0, ok.output
    with EvidenceHome(home.root) as ev:
        cap = ev.ledger.get(result.receipt_id).capture
        referenced = ev.ledger.referenced_digests()
        for name in ("dom", "text", "screenshot"):  # gc keeps what a capture names
            assert cap[name]["blake3"] in referenced
        shot = cap["screenshot"]["blake3"].split(":")[1]
    for f in home.root.rglob(f"*{shot}*"):
        f.unlink()
    bad = CliRunner().invoke(cli, ["--home", root, "ledger", "verify"])
    assert bad.exit_code == 1 and "capture.screenshot" in bad.output


def test_a_redirect_of_the_page_is_answered_as_itself_and_the_next_request_is_checked(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = site({"/old": Reply(301, b"", headers=(("Location", "/new"),)), "/new": Reply(body=b"<p>The new page.</p>"),
              "/robots.txt": ROBOTS})
    result = fetch_rendered(home, client, pool, s.url("/old"), limits=LIMITS)
    r = home.ledger.get(result.receipt_id)
    assert result.outcome.value == "ok" and r.final_url == s.url("/new")
    assert [(h.url, h.status) for h in r.hops] == [(s.url("/old"), 301), (s.url("/new"), 200)]
    first = next(e.receipt for e in home.ledger.entries() if e.receipt.request.get("url") == s.url("/old"))
    assert (first.detail["reason"], first.detail["location"]) == ("redirect", s.url("/new"))
    assert [q.path for q in s.requests if q.path != "/robots.txt"].count("/new") == 1


def test_no_cookie_or_storage_passes_from_one_capture_to_the_next(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    setter = b"""<p id="o">set</p><script>document.cookie = "who=first; max-age=9999";
localStorage.setItem("who", "first"); sessionStorage.setItem("who", "first");</script>"""
    reader = b"""<p id="o"></p><script>document.getElementById("o").textContent =
"cookie=[" + document.cookie + "] local=[" + localStorage.getItem("who") + "]";</script>"""
    s = site({"/set": Reply(body=setter), "/read": Reply(body=reader), "/robots.txt": ROBOTS})
    assert fetch_rendered(home, client, pool, s.url("/set"), limits=LIMITS).outcome.value == "ok"
    second = fetch_rendered(home, client, pool, s.url("/read"), limits=LIMITS)
    assert second.documents[0].text == "cookie=[] local=[null]"
    assert pool.started == 1  # the same browser: the context, not a new browser, is what was fresh


def test_a_page_whose_own_read_is_refused_is_receipted_with_that_outcome_and_keeps_nothing_else(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = site({"/": Reply(body=b"<p>never read</p>"),
              "/robots.txt": Reply(body=b"User-agent: *\nDisallow: /\n", content_type="text/plain")})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=LIMITS)
    r = home.ledger.get(result.receipt_id)
    assert (r.outcome, r.detail["reason"], r.capture["ended"]) == ("robots_disallowed", "robots_txt_disallows",
                                                                  "navigation_failed")
    assert r.content is None and r.capture["dom"] is None and r.capture["screenshot"] is None
    (doc,) = [home.ledger.get(x["receipt_id"]) for x in r.capture["resources"]]
    assert doc.outcome == "robots_disallowed" and doc.request["resource_type"] == "Document"
    assert [q.path for q in s.requests] == ["/robots.txt"]
