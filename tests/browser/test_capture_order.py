"""The capture's list of its sub-resources is the ledger's order of their receipts.

Two requests answered on two of the capture's threads can be receipted in one order and handed to the browser in
the other: the capture listed them as answered, the ledger took them as receipted (seen in CI: the hostile page's
capture and its receipts differed at the twelfth resource). Here the first script's answer is held until the second
one's was handed over, so the two orders differ every time."""

from __future__ import annotations

import threading
from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser import intercept as intercept_mod
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
PAGE = (b"<!doctype html><html><head><script src='/first.js'></script><script src='/second.js'></script></head>"
        b"<body><p id='t'>The page is here.</p></body></html>")


def test_the_capture_lists_its_resources_in_the_ledgers_order(home: EvidenceHome, client: CheckedClient,
                                                               pool: BrowserPool, site: Site, monkeypatch) -> None:
    s = site({"/": Reply(body=PAGE), "/robots.txt": Reply(404, b""),
              "/first.js": Reply(body=b"window.first = 1;", content_type="text/javascript"),
              "/second.js": Reply(body=b"window.second = 2;", content_type="text/javascript")})
    second_handed = threading.Event()
    held: list[bool] = []
    real_reply = intercept_mod.Interceptor._reply

    def reply(self, rid, session, sub, resp):  # type: ignore[no-untyped-def]
        if sub.url.endswith("/first.js"):
            held.append(second_handed.wait(20))  # receipted already: handed over only after the second
        real_reply(self, rid, session, sub, resp)
        if sub.url.endswith("/second.js"):
            second_handed.set()

    monkeypatch.setattr(intercept_mod.Interceptor, "_reply", reply)
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=30))
    capture = home.ledger.get(result.receipt_id)
    assert held == [True]  # the two were under way at once, and the second was handed over first
    listed = [r["receipt_id"] for r in capture.capture["resources"]]
    subs = [e.receipt for e in home.ledger.entries() if e.receipt.links.get("capture") == capture.receipt_id]
    urls = [r.request["url"].rsplit("/", 1)[-1] for r in subs]
    assert urls.index("second.js") < urls.index("first.js")  # the ledger's order: as handed to the browser
    assert [r.receipt_id for r in subs] == listed
