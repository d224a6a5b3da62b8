"""Hosts in parallel, one request at a time per host: the worker pool re-check and batch fetch share.

Items are grouped by host; each host's items run in order on one worker thread (so the checked
client's per-host pause and robots rules hold), and up to ``workers`` hosts run at once. Results
come back to the calling thread as they finish, so it alone writes receipts, run files and output.
"""

from __future__ import annotations

import queue
import threading
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from g6.adapters.urls import normalise_url

T = TypeVar("T", bound=Hashable)
R = TypeVar("R")


def host_of(url: str) -> str:
    """The host ``url`` is fetched from, as the checked client names it (``normalise_url``): so
    ``127.0.0.2``, ``127.0.0.2.`` and ``127.2`` are one host, one worker, one request at a time."""
    try:
        return normalise_url(url).host
    except (ValueError, UnicodeError, TypeError):  # URLError is a ValueError
        return ""  # an unparseable URL: its own group; the checked client rejects it with a typed outcome


def per_host(items: Iterable[T], host: Callable[[T], str], work: Callable[[T], R],
             workers: int = 8) -> Iterator[tuple[T, R | BaseException, bool]]:
    """Yield ``(item, work(item) or the exception it raised, more_ready)`` in completion order;
    ``more_ready`` says another result is already waiting (a caller batching writes can wait)."""
    by_host: dict[str, list[T]] = defaultdict(list)
    n = 0
    for it in items:
        by_host[host(it)].append(it)
        n += 1
    results: queue.Queue[tuple[T, R | BaseException]] = queue.Queue()
    stop = threading.Event()  # set when the caller stops early (an error, Ctrl-C): no new item starts

    def run(batch: list[T]) -> None:
        for it in batch:
            if stop.is_set():
                return
            try:
                results.put((it, work(it)))
            except BaseException as e:  # noqa: BLE001 - handed to the calling thread
                results.put((it, e))

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for batch in by_host.values():
            pool.submit(run, batch)
        try:
            for _ in range(n):
                it, res = results.get()
                yield it, res, not results.empty()
        finally:
            stop.set()
