"""``--render auto`` in a batch: a host whose page is a shell goes on to its next page while a browser renders
the shell (the render runs beside the raw reads), and each rendered page's receipts still go in one transaction."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.batch import batch_fetch
from g6.fetch.render import Renderer
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
WORDS = "Words a script fetched from another host, once the batch had gone on."
PLAIN = ("<html><body><article><p>" + "A page whose words are all in its HTML. " * 12
         + "</p></article></body></html>").encode()


def test_a_host_reads_its_next_page_while_its_shell_renders(home: EvidenceHome, client: CheckedClient,
                                                            pool: BrowserPool, site: Site) -> None:
    # the shell's script needs data that host B gives only once host A's next page has been read: read one page
    # of a host at a time, render first, and the render can only end at its deadline without the words
    next_read = threading.Event()

    def data(req: SeenRequest) -> Reply:
        next_read.wait(60)
        return Reply(body=json.dumps({"text": WORDS}).encode(), content_type="application/json",
                     headers=(("Access-Control-Allow-Origin", "*"),))

    b = site({"/robots.txt": ROBOTS, "/data.json": data}, host="127.0.0.3")
    shell = (f'<!doctype html><html><head><title>Shell</title></head><body><div id="app"></div><script>'
             f'fetch("{b.url("/data.json")}").then((r) => r.json()).then((d) => '
             'document.getElementById("app").textContent = d.text);</script></body></html>').encode()

    def plain(req: SeenRequest) -> Reply:
        next_read.set()
        return Reply(body=PLAIN)

    a = site({"/robots.txt": ROBOTS, "/": Reply(body=shell), "/next": plain}, host="127.0.0.2")
    report = batch_fetch(home, client, [a.url("/"), a.url("/next")], concurrency=2, render_mode="auto",
                         renderer=Renderer(pool, RenderLimits(deadline=20)))
    by_url = {r.url: r for r in report.results}
    assert by_url[a.url("/")].render["rendered"] and not by_url[a.url("/next")].render["rendered"]
    assert report.ok, report.counts
    capture = home.ledger.get(by_url[a.url("/")].receipt_id)
    assert capture.capture["ended"] == "settled"
    assert WORDS in home.store.read_as(capture.capture["text"]).decode()
    # the raw read, the sub-resources and the capture: appended together, in that order
    entries = [e.receipt for e in home.ledger.entries()]
    i = next(k for k, r in enumerate(entries) if r.receipt_id == capture.links["raw"])
    j = next(k for k, r in enumerate(entries) if r.receipt_id == capture.receipt_id)
    assert all(r.links.get("capture") == capture.receipt_id for r in entries[i + 1:j])
    assert len(capture.capture["resources"]) == j - i - 1
