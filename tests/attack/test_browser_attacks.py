"""Attack round on ``g6 fetch URL --render`` (issue 40), part 1: a hostile page trying to reach anything not
through the checked client.

Everything runs on loopback. The page is served as a public-looking name (``site.example``) that the test's
resolver gives a public address and its transport sends to a loopback server; loopback itself is refused, as in
production, so every loopback listener a page names must count 0 connections. The findings were strict
xfails (each failed on the code it was written against), now fixed; the plain tests are attacks already
defended, kept so they stay defended. The findings list, with severities and fixes, is in the attack report
on branch ``attack-browser``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from g6.adapters.browser import find_chromium
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import Reply
from g6.home import EvidenceHome
from tests.attack._browser_world import (
    PUBLIC,
    Listener,
    Recorder,
    capture,
    listeners,
    public_site,
    secure_world,
    started_pool,
    wait_until,
)

# -- defended: the channels of a page, each refused and receipted, none reaching a listener ------------------
# Each of these reaches the interception from a page on http://site.example/ and must leave a refused receipt
# (loopback refused before any connection).
RECEIPTED = ("css_import", "font", "imageset", "bg", "cursor", "maskimg", "listimg", "borderimg", "contenturl",
             "feimage", "svgimage", "object", "embed", "video", "audio", "inputimage", "picture", "preload",
             "modulepreload", "data_worker", "blob_worker", "importscripts", "srcdoc", "frame_js", "module_import",
             "xhr_sync", "wasm", "base_href")
# Either never asked for by this browser (a ping with --no-pings, a cross-site prefetch, a prerender, DNS
# prefetch, a manifest nobody installs, worklets and payment methods outside a secure context) or asked for only
# when the browser gets round to it (the icon, a compression dictionary): a receipt, when there is one, is a
# refusal; a connection, never.
QUIET = ("icon", "dict", "dnsprefetch", "prerender", "spec_prefetch", "ping", "manifest", "track", "svg_use",
         "paintworklet", "audioworklet", "payment", "fetchlater")
# Not requests at all (WebSocket, WebRTC over TCP, a beacon), tried from an about:blank frame's own window, which
# a page can reach before its own scripts run: they die in the browser.
DIRECT = ("srcdoc_ws", "blank_ws", "blank_rtc_tcp", "blank_beacon")
CHANNELS = RECEIPTED + QUIET + DIRECT


def channels_page(p: dict[str, Listener]) -> bytes:
    u = {k: f"http://127.0.0.1:{v.port}" for k, v in p.items()}
    spec = json.dumps({"prefetch": [{"source": "list", "urls": [u["spec_prefetch"] + "/sp"]}],
                       "prerender": [{"source": "list", "urls": ["/prerendered"]}]})
    return f"""<!doctype html><html><head><title>channels</title>
