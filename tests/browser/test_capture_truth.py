"""What a capture says about the page it kept: dialogs it dismissed, the document it shows, the URL it read, what it
cut short. The attack tests (tests/attack/test_browser_*.py) hold the findings themselves; these hold what the
capture receipt records of each fix."""

from __future__ import annotations

from collections.abc import Callable

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
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
    plain = home.ledger.get(fetch_rendered(home, client, pool, s.url("/b"), limits=lim).receipt_id)
    assert plain.capture is not None and plain.final_url == plain.capture["final_url"] == s.url("/b")
    assert "location_url" not in plain.capture
