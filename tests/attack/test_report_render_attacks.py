"""`g6 report check` on a rendered capture (`g6 fetch --render`): a real, locked-down Chromium renders a loopback
page whose own style sheet and script hide a sentence; the check must look for the quote where `g6 cite` looks
on that receipt, in the text the browser showed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.render import capture_text, fetch_rendered
from g6.home import EvidenceHome
from tests.report.check_helpers import LEAD, QUOTE, check, cite, report_of

Site = Callable[..., LocalSite]
HID = "Water bills fell by three percent in the same quarter"
SHEET_HIDDEN = "Gas bills fell by nine percent in the same quarter"
PAGE = f"""<!doctype html><html><head><title>Bills</title><link rel="stylesheet" href="/s.css"></head><body>
<article><h1>Bills</h1><p>{LEAD}</p><p>{QUOTE}</p><p class="h">{SHEET_HIDDEN}</p><p id="gone">{HID}</p></article>
<script src="/app.js"></script></body></html>""".encode()


def test_a_rendered_capture_is_judged_on_the_text_the_browser_showed(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    """The page's external style sheet (``.h { display: none }``, which the static reader never fetches) and
    its script (which removes ``#gone``) hide two sentences. ``g6 fetch --render`` captures it: the capture's
    text (what a reader saw) holds neither, and ``g6 cite`` on the capture refuses both quotes. ``g6 report
    check`` rests the citations on the same receipt (the newest ok read of the URL), but
    ``verdicts.body_texts`` reads the receipt's body with the static reader, ignoring ``capture.text``
    (``cite.receipt_texts`` uses it). The body is the DOM after the script ran, so the removed sentence is
    not found, but the one the style sheet hid is `quote_found` (seen: ``('quote_not_found', 'quote_found')``).
    The issue's rule is "the same reader-visible text and normaliser as g6 cite": a capture's verdict is
    judged on its rendered text (``capture.text``), with the DOM's hidden text as the hint of where it was."""
    s = site({"/a": Reply(body=PAGE), "/robots.txt": Reply(404),
              "/s.css": Reply(body=b".h { display: none }", content_type="text/css"),
              "/app.js": Reply(body=b"document.getElementById('gone').remove();", content_type="text/javascript")})
    captured = fetch_rendered(home, client, pool, s.url("/a"), limits=RenderLimits(deadline=30))
    r = home.ledger.get(captured.receipt_id)
    shown = capture_text(home.store, r)
    assert shown is not None and QUOTE in shown.text
    assert HID not in shown.text and SHEET_HIDDEN not in shown.text  # the browser showed neither
    for hidden in (HID, SHEET_HIDDEN):
        with pytest.raises(InputError):
            cite_web(home, r.receipt_id, quote=hidden)  # g6 cite refuses both on this receipt
    found, removed, sheet = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), HID),
                                                  cite(s.url("/a"), SHEET_HIDDEN)), None).verdicts
    assert found.verdict == "quote_found" and found.receipt_id == r.receipt_id
    assert (removed.verdict, sheet.verdict) == ("quote_not_found", "quote_not_found"), \
        (removed.verdict, sheet.verdict, removed.receipt_id == r.receipt_id)
