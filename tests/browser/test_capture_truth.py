"""What a capture says about the page it kept: dialogs it dismissed, the document it shows, the URL it read, what it
cut short. The attack tests (tests/attack/test_browser_*.py) hold the findings themselves; these hold what the
capture receipt records of each fix."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cli import cli
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")


def test_a_dialog_is_dismissed_and_named_in_the_capture(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                                        site: Site) -> None:
    page = (b"<p>Zqbefore.</p><script>alert('Welcome!'); const c = confirm('Sure?'); const p = prompt('Name?');"
            b"document.body.append('Zqanswers ' + c + ' ' + p);</script><p>Zqafter.</p>")
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10, command_timeout=5))
    cap = home.ledger.get(r.receipt_id).capture
    assert r.outcome.value == "ok" and cap is not None
    assert cap["dialogs"] == {"dismissed": 3, "seen": [{"type": "alert", "message": "Welcome!"},
                                                       {"type": "confirm", "message": "Sure?"},
                                                       {"type": "prompt", "message": "Name?"}]}
    text = r.documents[0].text or ""
    assert "Zqbefore." in text and "Zqafter." in text and "Zqanswers false null" in text


def test_a_page_without_a_dialog_names_none(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                            site: Site) -> None:
    s = site({"/": Reply(body=b"<p>Zqplain.</p>"), "/robots.txt": ROBOTS})
    r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and "dialogs" not in cap


def test_the_document_shown_decides_the_outcome_and_its_requests_are_the_hops(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    """Both sides of the rule: a script navigation that commits (to a 404) is the capture's document; one the
    browser never shows (a download) is a resource of the capture, not its document nor a hop."""
    go = b"<p>Zqfirst.</p><script>setTimeout(() => { location.href = '%s'; }, 50);</script>"
    s = site({"/": Reply(body=go % b"/gone"), "/dl": Reply(body=go % b"/file.bin"),
              "/gone": Reply(404, b"<p>Zqgone.</p>"), "/robots.txt": ROBOTS,
              "/file.bin": Reply(body=b"\x00 a file", content_type="application/octet-stream")})
    lim = RenderLimits(deadline=10, quiet=1)
    moved = home.ledger.get(fetch_rendered(home, client, pool, s.url("/"), limits=lim).receipt_id)
    assert (moved.outcome, moved.http_status) == ("not_found", 404)
    assert [h.url for h in moved.hops] == [s.url("/"), s.url("/gone")]

    stayed = home.ledger.get(fetch_rendered(home, client, pool, s.url("/dl"), limits=lim).receipt_id)
    assert (stayed.outcome, stayed.http_status) == ("ok", 200)
    assert [h.url for h in stayed.hops] == [s.url("/dl")]
    subs = {str(e.receipt.request["url"]): e.receipt for e in home.ledger.entries()
            if e.receipt.links.get("capture") == stayed.receipt_id}
    assert subs[s.url("/file.bin")].outcome == "ok"
    assert {x["receipt_id"] for x in (stayed.capture or {})["resources"]} >= {subs[s.url("/file.bin")].receipt_id}


def test_the_final_url_is_the_url_read_and_the_address_a_script_showed_is_kept_apart(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    page = b"<p>Zqpage a.</p><script>history.pushState(null, '', '/shown/elsewhere?x=1');</script>"
    s = site({"/a": Reply(body=page), "/b": Reply(body=b"<p>Zqpage b.</p>"), "/robots.txt": ROBOTS})
    lim = RenderLimits(deadline=10)
    r = fetch_rendered(home, client, pool, s.url("/a"), limits=lim)
    receipt = home.ledger.get(r.receipt_id)
    assert receipt.final_url == s.url("/a") == r.documents[0].url
    assert receipt.capture is not None and receipt.capture["final_url"] == s.url("/a")
    assert receipt.capture["location_url"] == s.url("/shown/elsewhere?x=1")
    plain = home.ledger.get(fetch_rendered(home, client, pool, s.url("/b#part"), limits=lim).receipt_id)
    assert plain.capture is not None and plain.final_url == plain.capture["final_url"] == s.url("/b")
    assert "location_url" not in plain.capture


@pytest.mark.parametrize("url", ["chrome://version", "view-source:http://127.0.0.1/", "data:text/html,<p>x</p>",
                                 "file:///etc/hostname", "javascript:alert(1)", "about:blank"])
def test_render_refuses_a_url_that_is_not_http_before_any_browser_starts(tmp_path: Path, url: str) -> None:
    """An input error (exit 2, refusal.v1 under --json), with nothing started, fetched or receipted; a raw read of the
    same URL is receipted refused as before."""
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "fetch", url, "--render", "--json"],
                           env={"G6_CHROMIUM": str(tmp_path / "no-such-browser")})
    assert r.exit_code == 2, r.output
    out = json.loads(r.stdout)
    assert (out["outcome"], out["code"]) == ("rejected", "G6_E_KNOWLEDGE_FETCH_INPUT")
    assert "http and https pages only" in out["message"]


def test_a_url_that_is_not_http_is_receipted_refused_without_a_browser(home: EvidenceHome, client: CheckedClient,
                                                                       tmp_path: Path) -> None:
    """The library's render of such a URL: refused (scheme) as the raw read is, no browser asked for (the pool here
    can start none), no DOM, text or screenshot, engine null."""
    with BrowserPool(1, executable=str(tmp_path / "no-such-browser")) as none:
        r = fetch_rendered(home, client, none, "chrome://version", limits=RenderLimits(deadline=5))
        assert none.started == 0
    receipt = home.ledger.get(r.receipt_id)
    assert (receipt.outcome, receipt.detail["reason"]) == ("refused", "scheme")
    cap = receipt.capture
    assert cap is not None and cap["engine"] is None and cap["resources"] == []
    assert cap["dom"] is None and cap["text"] is None and cap["screenshot"] is None


@pytest.mark.parametrize("target", ["'about:blank'", "URL.createObjectURL(new Blob(['<p>Zqmade up.</p>'], "
                                                     "{type: 'text/html'}))"], ids=["about_blank", "blob"])
def test_a_document_the_page_opens_that_is_not_http_is_refused_and_nothing_of_it_kept(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site, target: str) -> None:
    """The page's script sends the top frame to a document no request answers (about:blank, a blob: URL of its own
    making): the capture shows no read of g6's, so it is refused (scheme) and keeps no DOM, text or screenshot."""
    page = f"<p>Zqreal.</p><script>setTimeout(() => {{ location.href = {target}; }}, 50);</script>".encode()
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10, quiet=1))
    receipt = home.ledger.get(r.receipt_id)
    assert (receipt.outcome, receipt.detail["reason"]) == ("refused", "scheme"), receipt.detail
    assert receipt.final_url is None and not r.documents
    cap = receipt.capture
    assert cap is not None and cap["dom"] is None and cap["text"] is None and cap["screenshot"] is None


