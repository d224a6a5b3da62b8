"""Attacks on 926cec8 (``render._answer_order``): a capture's sub-resource receipts go to the ledger in the order
the capture lists them. No receipt may be lost or listed twice, no request may have two receipts, and the capture
receipt stays last; a rendered capture still verifies and exports whole."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

import g6.fetch.render as render_mod
from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.intercept import SubRequest
from g6.adapters.browser.pool import BrowserPool
from g6.cli import cli
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]


def _sub(url: str) -> SubRequest:
    return SubRequest(url=url, method="GET", resource_type="Script", main_frame=False, service_worker_script=False,
                      accept=None, max_bytes=1 << 20, time_left=5.0)


def test_a_request_receipted_just_before_the_seal_has_one_receipt(home: EvidenceHome, client: CheckedClient,
                                                                   site: Site) -> None:
    """The capture ends (``seal``) right after a request's answer was receipted, before that request left the
    pending list: ``seal`` receipted it a second time as cut short, so the sealed list (and with ``_answer_order``
    the ledger) held two receipts of one request, one saying it was answered and one that it was not."""
    s = site({"/a.js": Reply(body=b"window.a = 1;", content_type="text/javascript")})
    fetcher = render_mod._SubFetcher(home.store, client, client.policy, "rcpt_capture", ())
    real = fetcher._receipted
    sealed: list[tuple] = []

    def receipted_then_sealed(resp, req):  # type: ignore[no-untyped-def]
        got = real(resp, req)
        sealed.append(fetcher.seal())  # the capture's own thread seals here (the render ended at its deadline)
        return got

    fetcher._receipted = receipted_then_sealed  # type: ignore[method-assign]
    answer = fetcher(_sub(s.url("/a.js")))
    assert answer.ident is not None
    urls = [r.request["url"] for r in sealed[0]]
    assert Counter(urls) == Counter({s.url("/a.js"): 1}), [(r.request["url"], r.outcome) for r in sealed[0]]
    assert sealed[0][0].receipt_id == answer.ident.receipt.receipt_id  # the one kept is the answered one's


PAGE = (b"<!doctype html><html><head><script src='/a.js'></script><script src='/b.js'></script>"
        b"<link rel=stylesheet href='/c.css'></head><body><p>The page is here.</p><img src='/d.png'></body></html>")


def test_a_rendered_captures_resources_are_its_ledger_rows_once_each_and_it_exports_whole(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site, tmp_path: Path) -> None:
    s = site({"/": Reply(body=PAGE), "/robots.txt": Reply(404, b""),
              "/a.js": Reply(body=b"window.a = 1;", content_type="text/javascript"),
              "/b.js": Reply(body=b"window.b = 2;", content_type="text/javascript"),
              "/c.css": Reply(body=b"p { color: red }", content_type="text/css"),
              "/d.png": Reply(404, b"")})
    result = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=30))
    entries = list(home.ledger.entries())
    capture = entries[-1].receipt
    assert capture.receipt_id == result.receipt_id  # the capture receipt is the last row
    listed = [r["receipt_id"] for r in capture.capture["resources"]]
    subs = [e.receipt for e in entries if e.receipt.links.get("capture") == capture.receipt_id]
    assert [r.receipt_id for r in subs] == listed and len(set(listed)) == len(listed)
    assert Counter(r.request["url"] for r in subs)[s.url("/a.js")] == 1
    runner = CliRunner()
    verified = runner.invoke(cli, ["--home", str(home.root), "ledger", "verify", "--json"])
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["ok"] is True
    out = tmp_path / "c.warc.gz"
    exported = runner.invoke(cli, ["--home", str(home.root), "export", "warc", "-o", str(out), "--json", "-q"])
    assert exported.exit_code == 0, exported.output
    assert out.stat().st_size > 0