<link rel=icon href="{u['icon']}/ico"><link rel=dns-prefetch href="{u['dnsprefetch']}">
<link rel=preload as=image href="{u['preload']}/pl"><link rel=modulepreload href="{u['modulepreload']}/mp.js">
<link rel=prerender href="{u['prerender']}/pr"><link rel=manifest href="{u['manifest']}/m.json">
<link rel=compression-dictionary href="{u['dict']}/d">
<script type=speculationrules>{spec}</script>
<style>@import url({u['css_import']}/c.css);
@font-face {{font-family: evil; src: url({u['font']}/f.woff)}} body {{font-family: evil}}
.a {{background-image: image-set(url({u['imageset']}/i1) 1x)}} .b {{background: url({u['bg']}/bg.png)}}
.d {{cursor: url({u['cursor']}/c.cur), auto}} .e {{mask-image: url({u['maskimg']}/m.png)}}
.f {{list-style-image: url({u['listimg']}/l.png)}}
.g {{border: 10px solid; border-image: url({u['borderimg']}/b.png) 30}}
.h::before {{content: url({u['contenturl']}/c.png)}}</style></head><body>
<p>The channels page says hello.</p>
<div class=a>a</div><div class=b>b</div><div class=d>d</div><div class=e>e</div><ul class=f><li>f</li></ul>
<div class=g>g</div><div class=h>h</div>
<svg width=20 height=20><use href="{u['svg_use']}/s.svg#x"/>
<filter id=ff><feImage href="{u['feimage']}/fe.png"/></filter>
<rect filter="url(#ff)" width=10 height=10/><image href="{u['svgimage']}/si.png" width=5 height=5/></svg>
<object data="{u['object']}/obj" type="text/html"></object><embed src="{u['embed']}/emb" type="image/png">
<video src="{u['video']}/v.mp4" preload=auto><track default kind=captions src="{u['track']}/t.vtt"></video>
<audio src="{u['audio']}/a.mp3" preload=auto></audio>
<input type=image src="{u['inputimage']}/ii.png">
<picture><source srcset="{u['picture']}/p.png"><img src="/x.png"></picture>
<iframe name=pingframe></iframe><a id=pa ping="{u['ping']}/ping" href="/pinged" target=pingframe>x</a>
<iframe srcdoc="<script>fetch('{u['srcdoc']}/sd').catch(()=>0);
try {{ new WebSocket('ws://127.0.0.1:{p['srcdoc_ws'].port}/') }} catch (e) {{}}</script>"></iframe>
<iframe id=blank></iframe><iframe src="javascript:'<img src={u['frame_js']}/fj.png>'"></iframe>
<iframe srcdoc="<base href='{u['base_href']}/'><img src='b.png'>"></iframe>
<p id=lock></p>
<script>
const no = () => 0;
document.getElementById("pa").click();
new Worker("data:text/javascript," + encodeURIComponent("fetch('{u['data_worker']}/dw').catch(()=>0)"));
new Worker(URL.createObjectURL(new Blob(["fetch('{u['blob_worker']}/bw').catch(()=>0); ",
  "try {{ importScripts('{u['importscripts']}/is.js') }} catch (e) {{}}"])));
import("{u['module_import']}/mi.js").catch(no);
WebAssembly.compileStreaming(fetch("{u['wasm']}/m.wasm")).catch(no);
const w = document.getElementById("blank").contentWindow;
document.getElementById("lock").textContent = "blank frame: WebSocket " + typeof w.WebSocket + ", RTCPeerConnection "
  + typeof w.RTCPeerConnection + ", serviceWorker " + typeof w.navigator.serviceWorker;
try {{ new w.WebSocket("ws://127.0.0.1:{p['blank_ws'].port}/") }} catch (e) {{}}
try {{ w.navigator.sendBeacon("{u['blank_beacon']}/b", "x") }} catch (e) {{}}
try {{
  const pc = new w.RTCPeerConnection({{iceServers: [
    {{urls: "turn:127.0.0.1:{p['blank_rtc_tcp'].port}?transport=tcp", username: "u", credential: "c"}}]}});
  pc.createDataChannel("x"); pc.createOffer().then((o) => pc.setLocalDescription(o));
}} catch (e) {{}}
try {{ CSS.paintWorklet.addModule("{u['paintworklet']}/pw.js").catch(no) }} catch (e) {{}}
try {{ new AudioContext().audioWorklet.addModule("{u['audioworklet']}/aw.js").catch(no) }} catch (e) {{}}
try {{
  new PaymentRequest([{{supportedMethods: "{u['payment']}/pay"}}],
                     {{total: {{label: "t", amount: {{currency: "USD", value: "1"}}}}}}).canMakePayment().catch(no)
}} catch (e) {{}}
try {{ fetchLater("{u['fetchlater']}/fl") }} catch (e) {{}}
try {{ const x = new XMLHttpRequest(); x.open("GET", "{u['xhr_sync']}/x", false); x.send(); }} catch (e) {{}}
</script></body></html>""".encode()


def test_forty_channels_of_a_page_are_refused_and_receipted_and_reach_no_listener(
        home: EvidenceHome, pool: BrowserPool) -> None:
    """CSS (@import, fonts, image-set, cursors, masks, list and border images, generated content), SVG (use,
    feImage, image), object and embed, media and tracks, icons, preload and modulepreload, prerender and
    speculation rules, DNS prefetch, pings, manifests, compression dictionaries, data: and blob: workers,
    importScripts, dynamic import, WebAssembly streaming, sync XHR, srcdoc and javascript: frames, a <base> in a
    frame, worklets, payment methods, fetchLater, and WebSocket, WebRTC over TCP and a beacon from an about:blank
    frame's own window, all at loopback listeners. Correct: no listener counts a connection, every request that
    reached the interception is a refused receipt (address_not_public, loopback), the checked client asks its
    transport for nothing but the site's address, and the page lockdown holds in the about:blank frame too."""
    with listeners(list(CHANNELS)) as p:
        routes = {"/": Reply(body=channels_page(p)), "/prerendered": Reply(body=b"<p>prerendered</p>"),
                  "/pinged": Reply(body=b"<p>pinged</p>"), "/x.png": Reply(404, b"")}
        with public_site(routes) as (site, client, transport):
            c = capture(home, client, pool, "http://site.example/", deadline=10, quiet=60)
        counts = {k: x.count for k, x in p.items()}
        ports = {k: f":{x.port}/" for k, x in p.items()}
    assert counts == dict.fromkeys(CHANNELS, 0)
    assert set(transport.asked) == {PUBLIC[0]}
    assert c.result.outcome.value == "ok" and "The channels page says hello." in c.text
    assert "blank frame: WebSocket undefined, RTCPeerConnection undefined, serviceWorker undefined" in c.text
    for ch in CHANNELS:
        got = [s for s in c.subs if ports[ch] in str(s.request["url"])]
        if ch in RECEIPTED:
            assert got, f"{ch}: no receipt"
        for s in got:
            assert s.outcome == "refused" and s.content is None, (ch, s.to_json())
    assert home.verify().ok


