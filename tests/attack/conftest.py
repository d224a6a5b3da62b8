"""Fixtures of the attack tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
QUOTE = "the cited sentence stays in the stored bytes"
BIG = ("<html><body><article>" + "".join(f"<p>Paragraph {i}: {QUOTE} number {i}.</p>" for i in range(60))
       + "</article></body></html>").encode()  # > 512 bytes of text: kept compressed (.zst)
SMALL = f"<html><body><p>Small page: {QUOTE}.</p></body></html>".encode()  # < 512 bytes: kept raw


@pytest.fixture(scope="module")
def pool() -> Iterator[BrowserPool]:
    """A module's browser, as the browser attack tests want it: started at once, before any listener thread of a
    test blocks in ``accept()`` (``_browser_world.started_pool``, finding 15). For every module here it takes the
    place of tests/conftest.py's, which starts its browser at the first capture."""
    from tests.attack._browser_world import started_pool

    with started_pool() as p:
        yield p


@pytest.fixture
def ev(site: Site, tmp_path: Path) -> dict[str, object]:
    """A home with two fetched pages (one compressed, one raw), both cited in a signed manifest."""
    s = site({"/big": Reply(body=BIG), "/small": Reply(body=SMALL), "/robots.txt": Reply(404, b"")})
    g6home = tmp_path / "h"
    with EvidenceHome(g6home, fsync=False) as home:
        home.keys.init()
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
            rb, rs = fetch(home, c, s.url("/big")), fetch(home, c, s.url("/small"))
        m = Manifest.new().with_citation(cite_web(home, rb.receipt_id, quote=QUOTE))
        m = m.with_citation(cite_web(home, rs.receipt_id, quote=QUOTE)).signed(home.signing_key())
        save_manifest(m, tmp_path / "m.json")
        big, small = rb.content, rs.content
        big_path, small_path = home.store.path(big["blake3"]), home.store.path(small["blake3"])
    assert big_path.name.endswith(".zst") and not small_path.name.endswith(".zst")
    return {"home": g6home, "big": big, "small": small, "big_path": big_path, "small_path": small_path,
            "manifest": tmp_path / "m.json", "tmp": tmp_path}
