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
