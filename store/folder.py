"""The blob store: atomic, deduplicated, streaming writes keyed by blake3.

Layout under the root (``$G6_HOME/knowledge/fetched``)::

    blake3/ab/cd/<hex>        the raw bytes, never modified after the rename
    blake3/ab/cd/<hex>.zst    or those bytes zstd-compressed (text bodies; ``g6.store.compression``)
    meta/ab/<b3hex>.json      {"blake3", "sha256", "size"} of that blob
    sha256/ab/<hex>           one line: the blake3 digest, so blobs open by sha256 too
    tmp/                      partial writes; never read, swept by ``gc``

Write order and durability (the fsync policy): bytes go to a temp file in ``tmp/`` while both
digests are computed in the same pass; the temp file is fsynced while its meta and sha256 index
are written (each temp + fsync + ``os.replace``; the three fsyncs run at once, on their own
threads), and only when all three are done is the data file renamed into place with
``os.replace`` and the containing folder fsynced. A blob is visible under its digest only
after that last rename, so a crash at any point leaves either no blob or a whole one; a crash
before the rename leaves only a temp file (and possibly a meta file for an absent blob, which is
harmless and swept by ``gc``). ``fsync=False`` skips the fsyncs for throw-away stores (tests,
benchmarks) and keeps the atomic renames.

A full disk (ENOSPC, a quota, or a file-size limit) during any of these writes raises
``StoreDiskFull`` carrying the OS error; the temp file and any index entry of the unfinished put
are removed, so nothing half-written is visible and the next put works once space is freed.

Reading trusts no index: ``read_checked`` and ``open_verified`` hash the bytes before they are
served and refuse (``BlobCorrupt``) unless they match the blake3 name and the digest asked for;
``verify`` checks every blob, its meta, and every sha256 index entry.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import queue
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import blake3

from g6.errors import BadDigest, BlobCorrupt, BlobNotFound, StoreDiskFull, StoreError
from g6.store import compression as compression_mod
from g6.store.digest import Digest
from g6.store.diskfull import is_disk_full
from g6.store.verifying import BlobCheck, StoreVerifyReport, check_every_blob, judge_index

CHUNK = 1 << 20
META_MAX = 1 << 12  # a meta is ~ 200 bytes: a larger file is damaged, never read whole
_DAMAGED: Any = object()  # a meta file that is there but holds no JSON (``BlobStore._load_meta``)


@dataclass(frozen=True, slots=True)
class BlobRef:
    """What the store knows of one blob."""

    blake3: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, object]:
        return {"blake3": self.blake3, "sha256": self.sha256, "size": self.size}


@dataclass(frozen=True, slots=True)
class GcReport:
    removed: tuple[str, ...]
    kept: int
    temp_files_removed: int
    skipped_young: tuple[str, ...] = field(default=())
    index_entries_removed: int = 0  # meta and sha256 entries left by puts that never finished


def _full(e: BaseException, doing: str) -> StoreDiskFull | None:
    """A StoreDiskFull for ``e`` if it is the disk (or a file-size limit) running out."""
    if not is_disk_full(e):
        return None
    return StoreDiskFull(f"disk full (or file-size limit reached) while {doing}; nothing was kept, free space "
                         f"and run the command again [{StoreDiskFull.code}: {e}]")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _NotAFile(FileNotFoundError):
    """What sits at a blob's (or meta's) path is not a regular file (a folder, a FIFO, a device): it
    is not a blob, exactly as ``_stored_path`` (``is_file``) and ``verify`` see it, so every reader
    takes it for absent."""


def _open_regular(path: str) -> tuple[int, int]:
    """An fd open on ``path`` and its size; ``_NotAFile`` unless it is a regular file. O_NONBLOCK so
    that a FIFO planted there cannot hang the open (it changes nothing for a regular file)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _NotAFile(errno.ENOENT, "not a regular file", path)
    return fd, st.st_size


def _slurp(path: str) -> bytes:
    """A whole regular file with the fewest syscalls: open, fstat, one read (more only for a file past
    one read's limit, or one that grew since the fstat); anything else at ``path`` is ``_NotAFile``."""
    fd, size = _open_regular(path)
    try:
        return _read_fd(fd, size)
    finally:
        os.close(fd)


INDEX_MAX = 1 << 10  # an index entry is 71 bytes ("blake3:" and 64 hex): a larger one is not read whole


def _read_entry(path: str | Path) -> bytes:
    """The first ``INDEX_MAX`` bytes of a sha256 index entry: ``_NotAFile`` for a folder or a FIFO there
    (never a blocking read), OSError when it cannot be read."""
    fd, _ = _open_regular(str(path))
    try:
        return os.read(fd, INDEX_MAX)
    finally:
        os.close(fd)


def _read_fd(fd: int, size: int) -> bytes:
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data
    parts = [data]
    while block := os.read(fd, max(size, CHUNK)):
        parts.append(block)
    return b"".join(parts)


def _replace(src: str | Path, dst: Path) -> None:
    """``os.replace``, making ``dst``'s folder first only when it is missing (most puts land in a
    folder that exists: one syscall, not a mkdir per level on every put)."""
    try:
        os.replace(src, dst)
    except FileNotFoundError:
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dst)


