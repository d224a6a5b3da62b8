"""Attack round on b2229fd (a popup is let run before it is closed): what a popup can do while it runs.

A popup is attached paused like every new target; since b2229fd it is let run (``Runtime.runIfWaitingForDebugger``,
awaited) and only then closed. While it runs, the page that opened it holds its window (``window.open``'s return)
and the popup's own document may run scripts. The page is served as ``http://site.example/`` (loopback refused, as
in production); listeners on 127.0.0.1 count connections, so any channel that escaped the checked client shows.
The browser allows popups without a click (else none opens in a capture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import Reply
from g6.home import EvidenceHome
from tests.attack._browser_world import PUBLIC, capture, listeners, public_site, started_pool


@pytest.fixture(scope="module")
def popup_pool() -> Iterator[BrowserPool]:
    with started_pool(1, extra_flags=("--disable-popup-blocking",)) as p:
        yield p


def test_a_popup_window_the_page_holds_has_the_page_lockdown(home: EvidenceHome, popup_pool: BrowserPool) -> None:
    """The page opens an empty popup and reaches into its window (same origin: ``window.open`` returns it) for the
    channels the page lockdown removed from its own (WebSocket, RTCPeerConnection, sendBeacon, serviceWorker), as it
    can into an about:blank frame's (test_browser_attacks: the lockdown holds there). Correct: the popup's window has
    none of them either, no listener counts a connection, and the page goes on to be read (its later fetch made)."""
    chans = ["ws", "rtc_tcp", "beacon"]
    with listeners(chans) as p:
        u = {k: f"http://127.0.0.1:{v.port}" for k, v in p.items()}
        page = f"""<!doctype html><html><head><title>popup realm</title></head><body><p id=lock>no popup</p>
<p id=after>not yet</p><script>
const w = window.open("");
if (w) {{
  document.getElementById("lock").textContent = "popup window: WebSocket " + typeof w.WebSocket
    + ", RTCPeerConnection " + typeof w.RTCPeerConnection + ", serviceWorker " + typeof w.navigator.serviceWorker
    + ", sendBeacon " + String(w.navigator.sendBeacon("{u['beacon']}/b", "x"));
  try {{ new w.WebSocket("ws://127.0.0.1:{p['ws'].port}/") }} catch (e) {{}}
  try {{
    const pc = new w.RTCPeerConnection({{iceServers: [
      {{urls: "turn:127.0.0.1:{p['rtc_tcp'].port}?transport=tcp", username: "u", credential: "c"}}]}});
    pc.createDataChannel("x"); pc.createOffer().then((o) => pc.setLocalDescription(o));
  }} catch (e) {{}}
}}
fetch("/after").then((r) => r.text()).then((t) => {{ document.getElementById("after").textContent = t; }});
</script></body></html>"""
        routes = {"/": Reply(body=page.encode()), "/after": Reply(body=b"fetched after", content_type="text/plain")}
        with public_site(routes) as (_site, client, transport):
            c = capture(home, client, popup_pool, "http://site.example/", deadline=20)
        counts = {k: x.count for k, x in p.items()}
    assert counts == dict.fromkeys(chans, 0)
    assert set(transport.asked) == {PUBLIC[0]}
    assert c.receipt.capture["counts"]["popups"] == 1
    assert "fetched after" in c.text, c.text
    assert ("popup window: WebSocket undefined, RTCPeerConnection undefined, serviceWorker undefined, "
            "sendBeacon false") in c.text, c.text


def test_popups_that_run_open_popups_dialogs_and_navigate_leave_every_request_receipted_and_linked(
        home: EvidenceHome, popup_pool: BrowserPool) -> None:
    """Popups whose own document runs: each opens a dialog, opens another popup, fetches a loopback listener,
    tries a WebSocket and navigates itself; the page opens six of them (as many as the capture's answering threads,
    which each popup holds while it is let run) and then fetches its own text. Correct: the capture is not held up
    (settled, its text read), no listener counts a connection, and every receipt the capture left is one of its
    resources, linked to it (nothing of a popup's is answered outside the capture)."""
    with listeners(["fetch", "ws"]) as p:
        popup = f"""<!doctype html><script>
try {{ alert("from a popup") }} catch (e) {{}}
window.open("/p?" + Math.random());
fetch("http://127.0.0.1:{p['fetch'].port}/f").catch(() => 0);
try {{ new WebSocket("ws://127.0.0.1:{p['ws'].port}/") }} catch (e) {{}}
location.href = "/q";
</script>"""
        page = """<!doctype html><html><head><title>popups</title></head><body><p id=after>not yet</p><script>
for (let i = 0; i < 6; i++) window.open("/p?" + i);
fetch("/after").then((r) => r.text()).then((t) => { document.getElementById("after").textContent = t; });
</script></body></html>"""
        routes = {"/": Reply(body=page.encode()), "/p": Reply(body=popup.encode()), "/q": Reply(body=b"<p>q</p>"),
                  "/after": Reply(body=b"fetched after", content_type="text/plain")}
        with public_site(routes) as (_site, client, transport):
            c = capture(home, client, popup_pool, "http://site.example/", deadline=20)
        counts = {k: x.count for k, x in p.items()}
    assert counts == {"fetch": 0, "ws": 0}
    assert set(transport.asked) == {PUBLIC[0]}
    assert c.cap["ended"] == "settled", c.cap
    assert c.cap["counts"]["popups"] >= 6
    assert "fetched after" in c.text, c.text
    everything = [e.receipt for e in home.ledger.entries() if e.receipt.receipt_id != c.receipt.receipt_id]
    assert [s.receipt_id for s in everything] == [s.receipt_id for s in c.subs]
    assert [s.receipt_id for s in c.subs] == [r["receipt_id"] for r in c.cap["resources"]]
    for s in c.subs:
        if f":{p['fetch'].port}/" in s.request["url"]:
            assert (s.outcome, s.detail["reason"]) == ("refused", "address_not_public")