def test_what_a_capture_keeps_of_its_own_is_cut_to_its_byte_limit_and_says_so(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    """A 100-byte page whose script writes 3 MB of text, and paints a canvas of noise, under a 400 kB limit: the
    DOM keeps at most half of it, the text and the screenshot a quarter each, all named in ``truncated``."""
    page = (b"<p>Zqsmall page.</p><canvas id=c width=1200 height=700></canvas><script>"
            b"const x = document.getElementById('c').getContext('2d'), d = x.createImageData(1200, 700);"
            b"for (let i = 0; i < d.data.length; i++) d.data[i] = (i % 4 === 3) ? 255 : Math.random() * 256;"
            b"x.putImageData(d, 0, 0); document.body.append('\\u00e9'.repeat(1500000));</script>")
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    limit = 400_000
    r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10, max_bytes=limit))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and cap["ended"] == "byte_limit"
    assert cap["truncated"] == ["dom", "text", "screenshot"]
    assert cap["dom"]["size"] <= limit // 2 and cap["text"]["size"] <= limit // 4
    assert cap["screenshot"] is None or cap["screenshot"]["size"] <= limit // 4
    text = home.store.read_as(cap["text"]).decode("utf-8")  # cut at a character: still UTF-8
    assert text.startswith("Zqsmall page.") and r.outcome.value == "ok"


