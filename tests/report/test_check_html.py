"""`--html`: the report's own text with each citation marked and linked to its evidence; everything from outside
escaped, no script, no outside URL a link."""

from __future__ import annotations

from collections.abc import Callable

import lxml.html

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.export.report_html import marked_text, render_report_check
from g6.home import EvidenceHome
from g6.report.result import ResultInputs, build_result, found_manifest
from tests.report.check_helpers import QUOTE, article, check, cite, report_of

Site = Callable[..., LocalSite]
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'


def test_the_page_marks_each_claim_and_links_each_citation_to_its_evidence(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    text = f"Bills rose. {HOSTILE} Water fell."
    n = len(text)
    report = report_of(cite(s.url("/a"), QUOTE, "Bills rose.", claim_start=0, claim_end=11),
                       cite(s.url("/a") + "?q=" + HOSTILE, HOSTILE, HOSTILE, claim_start=12, claim_end=n - 12),
                       cite("javascript:alert(3)", QUOTE, "Water fell.", claim_start=n - 11, claim_end=n),
                       cite(s.url("/a"), None, "Unplaced."), text=text)
    run = check(home, report, client)
    result = build_result(run, ResultInputs("r.json", "sha256:" + "0" * 64, 1, {"source": "home"}), found_manifest(run))
    page = render_report_check(result, text)
    doc = lxml.html.fromstring(page)
    assert doc.xpath("//script") == [] and doc.xpath("//img") == [] and "onerror" not in str(doc.xpath("//@*"))
    assert [a.get("href") for a in doc.xpath("//section[@class='report']//a")] == ["#c-1", "#c-2", "#c-3"]
    assert all(h.startswith("#c-") for h in doc.xpath("//a/@href"))  # no outside address is ever a link
    assert [m.get("class") for m in doc.xpath("//section[@class='report']//mark")] == ["good", "bad", "warn"]
    assert doc.xpath("//section[@class='report']")[0].text_content().startswith("Bills rose.[1] " + HOSTILE[:10])
    assert {a.get("id") for a in doc.xpath("//article")} == {"c-1", "c-2", "c-3", "c-4"}
    assert "citations the format does not place in the text" in page and 'href="#c-4"' in page
    assert "a hint, not support" in page


def test_overlapping_claims_take_the_worst_verdict() -> None:
    cites = [{"n": 1, "verdict": "quote_found", "claim_start": 0, "claim_end": 10},
             {"n": 2, "verdict": "quote_not_found", "claim_start": 5, "claim_end": 10},
             {"n": 3, "verdict": "quote_found", "claim_start": 50, "claim_end": 99}]  # outside the text: unplaced
    html = marked_text("0123456789 tail", cites)
    assert html.startswith('<mark class="good" title="[1] quote_found">01234</mark><mark class="bad"')
    assert html.count('class="cite') == 2 and "[3]" not in html
