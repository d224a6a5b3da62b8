"""When a render takes the page as settled (adapters/browser/render.py, the settle rule): at once when the network is
quiet and the page has nothing under way (no short timer or interval, no idle callback, no unanswered fetch or XHR,
no frame, no worker), never before a short timer fires or a fetch is answered, and by the quiet window when it keeps
something pending or tampers with the count.

Each test makes the quiet window longer than the deadline (or the deadline long) where the outcome must not depend on
the machine's speed: ``ended`` says which rule ended the render, not how long it took."""

from __future__ import annotations

import json
from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
NEVER_QUIET = RenderLimits(deadline=20, quiet=600)  # only the settle rule (or the deadline) can end these


def page(site: Site, script: str, body: str = "<p>There from the start.</p>",
         more: dict[str, Reply] | None = None) -> LocalSite:
    html = f'<!doctype html><html><body>{body}<div id="out"></div><script>{script}</script></body></html>'
    words = {"/words.json": Reply(body=json.dumps({"text": "Words the script fetched."}).encode(),
                                  content_type="application/json")}
    return site({"/": Reply(body=html.encode()), "/robots.txt": ROBOTS, **words, **(more or {})})


SHOW = ('fetch("/words.json").then((r) => r.json())'
        '.then((d) => { document.getElementById("out").textContent = d.text; })')


def render(home: EvidenceHome, client: CheckedClient, pool: BrowserPool, s: LocalSite,
           limits: RenderLimits = NEVER_QUIET) -> tuple[str, str]:
    result = fetch_rendered(home, client, pool, s.url("/"), limits=limits)
    cap = home.ledger.get(result.receipt_id).capture
    return cap["ended"], home.store.read_as(cap["text"]).decode()


def test_a_page_with_nothing_under_way_is_settled_without_its_quiet_window(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    ended, text = render(home, client, pool, page(site, SHOW))
    assert ended == "settled" and "Words the script fetched." in text


def test_a_short_timer_is_waited_for(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                     site: Site) -> None:
    # nothing is asked for while the timer runs: only the page's count of it holds the render
    ended, text = render(home, client, pool, page(site, f"setTimeout(() => {{ {SHOW}; }}, 1500);"))
    assert ended == "settled" and "Words the script fetched." in text


def test_a_timer_chain_and_an_xhr_are_waited_for(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                                site: Site) -> None:
    script = """setTimeout(() => setTimeout(() => { const x = new XMLHttpRequest(); x.open("GET", "/words.json");
      x.onload = () => setTimeout(() => { document.getElementById("out").textContent = JSON.parse(x.responseText).text;
      }, 300); x.send(); }, 300), 300);"""
    ended, text = render(home, client, pool, page(site, script))
    assert ended == "settled" and "Words the script fetched." in text


def test_a_page_that_keeps_a_timer_pending_is_settled_by_the_quiet_window(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    clock = 'let n = 0; const tick = () => { document.getElementById("out").textContent = "tick " + n++; ' \
            'setTimeout(tick, 50); }; tick();'
    ended, _ = render(home, client, pool, page(site, clock), RenderLimits(deadline=600, quiet=1))
    assert ended == "settled"
    ended, _ = render(home, client, pool, page(site, clock), RenderLimits(deadline=5, quiet=600))
    assert ended == "deadline"  # never taken as settled by the settle rule while its timer is pending


def test_a_page_with_a_frame_or_a_tampered_count_waits_out_its_quiet_window(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    framed = page(site, SHOW, body='<p>Framed.</p><iframe src="/frame"></iframe>',
                  more={"/frame": Reply(body=b"<p>A frame whose own timers g6 does not count.</p>")})
    assert render(home, client, pool, framed, RenderLimits(deadline=5, quiet=600))[0] == "deadline"
    tampered = page(site, f'Symbol.for = () => Symbol("another"); {SHOW};')
    assert render(home, client, pool, tampered, RenderLimits(deadline=5, quiet=600))[0] == "deadline"


def test_a_short_interval_is_waited_for_until_it_is_cleared(home: EvidenceHome, client: CheckedClient,
                                                           pool: BrowserPool, site: Site) -> None:
    # a poller that asks for nothing for two ticks, then fetches and stops: only its interval holds the render
    poller = f'let n = 0; const id = setInterval(() => {{ if (++n === 3) {{ clearInterval(id); {SHOW}; }} }}, 300);'
    ended, text = render(home, client, pool, page(site, poller))
    assert ended == "settled" and "Words the script fetched." in text


def test_an_idle_callback_is_waited_for(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                        site: Site) -> None:
    # a chain of idle callbacks (each runs in an idle period of its own), then the fetch
    script = f"let n = 0; const next = () => {{ if (++n < 40) requestIdleCallback(next); else {{ {SHOW}; }} }}; next();"
    ended, text = render(home, client, pool, page(site, script))
    assert ended == "settled" and "Words the script fetched." in text


def test_a_navigation_by_script_is_waited_for(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                             site: Site) -> None:
    nxt = Reply(body=b"<!doctype html><html><body><p>The page the script went to.</p></body></html>")
    s = page(site, 'setTimeout(() => { location.href = "/next"; }, 200);', more={"/next": nxt})
    ended, text = render(home, client, pool, s)
    assert ended == "settled" and "The page the script went to." in text


def test_a_page_with_a_worker_waits_out_its_quiet_window(home: EvidenceHome, client: CheckedClient,
                                                         pool: BrowserPool, site: Site) -> None:
    # the worker's own timer is not counted in the page's world: the capture must not be taken early
    worker = Reply(body=b'setTimeout(() => postMessage("Words the worker sent."), 300);',
                   content_type="text/javascript")
    script = ('const w = new Worker("/w.js"); '
              'w.onmessage = (e) => { document.getElementById("out").textContent = e.data; };')
    s = page(site, script, more={"/w.js": worker})
    assert render(home, client, pool, s, RenderLimits(deadline=5, quiet=600))[0] == "deadline"


def test_a_count_the_page_forged_is_not_taken_for_none(home: EvidenceHome, client: CheckedClient,
                                                       pool: BrowserPool, site: Site) -> None:
    # the page answers for the probe with false, then "0": neither is the probe's own 0
    for value in ("false", '"0"'):
        forged = ('const own = Symbol.for, fake = Symbol("fake"); globalThis[fake] = () => ' + value + '; '
                  'Symbol.for = (k) => (k === "g6.pending-work" ? fake : own(k)); '
                  'setInterval(() => {}, 50);')
        ended, _ = render(home, client, pool, page(site, forged), RenderLimits(deadline=4, quiet=600))
        assert ended == "deadline", value
