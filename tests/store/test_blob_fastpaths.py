"""The faster put and read paths keep every guarantee: raw digests, bounded decoders, checks before
serving, typed disk-full errors, old frames and raw blobs still read."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import blake3
import pytest
import zstandard

from g6.errors import BlobCorrupt, BlobNotFound, StoreError
from g6.store import BlobStore, BlobWriter, digests, folder_files
from g6.store import base as base_mod
from g6.store import folder_writer as writer_mod

TEXT = b"".join(b"<p>line %d of a page that compresses well, kept as evidence</p>\n" % i for i in range(40000))


def kept(store: BlobStore, digest: str) -> Path:
    return store.path(digest)


def test_a_held_text_body_is_one_frame_that_declares_its_raw_size(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put_stream(TEXT[i:i + 4096] for i in range(0, len(TEXT), 4096))
    frame = kept(store, ref.blake3).read_bytes()
    assert kept(store, ref.blake3).name.endswith(".zst")
    # the declared size is what lets a read inflate in one pass straight into its output
    assert zstandard.frame_content_size(frame) == len(TEXT) == ref.size
    assert store.read(ref.blake3) == TEXT and store.put(TEXT) == ref  # one call or many chunks: one blob


def test_a_text_body_past_the_hold_streams_with_memory_bounded_by_the_hold(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BlobWriter, "HOLD", 256 << 10)
    store = BlobStore(tmp_path, fsync=False)
    chunk = TEXT[: 64 << 10]

    def body():
        for _ in range(64):  # 4 MiB of text, 16x the hold
            yield chunk

    tracemalloc.start()
    ref = store.put_stream(body())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ref.size == 64 * len(chunk) and peak < 2 << 20, f"peak {peak} bytes while streaming 4 MiB"
    frame = kept(store, ref.blake3).read_bytes()
    assert zstandard.frame_content_size(frame) == -1  # streamed: the size was not known when the frame began
    # a frame without its size (also what stores written before the hold keep) reads back the same, bounded
    assert store.read(ref.sha256) == chunk * 64
    assert store.check(ref.blake3, ref).ok and store.verify().ok
    with store.open_verified(ref.sha256) as f:
        assert f.read() == chunk * 64


def test_a_streamed_frame_that_inflates_past_its_recorded_size_is_refused(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put(TEXT)
    w = zstandard.ZstdCompressor().stream_writer(kept(store, ref.blake3).open("wb"))  # no declared size
    w.write(TEXT + b"more")
    w.close()
    with pytest.raises(StoreError, match="recorded size"):
        store.read(ref.blake3)
    with pytest.raises(StoreError):
        store.read_checked(ref.blake3)


def test_read_opens_raw_and_compressed_blobs_and_names_a_missing_one(tmp_path: Path) -> None:
    raw = BlobStore(tmp_path, fsync=False, compression="off").put(TEXT)
    store = BlobStore(tmp_path, fsync=False)
    z = store.put(TEXT + b"!")
    assert store.read(raw.blake3) == TEXT and store.read(z.sha256) == TEXT + b"!"
    assert not kept(store, raw.blake3).name.endswith(".zst") and kept(store, z.blake3).name.endswith(".zst")
    missing = "blake3:" + "0" * 64
    with pytest.raises(BlobNotFound, match="no blob"):
        store.read(missing)


@pytest.mark.parametrize("size", [0, 1, base_mod.PARALLEL_AFTER - 1, base_mod.PARALLEL_AFTER,
                                  base_mod.PARALLEL_AFTER * 3 + 7])
def test_digests_on_one_or_two_threads_are_the_plain_digests(size: int) -> None:
    data = (TEXT * (1 + size // len(TEXT)))[:size]
    ref = digests(data)
    assert (ref.blake3, ref.sha256, ref.size) == (f"blake3:{blake3.blake3(data).hexdigest()}",
                                                   f"sha256:{hashlib.sha256(data).hexdigest()}", size)


def test_read_checked_of_a_large_blob_still_refuses_changed_bytes(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False, compression="off")
    body = TEXT * 2  # past PARALLEL_AFTER: hashed on two threads
    assert len(body) > base_mod.PARALLEL_AFTER
    ref = store.put(body)
    assert store.read_checked(ref.sha256) == (ref, body)
    p = kept(store, ref.blake3)
    damaged = bytearray(p.read_bytes())
    damaged[len(damaged) // 2] ^= 1
    p.chmod(0o644)
    p.write_bytes(bytes(damaged))
    with pytest.raises(BlobCorrupt, match="refusing to serve"):
        store.read_checked(ref.sha256)


def test_a_put_makes_the_folders_it_finds_missing(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    for sub in ("blake3", "meta", "sha256"):
        shutil.rmtree(tmp_path / sub)
    ref = store.put(TEXT)
    assert store.read(ref.sha256) == TEXT and store.verify().ok
    assert json.loads(store._meta_path(ref.blake3.split(":")[1]).read_text())["size"] == len(TEXT)


_STREAMED_FULL = textwrap.dedent("""
    import json, os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    from g6.errors import StoreDiskFull
    from g6.store import BlobStore
    from g6.store import BlobWriter
    BlobWriter.HOLD = 128 << 10  # past it the text streams through zstd: the other write path
    store = BlobStore(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY))
    body = os.urandom(1 << 20).hex().encode()  # text that does not shrink below the limit
    try:
        store.put_stream(body[i:i + 65536] for i in range(0, len(body), 65536))
        print(json.dumps({"stored": True}))
    except StoreDiskFull as e:
        print(json.dumps({"code": e.code, "message": str(e)}))