def test_response_headers_that_reach_out_are_not_handed_to_the_browser(home: EvidenceHome, pool: BrowserPool) -> None:
    """The document's response carries every header a browser acts on by reaching out or keeping state: Link
    (preload, preconnect, prefetch), Refresh, Report-To with NEL, Reporting-Endpoints, a CSP whose report-uri and
    report-to get a violation, Set-Cookie and Strict-Transport-Security. Correct: none reaches a listener, none
    makes a request, and the cookie is not set (headers given to the browser are only those it needs)."""
    names = ("link_preload", "link_preconnect", "link_prefetch", "refresh", "report_to", "reporting", "csp")
    with listeners(list(names)) as p:
        u = {k: f"http://127.0.0.1:{v.port}" for k, v in p.items()}
        headers = (
            ("Link", f"<{u['link_preload']}/x.png>; rel=preload; as=image, <{u['link_preconnect']}>; rel=preconnect, "
                     f"<{u['link_prefetch']}/p>; rel=prefetch"),
            ("Refresh", f"1; url={u['refresh']}/"),
            ("Report-To", json.dumps({"group": "g", "max_age": 1000, "endpoints": [{"url": u["report_to"] + "/r"}]})),
            ("NEL", json.dumps({"report_to": "g", "max_age": 1000, "success_fraction": 1.0})),
            ("Reporting-Endpoints", f'default="{u["reporting"]}/r"'),
            ("Content-Security-Policy", f"img-src 'none'; report-uri {u['csp']}/r; report-to default"),
            ("Set-Cookie", "tracked=1; Max-Age=99999"),
            ("Strict-Transport-Security", "max-age=99999; includeSubDomains"),
        )
        page = b"""<p>Headers page.</p><img src="/pixel.png"><p id=c></p>
<script>document.getElementById("c").textContent = "cookie=[" + document.cookie + "]";</script>"""
        routes = {"/": Reply(body=page, headers=headers),
                  "/pixel.png": Reply(body=b"\x89PNG", content_type="image/png")}
        with public_site(routes) as (site, client, _t):
            c = capture(home, client, pool, "http://site.example/", deadline=5, quiet=60)
        counts = {k: x.count for k, x in p.items()}
        ports = [f":{x.port}" for x in p.values()]
    assert counts == dict.fromkeys(names, 0)
    assert "cookie=[]" in c.text
    assert not [s for s in c.subs if any(port in str(s.request["url"]) for port in ports)]


STRACE = shutil.which("strace")


def _strace_works() -> bool:
    if STRACE is None:
        return False
    return subprocess.run([STRACE, "-f", "-o", "/dev/null", "true"], capture_output=True).returncode == 0


def _escapes(trace: str, dead_port: int) -> list[str]:
    """The lines of an ``strace -f -yy`` of the browser that sent something somewhere: a TCP connect to any address
    but the dead proxy, or any datagram sent on an inet socket. A UDP connect alone sends nothing (Chromium probes
    IPv6 reachability that way) and is not one; unix sockets are the browser's own processes talking."""
    out = []
    for line in trace.splitlines():
        m = re.match(r"\d+\s+(connect|sendto|sendmsg|sendmmsg)\(\d+<(TCP|TCPv6|UDP|UDPv6)", line)
        if not m:
            continue
        call, proto = m.groups()
        if call == "connect" and proto.startswith("TCP"):
            if not (f"htons({dead_port})" in line and 'inet_addr("127.0.0.1")' in line):
                out.append(line)
        elif call != "connect":
            out.append(line)  # a datagram, or a byte on a TCP socket named by address (never the proxy's way)
    return out


