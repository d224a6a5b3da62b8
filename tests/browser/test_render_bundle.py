"""A bundle of a rendered citation carries what a grader needs to see the capture and check it offline: the
capture receipt, the text the reader saw (which the `rendered` citation's offsets are into), the screenshot, the
DOM, and every request's receipt with its inclusion proof (not their bodies); `bundle verify` checks the citation
against that text and fails closed on anything missing or changed."""

from __future__ import annotations

import json
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome
from g6.prove.bundle import build_bundle, verify_bundle

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from test_bundle_trust import repack  # noqa: E402

ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
PAGE = b"""<!doctype html><html><head><title>Bundled</title></head>
<body><div id="app"></div><script src="/app.js"></script></body></html>"""
APP_JS = b"""fetch("/data.json").then((r) => r.json()).then((d) => {
  document.getElementById("app").textContent = d.text; });"""
WORDS = "The words a grader checks against the text the reader saw."


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, pool: BrowserPool) -> dict:
    tmp = tmp_path_factory.mktemp("render-bundle")
    home = EvidenceHome(tmp / "home", fsync=False)
    home.keys.init()
    s = LocalSite({"/": Reply(body=PAGE), "/robots.txt": ROBOTS,
                   "/app.js": Reply(body=APP_JS, content_type="text/javascript"),
                   "/data.json": Reply(body=json.dumps({"text": WORDS}).encode(),
                                       content_type="application/json")}).start()
    try:
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
            cap = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=30))
    finally:
        s.stop()
    citation = cite_web(home, cap.receipt_id, quote=WORDS)
    assert citation.text_source == "rendered"
    manifest = tmp / "m.json"
    save_manifest(Manifest.new().with_citation(citation), manifest)
    out = tmp / "bundle.zip"
    build_bundle(home, manifest, out)
    r = home.ledger.get(cap.receipt_id)
    parts = [home.ledger.get(x["receipt_id"]) for x in r.capture["resources"]]  # type: ignore[index]
    made = {"zip": out, "key": home.signing_key().public, "capture": r, "parts": parts, "tmp": tmp,
            "citation": citation}
    home.close()
    return made


def verdict(path: Path, key: object) -> tuple[bool, dict[str, tuple[bool, str]]]:
    report = verify_bundle(path, (key,), allow_unsigned=True)  # type: ignore[arg-type]
    (v,) = report.citations
    return report.ok, {c.check: (c.ok, c.detail) for c in v.checks}


def blake3_hex(ref: dict) -> str:
    return str(ref["blake3"]).split(":", 1)[1]


def test_the_bundle_carries_the_capture_and_verify_checks_the_rendered_citation(made: dict) -> None:
    cap = made["capture"]
    with zipfile.ZipFile(made["zip"]) as z:
        names = set(z.namelist())
    for what in ("dom", "text", "screenshot"):
        assert f"blobs/{blake3_hex(cap.capture[what])}" in names
    for p in made["parts"]:  # every request's receipt and proof, not its body
        assert {f"receipts/{p.receipt_id}.json", f"proofs/{p.receipt_id}.tlog-proof"} <= names
        if p.content and p.content["size"] and p.content["sha256"] != cap.capture["dom"]["sha256"]:
            assert f"blobs/{blake3_hex(p.content)}" not in names, p.request["url"]
    ok, checks = verdict(made["zip"], made["key"])
    assert ok, checks
    c = made["citation"]
    assert checks["cited_text"] == (True, f"at {c.start}-{c.end}")
    assert checks["quote"][0] and checks["citation_fields"][0]
    assert checks["capture"][0] and f"{len(made['parts'])} requests" in checks["capture"][1]
    assert "certificates" not in checks  # a capture's DOM, text and screenshot are not certificates


def _tampered(made: dict, name: str, change: Callable[[dict[str, bytes]], None]) -> dict[str, tuple[bool, str]]:
    ok, checks = verdict(repack(made["zip"], made["tmp"] / name, change), made["key"])
    assert not ok
    return checks


def test_another_text_fails_the_citation(made: dict) -> None:
    name = f"blobs/{blake3_hex(made['capture'].capture['text'])}"

    def change(files: dict[str, bytes]) -> None:
        files[name] = files[name].replace(b"grader", b"reader")

    checks = _tampered(made, "text.zip", change)
    assert not checks["cited_text"][0]
    assert checks["cited_text"][1].startswith("not checked: the capture's text does not verify: ")
    assert not checks["capture"][0]


def test_a_missing_screenshot_or_request_receipt_fails_closed(made: dict) -> None:
    shot = f"blobs/{blake3_hex(made['capture'].capture['screenshot'])}"
    checks = _tampered(made, "shot.zip", lambda files: files.pop(shot))
    assert not checks["capture"][0] and "screenshot" in checks["capture"][1]
    assert checks["cited_text"][0]  # the text still holds: the verdict says which part failed
    js = next(p for p in made["parts"] if p.request["url"].endswith("/app.js"))
    checks = _tampered(made, "part.zip", lambda files: files.pop(f"receipts/{js.receipt_id}.json"))
    assert not checks["capture"][0] and js.receipt_id in checks["capture"][1]


def test_offsets_that_are_not_the_texts_fail(made: dict) -> None:
    def change(files: dict[str, bytes]) -> None:
        m = json.loads(files["manifest.json"])
        m["citations"][0]["start"] += 1
        m["citations"][0]["end"] += 1
        files["manifest.json"] = json.dumps(m).encode()

    checks = _tampered(made, "offsets.zip", change)
    assert checks["cited_text"] == (False, "the cited text is not at its offsets in the capture's text")
