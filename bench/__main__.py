"""python -m bench [--quick] [NAME ...]: run the benchmarks and print one line per figure."""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

from bench import (
    backends,
    batch_fetch,
    compress,
    extract,
    fetch,
    hostile,
    ingest,
    ledger_append,
    pools,
    recheck,
    render,
    report_check,
    scale,
    serve,
    warc,
)


def _disk_probe(n: int = 200) -> str:
    """What a file costs where the benchmarks keep their homes (``TMPDIR``): create, write 2 KiB,
    rename, as a blob put does three times. On a shared machine this moves from tens of µs to
    several ms of kernel time, by folder and by minute; the figures below carry it."""
    with tempfile.TemporaryDirectory() as d:
        t, k = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
        for i in range(n):
            fd, name = tempfile.mkstemp(dir=d)
            os.write(fd, b"x" * 2048)
            os.close(fd)
            os.replace(name, Path(d) / f"f{i}")
        wall, kernel = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_stime - k
    return (f"temporary files in {tempfile.gettempdir()}: create + write 2 KiB + rename "
            f"{wall / n * 1e6:.0f} µs a file ({kernel / n * 1e6:.0f} µs of it in the kernel)")


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench")
    ap.add_argument("--quick", action="store_true", help="small sizes: checks the benchmarks run, not the speed")
    ap.add_argument("--scale", action="store_true",
                    help="also measure against a 1,000,000-receipt ledger (built once, cached in bench/.cache/)")
    ap.add_argument("names", nargs="*", default=["ingest", "ledger", "fetch", "extract", "warc", "recheck", "hostile",
                                                 "tree", "compress", "batch", "pools", "backends", "serve", "report",
                                                 "render"])
    args = ap.parse_args()
    print(f"# machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()},"
          f" {platform.system()} {platform.release()}")
    print(f"# {_disk_probe()}")
    runs = {"ingest": ingest.run, "ledger": ledger_append.run, "fetch": fetch.run, "extract": extract.run,
            "warc": warc.run, "recheck": recheck.run, "hostile": hostile.run, "compress": compress.run,
            "batch": batch_fetch.run, "pools": pools.run, "backends": backends.run, "serve": serve.run,
            "report": report_check.run, "render": render.run, "render-auto": render.run_auto}
    for name in args.names:
        if name not in runs and name != "tree":
            print(f"unknown benchmark {name!r}; known: {', '.join(runs)}", file=sys.stderr)
            return 2
        if name == "tree":
            scale.run(quick=args.quick, scale=args.scale)
            continue
        runs[name](quick=args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
