"""A home for the export and citation tests: real reads of the demo's pages from a loopback site (the energy
story at ``/news/energy.html`` twice, the article at ``/article``, and a 404 at ``/missing``), a manifest citing
them, and a ``g6 serve`` of the home (module fixtures: import ``world`` and ``served_home``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.serve.server import served

QUOTES = [("energy", "Of those asked, 12% said they had changed energy supplier in the past year."),
          ("energy", "Most of them cited price as the main reason."),
          ("article", None)]  # the article's first passage, whatever it says


@dataclass
class CiteWorld:
    home: Path
    site: LocalSite
    manifest: Path
    ids: dict[str, list[str]] = field(default_factory=dict)  # label -> receipt ids, oldest first


def page(name: str) -> bytes:
    return (resources.files("g6.demo") / "pages" / name).read_bytes()


def build(root: Path) -> CiteWorld:
    site = LocalSite({"/news/energy.html": Reply(body=page("energy.html")),
                      "/article": Reply(body=page("article.html")),
                      "/missing": Reply(404, b"<h1>Not found</h1>"),
                      "/robots.txt": Reply(404, b"")}).start()
    w = CiteWorld(root / "home", site, root / "citations.json")
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=2, read_timeout=2, total_timeout=5)
    with EvidenceHome(w.home, fsync=False) as ev, CheckedClient(policy) as client:
        ev.keys.init()
        for label, path in [("energy", "/news/energy.html"), ("article", "/article"), ("missing", "/missing"),
                            ("energy", "/news/energy.html")]:
            w.ids.setdefault(label, []).append(fetch(ev, client, site.url(path)).receipt_id)
        m = Manifest.new()
        for label, quote in QUOTES:
            rid = w.ids[label][0]
            if quote is None:
                from g6.cite.cite import chunk_receipt

                quote = chunk_receipt(ev, rid)[1][0].text.strip()
            m = m.with_citation(cite_web(ev, rid, quote=quote))
        m = m.with_citation(cite_web(ev, w.ids["missing"][0], quote="Not found", allow_failed_read=True))
    save_manifest(m, w.manifest)
    return w


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CiteWorld]:
    w = build(tmp_path_factory.mktemp("cite-world"))
    yield w
    w.site.stop()


@pytest.fixture(scope="module")
def served_home(world: CiteWorld) -> Iterator[str]:
    with served(world.home) as base:
        yield base.rstrip("/")


def g6(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home), *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)
