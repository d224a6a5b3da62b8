from __future__ import annotations

import hashlib
import io
import os
import time
import tracemalloc
from pathlib import Path

import blake3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.errors import BadDigest, BlobNotFound
from g6.store import BlobStore, Digest


def digests_of(data: bytes) -> tuple[str, str]:
    return f"blake3:{blake3.blake3(data).hexdigest()}", f"sha256:{hashlib.sha256(data).hexdigest()}"


def test_put_keys_by_blake3_with_sha256_alongside(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "s")
    ref = store.put(b"hello evidence")
    b3, sha = digests_of(b"hello evidence")
    assert (ref.blake3, ref.sha256, ref.size) == (b3, sha, 14)
    hexd = b3.split(":")[1]
    assert (tmp_path / "s" / "blake3" / hexd[:2] / hexd[2:4] / hexd).read_bytes() == b"hello evidence"
    assert store.read(b3) == store.read(sha) == b"hello evidence"
    assert store.has(b3) and store.has(sha)
    assert store.info(sha) == ref


def test_second_put_of_same_bytes_writes_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    ref = store.put(b"same bytes")
    path = store.path(ref.blake3)
    before = (path.stat().st_ino, path.stat().st_mtime_ns)
    time.sleep(0.01)
    assert store.put_stream([b"same ", b"bytes"]) == ref
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == before
    assert list(store.tmp_dir.iterdir()) == []
    assert list(store.iter_digests()) == [ref.blake3]


def test_put_stream_from_file_object_and_chunks_agree(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    data = os.urandom(3 * 1024 * 1024 + 7)
    a = store.put_stream(io.BytesIO(data))
    b = store.put_stream(data[i : i + 4096] for i in range(0, len(data), 4096))
    assert a == b and a.size == len(data)
    assert store.read(a.blake3) == data


def test_put_stream_memory_stays_flat(tmp_path: Path) -> None:
    """64 MiB streamed through put_stream: Python-side peak stays a few chunks, not the body."""
    store = BlobStore(tmp_path, fsync=False)
    chunk = os.urandom(1 << 20)

    def body():
        for _ in range(64):
            yield chunk

    tracemalloc.start()
    ref = store.put_stream(body())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ref.size == 64 << 20
    assert peak < 8 << 20, f"peak {peak} bytes while streaming 64 MiB"


def test_writer_abort_and_exception_leave_nothing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    with pytest.raises(RuntimeError):
        with store.writer() as w:
            w.write(b"partial")
            raise RuntimeError("boom")
    assert list(store.tmp_dir.iterdir()) == []
    assert list(store.iter_digests()) == []


def test_unknown_and_malformed_digests(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    with pytest.raises(BlobNotFound):
        store.read("blake3:" + "0" * 64)
    with pytest.raises(BlobNotFound):
        store.read("sha256:" + "0" * 64)
    for bad in ("", "md5:abcd", "blake3:xyz", "blake3:" + "a" * 63, "nocolon"):
        with pytest.raises(BadDigest):
            Digest.parse(bad)
    assert not store.has("blake3:" + "1" * 64)


def test_verify_reports_flipped_byte(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    good = store.put(b"good blob")
    bad = store.put(b"blob to damage")
    p = store.path(bad.blake3)
    os.chmod(p, 0o600)
    data = bytearray(p.read_bytes())
    data[3] ^= 0x01
    p.write_bytes(bytes(data))
    report = store.verify()
    assert report.checked == 2 and not report.ok
    assert [b.digest for b in report.bad] == [bad.blake3]
    assert "hashes to" in report.bad[0].detail
    assert store.check(good.blake3).ok


def test_gc_removes_only_unreferenced_old_blobs(tmp_path: Path) -> None:
    store = BlobStore(tmp_path)
    keep = store.put(b"referenced")
    drop = store.put(b"orphan")
    young = store.put(b"orphan but new")
    old = time.time() - 7200
    for ref in (keep, drop):
        os.utime(store.path(ref.blake3), (old, old))
    dry = store.gc([keep.sha256], grace_seconds=3600, dry_run=True)
    assert dry.removed == (drop.blake3,) and store.has(drop.blake3)
    report = store.gc([keep.sha256], grace_seconds=3600)
    assert report.removed == (drop.blake3,)
    assert report.skipped_young == (young.blake3,)
    assert not store.has(drop.blake3) and not store.has(drop.sha256)
    assert store.has(keep.blake3) and store.has(young.blake3)
    assert store.verify().ok


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(st.binary(max_size=2048), max_size=8))
def test_property_round_trip_and_dedupe(tmp_path: Path, chunks: list[bytes]) -> None:
    store = BlobStore(tmp_path / "prop", fsync=False)
    data = b"".join(chunks)
    ref = store.put_stream(chunks)
    assert (ref.blake3, ref.sha256) == digests_of(data)
    assert store.read(ref.blake3) == data and store.read(ref.sha256) == data
    n = sum(1 for _ in store.iter_digests())
    assert store.put(data) == ref
    assert sum(1 for _ in store.iter_digests()) == n
