"""Blobs at rest: bytes on disk / raw bytes over the recorded HTML and XML fixtures, and put/read
MiB/s against raw zstd (the same level) on the same bytes, in the same run."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import blake3
import zstandard

from bench.report import best_time, line
from g6.store import BlobStore
from g6.store.compression import LEVEL

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "http"


def _bodies() -> list[bytes]:
    out = []
    for p in sorted(FIX.rglob("*")):
        if p.is_file() and p.suffix in (".html", ".xml", ".htm", ".atom"):
            out.append(p.read_bytes())
    return out


def run(quick: bool = False) -> None:
    bodies = _bodies()
    raw = sum(len(b) for b in bodies)
    with tempfile.TemporaryDirectory() as d:
        store = BlobStore(d, fsync=False)
        refs = [store.put(b) for b in bodies]
        kept = sum(store.path(r.blake3).stat().st_size for r in refs)
    print(f"{'blobs at rest: ' + str(len(bodies)) + ' HTML/XML fixtures':<44} {kept:,} bytes on disk for {raw:,} raw:"
          f" ratio {kept / raw:.3f} (target <= 0.3)")
    # throughput on large bodies (the fixtures concatenated), so the figure is the compression path's,
    # not the per-file cost (temp file, meta, sha256 index, renames) every blob pays anyway
    big = b"".join(bodies) * (4 if quick else 40)
    mib = len(big) / (1 << 20)
    cctx, dctx = zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor()
    zstd_alone = best_time(lambda: cctx.compress(big))
    # the least any content-addressed, compressed store does with these bytes: both digests and zstd
    ref_put = best_time(lambda: (blake3.blake3(big).digest(), hashlib.sha256(big).digest(), cctx.compress(big)))
    frame = cctx.compress(big)
    ref_read = best_time(lambda: dctx.decompress(frame, max_output_size=len(big)))
    with tempfile.TemporaryDirectory() as d:
        n = [0]

        def put() -> None:
            n[0] += 1
            BlobStore(Path(d) / str(n[0]), fsync=False).put_stream(big[i:i + (1 << 20)]
                                                                    for i in range(0, len(big), 1 << 20))

        ours_put = best_time(put)
        store = BlobStore(Path(d) / "1", fsync=False)
        ref = store.info(store.put(big).blake3)
        assert store.path(ref.blake3).name.endswith(".zst")
        ours_read = best_time(lambda: store.read(ref.blake3))
    line(f"blob put {mib:.0f} MiB of HTML/XML, zstd at rest", mib / ours_put, mib / ref_put, "MiB/s")
    print(f"{'':<44} reference: blake3 + sha256 + zstd level {LEVEL} of the same bytes in memory; zstd alone "
          f"{mib / zstd_alone:,.0f} MiB/s")
    line(f"blob read {mib:.0f} MiB of HTML/XML, zstd at rest", mib / ours_read, mib / ref_read, "MiB/s")
    print(f"{'':<44} reference: zstd decompress alone (ours also reads the file and its meta)")


