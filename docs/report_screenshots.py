"""Regenerate the report screenshots in docs/ (run from the checkout: `python docs/report_screenshots.py`).

1. `g6 demo`, then `g6 bundle verify demo-evidence.zip --key … --html` -> docs/demo-bundle-report.{html,png}
2. The demo site on loopback: the article and the home page are read and cited, the manifest
   signed; then the article is edited ("a reader asks where a sentence" -> "a grader asks where a
   claim") and the home page removed, and `g6 recheck --html` writes the re-check report
   -> docs/demo-recheck-report.{html,png}

Everything runs on loopback; the pages are opened from disk in headless Chromium (tests/headless.py)
and captured whole.

3. `g6 serve --manifest report.json` over a home that read the demo article and cited it, and the
   capture page of that read -> docs/serve-capture.png (opened over loopback, the page's own socket)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from g6.demo.site import LocalSite, Reply

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "tests"))
from headless import Browser, chromium_path  # noqa: E402


def g6(home: Path, *args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"})
    r = subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=300,
                       cwd=cwd)
    if check and r.returncode not in (0, 1):
        raise SystemExit(f"g6 {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
    return r


def main() -> None:
    exe = chromium_path()
    if exe is None:
        raise SystemExit("chromium is not installed (apt-get install -y chromium)")
    work = Path(tempfile.mkdtemp(prefix="g6-shots-"))
    files = resources.files("g6.demo") / "pages"
    if sys.argv[1:] == ["serve"]:  # only the serve page (`python docs/report_screenshots.py serve`)
        with Browser(exe) as b:
            serve_capture(b, work / "serve", files)
        return

    # 1. the demo's bundle, verified with the pinned key
    home = work / "demo"
    g6(home, "--home", str(home), "demo")  # the demo takes its home from --home only
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    g6(home, "bundle", "verify", "demo-evidence.zip", "--key", key, "--html", str(DOCS / "demo-bundle-report.html"),
       cwd=home)

    # 2. a re-check after the demo article was edited and its home page removed
    article = (files / "article.html").read_bytes()
    edited = article.replace(b"a reader asks where a sentence", b"a grader asks where a claim")
    state = {"v": 1}
    site = LocalSite({
        "/article": lambda _r: Reply(body=article if state["v"] == 1 else edited),
        "/": lambda _r: Reply(body=(files / "index.html").read_bytes()) if state["v"] == 1 else Reply(404, b"gone"),
        "/robots.txt": Reply(body=(files / "robots.txt").read_bytes(), content_type="text/plain"),
    }).start()
    try:
        home = work / "recheck"
        art = json.loads(g6(home, "fetch", site.url("/article"), "--json").stdout)["receipt_id"]
        idx = json.loads(g6(home, "fetch", site.url("/"), "--json").stdout)["receipt_id"]
        for rid, cite in ((art, ["--passage", _passage(home, art, "A research report")]),
                          (art, ["--quote", "check a citation offline, months later"]),
                          (idx, ["--passage", _passage(home, idx, "This site runs")])):
            g6(home, "cite", rid, *cite, "--manifest", "report.json", cwd=work)
        g6(home, "manifest", "sign", "report.json", cwd=work)
        state["v"] = 2
        g6(home, "recheck", "report.json", "--html", str(DOCS / "demo-recheck-report.html"), cwd=work)
    finally:
        site.stop()

    with Browser(exe) as b:
        for name in ("demo-bundle-report", "demo-recheck-report"):
            b.open(DOCS / f"{name}.html")
            b.screenshot(DOCS / f"{name}.png", width=1100)
            print(DOCS / f"{name}.png")
        serve_capture(b, work / "serve", files)


def serve_capture(b: Browser, work: Path, files: Any) -> None:
    """3. a capture page of `g6 serve`: the demo article read, a sentence of it cited, the manifest signed."""
    sys.path.insert(0, str(DOCS.parent))
    from tests.serve.server import served

    work.mkdir(parents=True)
    robots = Reply(body=(files / "robots.txt").read_bytes(), content_type="text/plain")
    site = LocalSite({"/article": Reply(body=(files / "article.html").read_bytes()), "/robots.txt": robots}).start()
    try:
        home = work / "home"
        art = json.loads(g6(home, "fetch", site.url("/article"), "--json").stdout)["receipt_id"]
        g6(home, "cite", art, "--quote", "the answer should be a receipt", "--manifest", "report.json", cwd=work)
        g6(home, "manifest", "sign", "report.json", cwd=work)
        g6(home, "recheck", "report.json", cwd=work)
    finally:
        site.stop()
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    with served(home, "--manifest", str(work / "report.json"), env={**env, "G6_HOME": str(home)}) as base:
        b.open_url(f"{base}capture/{art}")
        b.screenshot(DOCS / "serve-capture.png", width=1100)
    print(DOCS / "serve-capture.png")


def _passage(home: Path, rid: str, starts: str) -> str:
    chunks = json.loads(g6(home, "chunk", rid, "--json").stdout)
    items = chunks["passages"] if isinstance(chunks, dict) else chunks
    return str(next(p for p in items if p["text"].startswith(starts))["passage_id"])


if __name__ == "__main__":
    main()
