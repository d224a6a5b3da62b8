"""A rendered capture (``g6 fetch --render``) in a report check: judged on the text the browser showed, as ``g6 cite``
cites it (the attack test of finding 10 is the hostile page; this is what the result says of each kind of
citation, and that it is a valid ``report-check.v1``). A real, locked-down Chromium renders a loopback page."""

from __future__ import annotations

from collections.abc import Callable

import jsonschema

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome
from g6.report.result import ResultInputs, build_result, sign_result
from g6.schemas import load
from tests.report.check_helpers import LEAD, QUOTE, check, cite, report_of

Site = Callable[..., LocalSite]
HIDDEN = "Gas bills fell by nine percent in the same quarter"
DRAWN = "Electricity bills were drawn by the page's own script"
PAGE = f"""<!doctype html><html><head><title>Bills</title><link rel="stylesheet" href="/s.css"></head><body>
<article><h1>Bills</h1><p>{LEAD}</p><p>{QUOTE}</p><p class="h">{HIDDEN}</p><p id="x"></p></article>
<script src="/app.js"></script></body></html>""".encode()


def test_a_capture_is_judged_on_its_rendered_text_as_g6_cite_cites_it(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site) -> None:
    s = site({"/a": Reply(body=PAGE), "/robots.txt": Reply(404),
              "/s.css": Reply(body=b".h { display: none }", content_type="text/css"),
              "/app.js": Reply(body=f"document.getElementById('x').textContent = {DRAWN!r};".encode(),
                               content_type="text/javascript")})
    captured = fetch_rendered(home, client, pool, s.url("/a"), limits=RenderLimits(deadline=30))
    run = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), HIDDEN), cite(s.url("/a"), DRAWN),
                                cite(s.url("/a"), None)), None)
    found, hidden, drawn, no_quote = run.verdicts
    assert {v.receipt_id for v in run.verdicts} == {captured.receipt_id}
    assert found.verdict == drawn.verdict == "quote_found" and found.found["text_source"] == "rendered"
    cited = cite_web(home, captured.receipt_id, quote=QUOTE)  # the place g6 cite cites: the same citation
    assert found.citation is not None and found.citation.citation_id == cited.citation_id
    assert hidden.verdict == "quote_not_found" and hidden.detail["hidden_in"] == "rendering"
    assert "the text the browser showed" in hidden.reason and hidden.hints[0]["text_source"] == "rendered"
    assert no_quote.verdict == "no_quote" and {h["text_source"] for h in no_quote.hints} == {"rendered"}
    inputs = ResultInputs("r", "sha256:" + "0" * 64, 1, {"source": "home", "receipts_only": True})
    jsonschema.Draft202012Validator(load("report-check.v1")).validate(
        sign_result(build_result(run, inputs, None), home.signing_key()))
