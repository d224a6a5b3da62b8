"""``g6 fetch URL --render`` / ``--render auto``, batch, ``g6 cite`` on the rendered text, ``g6 recheck`` rendering
again, and no browser process outliving a killed ``g6``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner, Result
from world import browser_processes, marked_processes, need_chromium, wait_until

from g6.cli import cli
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_RENDER_BROWSERS": "1"}
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
SHELL = b"""<!doctype html><html><head><title>App</title></head><body><div id="root"></div>
<script src="/app.js"></script></body></html>"""
APP_JS = b"""fetch("/api/article.json").then((r) => r.json()).then((a) => {
  document.getElementById("root").innerHTML = "<h1>" + a.title + "</h1><p>" + a.body + "</p>"; });"""
ARTICLE = {"title": "Rendered headline", "body": "The quoted sentence arrives only after the script runs."}
CONTENT = ("<html><body><article><p>" + "A page whose words are all in its HTML. " * 12
           + "</p></article><script>void 0</script></body></html>").encode()


def g6(home: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args], env={**ENV, **(env or {})})


def app(site: Site, article: dict[str, str] | None = None) -> LocalSite:
    state = {"article": dict(article or ARTICLE)}

    def api(req: SeenRequest) -> Reply:
        return Reply(body=json.dumps(state["article"]).encode(), content_type="application/json")

    js = Reply(body=APP_JS, content_type="text/javascript")
    s = site({"/": Reply(body=SHELL), "/robots.txt": ROBOTS, "/app.js": js, "/api/article.json": api,
              "/plain": Reply(body=CONTENT)})
    s.state = state  # type: ignore[attr-defined]
    return s


def test_fetch_render_keeps_the_rendered_page_and_says_so(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = app(site)
    raw = g6(tmp_path / "h", "fetch", s.url("/"))
    assert raw.stdout.startswith("empty ") and "no_text_without_scripts" in raw.stdout  # the shell alone
    r = g6(tmp_path / "h", "fetch", s.url("/"), "--render", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    render = out["detail"]["render"]
    assert out["outcome"] == "ok" and render == {"mode": "always", "rendered": True, "ended": "settled",
                                                 "raw_receipt_id": render["raw_receipt_id"]}
    assert ARTICLE["body"] in out["documents"][0]["text"] and out["documents"][0]["text_source"] == "rendered"
    with EvidenceHome(tmp_path / "h") as home:  # read raw first, and the render started from that read's bytes
        capture, raw_read = home.ledger.get(out["receipt_id"]), home.ledger.get(render["raw_receipt_id"])
        assert capture is not None and raw_read is not None and capture.links["raw"] == raw_read.receipt_id
        assert raw_read.outcome == "empty" and [seen.path for seen in s.requests].count("/") == 2  # the two raw reads
    text = g6(tmp_path / "h", "fetch", s.url("/"), "--render")
    assert text.exit_code == 0 and "render: rendered" in text.stdout and ARTICLE["body"] in text.stdout


def test_fetch_render_keeps_what_is_not_a_page_as_read(tmp_path: Path, site: Site) -> None:
    """A PDF (Chromium would show its own viewer: a grey page, its scripts listed as the page's), an image, a 404
    and a refused read are kept as the raw read keeps them, not rendered."""
    need_chromium()
    pdf = (Path(__file__).resolve().parents[2] / "src/g6/demo/pages/paper.pdf").read_bytes()
    s = site({"/paper.pdf": Reply(body=pdf, content_type="application/pdf"), "/robots.txt": ROBOTS,
              "/logo.png": Reply(body=b"\x89PNG\r\n\x1a\n" + b"\0" * 64, content_type="image/png"),
              "/gone": Reply(404, b"<html><body><p>Not here.</p><script>void 0</script></body></html>")})
    for path, outcome, why in (("/paper.pdf", "ok", "not HTML"), ("/logo.png", "ok", "not HTML"),
                               ("/gone", "not_found", "not a successful read")):
        r = g6(tmp_path / "h", "fetch", s.url(path), "--render", "--json")
        out = json.loads(r.stdout)
        assert (out["outcome"], out["detail"]["render"]) == (outcome, {"mode": "always", "rendered": False,
                                                                       "why": why}), out
        with EvidenceHome(tmp_path / "h") as home:
            kept = home.ledger.get(out["receipt_id"])
            assert kept is not None and kept.capture is None and "raw" not in kept.links
    assert s.requests and all(seen.path in ("/robots.txt", "/paper.pdf", "/logo.png", "/gone") for seen in s.requests)
    refused = g6(tmp_path / "h", "fetch", s.url("/paper.pdf"), "--render", env={"G6_ALLOW_LOOPBACK": "0"})
    assert refused.exit_code == 1 and "render: not rendered: not a successful read" in refused.stdout, refused.output


def test_render_auto_renders_a_shell_and_reads_a_page_as_it_is(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = app(site)
    shell = json.loads(g6(tmp_path / "h", "fetch", s.url("/"), "--render", "auto", "--json").stdout)
    assert shell["outcome"] == "ok" and shell["detail"]["render"]["rendered"] is True
    assert "characters of text without scripts" in shell["detail"]["render"]["why"]
    raw_id = shell["detail"]["render"]["raw_receipt_id"]
    plain = json.loads(g6(tmp_path / "h", "fetch", s.url("/plain"), "--render=auto", "--json").stdout)
    assert plain["outcome"] == "ok" and plain["detail"]["render"]["rendered"] is False
    with EvidenceHome(tmp_path / "h") as home:
        capture = home.ledger.get(shell["receipt_id"])
        assert capture.links["raw"] == raw_id and capture.capture is not None
        assert home.ledger.get(raw_id).outcome == "empty"  # the raw read is kept too, as it was
        assert home.ledger.get(plain["receipt_id"]).capture is None
        assert home.verify().ok


def test_batch_fetch_renders_the_shells(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = app(site)
    (tmp_path / "urls").write_text(f"{s.url('/')}\n{s.url('/plain')}\n")
    r = g6(tmp_path / "h", "fetch", "--input", str(tmp_path / "urls"), "--render", "auto", "--json")
    assert r.exit_code == 0, r.output
    lines = {x["url"]: x for x in map(json.loads, r.stdout.splitlines())}
    assert lines[s.url("/")]["render"]["rendered"] is True and lines[s.url("/plain")]["render"]["rendered"] is False
    with EvidenceHome(tmp_path / "h") as home:
        assert home.ledger.get(lines[s.url("/")]["receipt_id"]).capture["ended"] in ("settled", "deadline")
        assert home.verify().ok


def test_cite_uses_the_rendered_text_and_recheck_renders_again(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = app(site)
    h, m = tmp_path / "h", tmp_path / "m.json"
    rid = json.loads(g6(h, "fetch", s.url("/"), "--render", "--json").stdout)["receipt_id"]
    cite = g6(h, "cite", rid, "--quote", "arrives only after the script runs", "--manifest", str(m), "--json")
    assert cite.exit_code == 0, cite.output
    assert json.loads(cite.stdout)["text_source"] == "rendered"
    chunk = json.loads(g6(h, "chunk", rid, "--json").stdout)
    assert chunk["text_source"] == "rendered"
    first = g6(h, "recheck", str(m), "--json")
    assert first.exit_code == 0, first.output
    verdict = json.loads(first.stdout)["verdicts"][0]
    assert verdict["verdict"] in ("unchanged", "current")
    with EvidenceHome(h) as home:
        again = home.ledger.get(verdict["receipt_id"])
        assert again.kind == "recheck" and again.capture is not None and again.request["render"] is True
    s.state["article"]["body"] = "Something else entirely is said here now, about other matters."  # type: ignore[attr-defined]
    second = g6(h, "recheck", str(m), "--json")
    assert second.exit_code == 1 and json.loads(second.stdout)["verdicts"][0]["verdict"] == "gone"


def test_no_browser_process_outlives_a_killed_g6(tmp_path: Path, site: Site) -> None:
    need_chromium()
    polled = threading.Event()

    def poll(req: SeenRequest) -> Reply:
        polled.set()
        return Reply(body=b"tick", content_type="text/plain")

    page = b"<p>polling</p><script>(async () => { for (;;) { try { await fetch('/poll'); } catch (e) {} } })();" \
           b"</script>"
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS, "/poll": poll})
    env = {**os.environ, **ENV, "G6_RENDER_TIMEOUT": "600", "G6_RENDER_MAX_REQUESTS": "400"}
    proc = subprocess.Popen([sys.executable, "-m", "g6", "--home", str(tmp_path / "h"), "fetch", s.url("/"),
                             "--render"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert polled.wait(120), "the capture never started"
        ours = marked_processes(f"{proc.pid}-")
        assert ours, "no browser found for this g6"
        group = min(ours)  # the browser itself: its pid is its process group, which its children share
        assert len(browser_processes(group)) > 1  # the browser and its children, mid-capture
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert wait_until(lambda: not marked_processes(f"{proc.pid}-") and not browser_processes(group), 30), (
            marked_processes(f"{proc.pid}-"), browser_processes(group))
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_ends_a_batch_render_at_once_and_receipts_nothing_of_it(tmp_path: Path, site: Site) -> None:
    """Ctrl-C while a `--render auto` batch renders a page that is never quiet (its request is held open, and asked
    again when it ends): g6 stops without waiting for the render's deadline (it waited for it before; only a request
    of the page g6 is fetching still ends at its own deadline), closes its browser and receipts nothing of the
    render cut short; a resumed run renders it again."""
    need_chromium()
    polled, release = threading.Event(), threading.Event()

    def poll(req: SeenRequest) -> Reply:
        polled.set()
        release.wait(300)  # held open: the page is never quiet, so only the deadline (600 s) would end the render
        return Reply(body=b"tick", content_type="text/plain")

    shell = b"<!doctype html><html><body><div id='a'></div><script>const poll = () => fetch('/poll')" \
            b".finally(poll); poll();</script></body></html>"
    s = site({"/": Reply(body=shell), "/robots.txt": ROBOTS, "/poll": poll, "/plain": Reply(body=CONTENT)})
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{s.url('/')}\n{s.url('/plain')}\n")
    h = tmp_path / "h"
    # G6_TIMEOUT: the page's request g6 is fetching when the stop comes ends at its own deadline, not held for 300 s
    env = {**os.environ, **ENV, "G6_RENDER_TIMEOUT": "600", "G6_TIMEOUT": "5"}
    proc = subprocess.Popen([sys.executable, "-m", "g6", "--home", str(h), "fetch", "--input", str(urls), "--render",
                             "auto"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's
    try:
        assert polled.wait(120), "the render never started"
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=90)[1].decode()  # not at the render's 600 s deadline
        assert proc.returncode == 130 and "Traceback" not in err, err
        assert wait_until(lambda: not marked_processes(f"{proc.pid}-"), 30), marked_processes(f"{proc.pid}-")
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    home = EvidenceHome(h)
    try:
        receipts = [e.receipt for e in home.ledger.entries()] if home.ledger.present() else []
        assert not [r for r in receipts if r.capture is not None or r.request.get("url") == s.url("/")], receipts
    finally:
        home.close()


def test_no_browser_is_a_clear_failure_not_a_traceback(tmp_path: Path, site: Site) -> None:
    s = site({"/": Reply(body=b"<p>x</p>"), "/robots.txt": ROBOTS})
    r = g6(tmp_path / "h", "fetch", s.url("/"), "--render", env={"G6_CHROMIUM": str(tmp_path / "no-such-browser")})
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "no Chromium to render with" in r.stderr and "G6_CHROMIUM" in r.stderr
    bad = g6(tmp_path / "h", "fetch", s.url("/"), "--render", env={"G6_RENDER_MAX_REQUESTS": "401"})
    assert bad.exit_code == 2 and "G6_RENDER_MAX_REQUESTS must be between 1 and 400" in bad.stderr