@pytest.mark.skipif(not _strace_works(), reason="strace is not installed or may not trace here")
def test_the_browser_itself_connects_nowhere_but_its_dead_proxy(home: EvidenceHome, tmp_path: Path) -> None:
    """Below the DevTools protocol: every connect and every datagram of every Chromium process, under strace,
    while a page tries WebSocket, WebRTC (STUN over UDP at a listener and at a name, TURN over TCP), preconnect and
    DNS prefetch of names, images at names, a beacon, from a frame's own window (past the page lockdown), and a
    WebSocket from a worker (which the page lockdown does not reach). Correct:
    no TCP connection but to the dead proxy, no datagram at all (no DNS, no STUN, no QUIC)."""
    trace = tmp_path / "net.trace"
    wrapper = tmp_path / "chromium"
    exe = find_chromium()
    wrapper.write_text(f"#!/bin/sh\nexec {STRACE} -f -qq -yy -e trace=connect,sendto,sendmsg,sendmmsg "
                       f"-o {trace} {exe} \"$@\"\n")
    wrapper.chmod(0o755)
    names = ("ws", "rtc", "rtc_tcp", "img", "preconnect", "beacon")
    with BrowserPool(1, executable=str(wrapper)) as own:
        with own.browser() as b:
            dead = b.proxy_port
        with listeners(list(names), udp=("rtc",)) as p:
            u = {k: f"http://127.0.0.1:{v.port}" for k, v in p.items()}
            page = f"""<link rel=preconnect href="{u['preconnect']}"><link rel=preconnect href="http://preconnect-name.example/">
<link rel=dns-prefetch href="http://prefetch-name.example/"><p>Network page.</p><img src="{u['img']}/i">
<img src="http://image-name.example/x.png"><script>
const f = document.body.appendChild(document.createElement("iframe")).contentWindow;
const W = f.WebSocket || window.WebSocket, R = f.RTCPeerConnection || window.RTCPeerConnection;
try {{ new W("ws://127.0.0.1:{p['ws'].port}/") }} catch (e) {{}}
try {{ new W("ws://ws-name.example/") }} catch (e) {{}}
try {{ f.navigator.sendBeacon("{u['beacon']}/b", "x") }} catch (e) {{}}
try {{ const pc = new R({{iceServers: [{{urls: "stun:127.0.0.1:{p['rtc'].port}"}},
  {{urls: "stun:stun-name.example:3478"}},
  {{urls: "turn:127.0.0.1:{p['rtc_tcp'].port}?transport=tcp", username: "u", credential: "c"}}]}});
  pc.createDataChannel("x"); pc.createOffer().then((o) => pc.setLocalDescription(o)); }} catch (e) {{}}
new Worker(URL.createObjectURL(new Blob(["try {{ new WebSocket('ws://127.0.0.1:{p['ws'].port}/w') }} catch {{}}"])));
</script>""".encode()
            with public_site({"/": Reply(body=page)}) as (site, client, _t):
                c = capture(home, client, own, "http://site.example/", deadline=12, quiet=60)
            counts = {k: x.count for k, x in p.items()}
    assert c.result.outcome.value == "ok" and counts == dict.fromkeys(names, 0)
    text = trace.read_text(errors="replace")
    # the trace saw the browser's network: the dead proxy was tried (by the worker's WebSocket, which no page script
    # reaches; the browser's own services, which tried it too, are off)
    assert f"htons({dead})" in text
    assert _escapes(text, dead) == []


# -- findings: requests the Fetch domain never sees (stopped only by the dead proxy, never receipted) --------
@pytest.fixture
def recorded() -> Iterator[tuple[BrowserPool, Recorder]]:
    """A locked-down browser whose dead proxy is replaced by a recorder: what reaches it escaped the interception."""
    rec = Recorder()
    try:
        with started_pool(extra_flags=(rec.flag,)) as p:
            yield p, rec
    finally:
        rec.close()