def test_closed_shadow_roots_past_the_bound_are_left_out_and_said_to_be(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    page = (b"<p>Zqroots.</p><script>for (let i = 0; i < 260; i++) { const d = document.createElement('div');"
            b"document.body.append(d); d.attachShadow({mode: 'closed'}).innerHTML = '<b>Zqroot' + i + '</b>'; }"
            b"</script>")
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10))
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and cap["truncated"] == ["shadow_roots"] and cap["ended"] == "settled"
    assert len(re.findall(r"Zqroot\d+", r.documents[0].text or "")) == 200


def test_a_text_walk_out_of_time_stops_where_it_got_to_and_says_so(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    """The walk of the reader's text has a time of its own (most of a command's): on a page of very many nodes it
    stops and the text is cut there, named in ``truncated``; what it kept is the start of the whole text."""
    page = "".join(f"<p>Zqline {i} of the page.</p>" for i in range(3000)).encode()
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    whole = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10))
    cut = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=10, text_seconds=0.0))
    assert "truncated" not in (home.ledger.get(whole.receipt_id).capture or {})
    cap = home.ledger.get(cut.receipt_id).capture
    assert cap is not None and cap["truncated"] == ["text"]
    kept = home.store.read_as(cap["text"]).decode() if cap["text"] else ""
    full = whole.documents[0].text or ""
    assert len(kept) < len(full) and full.startswith(kept) and "Zqline 2999 of the page." in full


def test_a_request_still_being_read_when_the_capture_stops_is_receipted_as_cut_short(
        home: EvidenceHome, pool: BrowserPool, site: Site) -> None:
    """The page asks for /slow.png (answered only when the test lets it) and then an image past the byte limit: the
    limit stops the capture while /slow.png is being read. Its receipt is in the capture (``unreachable``,
    ``capture_ended``), listed with the others, and the capture verifies."""
    release = threading.Event()

    def slow(req: SeenRequest) -> Reply:
        release.wait(60)
        return Reply(body=b"\x89PNG slow", content_type="image/png")

    other = site({"/big.png": Reply(body=bytes(60_000), content_type="image/png"), "/robots.txt": ROBOTS},
                 host="127.0.0.2")  # another host: the slow read holds its own host's turn
    page = (b"<p>Zqslow page.</p><img src='/slow.png'><script>setTimeout(() => { new Image().src = '%s'; }, 200);"
            b"</script>") % other.url("/big.png").encode()
    s = site({"/": Reply(body=page), "/slow.png": slow, "/robots.txt": ROBOTS})
    patient = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=5, read_timeout=60, total_timeout=60)
    try:
        with CheckedClient(patient) as client:
            r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(
                deadline=60, quiet=600, command_timeout=3, max_bytes=50_000))
            asked = [q.path for q in s.requests]
            release.set()
    finally:
        release.set()
    cap = home.ledger.get(r.receipt_id).capture
    assert cap is not None and cap["ended"] == "byte_limit"
    subs = {str(e.receipt.request["url"]): e.receipt for e in home.ledger.entries()
            if e.receipt.links.get("capture") == r.receipt_id}
    cut = subs[s.url("/slow.png")]
    assert (cut.outcome, cut.detail["reason"], cut.content) == ("unreachable", "capture_ended", None)
    assert {x["receipt_id"] for x in cap["resources"]} == {x.receipt_id for x in subs.values()}
    assert len(cap["resources"]) == cap["counts"]["requests"]
    assert "/slow.png" in asked and home.verify().ok


def test_a_rendered_https_capture_names_and_keeps_the_servers_certificate(home: EvidenceHome, pool: BrowserPool,
                                                                        tmp_path: Path) -> None:
    """The capture receipt's hop of an https page carries the tls block of the document's read (the same one, not a
    copy made up), whose certificate ``ledger verify`` then checks as a blob the capture names."""
    from tests.attack._browser_world import secure_world

    with secure_world({"/": Reply(body=b"<p>Zqsecure words.</p>")}, tmp_path / "pki") as (s, client, pki):
        r = fetch_rendered(home, client, pool, "https://site.example/", limits=RenderLimits(deadline=10))
    receipt = home.ledger.get(r.receipt_id)
    doc = next(e.receipt for e in home.ledger.entries() if e.receipt.links.get("capture") == r.receipt_id
               and e.receipt.request["url"] == "https://site.example/")
    assert receipt.hops == doc.hops and receipt.hops[-1].tls is not None
    assert receipt.hops[-1].tls["protocol"].startswith("TLS")
    assert home.verify().ok
