"""put_stream of one body vs blake3+sha256 of the same bytes alone; peak RSS of a large body."""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import time

import blake3

from bench.report import line
from g6.store import BlobStore

CHUNK = 1 << 20


def _reference(chunk: bytes, n: int) -> float:
    t = time.perf_counter()
    b, s = blake3.blake3(), hashlib.sha256()
    for _ in range(n):
        b.update(chunk)
        s.update(chunk)
    b.hexdigest(), s.hexdigest()
    return time.perf_counter() - t


def _ours(chunk: bytes, n: int, fsync: bool) -> float:
    with tempfile.TemporaryDirectory(dir=os.environ.get("G6_BENCH_DIR")) as d:
        store = BlobStore(d, fsync=fsync)
        t = time.perf_counter()
        store.put_stream(chunk for _ in range(n))
        return time.perf_counter() - t


_RSS_CHILD = """
import os, resource, sys, tempfile
from g6.store import BlobStore
n = int(sys.argv[1]); chunk = os.urandom(1 << 20)
with tempfile.TemporaryDirectory() as d:
    BlobStore(d, fsync=False).put_stream(chunk for _ in range(n))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_rss_mib(n_mib: int) -> float:
    out = subprocess.run([sys.executable, "-c", _RSS_CHILD, str(n_mib)], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def run(quick: bool = False) -> None:
    n = 16 if quick else 256
    chunk = os.urandom(CHUNK)
    _reference(chunk, 4)  # warm up
    ref = min(_reference(chunk, n) for _ in range(3))
    ours = min(_ours(chunk, n, fsync=False) for _ in range(3))
    ours_sync = min(_ours(chunk, n, fsync=True) for _ in range(2))
    line(f"ingest put_stream {n} MiB (no fsync)", n / ours, n / ref, "MiB/s")
    line(f"ingest put_stream {n} MiB (fsync)", n / ours_sync, n / ref, "MiB/s")
    small, big = (16, 64) if quick else (64, 1024)
    rss_small, rss_big = peak_rss_mib(small), peak_rss_mib(big)
    print(f"{'ingest peak RSS':<44} {small} MiB body: {rss_small:.0f} MiB; {big} MiB body: {rss_big:.0f} MiB"
          f" (flat if equal; self RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)")
