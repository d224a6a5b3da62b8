"""HTML reports for people: `g6 recheck --html` and `g6 bundle verify --html`, opened in a real
headless Chromium from disk. The badges and the word diff must render, hostile page text must stay
text, and no script may run (checked against a control page whose script does run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import lxml.html
import pytest

from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.export.html_report import render_bundle, render_recheck, word_diff

sys.path.insert(0, str(Path(__file__).resolve().parent))
from headless import Browser  # noqa: E402

Site = Callable[..., LocalSite]
EDITED_V1 = "The rate rose by 12% in 2024 across every region we measured."
EDITED_V2 = "The rate rose by 21% in 2024 across every region we measured."
STEADY = "This sentence does not change between the two reads of the page."
# what a hostile page shows as text (entity-escaped in its HTML, so the extractor yields it literally)
HOSTILE_TEXT = 'Payload <script>document.body.dataset.pwned="1"</script> and "onerror=document.body.dataset.pwned=2 x="'
HOSTILE_HTML = HOSTILE_TEXT.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def page(text_html: str) -> bytes:
    return f"<html><head><title>t</title></head><body><article><p>{text_html}</p></article></body></html>".encode()


def g6(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=env, timeout=180, cwd=cwd)


@pytest.fixture(scope="module")
def rechecked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """Four citations read once, then re-checked after the site changed: changed, unchanged,
    changed (hostile text), not_found. Built once for the module (a dozen g6 processes)."""
    tmp_path = tmp_path_factory.mktemp("rechecked")
    version = {"v": 1}

    def route(v1: bytes, v2: Reply) -> Callable[[SeenRequest], Reply]:
        return lambda _req: Reply(body=v1) if version["v"] == 1 else v2

    s = LocalSite({"/edited": route(page(EDITED_V1), Reply(body=page(EDITED_V2))),
              "/steady": route(page(STEADY), Reply(body=page(STEADY))),
              "/hostile": route(page(HOSTILE_HTML), Reply(body=page(HOSTILE_HTML.replace("Payload", "Cargo")))),
              "/vanishing": route(page(STEADY + " Soon gone."), Reply(404, b"gone")),
              "/robots.txt": Reply(404, b"")}).start()
    try:
        yield _read_cite_recheck(s, tmp_path, version)
    finally:
        s.stop()


def _read_cite_recheck(s: LocalSite, tmp_path: Path, version: dict[str, int]) -> dict[str, object]:
    home = tmp_path / "home"
    manifest = tmp_path / "m.json"
    quotes = {"/edited": EDITED_V1, "/steady": STEADY, "/hostile": HOSTILE_TEXT, "/vanishing": "Soon gone."}
    ids: dict[str, str] = {}
    for path, quote in quotes.items():
        r = g6(home, "fetch", s.url(path), "--json")
        assert r.returncode == 0, r.stderr
        rid = json.loads(r.stdout)["receipt_id"]
        c = g6(home, "cite", rid, "--quote", quote, "--manifest", str(manifest), "--json")
        assert c.returncode == 0, c.stderr
        ids[path] = json.loads(c.stdout)["citation_id"]
    assert g6(home, "manifest", "sign", str(manifest)).returncode == 0
    version["v"] = 2
    out = tmp_path / "recheck.html"
    r = g6(home, "recheck", str(manifest), "--json", "--html", str(out))
    assert r.returncode == 1, r.stderr  # changed citations
    assert f"report: {out}".encode() in r.stderr
    return {"home": home, "manifest": manifest, "html": out, "ids": ids, "report": json.loads(r.stdout)}


def test_word_diff_marks_only_the_edited_words() -> None:
    d = lxml.html.fragment_fromstring(f"<div>{word_diff(EDITED_V1, EDITED_V2)}</div>")
    assert [x.text for x in d.iter("del")] == ["12%"] and [x.text for x in d.iter("ins")] == ["21%"]
    assert d.text_content().replace("12%", "").split() == EDITED_V2.split()


def test_recheck_html_page_is_escaped_and_complete(rechecked: dict[str, object]) -> None:
    text = Path(str(rechecked["html"])).read_text()
    doc = lxml.html.fromstring(text)
    assert doc.xpath("//script") == [] and doc.xpath("//link") == [] and doc.xpath("//@src") == []
    assert not [a for a in doc.xpath("//@*") if a.attrname.lower().startswith("on")]
    ids = rechecked["ids"]
    assert isinstance(ids, dict)
    hostile = doc.get_element_by_id(ids["/hostile"])
    assert HOSTILE_TEXT in hostile.find_class("quote")[0].text_content()
    verdicts = {a.get("id"): a.get("data-verdict") for a in doc.find_class("citation")}
    assert verdicts == {ids["/edited"]: "changed", ids["/steady"]: "unchanged", ids["/hostile"]: "changed",
                        ids["/vanishing"]: "not_found"}
    vanished = doc.get_element_by_id(ids["/vanishing"]).text_content()
    assert "What kept it from being checked" in vanished
    report = rechecked["report"]
    assert isinstance(report, dict)
    checks = {li.find("b").text: li.get("data-ok") for li in doc.get_element_by_id("summary").find_class("check")}
    assert checks == {"manifest_signature": "true", "receipt_signatures": "true"}
    assert "8 of 8 receipts verified with ed25519:" in doc.get_element_by_id("summary").text_content()
    for v in report["verdicts"]:  # every re-check receipt id is on the page
        assert v["receipt_id"] and v["receipt_id"] in doc.get_element_by_id(v["citation_id"]).text_content()


def test_recheck_html_renders_in_chromium_and_runs_no_script(rechecked: dict[str, object], browser: Browser,
                                                             tmp_path: Path) -> None:
    ids = rechecked["ids"]
    assert isinstance(ids, dict)
    browser.open(Path(str(rechecked["html"])))
    js = """(() => {
      const art = id => document.getElementById(id);
      const badge = id => { const b = art(id).querySelector('h2 .badge');
        return {text: b.textContent, bg: getComputedStyle(b).backgroundColor, shown: b.offsetWidth > 0}; };
      const ids = __IDS__;
      const edited = art(ids['/edited']);
      return {
        badges: Object.fromEntries(Object.entries(ids).map(([p, id]) => [p, badge(id)])),
        del: [...edited.querySelectorAll('.diff del')].map(e => [e.textContent,
              getComputedStyle(e).textDecorationLine]),
        ins: [...edited.querySelectorAll('.diff ins')].map(e => [e.textContent, getComputedStyle(e).backgroundColor]),
        hostileQuote: art(ids['/hostile']).querySelector('.quote').textContent,
        hostileDiff: art(ids['/hostile']).querySelector('.diff').textContent,
        scripts: document.scripts.length,
        onAttrs: [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))
                  .filter(n => n.startsWith('on')).length,
        pwned: document.body.dataset.pwned || null,
        counts: [...document.querySelectorAll('#summary .counts li')].map(li => li.textContent.trim()),
      };
    })()""".replace("__IDS__", json.dumps(ids))
    got = browser.evaluate(js)
    assert got["badges"]["/edited"] == {"text": "changed", "bg": "rgb(199, 119, 0)", "shown": True}
    assert got["badges"]["/steady"] == {"text": "unchanged", "bg": "rgb(31, 138, 76)", "shown": True}
    assert got["badges"]["/vanishing"] == {"text": "not_found", "bg": "rgb(107, 115, 133)", "shown": True}
    assert got["del"] == [["12%", "line-through"]]
    assert got["ins"] == [["21%", "rgb(205, 236, 207)"]]
    assert HOSTILE_TEXT in got["hostileQuote"] and "Cargo" in got["hostileDiff"]
    assert got["scripts"] == 0 and got["onAttrs"] == 0 and got["pwned"] is None
    assert browser.requested_urls() == [Path(str(rechecked["html"])).resolve().as_uri()]  # nothing loaded
    assert sorted(got["counts"]) == ["changed 2", "not_found 1", "unchanged 1"]

    # the same page without its Content-Security-Policy: escaping alone keeps the hostile text inert
    bare = tmp_path / "no-csp.html"
    bare.write_text("\n".join(line for line in Path(str(rechecked["html"])).read_text().splitlines()
                              if "Content-Security-Policy" not in line))
    browser.open(bare)
    assert browser.evaluate("[document.scripts.length, document.body.dataset.pwned || null]") == [0, None]

    # control: the harness does see a script that runs, so the checks above can fail
    control = tmp_path / "control.html"
    control.write_text(f"<!doctype html><body><p>{HOSTILE_TEXT}</p><img src=missing.png onerror=\"x=1\"></body>")
    browser.open(control)
    assert browser.evaluate("[document.scripts.length, document.body.dataset.pwned || null]") == [1, "1"]
    assert browser.requested_urls() == [control.as_uri(), (tmp_path / "missing.png").as_uri()]


def test_bundle_verify_html_holds_and_fails(rechecked: dict[str, object], browser: Browser, tmp_path: Path) -> None:
    home, manifest = Path(str(rechecked["home"])), Path(str(rechecked["manifest"]))
    zpath = tmp_path / "b.zip"
    assert g6(home, "bundle", str(manifest), "-o", str(zpath)).returncode == 0
    shown = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]
    key, key_id = shown["public_key"], shown["key_id"]
    good, bad = tmp_path / "good.html", tmp_path / "bad.html"
    r = g6(home, "bundle", "verify", str(zpath), "--key", key, "--html", str(good))
    assert r.returncode == 0, r.stderr
    r = g6(home, "bundle", "verify", str(zpath), "--html", str(bad))  # no pinned key: fails closed
    assert r.returncode == 1
    browser.open(good)
    got = browser.evaluate("""[...document.querySelectorAll('article.citation')].map(a => [a.dataset.verdict,
        getComputedStyle(a.querySelector('.badge')).backgroundColor, a.querySelector('.quote').textContent])""")
    assert len(got) == 4 and {g[0] for g in got} == {"holds"} and {g[1] for g in got} == {"rgb(31, 138, 76)"}
    assert any(HOSTILE_TEXT in g[2] for g in got)
    assert browser.evaluate("[document.scripts.length, document.body.dataset.pwned || null]") == [0, None]
    summary = browser.evaluate("document.getElementById('summary').textContent")
    assert f"Pinned keys{key_id}" in summary and "key_pinned ok: pinned " + key_id in summary
    browser.open(bad)
    got = browser.evaluate("""[document.querySelector('#summary table .badge').textContent,
        [...document.querySelectorAll('#summary li.check')].filter(li => li.dataset.ok === 'false')
            .map(li => li.querySelector('b').textContent)]""")
    assert got == ["failed", ["key_pinned"]]


def test_renderers_tolerate_new_fields_and_broken_input(tmp_path: Path) -> None:
    report = {"run_id": "run_1", "manifest_id": "mfst_1", "counts": {"changed": 1, "truncated": 1},
              "resumed": 0, "exit_code": 1, "future_field": {"a": "<b>bold</b>"},
              "verdicts": [
                  {"citation_id": "c_1", "verdict": "changed", "source_url": "http://h/a", "receipt_id": "rcpt_1",
                   "similarity": 0.93, "final_url": "http://h/b", "span": {"start": 5, "end": 30, "text": "x 21%"},
                   "removed": ["12%"], "added": ["21%"], "recheck_receipt_id": "rcpt_1", "detail": {}},
                  {"citation_id": "c_2", "verdict": "truncated", "source_url": "javascript:alert(1)",
                   "receipt_id": None, "retry_after": "120", "detail": {"reason": "read cut at 1000 bytes"},
                   "never_seen": "<i>x</i>"}]}
    doc = lxml.html.fromstring(render_recheck(report))
    c1, c2 = doc.get_element_by_id("c_1"), doc.get_element_by_id("c_2")
    assert "http://h/b" in c1.text_content() and [d.text for d in c1.iter("ins")][-1] == "21%"
    assert "Retry after120" in c2.text_content() and "read cut at 1000 bytes" in c2.text_content()
    assert "<i>x</i>" in c2.text_content() and "<b>bold</b>" in doc.text_content()
    assert doc.xpath("//a") == [] and doc.xpath("//i") == [] and doc.xpath("//b[.='bold']") == []
    assert c2.get("data-verdict") == "truncated" and "unchecked" in c2.find_class("badge")[0].get("class")
    # a bundle that is not a zip: the page says nothing was verified
    page_ = lxml.html.fromstring(render_bundle({"ok": False, "manifest_id": None, "citations": [],
                                                "bundle_checks": [{"check": "zip", "ok": False,
                                                                   "detail": "not a readable zip"}]}))
    assert "Nothing was verified" in page_.text_content() and "not a readable zip" in page_.text_content()


def test_html_output_path_errors_are_one_line(tmp_path: Path, rechecked: dict[str, object]) -> None:
    home, manifest = Path(str(rechecked["home"])), Path(str(rechecked["manifest"]))
    for out in (tmp_path, tmp_path / "missing" / "r.html"):
        r = g6(home, "recheck", str(manifest), "--html", str(out))
        assert r.returncode == 2 and r.stderr.decode().startswith("g6: --html") and b"Traceback" not in r.stderr
        assert len(r.stderr.decode().strip().splitlines()) == 1
    assert not list(tmp_path.glob(".*.tmp"))
    packing = g6(home, "bundle", str(manifest), "-o", str(tmp_path / "b.zip"), "--html", str(tmp_path / "x.html"))
    assert packing.returncode == 2 and packing.stderr.decode().startswith("g6: --html is for `g6 bundle verify")
    assert not (tmp_path / "b.zip").exists()


def test_signature_checks_fail_without_a_trusted_key(rechecked: dict[str, object]) -> None:
    from g6.cite.manifest import load_manifest
    from g6.export.html_report import recheck_receipts, signature_checks
    from g6.home import EvidenceHome

    report = rechecked["report"]
    assert isinstance(report, dict)
    with EvidenceHome(Path(str(rechecked["home"]))) as ev:
        m = load_manifest(Path(str(rechecked["manifest"])))
        receipts = recheck_receipts(ev, m.to_json(), report)
        assert len(receipts) == 8  # four first reads, four re-reads
        assert [c["ok"] for c in signature_checks(m, receipts, ev.keys.trusted())] == [True, True]
        assert [c["ok"] for c in signature_checks(m, receipts, {})] == [False, False]
        assert [c["ok"] for c in signature_checks(m, {}, ev.keys.trusted())] == [True, False]  # nothing: fails


def test_bundle_page_shows_only_verified_words(rechecked: dict[str, object], tmp_path: Path) -> None:
    """A bundle whose manifest signature was stripped and whose quote and URL were forged: with
    --allow-unsigned the page says UNSIGNED, shows the failed citation by position, and the forged
    words appear nowhere on it."""
    import hashlib
    import zipfile

    home, manifest = Path(str(rechecked["home"])), Path(str(rechecked["manifest"]))
    zpath, forged = tmp_path / "b.zip", tmp_path / "forged.zip"
    assert g6(home, "bundle", str(manifest), "-o", str(zpath)).returncode == 0
    with zipfile.ZipFile(zpath) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    m = json.loads(files["manifest.json"])
    m.pop("signature", None)
    m["citations"][0]["quote"] = "FORGED words nobody wrote"
    m["citations"][0]["source_url"] = "https://forged.example/claim"
    files["manifest.json"] = json.dumps(m).encode()
    index = json.loads(files["bundle.json"])
    index["files"] = {n: {"sha256": "sha256:" + hashlib.sha256(d).hexdigest(), "size": len(d)}
                      for n, d in files.items() if n != "bundle.json"}
    files["bundle.json"] = json.dumps(index).encode()
    with zipfile.ZipFile(forged, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    out = tmp_path / "forged.html"
    r = g6(home, "bundle", "verify", str(forged), "--key", key, "--allow-unsigned", "--html", str(out))
    assert r.returncode == 1, r.stderr
    html = out.read_text()
    assert "FORGED" not in html and "forged.example" not in html
    doc = lxml.html.fromstring(html)
    assert "UNSIGNED" in doc.get_element_by_id("summary").text_content()
    failed = [a for a in doc.find_class("citation") if a.get("data-verdict") == "failed"]
    assert [a.get("id") for a in failed] == ["citation 1"]
