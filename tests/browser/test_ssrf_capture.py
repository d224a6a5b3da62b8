"""A capture of a hostile page: every request goes through the checked client, and nothing reaches loopback.

The page is served as ``http://site.example/`` (a public-looking name that the test's resolver gives a public
address and its transport sends to a loopback server), under the production policy: loopback is not allowed.
Its scripts try every channel at listeners on 127.0.0.1 that count connections at accept (and a UDP one
that counts datagrams), at 169.254.169.254, at a private address, at a name that resolves to loopback, and
through a redirect of the site's own. The browser is made weaker on purpose (popups allowed, the site
treated as a secure origin so a service worker may register) and the test runs with and without g6's
page lockdown script: the proxy and the interception hold alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from world import PUBLIC, Listener, listeners, mapped_client, need_chromium

from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

# reach interception: each must leave a refused receipt naming its listener
INTERCEPTED = ("fetch", "img", "iframe", "prefetch", "formget", "location", "meta", "eventsource",
               "worker", "shared", "loopname", "redirect")
POSTED = ("formpost", "keepalive", "pagehide")  # refused as a POST: a capture sends no data
# die in the browser, or never run ("open": a popup, closed as it opens)
DIRECT = ("ws", "worker_ws", "preconnect", "rtc", "sw", "beacon", "open")
CHANNELS = INTERCEPTED + POSTED + DIRECT
WEAKER = ("--disable-popup-blocking", "--unsafely-treat-insecure-origin-as-secure=http://site.example")


def routes(p: dict[str, Listener]) -> dict[str, Reply]:
    u = {k: f"http://127.0.0.1:{v.port}" for k, v in p.items()}
    js = "text/javascript"
    main = f"""<!doctype html><html><head><title>hostile</title>
<link rel="preconnect" href="{u['preconnect']}"><link rel="prefetch" href="{u['prefetch']}/p"></head><body>
<p>The page itself says hello.</p>
<img src="{u['img']}/i.png"><iframe src="{u['iframe']}/f"></iframe>
<iframe src="/frame-location"></iframe><iframe src="/frame-meta"></iframe><iframe src="/frame-pagehide"></iframe>
<form id="fp" method="post" action="{u['formpost']}/" target="t1"><input name="a" value="secret"></form>
<iframe name="t1"></iframe>
<form id="fg" method="get" action="{u['formget']}/" target="t2"><input name="a" value="b"></form>
<iframe name="t2"></iframe>
<script>
const no = () => 0;
fetch("{u['fetch']}/f").catch(no);
fetch("http://169.254.169.254/latest/meta-data/").catch(no);
fetch("http://10.0.0.8/internal").catch(no);
fetch("http://loop.example:{p['loopname'].port}/").catch(no);
fetch("/redirect").catch(no);
fetch("{u['keepalive']}/k", {{keepalive: true, method: "POST", body: "data"}}).catch(no);
try {{ new WebSocket("ws://127.0.0.1:{p['ws'].port}/"); }} catch (e) {{}}
try {{ const pc = new RTCPeerConnection({{iceServers: [{{urls: "stun:127.0.0.1:{p['rtc'].port}"}}]}});
  pc.createDataChannel("x"); pc.createOffer().then((o) => pc.setLocalDescription(o)); }} catch (e) {{}}
fp.submit(); fg.submit();
window.open("{u['open']}/popup");
new Worker("/worker.js"); new SharedWorker("/shared.js");
try {{ new EventSource("{u['eventsource']}/es"); }} catch (e) {{}}
try {{ navigator.serviceWorker.register("/sw.js").catch(no); }} catch (e) {{}}
</script></body></html>"""
    return {
        "/": Reply(body=main.encode()),
        "/robots.txt": Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain"),
        "/redirect": Reply(302, b"", headers=(("Location", f"{u['redirect']}/r"),)),
        "/frame-location": Reply(body=f'<script>location.href = "{u["location"]}/";</script>'.encode()),
        "/frame-meta": Reply(body=f'<meta http-equiv="refresh" content="0;url={u["meta"]}/">'.encode()),
        "/frame-pagehide": Reply(body=f"""<script>addEventListener("pagehide", () => {{
  try {{ navigator.sendBeacon("{u['beacon']}/b", "x"); }} catch (e) {{}}
  fetch("{u['pagehide']}/k", {{keepalive: true, method: "POST", body: "x"}}).catch(() => 0); }});
