"""Hostile-server bounds, as figures: the peak RSS (above the process's own baseline) while fetching
compression bombs, nested ones included, and the seconds a fetch takes to end on a server dripping
its response headers one byte per second, against the G6_TIMEOUT deadline it was given.

The RSS is measured in a fresh process with ``resource.getrusage`` (``ru_maxrss``), as the test
suite asserts it (``tests/reliability/test_hostile_bounds.py``); the bound is 128 MiB."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.report import line
from g6.adapters import CheckedClient, FetchPolicy
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "reliability"))
from hostile_servers import DripServer, bombs, peak_rss_over_baseline  # noqa: E402

RSS_BOUND_MIB = 128.0


def run(quick: bool = False) -> None:
    built = bombs()
    print(f"# bombs built once in {getattr(bombs, 'build_seconds', 0):.1f} s; wire sizes: "
          + ", ".join(f"{n} {len(b):,} B" for n, (_, b) in built.items()) + "; each inflates to >= 1 GiB")
    with tempfile.TemporaryDirectory() as d:
        for names in (["gzip,gzip"], ["gzip,deflate,gzip"], ["gzip"]):
            report = peak_rss_over_baseline(Path(d), names)
            grew = (report["peak_kib"] - report["baseline_kib"]) / 1024
            line(f"peak RSS over baseline, {names[0]} bomb", max(grew, 0.1), RSS_BOUND_MIB, "MiB",
                 higher_is_better=False)
            print(f"#   outcome {report['outcomes'][names[0]]}; baseline {report['baseline_kib'] / 1024:.1f} MiB,"
                  f" peak {report['peak_kib'] / 1024:.1f} MiB")
    deadline = 1.0 if quick else 3.0
    with DripServer(gap=1.0) as drip, tempfile.TemporaryDirectory() as d, EvidenceHome(d, fsync=False) as home, \
            CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False, read_timeout=30,
                                      connect_timeout=30, total_timeout=deadline)) as client:
        home.keys.init()
        t = time.perf_counter()
        r = fetch(home, client, drip.url("/drip"))
        took = time.perf_counter() - t
    line(f"header drip 1 B/s ends ({r.outcome.value} {r.reason})", took, deadline, "s", higher_is_better=False)
