"""A page that opens popups: each is closed, its requests checked like any other, and its opener goes on.

Each popup is attached paused (waiting for the debugger) like every new target. A popup begins in its opener's
renderer, and while it waits there its opener's scripts wait too: closed before it was let run, it could leave its
opener paused for good (the page's later requests never made, its text unreadable: "the provided callback is no
longer runnable"). The capture lets a popup run, then closes it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from world import need_chromium

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
POPUPS = 12
OPENER = ("<!doctype html><html><head><title>opener</title></head><body><p id='t'>Not yet.</p><script>"
          f"for (let i = 0; i < {POPUPS}; i++) {{ window.open('/popup' + i); }}"
          "fetch('/after').then((r) => r.text()).then((t) => { document.getElementById('t').textContent = t; });"
          "</script></body></html>").encode()


@pytest.fixture(scope="module")
def popup_pool() -> Iterator[BrowserPool]:
    need_chromium()
    with BrowserPool(1, extra_flags=("--disable-popup-blocking",)) as p:  # else no popup opens without a click
        yield p


def test_a_page_that_opens_popups_goes_on_and_its_text_is_read(home: EvidenceHome, client: CheckedClient,
                                                               popup_pool: BrowserPool, site: Site) -> None:
    s = site({"/": Reply(body=OPENER), "/robots.txt": Reply(body=b"User-agent: *\nAllow: /\n",
                                                           content_type="text/plain"),
              "/after": Reply(body=b"Words fetched after the popups opened.", content_type="text/plain"),
              **{f"/popup{i}": Reply(body=b"<p>a popup</p>") for i in range(POPUPS)}})
    for _ in range(3):
        result = fetch_rendered(home, client, popup_pool, s.url("/"), limits=RenderLimits(deadline=60))
        capture = home.ledger.get(result.receipt_id).capture
        assert capture["counts"]["popups"] == POPUPS
        assert result.outcome.value == "ok", (capture["ended"], capture["counts"])
        assert "Words fetched after the popups opened." in result.documents[0].text
        assert capture["ended"] == "settled"
