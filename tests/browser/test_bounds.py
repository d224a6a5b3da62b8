"""A render's bounds: requests, bytes, the deadline, an endless scroll; a browser that crashes or hangs.

Each ends with a typed ``ended`` in the capture receipt and the capture keeps what there was; none hangs the
command. The deadline tests make the quiet window longer than the deadline, so the deadline, not the page
going quiet, is what ends them whatever the machine's speed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from world import browser_processes

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
POLLING = b"""<p>Text that was there from the start.</p><div id="log"></div><script>
let n = 0;
(async () => { for (;;) { try { const r = await fetch("/poll?" + (n++)); const t = await r.text();
  document.getElementById("log").textContent = "polled " + n + " " + t; } catch (e) {} } })();
</script>"""


def poll_site(site: Site, **extra: Reply | Callable[[SeenRequest], Reply]) -> LocalSite:
    tick = Reply(body=b"tick", content_type="text/plain")
    return site({"/": Reply(body=POLLING), "/robots.txt": ROBOTS, "/poll": tick, **extra})


def subs_of(home: EvidenceHome, capture_id: str) -> list:
    return [e.receipt for e in home.ledger.entries() if e.receipt.links.get("capture") == capture_id]


def test_endless_polling_ends_at_the_deadline_and_the_capture_keeps_what_it_has(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    # a poll every 100 ms: far below the request limit in a 3 s deadline, however fast the machine
    s = poll_site(site, **{"/": Reply(body=POLLING.replace(b"const t = await r.text();",
                                                           b"const t = await r.text(); await new Promise("
                                                           b"(ok) => setTimeout(ok, 100));"))})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=3, quiet=600))
    cap = home.ledger.get(result.receipt_id).capture
    assert cap["ended"] == "deadline" and result.outcome.value == "ok"
    assert "Text that was there from the start." in result.documents[0].text and "polled" in result.documents[0].text
    assert len(cap["resources"]) == cap["counts"]["requests"] == len(subs_of(home, result.receipt_id))
    assert home.verify().ok


def test_the_request_limit_ends_the_render_and_what_is_past_it_fails_unreceipted(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = poll_site(site)
    result = fetch_rendered(home, client, pool, s.url("/"),
                            limits=RenderLimits(deadline=120, quiet=600, max_requests=12))
    cap = home.ledger.get(result.receipt_id).capture
    assert cap["ended"] == "subrequest_limit" and cap["counts"]["requests"] == 12
    assert cap["counts"]["over_limit"] >= 1
    assert len(cap["resources"]) == 12 == len(subs_of(home, result.receipt_id))
    assert "Text that was there from the start." in result.documents[0].text


def test_the_byte_limit_ends_the_render(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                        site: Site) -> None:
    imgs = "".join(f'<img src="/i{n}.png">' for n in range(6))
    routes = {f"/i{n}.png": Reply(body=bytes(20_000), content_type="image/png") for n in range(6)}
    s = site({"/": Reply(body=f"<p>Images below.</p>{imgs}".encode()), "/robots.txt": ROBOTS, **routes})
    result = fetch_rendered(home, client, pool, s.url("/"),
                            limits=RenderLimits(deadline=120, quiet=600, max_bytes=50_000))
    cap = home.ledger.get(result.receipt_id).capture
    counts = cap["counts"]
    assert cap["ended"] == "byte_limit" and counts["bytes"] <= 50_000
    # the body past the budget is not handed over, nor failed in the page before the snapshot: it is pending there
    # (the capture's moment), neither answered nor failed
    assert counts["answered"] + counts["failed"] < counts["requests"] and counts["failed"] == 0
    # what was read is kept and receipted, answered or not: only what the page was handed is held to the budget
    images = [r for r in subs_of(home, result.receipt_id) if r.request["resource_type"] == "Image"]
    assert images and all(r.outcome in ("ok", "too_large") for r in images)
    assert "Images below." in result.documents[0].text


def test_an_endless_scroll_ends_at_the_scroll_limit(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                                    site: Site) -> None:
    page = b"""<p>First screen of an endless feed.</p><div id="feed"></div><script>
let n = 0;
const more = () => { for (let i = 0; i < 5; i++) { const p = document.createElement("p");
  p.style.height = "400px"; p.textContent = "item " + (n++); document.getElementById("feed").append(p); } };
more(); addEventListener("scroll", () => { if (innerHeight + scrollY >= document.body.scrollHeight - 500) more(); });
</script>"""
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    result = fetch_rendered(home, client, pool, s.url("/"),
                            limits=RenderLimits(deadline=120, quiet=0.2, max_scroll_steps=6))
    cap = home.ledger.get(result.receipt_id).capture
    assert cap["ended"] == "scroll_limit" and "item 6" in result.documents[0].text




def test_a_browser_that_crashes_mid_capture_gives_a_typed_outcome_and_still_a_receipt(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    with BrowserPool(1) as own:
        def crash(req: SeenRequest) -> Reply:
            b = own.running()[0]
            os.killpg(b.pid, signal.SIGKILL)  # the whole browser, as a crash would end it
            return Reply(body=b"too late")

        s = poll_site(site, **{"/poll": crash})
        result = fetch_rendered(home, client, own, s.url("/"), limits=RenderLimits(deadline=60, quiet=600))
        r = home.ledger.get(result.receipt_id)
        assert (r.outcome, r.detail["reason"], r.capture["ended"]) == ("parse_failed", "browser_crashed",
                                                                      "browser_crashed")
        assert r.capture["resources"] and r.capture["dom"] is None and r.capture["screenshot"] is None
        assert home.verify().ok
        again = fetch_rendered(home, client, own, s.url("/robots.txt"), limits=RenderLimits(deadline=10))
        assert again.outcome.value == "ok" and own.started == 2  # a new browser for the next capture


def test_a_renderer_that_crashes_gives_a_typed_outcome(home: EvidenceHome, client: CheckedClient,
                                                       site: Site) -> None:
    with BrowserPool(1) as own:
        def crash(req: SeenRequest) -> Reply:
            for pid in browser_processes(own.running()[0].pid, "renderer"):
                os.kill(pid, signal.SIGKILL)
            return Reply(body=b"tick", content_type="text/plain")

        s = poll_site(site, **{"/poll": crash})
        result = fetch_rendered(home, client, own, s.url("/"), limits=RenderLimits(deadline=60, quiet=600))
        r = home.ledger.get(result.receipt_id)
        assert r.outcome == "parse_failed" and r.capture["ended"] == "renderer_crashed", r.to_json()


def test_a_browser_that_hangs_gives_a_typed_outcome_and_is_ended(home: EvidenceHome, client: CheckedClient,
                                                                 site: Site) -> None:
    with BrowserPool(1) as own:
        stopped: list[int] = []

        def hang(req: SeenRequest) -> Reply:
            b = own.running()[0]
            if not stopped:
                stopped.append(b.pid)
                os.killpg(b.pid, signal.SIGSTOP)  # alive, answering nothing
            return Reply(body=b"tick", content_type="text/plain")

        s = poll_site(site, **{"/poll": hang})
        owner = own.running()[0].owner if own.running() else None
        result = fetch_rendered(home, client, own, s.url("/"),
                                limits=RenderLimits(deadline=4, quiet=600, command_timeout=3))
        owner = owner or ""
        r = home.ledger.get(result.receipt_id)
        assert (r.outcome, r.capture["ended"]) == ("parse_failed", "browser_hung")
        assert stopped and own.running() == []  # the hung browser was closed, not handed to the next capture
        assert home.verify().ok
