"""`g6 report check` end to end: a report of 2,000 citations over 400 pages on 20 loopback hosts, fetched, kept,
located and signed, against raw httpx fetching the same pages with the same concurrency; then the same report
with `--receipts-only` on the same home, in citations a second (with the page texts the first check kept, then
without them)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import statistics
import tempfile
import time

from bench.batch_fetch import CONCURRENCY, _ours, _raw
from bench.report import line_by_rounds
from bench.sites import SiteFarm, page_paragraphs
from g6.adapters import CheckedClient, FetchPolicy
from g6.home import EvidenceHome
from g6.report.model import Report, ReportCitation
from g6.report.run import CheckInputs, run_check
from g6.report.texts_cache import DERIVED, FILE

PER_PAGE = 5
PROCESSES = min(os.cpu_count() or 1, CONCURRENCY)  # what `g6 report check` uses by default


def _report(urls: list[tuple[int, int, str]]) -> Report:
    cites = []
    for h, p, url in urls:
        for para in page_paragraphs(h, p)[:PER_PAGE]:
            cites.append(ReportCitation(len(cites) + 1, url, f"Claim {len(cites) + 1}.", quote=para))
    return Report("g6-report-model", " ".join(c.claim for c in cites), tuple(cites))


def _check(home: EvidenceHome, report: Report, receipts_only: bool, processes: int) -> tuple[float, dict]:
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, total_timeout=30)
    inputs = CheckInputs(report, "bench", "sha256:" + hashlib.sha256(b"bench").hexdigest(), 5, receipts_only,
                         workers=CONCURRENCY, processes=processes)
    t = time.perf_counter()
    result, _ = run_check(home, inputs, client=lambda: CheckedClient(policy), sources=None)
    took = time.perf_counter() - t
    assert result["figures"]["quote_found"] == len(report.citations), result["figures"]
    return took, result


def run(quick: bool = False) -> None:
    hosts, pages, rounds = (2, 10, 1) if quick else (20, 20, 3)
    with SiteFarm(hosts, pages) as farm, contextlib.ExitStack() as homes:
        urls = farm.urls()
        report = _report(urls)
        n = len(report.citations)
        raw, ours, stored, batch, cold = [], [], [], [], []
        for _ in range(rounds):  # interleaved: a change in the machine's load falls on all three
            plain = [u for _, _, u in urls]
            raw.append(_raw(plain))
            batch.append(_ours(plain, PROCESSES, homes.enter_context(tempfile.TemporaryDirectory()))[0])
            home = EvidenceHome(homes.enter_context(tempfile.TemporaryDirectory()), fsync=False)
            home.keys.init()
            took, _ = _check(home, report, False, PROCESSES)
            ours.append(took)
            stored.append(_check(home, report, True, PROCESSES)[0])
            # and once more without the texts the two checks kept (g6.report.texts_cache): every page's text
            # extracted again, on the worker processes, as a home that never checked these pages would
            (home.root / DERIVED / FILE).unlink()
            cold.append(_check(home, report, True, PROCESSES)[0])
            home.close()
        label = f"report check {n:,} citations / {len(urls)} pages / {hosts} hosts"
        # pages a second, ours against the reference's: the reference fetches each page once, as the check does
        line_by_rounds(label, len(urls), ours, raw, "pages/s",
                       f"{n / statistics.median(ours):,.0f} citations/s end to end (fetch, keep, locate, sign)")
        print(f"{'':<44} the same pages with `g6 fetch --input` (fetch, keep, receipt; no text, no verdict, no "
              f"result): ratios by round {', '.join(f'{r / b:.2f}' for r, b in zip(raw, batch, strict=True))}; "
              f"the check takes {statistics.median(o / b for o, b in zip(ours, batch, strict=True)):.2f}x its time")
        best = min(stored)
        print(f"{'report check --receipts-only, same home':<44} ours {n / best:>12,.1f} citations/s "
              f"(median {n / statistics.median(stored):,.0f}; target 2,000)")
        print(f"{'  the same, the texts cache removed first':<44} ours {n / min(cold):>12,.1f} citations/s "
              f"(median {n / statistics.median(cold):,.0f}; every page's text extracted again)")