setTimeout(() => {{ location.href = "/gone"; }}, 50);</script>""".encode()),
        "/gone": Reply(body=b"<p>gone</p>"),
        "/worker.js": Reply(body=f"""fetch("{u['worker']}/w").catch(() => 0);
try {{ new WebSocket("ws://127.0.0.1:{p['worker_ws'].port}/"); }} catch (e) {{}}""".encode(), content_type=js),
        "/shared.js": Reply(body=f'fetch("{u["shared"]}/s").catch(() => 0);'.encode(), content_type=js),
        "/sw.js": Reply(body=f'self.addEventListener("install", () => fetch("{u["sw"]}/sw"));'.encode(),
                        content_type=js),
    }


@pytest.fixture(scope="module")
def weak_pool() -> Iterator[BrowserPool]:
    need_chromium()
    with BrowserPool(1, extra_flags=WEAKER) as p:
        yield p


@pytest.mark.parametrize("page_lockdown", [True, False], ids=["with-page-lockdown", "network-lockdown-alone"])
def test_every_channel_is_refused_receipted_and_reaches_no_listener(home: EvidenceHome, weak_pool: BrowserPool,
                                                                    page_lockdown: bool) -> None:
    with listeners(list(CHANNELS), udp=("rtc",)) as p:
        site = LocalSite(routes(p)).start()
        client, transport = mapped_client({"site.example": site.port},
                                          extra_names={"loop.example": ["127.0.0.1"]})
        try:
            # the deadline ends the capture (quiet never comes first): every attempt has the whole of it
            limits = RenderLimits(deadline=12, quiet=60, page_lockdown=page_lockdown)
            result = fetch_rendered(home, client, weak_pool, "http://site.example/", limits=limits)
        finally:
            client.close()
            site.stop()
        counts = {k: x.count for k, x in p.items()}
    assert counts == dict.fromkeys(CHANNELS, 0)
    # the checked client never even tried the refused addresses: only the site's public address
    assert set(transport.asked) == {PUBLIC[0]}
    capture = home.ledger.get(result.receipt_id)
    assert result.outcome.value == "ok" and "The page itself says hello." in result.documents[0].text
    assert capture.capture["ended"] == "deadline"
    assert capture.capture["counts"]["popups"] == 1
    for s in (x for x in home.ledger.entries() if f":{p['open'].port}/" in str(x.receipt.request.get("url"))):
        assert s.receipt.outcome == "refused"  # if the popup asked before it was closed, it was refused
    subs = [e.receipt for e in home.ledger.entries() if e.receipt.links.get("capture") == capture.receipt_id]
    assert [s.receipt_id for s in subs] == [r["receipt_id"] for r in capture.capture["resources"]]
    by_port = {ch: [s for s in subs if f":{p[ch].port}/" in s.request["url"]] for ch in CHANNELS}
    for ch in INTERCEPTED:
        assert by_port[ch], f"{ch}: no receipt"
        for s in by_port[ch]:
            assert (s.outcome, s.detail["reason"]) == ("refused", "address_not_public"), (ch, s.to_json())
            assert any(a["category"] == "loopback" for a in s.detail["addresses"])
            assert s.hops == () and s.content is None  # refused before any connection
    for ch in POSTED:
        assert [(s.outcome, s.detail["reason"], s.request["method"]) for s in by_port[ch]] == [
            ("refused", "method_not_get", "POST")], ch
    refused = {s.request["url"]: s.detail for s in subs if s.outcome == "refused"}
    assert [a["category"] for a in refused["http://169.254.169.254/latest/meta-data/"]["addresses"]] == ["link_local"]
    assert [a["category"] for a in refused["http://10.0.0.8/internal"]["addresses"]] == ["private"]
    redirect = next(s for s in subs if s.request["url"] == "http://site.example/redirect")
    assert (redirect.outcome, redirect.http_status, redirect.detail["reason"]) == ("ok", 302, "redirect")
    assert not any(s.content for s in subs if s.outcome == "refused")
    if not page_lockdown:  # the script asked for a service worker: its script was refused, never run
        sw = [s for s in subs if s.request["url"] == "http://site.example/sw.js"]
        assert [(s.outcome, s.detail["reason"]) for s in sw] == [("refused", "service_worker_script")]
    assert home.verify().ok
    assert json.dumps(capture.to_json())
