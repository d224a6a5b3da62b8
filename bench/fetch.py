"""g6 fetches/s (checked client, robots, store, extraction, signed receipt) vs raw httpx.AsyncClient,
the same pages on the same loopback servers, one request at a time for both."""

from __future__ import annotations

import asyncio
import tempfile
import time

import httpx

from bench.report import line
from bench.sites import SiteFarm
from g6.adapters import CheckedClient, FetchPolicy
from g6.fetch.capture import fetch
from g6.home import EvidenceHome


async def _raw(urls: list[str]) -> float:
    async with httpx.AsyncClient() as c:
        t = time.perf_counter()
        n = 0
        for u in urls:
            n += len((await c.get(u)).content)
        assert n > 0
        return time.perf_counter() - t


def run(quick: bool = False) -> None:
    """The pages, then the same pages with a cookie banner (whose bytes send the page to the wall check)."""
    hosts, pages = (2, 25) if quick else (4, 250)
    with SiteFarm(hosts, pages) as farm, tempfile.TemporaryDirectory() as d:
        home = EvidenceHome(d, fsync=False)
        home.keys.init()
        for banner, name in ((False, "pages"), (True, "banner pages")):
            urls = [u for _, _, u in farm.urls(banner)]
            c = time.process_time()
            raw_s = asyncio.run(_raw(urls))
            raw_cpu, c = time.process_time() - c, time.process_time()
            with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
                t = time.perf_counter()
                for u in urls:
                    fetch(home, client, u)
                ours_s = time.perf_counter() - t
            ours_cpu = time.process_time() - c
            line(f"fetch {len(urls)} {name}, concurrency 1", len(urls) / ours_s, len(urls) / raw_s, "fetches/s")
            # CPU time moves less than wall time when other jobs share the cores (the servers run elsewhere)
            print(f"{'':<44} CPU per fetch {ours_cpu / len(urls) * 1e3:.2f} ms, reference "
                  f"{raw_cpu / len(urls) * 1e3:.2f} ms")
        home.close()
