"""A rendered capture out to other tools: its WARC and WACZ hold every sub-resource's response and the screenshot,
reader's text and DOM as resource records (never as a server's response); the capture, not its requests, is the
WACZ's page; pywb replays the page from them, its script reading its JSON from the archive, in a browser."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from world import wait_until

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.cli import cli
from g6.demo.site import LocalSite, Reply
from g6.export.wacz import export_wacz
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from headless import chromium  # noqa: E402
from pywb_server import no_proxy_env, tool  # noqa: E402
from pywb_server import wayback as pywb_wayback  # noqa: E402
from test_warc_replay import records, validate  # noqa: E402

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
PAGE = b"""<!doctype html><html><head><title>Replayed</title><link rel="stylesheet" href="/s.css"></head>
<body><div id="app">loading</div><script src="/app.js"></script></body></html>"""
APP_JS = b"""fetch("/data.json").then((r) => r.json()).then((d) => {
  document.getElementById("app").textContent = d.text; });"""
WORDS = "Words that a script fetched from a JSON endpoint."
# the text of the top document and of every frame in it (pywb's replay is a frame of its own origin)
SHOWN = """[document, ...Array.from(document.querySelectorAll("iframe"), (f) => f.contentDocument)]
  .map((d) => (d && d.body && d.body.innerText) || "").join("\\n")"""


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory, pool: BrowserPool) -> Iterator[dict]:
    """One home with a rendered capture of /go (a redirect to the page) and a plain read, exported as a WARC and a
    WACZ; the site is stopped before anything is replayed."""
    tmp = tmp_path_factory.mktemp("render-export")
    home = EvidenceHome(tmp / "home", fsync=False)
    home.keys.init()
    s = LocalSite({"/": Reply(body=PAGE), "/robots.txt": ROBOTS, "/go": Reply(301, headers=(("Location", "/"),),
                                                                               content_type=None),
                   "/app.js": Reply(body=APP_JS, content_type="text/javascript"),
                   "/s.css": Reply(body=b"#app { color: #222 }", content_type="text/css"),
                   "/data.json": Reply(body=json.dumps({"text": WORDS}).encode(), content_type="application/json"),
                   "/plain": Reply(body=b"<html><body><p>A plain page, read raw.</p></body></html>")}).start()
    base = s.base_url
    try:
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
            capture = fetch_rendered(home, client, pool, s.url("/go"), limits=RenderLimits(deadline=30))
            plain = fetch(home, client, s.url("/plain"))
        assert capture.outcome.value == "ok", capture
        every = [e.receipt for e in home.ledger.entries()]
        warc = tmp / "out.warc.gz"
        summary = export_warc(home, warc, every)
        wacz = tmp / "out.wacz"
        export_wacz(home, wacz, every)
    finally:
        s.stop()
    yield {"home": home, "base": base, "capture": home.ledger.get(capture.receipt_id), "every": every,
           "plain": plain.receipt_id, "warc": warc, "wacz": wacz, "summary": summary, "tmp": tmp}
    home.close()


def _parts(every: list[Receipt], capture_id: str) -> list[Receipt]:
    return [r for r in every if r.links.get("capture") == capture_id]


def test_every_subresource_is_a_response_and_what_the_browser_made_a_resource_record(captured: dict) -> None:
    home, cap, base = captured["home"], captured["capture"], captured["base"]
    recs = records(captured["warc"])
    by_id = {h["WARC-Record-ID"]: (t, h, body) for t, h, _, _, body in recs}
    answers = {(h["WARC-Target-URI"], h["WARC-Payload-Digest"]) for t, h, _, _, _ in recs
               if t in ("response", "revisit")}
    parts = _parts(captured["every"], cap.receipt_id)
    assert {r.request["url"] for r in parts} >= {base + p for p in ("/go", "/", "/app.js", "/s.css", "/data.json")}
    for r in parts:
        if r.content is not None and r.http_status is not None:
            assert (r.request["url"], r.content["sha256"]) in answers, r.request
    # the browser's redirect replays as the server's: a 301 whose Location is the one it sent
    moved = [(http, s) for t, h, s, http, _ in recs if t == "response" and h["WARC-Target-URI"] == base + "/go"]
    assert moved == [(moved[0][0], 301)] and moved[0][0]["Location"] == base + "/"
    # the screenshot, the text and the DOM: resource records named after the page, concurrent to the receipt's
    meta = next(h for t, h, _, _, _ in recs if h.get("WARC-Target-URI") == f"urn:g6:receipt:{cap.receipt_id}")
    made = {h["WARC-Target-URI"]: (h, body) for t, h, _, _, body in recs if t == "resource"}
    want = {"screenshot": (f"urn:fullPage:{base}/", "image/png"),
            "text": (f"urn:textFinal:{base}/", "text/plain; charset=utf-8"),
            "dom": (f"urn:dom:{base}/", "text/html; charset=utf-8")}
    assert set(made) == {uri for uri, _ in want.values()}
    for what, (uri, ctype) in want.items():
        h, body = made[uri]
        ref = cap.capture[what]  # type: ignore[index]
        assert body == home.store.read_as(ref) and h["Content-Type"] == ctype
        assert h["WARC-Payload-Digest"] == ref["sha256"] == "sha256:" + hashlib.sha256(body).hexdigest()
        assert by_id[h["WARC-Concurrent-To"]][1] is meta
    assert made[want["screenshot"][0]][1][:8] == b"\x89PNG\r\n\x1a\n"
    assert WORDS in made[want["text"][0]][1].decode()
    # what the browser made is never written as a server's answer at the page's address
    dom_sha = cap.capture["dom"]["sha256"]  # type: ignore[index]
    assert all(d != dom_sha for _, d in answers)
    assert captured["summary"].captures == 1


def test_the_capture_is_the_wacz_page_not_its_requests(captured: dict) -> None:
    cap, base = captured["capture"], captured["base"]
    with zipfile.ZipFile(captured["wacz"]) as z:
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()[1:]]
    assert [(p["id"], p["url"], p.get("final_url"), p["status"]) for p in pages] == [
        (cap.receipt_id, base + "/go", base + "/", 200), (captured["plain"], base + "/plain", None, 200)]
    ok = subprocess.run([tool("wacz"), "validate", "-f", str(captured["wacz"])], capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0 and "is valid" in ok.stdout, ok.stdout + ok.stderr


@pytest.fixture(scope="module")
def wayback(captured: dict) -> Iterator[str]:
    root = captured["tmp"] / "pywb"
    root.mkdir()
    for args in (["init", "g6"], ["add", "g6", str(captured["warc"])],
                 ["init", "wz"], ["add", "--unpack-wacz", "wz", str(captured["wacz"])]):
        r = subprocess.run([tool("wb-manager"), *args], cwd=root, capture_output=True, text=True, env=no_proxy_env(),
                           timeout=120)
        assert r.returncode == 0, r.stderr
    with pywb_wayback(root, captured["tmp"] / "wayback.log") as url:
        yield url


def _ts(r: Receipt) -> str:
    return "".join(ch for ch in r.fetched_at if ch.isdigit())[:14]


@pytest.mark.parametrize("collection", ["g6", "wz"])
def test_pywb_replays_the_page_from_the_archive_in_a_browser(captured: dict, wayback: str, collection: str) -> None:
    home, cap, base = captured["home"], captured["capture"], captured["base"]
    ts = _ts(cap)
    with httpx.Client(trust_env=False, timeout=30) as c:
        # every sub-resource byte for byte, the redirect as a redirect (the site itself is gone)
        for r in _parts(captured["every"], cap.receipt_id):
            if r.content is None or r.http_status is None:
                continue
            got = c.get(f"{wayback}/{collection}/{ts}id_/{r.request['url']}")
            assert got.status_code == r.http_status, (r.request["url"], got.status_code)
            if 300 <= r.http_status < 400:
                assert got.headers["location"].endswith(base + "/")
            else:
                assert got.content == home.store.read_as(r.content), r.request["url"]
        shot = c.get(f"{wayback}/{collection}/{ts}id_/urn:fullPage:{base}/")
        assert shot.status_code == 200 and shot.content == home.store.read_as(cap.capture["screenshot"])
    # and a browser shows the page from the archive: its script's fetch() answered by pywb, not by the site
    with chromium() as b:
        b.open_url(f"{wayback}/{collection}/{ts}mp_/{base}/go")
        # pywb shows the page in a frame under its banner (the top window goes to the framed URL)
        assert wait_until(lambda: WORDS in (b.evaluate(SHOWN) or ""))
        assert not any(u.startswith(base) for u in b.requested_urls())


def test_a_manifest_export_carries_the_captures_requests(captured: dict, tmp_path: Path) -> None:
    home, cap = captured["home"], captured["capture"]
    m = Manifest.new().with_citation(cite_web(home, cap.receipt_id, quote=WORDS))
    mpath = tmp_path / "m.json"
    save_manifest(m, mpath)
    out = tmp_path / "cited.warc.gz"
    r = CliRunner().invoke(cli, ["--home", str(home.root), "export", "warc", "-o", str(out), "--manifest", str(mpath),
                                 "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    validate(got, "export-warc.v1")
    parts = _parts(captured["every"], cap.receipt_id)
    assert got["receipts"] == 1 + len(parts) and got["captures"] == 1
    uris = {h["WARC-Target-URI"] for t, h, _, _, _ in records(out) if t in ("response", "revisit")}
    assert captured["base"] + "/data.json" in uris


def test_a_redacted_capture_leaves_its_dom_text_and_screenshot_out(tmp_path: Path, pool: BrowserPool) -> None:
    """`g6 blob redact` of a rendered capture: its WARC has the redaction's resource record in place of the
    screenshot, text and DOM records, and the capture is no WACZ page; g6 serve's capture page shows no text."""
    from g6.serve.captures import Captures
    from g6.serve.views import Manifests, capture_view

    class Source:  # what Captures reads the home through (g6.serve.app.HomeReader in the server)
        def __init__(self, home: EvidenceHome) -> None:
            self._home = home

        def home(self) -> EvidenceHome:
            return self._home

    home_root = tmp_path / "home"
    home = EvidenceHome(home_root, fsync=False)
    home.keys.init()
    s = LocalSite({"/": Reply(body=PAGE), "/robots.txt": ROBOTS,
                   "/app.js": Reply(body=APP_JS, content_type="text/javascript"),
                   "/s.css": Reply(body=b"#app { color: #222 }", content_type="text/css"),
                   "/data.json": Reply(body=json.dumps({"text": WORDS}).encode(),
                                       content_type="application/json")}).start()
    try:
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
            capture = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=30))
    finally:
        s.stop()
    assert capture.outcome.value == "ok", capture
    from g6.prove.bundle import build_bundle, verify_bundle

    save_manifest(Manifest.new().with_citation(cite_web(home, capture.receipt_id, quote=WORDS)).signed(
        home.signing_key()), tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "before.zip")
    key = home.signing_key().public
    home.close()
    done = CliRunner().invoke(cli, ["--home", str(home_root), "blob", "redact", "--receipt", capture.receipt_id,
                                    "--reason", "court-order"])
    assert done.exit_code == 0, done.output
    home = EvidenceHome(home_root, fsync=False)
    every = [e.receipt for e in home.ledger.entries()]
    summary = export_warc(home, tmp_path / "out.warc.gz", every)
    recs = records(tmp_path / "out.warc.gz")
    uris = [h["WARC-Target-URI"] for t, h, _, _, _ in recs if t == "resource"]
    assert f"urn:g6:redacted:{capture.receipt_id}" in uris
    assert not [u for u in uris if u.startswith(("urn:fullPage:", "urn:textFinal:", "urn:dom:"))], uris
    assert summary.redacted >= 1 and summary.captures == 1
    assert capture.receipt_id not in {p.receipt_id for p in summary.pages}
    view = capture_view(Captures.of(Source(home)), Manifests(), capture.receipt_id)
    assert view["text"] is None and view["redaction"] is not None and "redacted at seq" in view["text_status"]
    home.close()
    before = verify_bundle(tmp_path / "before.zip", [key])  # carries its own bytes: still holds offline
    assert before.ok, [c.to_json() for v in before.citations for c in v.checks if not c.ok]
    with EvidenceHome(home_root, fsync=False) as home:
        build_bundle(home, tmp_path / "m.json", tmp_path / "after.zip")
    after = verify_bundle(tmp_path / "after.zip", [key])
    (taken,) = after.citations
    assert not after.ok and taken.redaction is not None and taken.redaction["reason"] == "court-order"
    bad = {c.check: c.detail for c in taken.checks if not c.ok}
    assert bad["redaction"].startswith("REDACTED at seq"), bad
    assert not any("missing" in d or "damaged" in d for k, d in bad.items() if k != "redaction"), bad
    from tests.serve.server import served

    with served(home_root) as url, httpx.Client(base_url=url, timeout=60) as c:
        shot = c.get(f"/capture/{capture.receipt_id}/screenshot")
        assert shot.status_code == 451 and 'rel="blocked-by"' in shot.headers["Link"], shot.text
        assert c.get(f"/receipt/{capture.receipt_id}").status_code == 200  # the receipt still answers