FEDCM = b"""<p>A page that asks for a federated login.</p><p id=o></p><script>
navigator.credentials.get({identity: {providers: [{configURL: "https://idp.example/fedcm.json", clientId: "x"}]}})
  .then(() => 0, (e) => { document.getElementById("o").textContent = "fedcm: " + e.name; });
</script>"""


def test_fedcm_requests_of_a_page_reach_the_interception(home: EvidenceHome, recorded: tuple[BrowserPool, Recorder],
                                                         tmp_path: Path) -> None:
    """A secure page (https://site.example/) calls ``navigator.credentials.get({identity: …})`` naming an identity
    provider at https://idp.example/. Chromium fetches the provider's files from the browser process, outside the
    DevTools Fetch domain: the recorder standing in for the dead proxy gets ``CONNECT idp.example:443``. In
    production the dead proxy refuses it, so nothing leaves, but the page made a request that g6 never paused,
    never checked and never receipted, and one layer is all that stands between it and the network. Correct:
    FedCM is off in the capture's browser (or its fetches are paused like any other): the recorder sees nothing
    for idp.example."""
    pool, rec = recorded
    with secure_world({"/": Reply(body=FEDCM)}, tmp_path) as (site, client, _pki):
        c = capture(home, client, pool, "https://site.example/", deadline=6, quiet=60)
    assert c.result.outcome.value == "ok"
    assert [line for line in rec.seen() if "idp.example" in line] == []


def test_a_secure_page_is_not_preconnected_around_the_interception(home: EvidenceHome,
                                                                   recorded: tuple[BrowserPool, Recorder],
                                                                   tmp_path: Path) -> None:
    """Navigating to https://site.example/ makes Chromium open a connection to site.example:443 before (and
    beside) the request g6 answers: the recorder in place of the dead proxy gets ``CONNECT site.example:443``. For
    an IP-literal https URL no DNS stands in the way either, so the dead proxy is the only layer. Correct: the
    browser's network prediction is off (no preconnect, no prefetch of its own): the recorder sees nothing for
    site.example while every request of the page is answered by g6."""
    pool, rec = recorded
    with secure_world({"/": Reply(body=b"<p>A plain secure page.</p>")}, tmp_path) as (site, client, _pki):
        c = capture(home, client, pool, "https://site.example/", deadline=4, quiet=60)
    assert c.result.outcome.value == "ok" and "A plain secure page." in c.text
    assert [line for line in rec.seen() if "site.example" in line] == []


def test_the_browser_sends_nothing_of_its_own(home: EvidenceHome, recorded: tuple[BrowserPool, Recorder]) -> None:
    """The launch says every background service is off (updates, sync, safe browsing, metrics…). With the dead
    proxy replaced by a recorder and a plain page captured, the browser still sends ``GET
    http://clients2.google.com/time/1/current…`` (network time), ``POST http://update.googleapis.com/service/
    update2/json…`` (the component updater) and ``CONNECT accounts.google.com:443``. Correct: nothing reaches the
    proxy that the page did not ask for (the recorder is watched for 20 s: a guard, not a timing assertion)."""
    pool, rec = recorded
    with public_site({"/": Reply(body=b"<p>A plain page.</p>")}) as (site, client, _t):
        c = capture(home, client, pool, "http://site.example/", deadline=3, quiet=60)
    assert c.result.outcome.value == "ok"
    wait_until(lambda: bool(rec.seen()), 20)
    assert rec.seen() == []


def test_the_recorder_sees_what_escapes_interception(home: EvidenceHome,
                                                     recorded: tuple[BrowserPool, Recorder]) -> None:
    """The instrument of findings 1 to 3: a request the browser makes outside the Fetch domain (here, a
    WebSocket opened from a worker, where the page lockdown does not reach) arrives at the recorder as its proxy,
    so an empty recorder means nothing escaped, not that the recorder was deaf."""
    pool, rec = recorded
    page = b"""<p>socket</p><script>new Worker(URL.createObjectURL(new Blob(
["try { new WebSocket('ws://socket-name.example/') } catch (e) {}"])));</script>"""
    with public_site({"/": Reply(body=page)}) as (site, client, _t):
        capture(home, client, pool, "http://site.example/", deadline=3, quiet=60)
    assert wait_until(lambda: any("socket-name.example" in line for line in rec.seen()), 20), rec.seen()
