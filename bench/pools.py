"""What the checked client's connection pools cost (``g6.adapters.net.pools``): CPU per fetch over many hosts, one
pool per host (as the client keeps them) against one pool shared by every host (as plain HTTP had, before
2026-12-07), the same pages on the same loopback servers in the same run; and the CPU to make a new HTTPS host's pool,
sharing the process's TLS context against httpx's default of a context of its own (certifi's roots read again)."""

from __future__ import annotations

import tempfile
import time

import httpx

from bench.report import line
from bench.sites import SiteFarm
from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.net.deadline import deadline_transport
from g6.store import BlobStore


def _cpu_per_fetch(urls: list[str], shared: bool) -> float:
    """CPU seconds per fetch, every page through the checked client into a store, hosts taking turns."""
    with tempfile.TemporaryDirectory() as d:
        store = BlobStore(d, fsync=False)
        policy = FetchPolicy(allow_loopback=True, host_pause=0.0)
        with CheckedClient(policy, transport=deadline_transport() if shared else None) as client:
            for u in urls[: len(urls) // 10]:  # robots.txt read and cached for every host before the clock
                client.fetch(u, store)
            c = time.process_time()
            for u in urls:
                assert client.fetch(u, store).outcome is Outcome.OK
            return (time.process_time() - c) / len(urls)


def _cpu_per_pool(make: object, n: int) -> float:
    made = []
    c = time.process_time()
    for _ in range(n):
        made.append(make())  # type: ignore[operator]
    took = (time.process_time() - c) / n
    for t in made:
        t.close()
    return took


def run(quick: bool = False) -> None:
    hosts, pages = (4, 5) if quick else (40, 10)
    with SiteFarm(hosts, pages) as farm:
        by_host: dict[int, list[str]] = {}
        for h, _, u in farm.urls():
            by_host.setdefault(h, []).append(u)
        urls = [u for round_ in zip(*by_host.values(), strict=True) for u in round_]  # one page of each host in turn
        ours, ref = [], []
        for _ in range(1 if quick else 3):  # interleaved rounds: the best of each
            ref.append(_cpu_per_fetch(urls, shared=True))
            ours.append(_cpu_per_fetch(urls, shared=False))
        line(f"fetch {len(urls)} pages over {hosts} hosts, CPU", 1e6 * min(ours), 1e6 * min(ref), "µs/fetch",
             higher_is_better=False)
        print(f"{'':<44} reference: one pool shared by every host (httpcore looks over each pooled connection "
              "twice a request)")
    n = 5 if quick else 50
    own = _cpu_per_pool(lambda: httpx.HTTPTransport(trust_env=False, retries=0), n)
    shared = _cpu_per_pool(deadline_transport, n)
    line("a new HTTPS host's pool, CPU", 1e6 * shared, 1e6 * own, "µs/host", higher_is_better=False)
    print(f"{'':<44} reference: a TLS context of its own (httpx's default: certifi's roots read again)")
