"""python -m bench [--quick] [NAME ...]: run the benchmarks and print one line per figure."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

from bench import backends, batch_fetch, compress, extract, fetch, hostile, ingest, ledger_append, recheck, scale, warc

_SCRATCH = Path(__file__).resolve().parent / ".cache" / "tmp"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench")
    ap.add_argument("--quick", action="store_true", help="small sizes: checks the benchmarks run, not the speed")
    ap.add_argument("--scale", action="store_true",
                    help="also measure against a 1,000,000-receipt ledger (built once, cached in bench/.cache/)")
    ap.add_argument("names", nargs="*", default=["ingest", "ledger", "fetch", "extract", "warc", "recheck", "hostile",
                                                 "tree", "compress", "batch", "backends"])
    args = ap.parse_args()
    if not os.environ.get("TMPDIR"):
        # homes and stores go beside the repository, not in /tmp: a crowded /tmp can cost ms of kernel
        # time per file created (measured 2-5 ms per blob put here, against 0.3 ms on the same disk
        # beside the repository), which would measure that folder, not g6; TMPDIR=... chooses another
        tempfile.tempdir = str(_SCRATCH)
        _SCRATCH.mkdir(parents=True, exist_ok=True)
    print(f"# machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()},"
          f" {platform.system()} {platform.release()}; temporary files in {tempfile.gettempdir()}")
    runs = {"ingest": ingest.run, "ledger": ledger_append.run, "fetch": fetch.run, "extract": extract.run,
            "warc": warc.run, "recheck": recheck.run, "hostile": hostile.run, "compress": compress.run,
            "batch": batch_fetch.run, "backends": backends.run}
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
