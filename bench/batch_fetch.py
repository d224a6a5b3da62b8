"""Batch fetch (g6 fetch --input): N pages over H loopback hosts vs raw httpx.AsyncClient fetching the
same pages with the same concurrency, and the per-page cost split (HTTP, extraction, blob, receipt)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx

from bench.report import line_by_rounds
from bench.sites import SiteFarm
from g6.adapters import CheckedClient, FetchPolicy
from g6.fetch.batch import batch_fetch
from g6.fetch.capture import page_outcome, receipt_from_response
from g6.home import EvidenceHome
from g6.store import BlobStore

CONCURRENCY = 8
PROCESSES = min(os.cpu_count() or 1, CONCURRENCY)  # what `g6 fetch --input` uses by default


def _raw(urls: list[str]) -> float:
    """Raw httpx.AsyncClient, at most CONCURRENCY requests at once and one per host (as ours)."""
    by_host: dict[str, list[str]] = defaultdict(list)
    for u in urls:
        by_host[httpx.URL(u).host].append(u)

    async def main() -> float:
        sem = asyncio.Semaphore(CONCURRENCY)
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=CONCURRENCY * 2)) as c:
            async def host(us: list[str]) -> int:
                async with sem:
                    n = 0
                    for u in us:
                        n += len((await c.get(u)).content)
                    return n
            t = time.perf_counter()
            sizes = await asyncio.gather(*(host(us) for us in by_host.values()))
            assert sum(sizes) > 0
            return time.perf_counter() - t

    return asyncio.run(main())


class _Body:
    """The body as a batch reads it: from memory, where the fetch kept it while writing the blob."""

    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self, digest: str) -> bytes:
        return self.body


def _split(urls: list[str], home: EvidenceHome, scratch: Path) -> dict[str, float]:
    """Seconds per page for each part, one page at a time; extraction is what the batch runs
    (``capture.page_outcome``: the outcome, without the main-text pass where the visible text decides)."""
    parts = {"HTTP (checked client)": 0.0, "extraction": 0.0, "blob": 0.0, "receipt": 0.0}
    store = BlobStore(scratch, fsync=False)  # a fresh store: no page is deduplicated away
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        for u in urls:
            t = time.perf_counter()
            resp = client.fetch(u, home.store, source="web")
            parts["HTTP (checked client)"] += time.perf_counter() - t
            assert resp.body is not None
            body = home.store.read(resp.body.blake3)
            t = time.perf_counter()
            store.put(body)
            parts["blob"] += time.perf_counter() - t
            t = time.perf_counter()
            page_outcome(resp, _Body(body), u)
            parts["extraction"] += time.perf_counter() - t
            receipt = receipt_from_response(resp, kind="fetch", source="web", request={"url": u})
            t = time.perf_counter()
            home.record(receipt)
            parts["receipt"] += time.perf_counter() - t
    return {k: v / len(urls) for k, v in parts.items()}


def _cpu() -> tuple[float, float]:
    """(CPU seconds, the kernel's part of them) of this process and of its children that ended (the
    batch's worker processes); file creation is most of the kernel's part where a file is dear."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, me.ru_stime + kids.ru_stime


def _ours(urls: list[str], processes: int, d: str) -> tuple[float, float, float]:
    """(seconds, CPU seconds, kernel seconds) of one batch into a fresh home in the empty folder ``d``."""
    home = EvidenceHome(d, fsync=False)
    home.keys.init()
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        (c, k), t = _cpu(), time.perf_counter()
        report = batch_fetch(home, client, urls, concurrency=CONCURRENCY, processes=processes)
        took, (cpu, kernel) = time.perf_counter() - t, _cpu()
    cpu, kernel = cpu - c, kernel - k
    assert report.ok and len(home.ledger) == len(urls)
    home.close()
    return took, cpu, kernel


def run(quick: bool = False) -> None:
    hosts, pages, rounds = (2, 20, 1) if quick else (20, 100, 3)
    # Every round's home is kept until all rounds are done. Removing one frees thousands of inodes at
    # once, and an ext4 without a journal (as this VM's disk) then skips each of them, one by one, for
    # 60-360 s whenever it allocates an inode: the next round's file creations would pay for the
    # benchmark's own clean-up (measured: 3.1 against 0.45-0.85 ms of kernel time a page), which no home
    # that only grows pays.
    with SiteFarm(hosts, pages) as farm, contextlib.ExitStack() as homes:
        urls = [u for _, _, u in farm.urls()]
        n = len(urls)

        def fresh() -> str:
            return homes.enter_context(tempfile.TemporaryDirectory())

        # interleaved rounds (reference, ours on PROCESSES, ours on one process), so a change in the
        # machine's load falls on all three; best and median of the per-round ratios
        raw, multi, single = [], [], []
        for _ in range(rounds):
            c = _cpu()[0]
            raw.append((_raw(urls), _cpu()[0] - c))
            multi.append(_ours(urls, PROCESSES, fresh()))
            single.append(_ours(urls, 1, fresh()))
        label = f"batch fetch {n:,} pages / {hosts} hosts, conc. {CONCURRENCY}"
        for name, runs in ((f"{PROCESSES} processes", multi), ("1 process", single)):
            cpu = statistics.median(r[1] for r in runs) / n * 1e3
            kernel = statistics.median(r[2] for r in runs) / n * 1e3
            ref_cpu = statistics.median(r[1] for r in raw) / n * 1e3
            line_by_rounds(f"{label}, {name}", n, [r[0] for r in runs], [r[0] for r in raw], "pages/s",
                           f"CPU per page {cpu:.2f} ms ({kernel:.2f} ms of it in the kernel) vs reference "
                           f"{ref_cpu:.2f} ms")
        d = fresh()
        home = EvidenceHome(d, fsync=False)
        home.keys.init()
        split = _split(urls[: min(n, 200)], home, Path(d) / "scratch")
        home.close()
        total = sum(split.values())
        print(f"{'':<44} per page, one at a time: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in split.items())
              + f" (sum {total * 1e3:.2f} ms; the HTTP part includes streaming the body into the store)")
