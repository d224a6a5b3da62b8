"""Re-check throughput over many loopback hosts vs raw httpx fetching the same pages, same concurrency."""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx

from bench.report import line
from bench.sites import SiteFarm, page_paragraphs
from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.manifest import Citation, Manifest
from g6.cite.passages import passage_id, text_hash
from g6.cite.recheck import recheck
from g6.fetch.capture import fetch
from g6.home import EvidenceHome


def run(quick: bool = False) -> None:
    hosts, pages, per_page = (4, 10, 5) if quick else (20, 100, 5)
    workers = min(hosts, 16)
    processes = min(os.cpu_count() or 1, workers)  # what `g6 recheck` uses by default
    with SiteFarm(hosts, pages) as farm, tempfile.TemporaryDirectory() as d:
        home = EvidenceHome(d, fsync=False)
        home.keys.init()
        policy = FetchPolicy(allow_loopback=True, host_pause=0.0, total_timeout=30)
        urls = farm.urls()
        citations = []
        with CheckedClient(policy) as setup_client:
            for h, p, url in urls:  # the original reads the citations point at
                r = fetch(home, setup_client, url)
                for i, para in enumerate(page_paragraphs(h, p)[:per_page]):
                    citations.append(Citation(f"c_{h:04x}{p:06x}{i:06x}", "web", r.receipt_id, url, url,
                                              dict(r.content or {}), passage_id(para), text_hash(para), para,
                                              None, None, para[:200]))
        # signed, as a report's manifest is: re-check then trusts the signed cited texts and only
        # verifies each receipt (an unsigned manifest would have every original page re-read)
        manifest = replace(Manifest.new(), citations=tuple(citations)).signed(home.signing_key())

        # raw httpx: the same pages, the same number of hosts in parallel, one client per worker
        def raw(batch: list[str]) -> int:
            n = 0
            with httpx.Client() as c:
                for u in batch:
                    n += len(c.get(u).content)
            return n

        by_host: dict[int, list[str]] = {}
        for h, _, u in urls:
            by_host.setdefault(h, []).append(u)
        t = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(raw, by_host.values()))
        raw_s = time.perf_counter() - t

        with CheckedClient(policy) as client:
            t = time.perf_counter()
            report = recheck(home, client, manifest, workers=workers, processes=processes, state_dir=None)
            ours_s = time.perf_counter() - t
        assert report.counts() == {"unchanged": len(citations)}, report.counts()
        assert report.manifest_signature["status"] == "ok"
        n_pages = len(urls)
        line(f"recheck {len(citations)} citations, {n_pages} pages, {hosts} hosts", n_pages / ours_s,
             n_pages / raw_s, "pages/s")
        print(f"{'':<44} ours {len(citations) / ours_s:,.0f} citations/s (fetch, store, verdict, receipt)")
        print(f"{'':<44} (the reference checks no address or robots.txt, stores nothing, signs no receipt)")
        home.close()
