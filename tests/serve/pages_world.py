"""One evidence home for the pages and API tests, made the way a user makes one: real `g6` processes
reading a loopback site (an article, a hostile page, a redirect to the article, a 404), two citations in a
signed manifest (one of them of the hostile page's literal ``</textarea><script>`` text), a re-check and a
checkpoint. Built once per module (a dozen processes)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from g6.demo.site import LocalSite, Reply

ARTICLE = (b"<html><head><title>Receipts</title></head><body><article><h1>Why receipts matter</h1>"
           b"<p>A research report is only as good as the sources it cites.</p>"
           b"<p>When a reader asks where a sentence came from, the answer should be a receipt.</p>"
           b"</article></body></html>")
CITED = "the answer should be a receipt"
# What the hostile page shows as text (entity-escaped in its HTML, so the extractor yields it literally),
# then what it would run: a script and an onerror that set the title and a marker attribute.
HOSTILE_TEXT = "</textarea><script>document.title='PWNED'</script>"
ATTR_TEXT = '" onerror="document.title=\'PWNED\'" x="'
BIDI_TEXT = "caf\u0065\u0301 \u202eevil\u202c"
RUN = "document.title='PWNED';document.documentElement.setAttribute('data-pwned','1')"


def _ent(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


HOSTILE = (f"<html><head><title>Hostile</title><script>{RUN}</script></head><body><article>"
           f"<p>Hostile text: {_ent(HOSTILE_TEXT)} then {_ent(ATTR_TEXT)} then {BIDI_TEXT}.</p>"
           f"<p>A second paragraph, long enough to be the main content of this page.</p>"
           f"<img src=\"missing.png\" onerror=\"{RUN}\"></article></body></html>").encode()


@dataclass
class World:
    base: Path
    home: Path
    manifest: Path
    manifest_id: str
    article: str  # receipt ids
    hostile: str
    redirect: str
    missing: str
    urls: dict[str, str]
    article_blake3: str
    article_sha256: str


def g6(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env,
                          timeout=180, cwd=cwd)


def build(base: Path) -> World:
    home = base / "home"
    site = LocalSite({"/article": Reply(body=ARTICLE), "/hostile": Reply(body=HOSTILE),
                      "/redir": Reply(302, b"", headers=(("Location", "/article"),)),
                      "/missing": Reply(404, b"<p>gone</p>")}).start()
    try:
        urls = {p: site.url(p) for p in ("/article", "/hostile", "/redir", "/missing")}
        ids = {}
        for p, url in urls.items():
            r = g6(home, "fetch", url, "--json", cwd=base)
            ids[p] = json.loads(r.stdout)["receipt_id"]
        for rid, quote in ((ids["/article"], CITED), (ids["/hostile"], HOSTILE_TEXT)):
            r = g6(home, "cite", rid, "--quote", quote, "--manifest", "report.json", cwd=base)
            assert r.returncode == 0, r.stderr
        for args in (("manifest", "sign", "report.json"), ("recheck", "report.json"), ("ledger", "checkpoint")):
            r = g6(home, *args, cwd=base)
            assert r.returncode == 0, r.stderr
    finally:
        site.stop()
    manifest = base / "report.json"
    return World(base, home, manifest, json.loads(manifest.read_text())["manifest_id"], ids["/article"],
                 ids["/hostile"], ids["/redir"], ids["/missing"], urls,
                 _blake3(ARTICLE), hashlib.sha256(ARTICLE).hexdigest())


def _blake3(data: bytes) -> str:
    import blake3

    return blake3.blake3(data).hexdigest()


def snapshot(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``: what a read-only server must leave as it found."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