""")


def test_a_full_disk_while_streaming_a_text_body_is_typed_and_leaves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    r = subprocess.run([sys.executable, "-c", _STREAMED_FULL, str(root)], capture_output=True, timeout=60,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["code"] == "G6_E_STORE_DISK_FULL" and "File too large" in out["message"]
    assert [p for p in root.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("compression", ["zstd", "off"])
def test_open_verified_of_a_small_blob_reads_once_and_still_refuses_a_lie(tmp_path: Path, compression: str) -> None:
    store = BlobStore(tmp_path, fsync=False, compression=compression)
    ref, other = store.put(TEXT), store.put(TEXT[:5000])
    with store.open_verified(ref.sha256) as f:
        assert f.read(10) + f.read() == TEXT
    # the sha256 index now leads to another blob: refused before a byte is served
    store._sha_path(ref.sha256.split(":")[1]).write_text(other.blake3)
    with pytest.raises(BlobCorrupt, match="sha256 index points at"):
        store.open_verified(ref.sha256)
    # the bytes under the name changed (a whole valid frame, or raw bytes, of something else)
    p = kept(store, other.blake3)
    p.write_bytes(zstandard.ZstdCompressor().compress(TEXT[:4999] + b"X") if compression == "zstd"
                  else TEXT[:4999] + b"X")
    with pytest.raises(BlobCorrupt, match="refusing to serve"):
        store.open_verified(other.blake3)


@pytest.mark.parametrize("failing", ["data", "meta", "any"])
def test_a_failed_fsync_on_any_of_the_parallel_writes_is_typed_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    import errno

    from g6.errors import StoreDiskFull

    store = BlobStore(tmp_path / "s")  # fsync on: the data's fsync runs beside the meta and index writes
    ok = store.put(TEXT[:3000])
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        temp = "/tmp/put-" in name
        if failing == "any" or (failing == "data" and temp) or (failing == "meta" and "/tmp/meta-" in name):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(writer_mod.os, "fsync", fsync)
    with pytest.raises(StoreDiskFull, match="No space left"):
        store.put(TEXT)
    monkeypatch.setattr(writer_mod.os, "fsync", real_fsync)
    left = sorted(str(p.relative_to(store.root)) for p in store.root.rglob("*") if p.is_file())
    assert left == sorted(str(p.relative_to(store.root)) for p in (store.path(ok.blake3), store._meta_path(
        ok.blake3.split(":")[1]), store._sha_path(ok.sha256.split(":")[1])))
    assert store.put(TEXT).size == len(TEXT) and store.verify().ok  # the next put works


def test_slurp_reads_a_whole_file_whatever_its_stat_says(tmp_path: Path) -> None:
    p = tmp_path / "f"
    for body in (b"", b"x", TEXT):
        p.write_bytes(body)
        assert folder_files.slurp(str(tmp_path), "f") == body
    # a file whose size fstat does not know (0 here) is read to its end, not cut at the stat's size
    status = folder_files.slurp("/proc/self", "status")
    assert os.stat("/proc/self/status").st_size == 0 and status.startswith(b"Name:") and b"\nPid:" in status
    with pytest.raises(FileNotFoundError):
        folder_files.slurp(str(tmp_path), "absent")


@pytest.mark.parametrize("helper", ["runs first", "never runs"])
def test_digests_are_right_whichever_thread_hashes_sha256(monkeypatch: pytest.MonkeyPatch, helper: str) -> None:
    import threading

    class Scheduled(threading.Thread):
        """A helper thread the scheduler runs at once, or not before the caller is done."""

        def start(self) -> None:
            if helper == "runs first":
                self.run()

        def join(self, timeout: float | None = None) -> None:
            pass

    monkeypatch.setattr(base_mod.threading, "Thread", Scheduled)
    data = TEXT * 2
    assert len(data) >= base_mod.PARALLEL_AFTER
    ref = digests(data)
    assert (ref.blake3, ref.sha256) == (f"blake3:{blake3.blake3(data).hexdigest()}",
                                        f"sha256:{hashlib.sha256(data).hexdigest()}")
