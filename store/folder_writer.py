"""The folder store's write path: one put, from the first chunk to the blob visible under its digest.

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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import blake3

from g6.errors import StoreDiskFull, StoreError
from g6.store import compression as compression_mod
from g6.store import folder_files as files
from g6.store.base import BlobRef
from g6.store.digest import Digest
from g6.store.diskfull import is_disk_full


class Folder(Protocol):
    """What a put needs of the folder store (``g6.store.folder.BlobStore``): its settings and where each
    file goes. A protocol, not the class, so the store can import its writer without a circle."""

    root: Path
    tmp_dir: Path
    fsync: bool
    compression: str

    def _data_rel(self, b3hex: str) -> str: ...
    def _stored(self, b3hex: str) -> tuple[str, bool] | None: ...
    def _meta_rel(self, b3hex: str) -> str: ...
    def _sha_rel(self, shahex: str) -> str: ...


def _no_link(store: Folder, folder: str, doing: str) -> None:
    """``StoreError`` unless ``folder`` (relative to the store's root) is reached without a symbolic link
    (missing folders are made on the way): a put never writes through a link the store did not make."""
    try:
        os.close(files.open_dir(str(store.root), folder, create=True))
    except files.LinkRefused as e:
        raise StoreError(f"cannot {doing}: {e}; move it away (run `g6 blob verify`)") from None


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


def _replace(store: Folder, src: str | Path, rel: str) -> None:
    """``os.replace`` of ``src`` to ``rel`` under the store's root, once its folder was reached (and made,
    where missing) without following a link (``_no_link``)."""
    _no_link(store, rel.rpartition("/")[0], f"store {rel}")
    os.replace(src, store.root / rel)


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

    def __init__(self, store: Folder, content_type: str | None = None) -> None:
        self._store = store
        self._content_type = content_type
        self._zfile: compression_mod.CompressingFile | None = None
        self._held: list[bytes] | None = []  # chunks not written yet (see the class docstring)
        self._held_size = 0
        self._compress: bool | None = None  # decided by the first MIN_SIZE bytes
        _no_link(store, "tmp", "write a blob")
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
                _install(self._store, self._path, ref, compressed=compressed, data_synced=data_synced)
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


def _write_small(store: Folder, rel: str, data: bytes) -> None:
    """``data`` to ``rel`` whole or not at all: a temp file (fsynced when the store fsyncs), then renamed."""
    fd, name = tempfile.mkstemp(dir=store.tmp_dir, prefix="meta-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if store.fsync:
                f.flush()
                os.fsync(f.fileno())
        _replace(store, name, rel)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
        raise


def _install(store: Folder, tmp: Path, ref: BlobRef, compressed: bool = False,
             data_synced: _InThread | None = None) -> None:
    """Meta and sha256 index (with fsync: at once, on two threads), then the data renamed into
    place once ``data_synced`` (the temp file's fsync, when there is one) is done."""
    b3hex = Digest.parse(ref.blake3).hex
    sha_rel = store._sha_rel(Digest.parse(ref.sha256).hex)
    data_rel = store._data_rel(b3hex) + (compression_mod.SUFFIX if compressed else "")
    try:
        stored = store._stored(b3hex)
    except OSError as e:  # a link at its name or on its way, or a folder that cannot be read
        tmp.unlink()
        raise StoreError(f"cannot store blob {ref.blake3}: {files.why(e)}; move it away (run `g6 blob verify`)") \
            from None
    if stored is not None:
        tmp.unlink()  # dedupe: the same bytes are already here
        return
    try:
        meta = json.dumps(ref.to_json(), sort_keys=True).encode()
        # with fsync each write waits on the disk, and two at once share the wait; without, they are
        # a few cheap syscalls that a thread hand-off would only delay
        side = _InThread(_write_small, store, store._meta_rel(b3hex), meta) if store.fsync else None
        try:
            if side is None:
                _write_small(store, store._meta_rel(b3hex), meta)
            _write_small(store, sha_rel, ref.blake3.encode())
        finally:
            if side is not None:
                side.result()
        if data_synced is not None:
            data_synced.result()
        try:
            _replace(store, tmp, data_rel)
        except (IsADirectoryError, NotADirectoryError):  # a folder (or a file on a folder's path) is there
            raise StoreError(f"cannot store blob {ref.blake3}: {store.root / data_rel} is taken by something that "
                             "is not a blob file; move it away (run `g6 blob verify`)") from None
        if store.fsync:
            _fsync_dir((store.root / data_rel).parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        try:
            whole = files.kind_of(str(store.root), data_rel) == "file"
        except OSError:
            whole = False
        if not whole:  # an unfinished put leaves no index entry behind
            for rel in (store._meta_rel(b3hex), sha_rel):
                with contextlib.suppress(OSError):
                    files.unlink(str(store.root), rel)
        raise
