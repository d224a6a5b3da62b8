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


def run(quick: bool = False) -> None:
    hosts, pages = (2, 25) if quick else (4, 250)
    with SiteFarm(hosts, pages) as farm, tempfile.TemporaryDirectory() as d:
        urls = [u for _, _, u in farm.urls()]

        async def raw() -> float:
            async with httpx.AsyncClient() as c:
                t = time.perf_counter()
                n = 0
                for u in urls:
                    n += len((await c.get(u)).content)
                assert n > 0
                return time.perf_counter() - t

        raw_s = asyncio.run(raw())
        home = EvidenceHome(d, fsync=False)
        home.keys.init()
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
            t = time.perf_counter()
            for u in urls:
                fetch(home, client, u)
            ours_s = time.perf_counter() - t
        home.close()
        line(f"fetch {len(urls)} pages, concurrency 1", len(urls) / ours_s, len(urls) / raw_s, "fetches/s")