class _InThread:
    """``fn(*args)`` on its own thread (file writes and fsyncs drop the GIL); ``result`` joins and
    returns its value or raises its error."""

    def __init__(self, fn: Any, *args: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._t = threading.Thread(target=self._run, args=(fn, args), daemon=True)
        self._t.start()

    def _run(self, fn: Any, args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as e:  # noqa: BLE001 - re-raised in result()
            self._error = e

    def join(self) -> None:
        self._t.join()

    def result(self) -> Any:
        self._t.join()
        if self._error is not None:
            raise self._error
        return self._value


class _Sha256Thread:
    """sha256 on a second thread, so it runs beside blake3 and the file write (hashlib drops the
    GIL for large updates). A bounded queue keeps memory flat: a slow hash slows the writer."""

    def __init__(self, h: Any) -> None:
        self._h = h
        self._error: BaseException | None = None
        self._q: queue.Queue[bytes | None] = queue.Queue(maxsize=8)
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while (chunk := self._q.get()) is not None:
            if self._error is None:  # after a failure keep draining, so the writer never blocks
                try:
                    self._h.update(chunk)
                except BaseException as e:  # noqa: BLE001 - re-raised in finish()
                    self._error = e

    def update(self, chunk: bytes) -> None:
        self._q.put(chunk)

    def finish(self) -> Any:
        self._q.put(None)
        self._t.join()
        if self._error is not None:
            raise self._error
        return self._h


class BlobWriter:
    """Incremental writer: ``write`` chunks as they arrive, then ``commit`` (or ``abort``).

    Hashes while writing, so memory stays flat whatever the body size. Past ``PIPELINE_AFTER``
    bytes, sha256 moves to a second thread (it is the slowest of the three passes, and hashlib,
    blake3 and zstd all drop the GIL, so it runs beside blake3, zstd and the file write).

    A body that is not compressed goes to the temp file as it comes. A text body is held (the
    chunks as given, not copied) up to ``HOLD`` bytes and compressed at commit in one call into one
    frame that declares its size, written with one write: such a frame is read back in one pass
    (``compression.read_compressed``). A text body past ``HOLD`` streams through a zstd stream
    writer instead, so memory stays bounded by ``HOLD`` whatever the size.
    """

    PIPELINE_AFTER = 256 << 10
    HOLD = 16 << 20

    def __init__(self, store: BlobStore, content_type: str | None = None) -> None:
        self._store = store
        self._content_type = content_type
        self._zfile: compression_mod.CompressingFile | None = None
        self._held: list[bytes] | None = []  # chunks not written yet (see the class docstring)
        self._held_size = 0
        self._compress: bool | None = None  # decided by the first MIN_SIZE bytes
        fd, name = tempfile.mkstemp(dir=store.tmp_dir, prefix="put-")
        self._path = Path(name)
        self._file: BinaryIO | None = os.fdopen(fd, "wb")
        self._b3 = blake3.blake3()
        self._sha = hashlib.sha256()
        self._sha_thread: _Sha256Thread | None = None
        self.size = 0

    def write(self, chunk: bytes) -> None:
        if self._file is None:
            raise ValueError("writer already closed")
        chunk = bytes(chunk)  # the hash thread and the held list must see bytes no caller can change later
        if self._sha_thread is not None:
            self._sha_thread.update(chunk)
        elif self.size + len(chunk) > self.PIPELINE_AFTER:
            self._sha_thread = _Sha256Thread(self._sha)
            self._sha_thread.update(chunk)
        else:
            self._sha.update(chunk)
        self._b3.update(chunk)
        self.size += len(chunk)
        try:
            if self._held is not None:
                self._held.append(chunk)
                self._held_size += len(chunk)
                if self._compress is None and self._held_size >= compression_mod.MIN_SIZE:
                    self._compress = self._decide()
                if self._compress is False:
                    self._write_held()  # kept raw: from now on straight to the file
                elif self._compress and self._held_size > self.HOLD:
                    self._zfile = compression_mod.CompressingFile(self._file)
                    self._write_held()  # too large to hold: streamed compression from now on
                return
            (self._zfile or self._file).write(chunk)
        except OSError as e:
            self.abort()
            if (full := _full(e, "writing a blob")) is not None:
                raise full from e
            raise

    def _decide(self) -> bool:
        """The first bytes decide: text is kept compressed, already-compressed formats raw."""
        assert self._held is not None
        sample = b"".join(self._held)[:compression_mod.SNIFF]
        return self._store.compression == "zstd" and compression_mod.worth_compressing(sample, self._content_type)

    def _write_held(self) -> None:
        assert self._file is not None and self._held is not None
        held, self._held = self._held, None
        out = self._zfile or self._file
        for c in held:
            out.write(c)

    def _sha_hex(self) -> str:
        if self._sha_thread is not None:
            self._sha = self._sha_thread.finish()
            self._sha_thread = None
        return str(self._sha.hexdigest())

    def commit(self) -> BlobRef:
        if self._file is None:
            raise ValueError("writer already closed")
        f, self._file = self._file, None
        compressed = bool(self._compress)
        data_synced: _InThread | None = None
        try:
            try:
                if self._held is not None:
                    held, self._held = self._held, None
                    if compressed:  # one frame declaring its size, one write
                        f.write(compression_mod.compress_frame(held, self._held_size))
                    else:  # shorter than MIN_SIZE: kept raw
                        for c in held:
                            f.write(c)
                elif self._zfile is not None:
                    self._zfile.finish()
                f.flush()
                if self._store.fsync:
                    # the data's fsync runs beside the sha256 wait and the meta and index writes (and
                    # their fsyncs); the rename into place waits for it
                    data_synced = _InThread(os.fsync, f.fileno())
                ref = BlobRef(f"blake3:{self._b3.hexdigest()}", f"sha256:{self._sha_hex()}", self.size)
                self._store._install(self._path, ref, compressed=compressed, data_synced=data_synced)
            finally:
                if data_synced is not None:
                    data_synced.join()  # before the file is closed, whatever happened
                f.close()
        except BaseException as e:
            self.abort()
            if (full := _full(e, "writing a blob")) is not None:
                raise full from e
            raise
        return ref

    def abort(self) -> None:
        self._held = None
        if self._sha_thread is not None:
            self._sha_thread.finish()
            self._sha_thread = None
        if self._file is not None:
            f, self._file = self._file, None
            # the temp file is discarded: a close that fails flushing what was buffered (a full
            # disk, the error being handled now) must not hide that error or keep the file
            with contextlib.suppress(OSError):
                f.close()
        with contextlib.suppress(FileNotFoundError):
            self._path.unlink()

    def __enter__(self) -> BlobWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self.abort()


PARALLEL_AFTER = 1 << 20  # below this a second thread costs about what it saves


def digests(data: bytes) -> BlobRef:
    """blake3, sha256 and size of ``data``. Past ``PARALLEL_AFTER`` bytes sha256 runs on a second
    thread beside blake3 (both drop the GIL), so the pair costs about the slower one, not the sum."""
    if len(data) < PARALLEL_AFTER:
        return BlobRef(f"blake3:{blake3.blake3(data).hexdigest()}", f"sha256:{hashlib.sha256(data).hexdigest()}",
                       len(data))
    sha = hashlib.sha256()
    claim = threading.Lock()  # whoever takes it hashes sha256: the helper, or this thread if it never got to run

    def helper() -> None:
        if claim.acquire(blocking=False):
            sha.update(data)

    t = threading.Thread(target=helper, daemon=True)
    t.start()
    b3 = blake3.blake3(data).hexdigest()
    if claim.acquire(blocking=False):
        # on a busy machine the helper may still wait for a core: hash here rather than wait for it
        # (the helper, when it runs, finds the claim taken and ends)
        sha.update(data)
    else:
        t.join()
    return BlobRef(f"blake3:{b3}", f"sha256:{sha.hexdigest()}", len(data))


def hash_stream(f: BinaryIO, copy_to: Callable[[bytes], object] | None = None) -> BlobRef:
    """blake3, sha256 and size of what ``f`` reads to its end, in CHUNK blocks (each also handed to
    ``copy_to``, e.g. a spool or a writer, so a copy is hashed in the same pass)."""
    b3, sha, size = blake3.blake3(), hashlib.sha256(), 0
    while block := f.read(CHUNK):
        b3.update(block)
        sha.update(block)
        size += len(block)
        if copy_to is not None:
            copy_to(block)
    return BlobRef(f"blake3:{b3.hexdigest()}", f"sha256:{sha.hexdigest()}", size)


def index_target(asked: Digest, line: str) -> str:
    """The blake3 hex a sha256 index entry (``line``, its text) names; ``BlobCorrupt`` unless it holds a
    blake3 digest (another algorithm's digest is no blob name)."""
    try:
        target = Digest.parse(line)
    except BadDigest:
        target = None
    if target is None or target.algo != "blake3":
        raise BlobCorrupt(f"the index entry of {asked} does not hold a blake3 digest; run `g6 blob verify`")
    return target.hex


def refuse_mismatch(asked: Digest, b3hex: str, actual: BlobRef) -> None:
    """BlobCorrupt unless ``actual`` (the bytes' own hashes) matches the name and the digest asked for."""
    if actual.blake3 != f"blake3:{b3hex}":
        raise BlobCorrupt(f"{asked}: the bytes kept under blake3:{b3hex} hash to {actual.blake3}; "
                          "refusing to serve them (run `g6 blob verify`)")
    if asked.algo == "sha256" and actual.sha256 != str(asked):
        raise BlobCorrupt(f"{asked}: the sha256 index points at blake3:{b3hex}, whose sha256 is "
                          f"{actual.sha256}; refusing to serve it (run `g6 blob verify`)")


class VerifiedReads:
    """The reads that check before they serve, for any store with ``_resolve`` (digest -> blake3
    hex, through the sha256 index) and ``read``."""

    def _resolve(self, digest: str | Digest) -> str:
        raise NotImplementedError

    def read(self, digest: str | Digest) -> bytes:
        raise NotImplementedError

    def indexed_as(self, digest: str | Digest) -> str | None:
        """The blake3 digest the sha256 index gives for ``digest`` (None if not indexed or unreadable)."""
        try:
            return f"blake3:{self._resolve(digest)}"
        except (BlobNotFound, BlobCorrupt, BadDigest):
            return None

    def read_checked(self, digest: str | Digest) -> tuple[BlobRef, bytes]:
        """The blob's bytes and their own digests, after checking they are what was asked for."""
        d = digest if isinstance(digest, Digest) else Digest.parse(digest)
        data = self.read(d)
        b3hex = self._resolve(d)
        actual = digests(data)
        refuse_mismatch(d, b3hex, actual)
        return actual, data

    def read_as(self, content: Mapping[str, Any]) -> bytes:
        """The bytes a receipt's ``content`` ({"blake3", "sha256", "size"}) names, served only once
        hashed and found to be exactly those: what an export, a bundle or a citation hands on must be
        the bytes the signed receipt vouches for, not whatever file sits under that name."""
        try:
            b3, sha, size = str(content["blake3"]), str(content["sha256"]), content["size"]
        except (KeyError, TypeError):
            raise BlobCorrupt(f"a receipt's content record {content!r} lacks blake3, sha256 or size") from None
        actual, data = self.read_checked(b3)
        if actual.sha256 != sha or isinstance(size, bool) or actual.size != size:
            raise BlobCorrupt(f"{b3}: the stored bytes (sha256 {actual.sha256}, {actual.size} bytes) are not "
                              f"those of the receipt ({sha}, {size} bytes); refusing to use them "
                              "(run `g6 blob verify`)")
        return data


class BlobStore(VerifiedReads):
    """A content-addressed store rooted at one folder. Nothing here reads global state."""

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True, create: bool = True,
                 compression: str = "zstd") -> None:
        """``create=False`` opens for reading: no folder is made (a missing store holds no blobs)."""
        self.root = Path(root)
        self.fsync = fsync
        self.compression = compression_mod.parse_setting(compression)
        self._root = str(self.root)
        self.tmp_dir = self.root / "tmp"
        if create:
            for sub in ("blake3", "meta", "sha256", "tmp"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)

    # -- paths -------------------------------------------------------------------------------
    def _data_path(self, b3hex: str) -> Path:
        return self.root / "blake3" / b3hex[:2] / b3hex[2:4] / b3hex

    def _stored_path(self, b3hex: str) -> tuple[Path, bool] | None:
        """Where the blob's bytes are kept and whether compressed (see ``g6.store.compression``)."""
        raw = self._data_path(b3hex)
        if raw.is_file():
            return raw, False
        z = raw.with_name(raw.name + compression_mod.SUFFIX)
        if z.is_file():
            return z, True
        return None

    def _meta_path(self, b3hex: str) -> Path:
        return self.root / "meta" / b3hex[:2] / f"{b3hex}.json"

    def _load_meta(self, b3hex: str) -> Any:
        """The blob's meta, parsed: ``None`` when there is none (a lost meta: the bytes are the truth and
        are hashed again), ``_DAMAGED`` when the file is there but holds no JSON (or is past ``META_MAX``).
        ``BlobCorrupt`` when what sits at the meta's path is not a regular file (a folder, a FIFO, a
        device, a file where its folder should be): the store never makes one, so it is tampering, not a
        lost meta; a FIFO is never opened for a blocking read (``_open_regular``)."""
        path = f"{self._root}/meta/{b3hex[:2]}/{b3hex}.json"
        try:
            fd, size = _open_regular(path)
        except _NotAFile:
            raise BlobCorrupt(f"blob blake3:{b3hex}: its meta {path} is not a regular file (a folder, a FIFO or a "
                              "device); refusing to read the blob (run `g6 blob verify`)") from None
        except FileNotFoundError:
            return None
        except OSError as e:  # NotADirectoryError (a file on the meta folder's path), EACCES, ENXIO (a socket)
            raise BlobCorrupt(f"blob blake3:{b3hex}: its meta {path} cannot be read ({e.strerror or e}); refusing "
                              "to read the blob (run `g6 blob verify`)") from None
        try:
            data = os.read(fd, META_MAX + 1)
        finally:
            os.close(fd)
        if size > META_MAX or len(data) > META_MAX:
            return _DAMAGED
        try:
            return json.loads(data)
        except ValueError:  # not UTF-8 (UnicodeDecodeError is a ValueError) or not JSON
            return _DAMAGED

    def _refuse_odd_meta(self, b3hex: str) -> None:
        """``BlobCorrupt`` if the blob's meta path holds something the store never makes (see ``_load_meta``):
        one stat, for the verified reads of a raw blob, which otherwise never look at the meta."""
        path = f"{self._root}/meta/{b3hex[:2]}/{b3hex}.json"
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            self._load_meta(b3hex)  # raises, naming what is wrong
            raise BlobCorrupt(f"blob blake3:{b3hex}: its meta {path} is not a regular file")  # pragma: no cover

    def _sha_path(self, shahex: str) -> Path:
        return self.root / "sha256" / shahex[:2] / shahex

    def _resolve(self, digest: str | Digest) -> str:
        """Return the blake3 hex for any accepted digest, or raise BlobNotFound."""
        d = digest if isinstance(digest, Digest) else Digest.parse(digest)
        if d.algo == "blake3":
            return d.hex
        try:
            raw = _read_entry(self._sha_path(d.hex))
        except _NotAFile:
            raise BlobCorrupt(f"the index entry of {d} is not a regular file (a folder or a FIFO); run "
                              "`g6 blob verify`") from None
        except (FileNotFoundError, NotADirectoryError):
            raise BlobNotFound(f"no blob with {d}") from None
        except OSError as e:
            raise BlobNotFound(f"the index entry of {d} is unreadable: {e}") from None
        try:
            line = raw.decode().strip()
        except UnicodeDecodeError:
            line = ""  # not text: holds no digest
        return index_target(d, line)

    # -- writing -----------------------------------------------------------------------------
    def writer(self, content_type: str | None = None) -> BlobWriter:
        """``content_type`` (when known) helps decide whether the body is kept compressed."""
        return BlobWriter(self, content_type)

    def put_stream(self, chunks: Iterable[bytes] | BinaryIO) -> BlobRef:
        """Store a body given as an iterable of chunks or a binary file object."""
        with self.writer() as w:
            if hasattr(chunks, "read"):
                reader: BinaryIO = chunks  # type: ignore[assignment]
                while block := reader.read(CHUNK):
                    w.write(block)
            else:
                for block in chunks:  # type: ignore[union-attr]
                    w.write(block)
            return w.commit()

    def put(self, data: bytes) -> BlobRef:
        return self.put_stream([data])

    def _atomic_write_small(self, path: Path, data: bytes) -> None:
        fd, name = tempfile.mkstemp(dir=self.tmp_dir, prefix="meta-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                if self.fsync:
                    f.flush()
                    os.fsync(f.fileno())
            _replace(name, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
            raise

    def _install(self, tmp: Path, ref: BlobRef, compressed: bool = False,
                 data_synced: _InThread | None = None) -> None:
        """Meta and sha256 index (with fsync: at once, on two threads), then the data renamed into
        place once ``data_synced`` (the temp file's fsync, when there is one) is done."""
        b3hex = Digest.parse(ref.blake3).hex
        data_path = self._data_path(b3hex)
        if compressed:
            data_path = data_path.with_name(data_path.name + compression_mod.SUFFIX)
        if self._stored_path(b3hex) is not None:
            tmp.unlink()  # dedupe: the same bytes are already here
            return
        try:
            meta = json.dumps(ref.to_json(), sort_keys=True).encode()
            # with fsync each write waits on the disk, and two at once share the wait; without, they are
            # a few cheap syscalls that a thread hand-off would only delay
            side = _InThread(self._atomic_write_small, self._meta_path(b3hex), meta) if self.fsync else None
            try:
                if side is None:
                    self._atomic_write_small(self._meta_path(b3hex), meta)
                self._atomic_write_small(self._sha_path(Digest.parse(ref.sha256).hex), ref.blake3.encode())
            finally:
                if side is not None:
                    side.result()
            if data_synced is not None:
                data_synced.result()
            try:
                _replace(tmp, data_path)
            except (IsADirectoryError, NotADirectoryError):  # a folder (or a file on a folder's path) is there
                raise StoreError(f"cannot store blob {ref.blake3}: {data_path} is taken by something that is not "
                                 "a blob file; move it away (run `g6 blob verify`)") from None
            if self.fsync:
                _fsync_dir(data_path.parent)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            if not data_path.is_file():  # an unfinished put leaves no index entry behind
                for p in (self._meta_path(b3hex), self._sha_path(Digest.parse(ref.sha256).hex)):
                    with contextlib.suppress(OSError):
                        p.unlink()
            raise

    # -- reading -----------------------------------------------------------------------------
    def has(self, digest: str | Digest) -> bool:
        try:
            return self._stored_path(self._resolve(digest)) is not None
        except BlobNotFound:
            return False

    def path(self, digest: str | Digest) -> Path:
        """The file the blob is kept in: its raw bytes, or (named ``*.zst``) compressed. Read
        through ``open``/``read``, which always give the raw bytes."""
        found = self._stored_path(self._resolve(digest))
        if found is None:
            raise BlobNotFound(f"no blob {digest}")
        return found[0]

    def _raw_size(self, b3hex: str) -> int:
        """The recorded raw size of a compressed blob: the bound on its decompression. A meta whose size
        is not a non-negative int within ``compression.MAX_RAW_SIZE`` is corrupt (it is never used to
        size an allocation)."""
        meta = self._load_meta(b3hex)
        if isinstance(meta, dict) and "size" in meta:
            size = meta["size"]
            if not compression_mod.valid_size(size):
                raise BlobCorrupt(f"blob blake3:{b3hex}: its meta records a size of {repr(size)[:40]}, not a size "
                                  f"in 0..{compression_mod.MAX_RAW_SIZE}; refusing to read it (run `g6 blob verify`)")
            return int(size)
        # meta lost or damaged: the size is derived from the bytes, streamed (flat memory, hard limit)
        found = self._stored_path(b3hex)
        if found is None:
            raise BlobNotFound(f"no blob blake3:{b3hex}")
        ref = self._hash_file(found[0])
        if ref.blake3 != f"blake3:{b3hex}":
            raise StoreError(f"blob blake3:{b3hex} lost its meta and its bytes hash to {ref.blake3}")
        return ref.size

    def open(self, digest: str | Digest) -> BinaryIO:
        b3hex = self._resolve(digest)
        found = self._stored_path(b3hex)
        if found is None:
            raise BlobNotFound(f"no blob {digest}")
        if found[1]:
            return compression_mod.open_compressed(found[0], self._raw_size(b3hex))
        return found[0].open("rb")

    def read(self, digest: str | Digest) -> bytes:
        """The raw bytes, read with one open and one read (no stat first); a compressed blob is
        inflated in one call bounded by its recorded size."""
        b3hex = self._resolve(digest)
        raw = f"{self._root}/blake3/{b3hex[:2]}/{b3hex[2:4]}/{b3hex}"  # a string: Path joins cost more than the read
        try:
            return _slurp(raw)
        except (FileNotFoundError, NotADirectoryError):
            pass
        try:
            data = _slurp(raw + compression_mod.SUFFIX)
        except (FileNotFoundError, NotADirectoryError):
            raise BlobNotFound(f"no blob {digest}") from None
        return compression_mod.decompress(data, self._raw_size(b3hex), b3hex)

    def _read_if_small(self, b3hex: str) -> bytes | None:
        """The raw bytes of a blob of at most ``BlobWriter.HOLD`` raw bytes; None for a larger (or
        absent) one, which is streamed instead. Only regular files are read (``_open_regular``)."""
        raw = f"{self._root}/blake3/{b3hex[:2]}/{b3hex[2:4]}/{b3hex}"  # a string: Path joins cost more than the read
        for path, compressed in ((raw, False), (raw + compression_mod.SUFFIX, True)):
            try:
                fd, size = _open_regular(path)
            except (FileNotFoundError, NotADirectoryError):  # absent, or not a file (a folder): not the blob
                continue
            try:
                if not compressed:
                    return _read_fd(fd, size) if size <= BlobWriter.HOLD else None
                raw_size = self._raw_size(b3hex)  # the bound, checked before anything is read or inflated
                if raw_size > BlobWriter.HOLD:
                    return None
                return compression_mod.decompress(_read_fd(fd, size), raw_size, b3hex)
            finally:
                os.close(fd)
        return None

    def _checked(self, d: Digest) -> tuple[BlobRef, bytes | BinaryIO]:
        """The blob's own digests and its bytes (a small blob) or its open file rewound (a larger one),
        after one hashing pass showed they are what ``d`` asks for. A blob of up to ``BlobWriter.HOLD``
        raw bytes is read (and inflated) once and hashed in memory; a larger one is hashed through its
        open file, which is never rewritten in place, only replaced, so it keeps the bytes checked."""
        b3hex = self._resolve(d)
        self._refuse_odd_meta(b3hex)
        whole = self._read_if_small(b3hex)
        if whole is not None:  # one read (one inflate), both digests at once
            actual = digests(whole)
            refuse_mismatch(d, b3hex, actual)
            return actual, whole
        f = self.open(d)
        try:
            actual = hash_stream(f)
            refuse_mismatch(d, b3hex, actual)
            f.seek(0)
        except BaseException:
            f.close()
            raise
        return actual, f

    def open_verified(self, digest: str | Digest) -> BinaryIO:
        """The blob opened for reading, after one hashing pass showed the bytes are what was asked
        for (``_checked``): a small blob is served from the memory it was hashed in, a larger one from
        the file it was hashed through, so memory stays bounded whatever the size."""
        _, got = self._checked(digest if isinstance(digest, Digest) else Digest.parse(digest))
        return io.BytesIO(got) if isinstance(got, bytes) else got

    def read_checked(self, digest: str | Digest) -> tuple[BlobRef, bytes]:
        """The blob's bytes and their own digests, after checking they are what was asked for. A blob
        past ``BlobWriter.HOLD`` is hashed as it streams before it is held in memory, so a meta that
        lies about the size, or a frame that inflates past what was stored, is refused having cost
        only a stream's buffers, not the size it claims."""
        actual, got = self._checked(digest if isinstance(digest, Digest) else Digest.parse(digest))
        if isinstance(got, bytes):
            return actual, got
        with got as f:
            data = f.read()
        if len(data) != actual.size:
            raise BlobCorrupt(f"blob {actual.blake3} changed while it was read; run `g6 blob verify`")
        return actual, data

    def info(self, digest: str | Digest) -> BlobRef:
        b3hex = self._resolve(digest)
        found = self._stored_path(b3hex)
        if found is None:
            raise BlobNotFound(f"no blob {digest}")
        meta = self._load_meta(b3hex)  # BlobCorrupt if a folder or a FIFO sits there
        try:
            return BlobRef(meta["blake3"], meta["sha256"], int(meta["size"]))
        except (TypeError, ValueError, KeyError):
            # Meta lost or damaged: the bytes are the truth, so derive it again.
            return self._hash_file(found[0])

    def iter_digests(self) -> Iterator[str]:
        base = self.root / "blake3"
        if not base.is_dir():
            return
        for a in sorted(base.iterdir()):
            if not a.is_dir():
                continue  # not a blob: `verify` reports it (``_strays``)
            for b in sorted(a.iterdir()):
                if not b.is_dir():
                    continue
                last = None
                for f in sorted(b.iterdir()):
                    name = f.name.removesuffix(compression_mod.SUFFIX)
                    if name != last:  # a blob written both raw and compressed (by two writers) is one blob
                        yield f"blake3:{name}"
                    last = name

    def _strays(self) -> Iterator[str]:
        """What sits in the blob tree where the store keeps only folders (``blake3/ab/`` and ``blake3/ab/cd/``):
        never a blob, never read, so `verify` names it rather than pass over it."""
        base = self.root / "blake3"
        for a in sorted(base.iterdir()) if base.is_dir() else ():
            if not a.is_dir():
                yield f"blake3/{a.name}"
                continue
            for b in sorted(a.iterdir()):
                if not b.is_dir():
                    yield f"blake3/{a.name}/{b.name}"

    # -- checking ----------------------------------------------------------------------------
    @staticmethod
    def _hash_file(path: Path, raw_size: int | None = None) -> BlobRef:
        """Digests of the raw bytes in ``path``; a ``*.zst`` file is decompressed, bounded by
        ``raw_size`` (its recorded size, else the hard limit of an unbounded read)."""
        opened: BinaryIO
        if path.name.endswith(compression_mod.SUFFIX):
            opened = compression_mod.open_compressed(path, compression_mod.UNKNOWN_SIZE_LIMIT
                                                     if raw_size is None else raw_size, exact=raw_size is not None)
        else:
            opened = path.open("rb")
        with opened as f:
            return hash_stream(f)

    def check(self, digest: str | Digest, expect: BlobRef | None = None) -> BlobCheck:
        """Re-hash one blob; compare with its name, its meta and ``expect`` (e.g. a receipt's)."""
        return self._check(digest, expect)[0]

    def _check(self, digest: str | Digest, expect: BlobRef | None = None) -> tuple[BlobCheck, BlobRef | None]:
        name = str(digest)
        try:
            b3hex = self._resolve(digest)
        except (BlobNotFound, BadDigest, BlobCorrupt) as e:
            return BlobCheck(name, False, str(e)), None
        found = self._stored_path(b3hex)
        if found is None:
            return BlobCheck(name, False, "missing"), None
        path = found[0]
        raw_size = None
        if found[1]:
            try:
                raw_size = self._raw_size(b3hex)
            except StoreError:  # meta lost: bounded by what the receipt says, else by the hard limit
                raw_size = expect.size if expect is not None else None
        try:
            actual = self._hash_file(path, raw_size)
        except StoreError as e:
            return BlobCheck(name, False, str(e)), None
        if actual.blake3 != f"blake3:{b3hex}":
            return BlobCheck(name, False, f"content hashes to {actual.blake3}"), actual
        if isinstance(digest, str) and digest.startswith("sha256:") and actual.sha256 != str(Digest.parse(digest)):
            return BlobCheck(name, False, f"the sha256 index points at a blob whose sha256 is {actual.sha256}"), actual
        if not found[1] and (twin := path.with_name(path.name + compression_mod.SUFFIX)).is_file():
            # kept both raw and compressed (two writers, one with compression off): reads serve the raw
            # file, but the other copy is stored evidence too and must hold the same bytes
            try:
                other = self._hash_file(twin, actual.size)
            except StoreError as e:
                return BlobCheck(name, False, f"the compressed copy beside the raw file: {e}"), actual
            if other != actual:
                return BlobCheck(name, False, f"the compressed copy beside the raw file holds other bytes "
                                              f"({other.blake3}, {other.size} bytes)"), actual
        try:
            meta = self._load_meta(b3hex)
        except BlobCorrupt as e:
            return BlobCheck(name, False, str(e)), actual
        if meta is _DAMAGED:  # the meta is written whole (temp file, fsync, rename): damage, not a crash
            return BlobCheck(name, False, f"meta is not JSON (or is past {META_MAX} bytes)"), actual
        if meta is not None and (
                not isinstance(meta, dict) or meta.get("blake3") != actual.blake3 or
                meta.get("sha256") != actual.sha256 or meta.get("size") != actual.size):
            return BlobCheck(name, False, "meta disagrees with content"), actual
        if expect is not None:
            if expect.sha256 != actual.sha256:
                return BlobCheck(name, False, f"sha256 is {actual.sha256}, expected {expect.sha256}"), actual
            if expect.size != actual.size:
                return BlobCheck(name, False, f"size is {actual.size}, expected {expect.size}"), actual
        return BlobCheck(name, True), actual

    def _index_entries(self) -> Iterator[Path]:
        base = self.root / "sha256"
        if base.is_dir():
            for a in sorted(base.iterdir()):
                if a.is_dir():
                    yield from sorted(a.iterdir())

    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> StoreVerifyReport:
        """Re-hash every blob (name, meta), then check every sha256 index entry points at a blob
        whose sha256 is that entry's name. A missing store is a failure, not an empty success.
        ``progress(blobs checked, blobs)`` after each blob."""
        if not (self.root / "blake3").is_dir():
            return StoreVerifyReport(0, (BlobCheck(str(self.root), False, "no blob store here (home missing?)"),))
        blobs = check_every_blob(self, progress)
        index = judge_index(((f"sha256:{p.name}", self._read_entry(p)) for p in self._index_entries()), blobs,
                            lambda b3hex: self._stored_path(b3hex) is not None)
        dangling = index.dangling
        strays = [BlobCheck(p, False, "not a blob: a file where the store keeps only folders") for p in self._strays()]
        meta_base = self.root / "meta"
        for a in sorted(meta_base.iterdir()) if meta_base.is_dir() else ():
            for m in sorted(a.iterdir()) if a.is_dir() else ():
                if self._stored_path(m.name.removesuffix(".json")) is None:
                    if not m.is_file():  # a folder, a FIFO: never written by a put: not the leftover of one
                        strays.append(BlobCheck(f"meta/{a.name}/{m.name}", False, "not a regular file where a "
                                                                                    "meta belongs"))
                        continue
                    dangling.append(f"blake3:{m.name.removesuffix('.json')} (meta)")
        return StoreVerifyReport(blobs.checked, tuple(blobs.bad + index.bad + strays), index.checked, tuple(dangling))

    @staticmethod
    def _read_entry(path: Path) -> bytes | None:
        """A sha256 index entry's bytes; None when it cannot be read or is not a regular file (a folder, a
        FIFO, which is never waited on): ``judge_index`` fails it."""
        try:
            return _read_entry(path)
        except OSError:
            return None

    # -- removal -----------------------------------------------------------------------------
    def gc(self, referenced: Iterable[str], *, grace_seconds: float = 3600.0, dry_run: bool = False,
           progress: Callable[[int, int], None] | None = None) -> GcReport:
        """Remove blobs no receipt references (``progress(blobs looked at, blobs)`` as it goes).

        ``grace_seconds`` protects blobs written moments ago whose receipt is not appended yet
        (the capture path writes the blob first, then the receipt).
        """
        keep = set()
        for r in referenced:
            # a damaged sha256 entry is for `verify` to report; a receipt names the blob by blake3 too
            with contextlib.suppress(BlobNotFound, BlobCorrupt, BadDigest):
                keep.add(self._resolve(r))
        now = time.time()
        removed, young, kept = [], [], 0
        digests = list(self.iter_digests())
        for i, d in enumerate(digests):
            if progress is not None:
                progress(i, len(digests))
            hexd = d.split(":", 1)[1]
            if hexd in keep:
                kept += 1
                continue
            found = self._stored_path(hexd)
            if found is None:
                continue
            path = found[0]
            if now - path.stat().st_mtime < grace_seconds:
                young.append(d)
                continue
            removed.append(d)
            if not dry_run:
                ref = self.info(d)
                path.unlink()
                with contextlib.suppress(FileNotFoundError):
                    self._meta_path(hexd).unlink()
                with contextlib.suppress(FileNotFoundError, BadDigest):
                    self._sha_path(Digest.parse(ref.sha256).hex).unlink()
        if progress is not None:
            progress(len(digests), len(digests))
        temps = 0
        for t in (self.tmp_dir.iterdir() if self.tmp_dir.is_dir() else ()):
            if now - t.stat().st_mtime >= grace_seconds:
                temps += 1
                if not dry_run:
                    with contextlib.suppress(FileNotFoundError):
                        t.unlink()
        return GcReport(tuple(removed), kept, temps, tuple(young), self._sweep_unfinished(now, grace_seconds, dry_run))

    def _sweep_unfinished(self, now: float, grace_seconds: float, dry_run: bool) -> int:
        """Meta and sha256 index entries whose blob is absent: a put that stopped before its data
        rename (crash, full disk). Past the grace period they are removed."""
        orphans: list[Path] = []
        meta_base = self.root / "meta"
        for a in sorted(meta_base.iterdir()) if meta_base.is_dir() else ():
            for m in sorted(a.iterdir()) if a.is_dir() else ():
                if self._stored_path(m.name.removesuffix(".json")) is None and m.is_file():
                    orphans.append(m)  # (anything else there is for `verify` to report, not for gc to remove)
        for p in self._index_entries():
            try:
                target = Digest.parse(_read_entry(p).decode().strip()).hex
            except (BadDigest, OSError, UnicodeDecodeError):
                continue  # a damaged entry is for `verify` to report, not for gc to hide
            if self._stored_path(target) is None:
                orphans.append(p)
        n = 0
        for p in orphans:
            with contextlib.suppress(FileNotFoundError):
                if now - p.stat().st_mtime >= grace_seconds:
                    n += 1
                    if not dry_run:
                        p.unlink()
        return n
