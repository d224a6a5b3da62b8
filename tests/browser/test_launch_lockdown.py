"""The launch alone: whatever a page does that g6 does not intercept dies in the browser.

The page is answered by the test itself (only its own URL is intercepted) and runs without g6's lockdown
script, so every channel is tried for real: WebSocket, WebRTC (STUN over UDP), preconnect, images, fetch,
frames, to 127.0.0.1 and to ``localhost``. A plain Chromium (tests/headless.py, the control) reaches every
listener with the same page; the locked-down launch reaches none: the dead proxy (loopback included), no
DNS, no UDP for WebRTC.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from world import Listener, listeners, need_chromium, wait_until

from g6.adapters.browser import BrowserProcess
from g6.demo.site import LocalSite, Reply

CHANNELS = ("ws", "rtc", "preconnect", "img", "fetch", "iframe", "localhost")


def page(p: dict[str, Listener]) -> bytes:
    u = {k: f"http://127.0.0.1:{v.port}" for k, v in p.items()}
    return f"""<!doctype html><html><head><link rel="preconnect" href="{u['preconnect']}"></head><body>
<p>attempts</p><img id="img" src="{u['img']}/i.png"><iframe id="fr" src="{u['iframe']}/f"></iframe>
<script>
const waits = [];
waits.push(new Promise((ok) => {{ const i = document.getElementById("img"); i.onerror = i.onload = ok;
  if (i.complete) ok(); }}));
waits.push(fetch("{u['fetch']}/f").then(() => 0, () => 0));
waits.push(fetch("http://localhost:{p['localhost'].port}/l").then(() => 0, () => 0));
waits.push(new Promise((ok) => {{ const w = new WebSocket("ws://127.0.0.1:{p['ws'].port}/"); w.onerror = w.onclose = ok;
  w.onopen = () => {{ w.close(); ok(); }}; }}));
waits.push(new Promise((ok) => {{
  const pc = new RTCPeerConnection({{iceServers: [{{urls: "stun:127.0.0.1:{p['rtc'].port}"}}]}});
  pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === "complete") ok(); }};
  pc.createDataChannel("x"); pc.createOffer().then((o) => pc.setLocalDescription(o));
  setTimeout(ok, 8000); }}));
Promise.all(waits).then(() => {{ document.title = "done"; }});
</script></body></html>""".encode()


def test_a_plain_chromium_reaches_every_listener_with_this_page() -> None:
    """The control: the page's attempts are real (without the lockdown, each one arrives)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from headless import chromium

    with listeners(list(CHANNELS), udp=("rtc",)) as p:
        site = LocalSite({"/": Reply(body=page(p))}).start()
        try:
            with chromium() as b:
                b.open_url(site.url("/"))
                # a guard for a browser that never tries, not a timing assertion
                assert wait_until(lambda: all(x.count for x in p.values()), 30), {k: x.count for k, x in p.items()}
        finally:
            site.stop()


def test_the_locked_down_launch_reaches_no_listener() -> None:
    with listeners(list(CHANNELS), udp=("rtc",)) as p:
        body = page(p)
        b = BrowserProcess(need_chromium())
        try:
            def on_event(msg: dict[str, Any]) -> None:
                if msg["method"] == "Fetch.requestPaused":  # only the page's own URL is intercepted
                    b.cdp.post("Fetch.fulfillRequest", {
                        "requestId": msg["params"]["requestId"], "responseCode": 200,
                        "responseHeaders": [{"name": "Content-Type", "value": "text/html"}],
                        "body": base64.b64encode(body).decode()})

            b.cdp.set_event_handler(on_event)
            b.cdp.send("Fetch.enable", {"patterns": [{"urlPattern": "http://site.example/*"}]})
            # the default context (preconnect is not even tried in the incognito contexts captures use)
            target = b.cdp.send("Target.createTarget", {"url": "http://site.example/"})["targetId"]
            session = b.cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

            def title() -> object:
                res = b.cdp.send("Runtime.evaluate", {"expression": "document.title", "returnByValue": True},
                                 session=session)
                return res["result"].get("value")

            # the page says when every attempt has ended (refused, errored or timed out): a guard, not timing
            assert wait_until(lambda: title() == "done", 60), "the page never finished its attempts"
            assert {k: x.count for k, x in p.items()} == dict.fromkeys(CHANNELS, 0)
        finally:
            b.close()
        assert json.dumps(b.info.to_json())  # the browser answered: it was a real one


def test_a_capture_context_starts_no_page_of_chromiums_own() -> None:
    """Chromium 156 loads two WebUI omnibox popups (chrome://omnibox-popup.top-chrome/) in a renderer of their
    own for every browser context, so for every capture: about half a core-second each, for an omnibox a
    headless browser never shows. The launch turns them off; a context then holds only the page it was given."""
    b = BrowserProcess(need_chromium())
    try:
        for _ in range(2):  # the second context too: the popups came with each one
            context = b.cdp.send("Target.createBrowserContext", {"disposeOnDetach": True})["browserContextId"]
            b.cdp.send("Target.createTarget", {"url": "about:blank", "browserContextId": context})

            def targets(ctx: str = context) -> list[tuple[str, str]]:
                infos = b.cdp.send("Target.getTargets", {"filter": [{}]})["targetInfos"]
                return sorted((t["type"], t["url"]) for t in infos if t.get("browserContextId") == ctx)

            # the popups appear as the context's page is made; both its page and its tab are there by then
            assert wait_until(lambda: len(targets()) >= 2, 20)
            assert targets() == [("page", "about:blank"), ("tab", "about:blank")]
            b.cdp.send("Target.disposeBrowserContext", {"browserContextId": context})
    finally:
        b.close()
