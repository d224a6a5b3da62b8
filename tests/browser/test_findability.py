"""What ``--render`` lets ``g6 cite`` find, against the raw read, on the pages of ``fixtures/render``.

Each page's reader-visible sentences (``findability.json``) are quoted against a raw read and a rendered capture
of it. The counts asserted here are the table in docs/commands/fetch.md.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterator
from pathlib import Path

import pytest

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.demo.site import LocalSite, Reply
from g6.errors import G6Error
from g6.fetch.capture import fetch
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "render"
SENTENCES: dict[str, list[str]] = json.loads((ROOT / "findability.json").read_text())
# sentences g6 cite finds in each page's raw read (the rest appear only once scripts run)
RAW = {"app": 0, "json": 0, "lazy": 2, "consent": 0, "polling": 2, "shadow": 1}


def fixture_routes() -> dict[str, Reply]:
    routes = {"/robots.txt": Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")}
    for f in ROOT.rglob("*"):
        if f.is_file() and f.suffix in (".html", ".js", ".json"):
            rel = "/" + f.relative_to(ROOT).as_posix()
            ctype = {".js": "text/javascript", ".json": "application/json"}.get(f.suffix) or \
                (mimetypes.guess_type(f.name)[0] or "text/plain") + "; charset=utf-8"
            routes[rel] = Reply(body=f.read_bytes(), content_type=ctype)
            if f.name == "index.html":
                routes[rel.removesuffix("index.html")] = routes[rel]
    return routes


@pytest.fixture(scope="module")
def fixtures_site() -> Iterator[LocalSite]:
    s = LocalSite(fixture_routes()).start()
    yield s
    s.stop()


def found(home: EvidenceHome, receipt_id: str, sentences: list[str]) -> list[str]:
    out = []
    for s in sentences:
        try:
            cite_web(home, receipt_id, quote=s)
            out.append(s)
        except G6Error:
            pass
    return out


@pytest.mark.parametrize("name", sorted(SENTENCES))
def test_render_finds_what_a_reader_sees(name: str, home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                         fixtures_site: LocalSite) -> None:
    url = fixtures_site.url(f"/{name}/")
    raw = fetch(home, client, url)
    raw_found = found(home, raw.receipt_id, SENTENCES[name]) if raw.content else []
    # polling never goes quiet: the deadline ends it (a long quiet window makes that the case on any machine)
    limits = RenderLimits(deadline=4, quiet=600) if name == "polling" else RenderLimits(deadline=30)
    rendered = fetch_rendered(home, client, pool, url, limits=limits)
    assert rendered.outcome.value == "ok", rendered.to_json()
    assert home.ledger.get(rendered.receipt_id).interstitial is None  # the cookie notice is not a wall
    assert found(home, rendered.receipt_id, SENTENCES[name]) == SENTENCES[name]
    assert len(raw_found) == RAW[name], raw_found
    print(f"findability {name}: raw {len(raw_found)}/{len(SENTENCES[name])}, "
          f"rendered {len(SENTENCES[name])}/{len(SENTENCES[name])}")
