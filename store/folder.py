"""The folder store: blobs as files under one root, written atomically, deduplicated, keyed by blake3.

Layout under the root (``$G6_HOME/knowledge/fetched``)::

    blake3/ab/cd/<hex>        the raw bytes, never modified after the rename
    blake3/ab/cd/<hex>.zst    or those bytes zstd-compressed (text bodies; ``g6.store.compression``)
    meta/ab/<b3hex>.json      {"blake3", "sha256", "size"} of that blob
    sha256/ab/<hex>           one line: the blake3 digest, so blobs open by sha256 too
    tmp/                      partial writes; never read, swept by ``gc``

Writing (the write order, the fsync policy, a full disk) is ``g6.store.folder_writer``.

Reading trusts no index: ``read_checked`` and ``open_verified`` hash the bytes before they are
served and refuse (``BlobCorrupt``) unless they match the blake3 name and the digest asked for;
``verify`` checks every blob, its meta, and every sha256 index entry.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from g6.errors import BadDigest, BlobCorrupt, BlobNotFound, StoreError
from g6.store import compression as compression_mod
from g6.store import folder_files as files
from g6.store.base import (
    INDEX_MAX,
    BlobBackend,
    BlobCheck,
    BlobRef,
    GcReport,
    StoreVerifyReport,
    StreamedPut,
    VerifiedReads,
    digests,
    hash_stream,
    index_target,
    refuse_mismatch,
)
from g6.store.digest import Digest
from g6.store.folder_files import LinkRefused, NotAFile
from g6.store.folder_writer import BlobWriter
from g6.store.verifying import check_every_blob, judge_index

META_MAX = 1 << 12  # a meta is ~ 200 bytes: a larger file is damaged, never read whole
_DAMAGED: Any = object()  # a meta file that is there but holds no JSON (``BlobStore._load_meta``)


class BlobStore(StreamedPut, VerifiedReads):
    """A content-addressed store rooted at one folder (a :class:`g6.store.base.BlobBackend`). Nothing
    here reads global state, and nothing below the root is reached through a symbolic link
    (``g6.store.folder_files``)."""

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

    # -- paths (relative to the root: every read goes through ``folder_files``) ------------------
    @staticmethod
    def _data_rel(b3hex: str) -> str:
        return f"blake3/{b3hex[:2]}/{b3hex[2:4]}/{b3hex}"

    @staticmethod
    def _meta_rel(b3hex: str) -> str:
        return f"meta/{b3hex[:2]}/{b3hex}.json"

    @staticmethod
    def _sha_rel(shahex: str) -> str:
        return f"sha256/{shahex[:2]}/{shahex}"

    def _data_path(self, b3hex: str) -> Path:
        return self.root / self._data_rel(b3hex)

    def _meta_path(self, b3hex: str) -> Path:
        return self.root / self._meta_rel(b3hex)

    def _sha_path(self, shahex: str) -> Path:
        return self.root / self._sha_rel(shahex)

    def _stored(self, b3hex: str) -> tuple[str, bool] | None:
        """Where the blob's bytes are kept (relative to the root) and whether compressed (see
        ``g6.store.compression``); None when neither file is there as a regular file. ``LinkRefused`` for a
        link at either name or on the way, another ``OSError`` for a folder on the way that cannot be read."""
        dfd = self._blob_folder(b3hex)
        if dfd is None:
            return None
        try:
            return self._stored_in(dfd, b3hex)
        finally:
            os.close(dfd)

    def _blob_folder(self, b3hex: str) -> int | None:
        """The blob's folder (``blake3/ab/cd``) opened without following a link; None when it is not there."""
        try:
            return files.open_dir(self._root, f"blake3/{b3hex[:2]}/{b3hex[2:4]}")
        except (FileNotFoundError, NotADirectoryError):
            return None

    @staticmethod
    def _stored_in(dfd: int, b3hex: str) -> tuple[str, bool] | None:
        """``_stored``, in the blob's folder already open."""
        folder = f"blake3/{b3hex[:2]}/{b3hex[2:4]}"
        for name, compressed in ((b3hex, False), (b3hex + compression_mod.SUFFIX, True)):
            kind = files.kind_in(dfd, name)
            if kind == "link":
                raise LinkRefused(f"{folder}/{name}")
            if kind == "file":
                return f"{folder}/{name}", compressed
        return None

    def _stored_path(self, b3hex: str) -> tuple[Path, bool] | None:
        found = self._stored(b3hex)
        return None if found is None else (self.root / found[0], found[1])

    def _stored_or_refuse(self, b3hex: str, digest: object) -> tuple[str, bool]:
        """``_stored``, for a read that serves the blob: absent is ``BlobNotFound``, a link ``BlobCorrupt``,
        a folder that cannot be read ``StoreError``, each in one line."""
        try:
            found = self._stored(b3hex)
        except OSError as e:
            raise self._refusal(b3hex, e) from None
        if found is None:
            raise BlobNotFound(f"no blob {digest}")
        return found

    @staticmethod
    def _refusal(b3hex: str, e: OSError, what: str = "") -> StoreError:
        """The one-line error of a read refused: a link (``BlobCorrupt``) or what cannot be read."""
        cls = BlobCorrupt if isinstance(e, LinkRefused | NotAFile) else StoreError
        where = f" {what}" if what else ""
        return cls(f"blob blake3:{b3hex}:{where} {files.why(e)}; refusing to read it (run `g6 blob verify`)")

    def _open_stored(self, rel: str) -> BinaryIO:
        fd, _ = files.open_file(self._root, rel)
        return os.fdopen(fd, "rb")

    def _load_meta(self, b3hex: str) -> Any:
        """The blob's meta, parsed: ``None`` when there is none (a lost meta: the bytes are the truth and
        are hashed again), ``_DAMAGED`` when the file is there but holds no JSON (or is past ``META_MAX``).
        ``BlobCorrupt`` when what sits at the meta's path is not a regular file (a folder, a FIFO, a
        device, a file where its folder should be), a symbolic link (at it or on its way), or cannot be
        read: the store never makes such a thing, so it is tampering, not a lost meta; a FIFO is never
        opened for a blocking read."""
        rel = self._meta_rel(b3hex)
        path = f"{self._root}/{rel}"
        try:
            fd, size = files.open_file(self._root, rel)
        except NotAFile:
            raise BlobCorrupt(f"blob blake3:{b3hex}: its meta {path} is not a regular file (a folder, a FIFO or a "
                              "device); refusing to read the blob (run `g6 blob verify`)") from None
        except FileNotFoundError:
            return None
        except OSError as e:  # a link, NotADirectoryError (a file on the meta folder's path), EACCES, ENXIO
            raise BlobCorrupt(f"blob blake3:{b3hex}: its meta {path}: {files.why(e)}; refusing to read the blob "
                              "(run `g6 blob verify`)") from None
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
        one look (no read), for the verified reads of a raw blob, which otherwise never read the meta."""
        try:
            kind = files.kind_of(self._root, self._meta_rel(b3hex))
        except OSError:
            kind = "odd"
        if kind not in (None, "file"):
            self._load_meta(b3hex)  # raises, naming what is wrong
            raise BlobCorrupt(f"blob blake3:{b3hex}: its meta {self._meta_rel(b3hex)} is not a regular file")

    def _resolve(self, digest: str | Digest) -> str:
        """Return the blake3 hex for any accepted digest, or raise BlobNotFound."""
        d = digest if isinstance(digest, Digest) else Digest.parse(digest)
        if d.algo == "blake3":
            return d.hex
        try:
            raw = files.read_head(self._root, self._sha_rel(d.hex), INDEX_MAX)
        except NotAFile:
            raise BlobCorrupt(f"the index entry of {d} is not a regular file (a folder or a FIFO); run "
                              "`g6 blob verify`") from None
        except (FileNotFoundError, NotADirectoryError):
            raise BlobNotFound(f"no blob with {d}") from None
        except LinkRefused as e:
            raise BlobCorrupt(f"the index entry of {d}: {e}; run `g6 blob verify`") from None
        except OSError as e:
            raise BlobNotFound(f"the index entry of {d} is unreadable: {e.strerror or e}") from None
        try:
            line = raw.decode().strip()
        except UnicodeDecodeError:
            line = ""  # not text: holds no digest
        return index_target(d, line)

    # -- writing -----------------------------------------------------------------------------
    def writer(self, content_type: str | None = None) -> BlobWriter:
        """``content_type`` (when known) helps decide whether the body is kept compressed."""
        return BlobWriter(self, content_type)

    # ``put_stream`` and ``put`` are ``StreamedPut``'s, over this writer

    # -- reading -----------------------------------------------------------------------------
    def has(self, digest: str | Digest) -> bool:
        """Whether the blob is held: a link or a folder that cannot be read holds nothing the store vouches for."""
        try:
            return self._stored(self._resolve(digest)) is not None
        except (BlobNotFound, BlobCorrupt, OSError):
            return False

    def path(self, digest: str | Digest) -> Path:
        """The file the blob is kept in: its raw bytes, or (named ``*.zst``) compressed. Read
        through ``open``/``read``, which always give the raw bytes."""
        return self.root / self._stored_or_refuse(self._resolve(digest), digest)[0]

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
        rel, _ = self._stored_or_refuse(b3hex, f"blake3:{b3hex}")
        ref = self._hash_rel(b3hex, rel)
        if ref.blake3 != f"blake3:{b3hex}":
            raise StoreError(f"blob blake3:{b3hex} lost its meta and its bytes hash to {ref.blake3}")
        return ref.size

    def open(self, digest: str | Digest) -> BinaryIO:
        b3hex = self._resolve(digest)
        rel, compressed = self._stored_or_refuse(b3hex, digest)
        raw_size = self._raw_size(b3hex) if compressed else 0  # checked before the file is opened
        try:
            f = self._open_stored(rel)
        except OSError as e:
            raise self._refusal(b3hex, e) from None
        return compression_mod.open_compressed(f, raw_size, name=b3hex) if compressed else f

    def _blob_file(self, b3hex: str) -> tuple[int, int, bool] | None:
        """The blob's file opened, its size and whether compressed: the raw file, else the compressed one
        (its folder opened once); None when neither is a regular file. ``LinkRefused`` for a link at either
        name or on the way, another ``OSError`` for what cannot be read."""
        rel = self._data_rel(b3hex)
        for path, compressed in ((rel, False), (rel + compression_mod.SUFFIX, True)):
            got = files.opened_directly(self._root, path)  # the common case: two calls
            if got is not None:
                return (*got, compressed)
        folder = rel.rpartition("/")[0]  # else the walk, one folder at a time, says what is there
        try:
            dfd = files.open_dir(self._root, folder)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            for name, compressed in ((b3hex, False), (b3hex + compression_mod.SUFFIX, True)):
                try:
                    fd, size = files.open_in(dfd, name, f"{folder}/{name}")
                except (FileNotFoundError, NotADirectoryError):  # absent, or not a file (a folder): not the blob
                    continue
                return fd, size, compressed
        finally:
            os.close(dfd)
        return None

    def read(self, digest: str | Digest) -> bytes:
        """The raw bytes, read with one open and one read (no look first); a compressed blob is
        inflated in one call bounded by its recorded size."""
        b3hex = self._resolve(digest)
        try:
            found = self._blob_file(b3hex)
        except OSError as e:  # a link (never followed), or a file or folder that cannot be read
            raise self._refusal(b3hex, e) from None
        if found is None:
            raise BlobNotFound(f"no blob {digest}")
        fd, size, compressed = found
        try:
            data = files.read_fd(fd, size)
        finally:
            os.close(fd)
        return compression_mod.decompress(data, self._raw_size(b3hex), b3hex) if compressed else data

    def _read_if_small(self, b3hex: str) -> tuple[bytes, bool] | None:
        """The raw bytes of a blob of at most ``BlobWriter.HOLD`` raw bytes and whether it is kept compressed
        (its meta then read for its size); None for a larger (or absent) one, which is streamed instead.
        Only regular files are read, never through a link."""
        try:
            found = self._blob_file(b3hex)
        except OSError as e:
            raise self._refusal(b3hex, e) from None
        if found is None:
            return None
        fd, size, compressed = found
        try:
            if not compressed:
                return (files.read_fd(fd, size), False) if size <= BlobWriter.HOLD else None
            raw_size = self._raw_size(b3hex)  # the bound, checked before anything is read or inflated
            if raw_size > BlobWriter.HOLD:
                return None
            return compression_mod.decompress(files.read_fd(fd, size), raw_size, b3hex), True
        finally:
            os.close(fd)

    def _checked(self, d: Digest) -> tuple[BlobRef, bytes | BinaryIO]:
        """The blob's own digests and its bytes (a small blob) or its open file rewound (a larger one),
        after one hashing pass showed they are what ``d`` asks for. A blob of up to ``BlobWriter.HOLD``
        raw bytes is read (and inflated) once and hashed in memory; a larger one is hashed through its
        open file, which is never rewritten in place, only replaced, so it keeps the bytes checked."""
        b3hex = self._resolve(d)
        small = self._read_if_small(b3hex)
        if small is None or not small[1]:  # a compressed blob's meta was read, and judged, on the way
            self._refuse_odd_meta(b3hex)
        if small is not None:  # one read (one inflate), both digests at once
            whole = small[0]
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
        rel, _ = self._stored_or_refuse(b3hex, digest)
        meta = self._load_meta(b3hex)  # BlobCorrupt if a folder, a FIFO or a link sits there
        if isinstance(meta, dict) and compression_mod.valid_size(meta.get("size")):
            with contextlib.suppress(TypeError, KeyError, BadDigest):
                return BlobRef(str(Digest.parse(meta["blake3"])), str(Digest.parse(meta["sha256"])), meta["size"])
        # Meta lost or damaged: the bytes are the truth, so derive it again.
        try:
            return self._hash_rel(b3hex, rel)
        except OSError as e:
            raise self._refusal(b3hex, e) from None

    def _names(self, problem: files.Problem) -> Iterator[str]:
        """Every blob's name, in order: each entry of each ``blake3/ab/cd/`` folder (a blob kept both raw and
        compressed, by two writers, is one blob). ``problem`` is told what else the tree holds."""
        last = None
        for folder, name, _ in files.leaves(self._root, "blake3", 2, problem):
            key = (folder, name.removesuffix(compression_mod.SUFFIX))
            if key != last:
                yield f"blake3:{key[1]}"
            last = key

    def iter_digests(self) -> Iterator[str]:
        """Every blob's name. What is not a folder where the store keeps folders is passed over (``verify``
        names it); a folder that cannot be read (or a link there) is a ``StoreError``, since a listing with a
        hole in it would be taken for the whole store (by ``blob copy``, by ``gc``)."""
        def stop(path: str, kind: str, why: str) -> None:
            if kind in ("unreadable", "link"):
                raise StoreError(f"the blob store at {self.root}: {why if kind == 'unreadable' else path + ': ' + why};"
                                 " run `g6 blob verify`")

        return self._names(stop)

    def _is_stored(self, b3hex: str) -> bool:
        """Whether something is kept under that name: a link or a folder that cannot be read counts (it is
        a failure reported where it lies, never the harmless leftover of an unfinished put)."""
        try:
            return self._stored(b3hex) is not None
        except OSError:
            return True

    # -- checking ----------------------------------------------------------------------------
    def _hash_rel(self, b3hex: str, rel: str, raw_size: int | None = None, dfd: int | None = None) -> BlobRef:
        """Digests of the raw bytes in the store's file ``rel`` (opened in its folder ``dfd`` when given); a
        ``*.zst`` file is decompressed, bounded by ``raw_size`` (its recorded size, else the hard limit of an
        unbounded read). ``OSError`` when it cannot be opened (a link, unreadable), ``StoreError`` for what it
        holds."""
        if dfd is None:
            opened = self._open_stored(rel)
        else:
            opened = os.fdopen(files.open_in(dfd, rel.rpartition("/")[2], rel)[0], "rb")
        if rel.endswith(compression_mod.SUFFIX):
            opened = compression_mod.open_compressed(opened, compression_mod.UNKNOWN_SIZE_LIMIT if raw_size is None
                                                     else raw_size, exact=raw_size is not None, name=b3hex)
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
        try:  # the blob's folder, opened once for all that is read in it
            dfd = self._blob_folder(b3hex)
        except OSError as e:  # a link on the way, a folder that cannot be read
            return BlobCheck(name, False, files.why(e)), None
        if dfd is None:
            return BlobCheck(name, False, "missing"), None
        try:
            return self._check_in(dfd, name, b3hex, digest, expect)
        finally:
            os.close(dfd)

    def _check_in(self, dfd: int, name: str, b3hex: str, digest: str | Digest,
                  expect: BlobRef | None) -> tuple[BlobCheck, BlobRef | None]:
        """``_check`` with the blob's folder open (``dfd``)."""
        try:
            found = self._stored_in(dfd, b3hex)
        except OSError as e:  # a link at the blob's name
            return BlobCheck(name, False, files.why(e)), None
        if found is None:
            return BlobCheck(name, False, "missing"), None
        rel, compressed = found
        raw_size = None
        if compressed:
            try:
                raw_size = self._raw_size(b3hex)
            except StoreError:  # meta lost: bounded by what the receipt says, else by the hard limit
                raw_size = expect.size if expect is not None else None
        try:
            actual = self._hash_rel(b3hex, rel, raw_size, dfd)
        except StoreError as e:
            return BlobCheck(name, False, str(e)), None
        except OSError as e:
            return BlobCheck(name, False, files.why(e)), None
        if actual.blake3 != f"blake3:{b3hex}":
            return BlobCheck(name, False, f"content hashes to {actual.blake3}"), actual
        if isinstance(digest, str) and digest.startswith("sha256:") and actual.sha256 != str(Digest.parse(digest)):
            return BlobCheck(name, False, f"the sha256 index points at a blob whose sha256 is {actual.sha256}"), actual
        if not compressed and (twin := self._twin(dfd, b3hex, rel, actual)) is not None:
            return BlobCheck(name, False, twin), actual
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

    def _twin(self, dfd: int, b3hex: str, rel: str, actual: BlobRef) -> str | None:
        """What is wrong with a compressed copy beside the raw file ``rel`` (two writers, one with compression
        off), if there is one: reads serve the raw file, but the other copy is stored evidence too and must
        hold the same bytes."""
        twin = rel + compression_mod.SUFFIX
        try:
            kind = files.kind_in(dfd, twin.rpartition("/")[2])
            if kind == "link":
                raise LinkRefused(twin)
            if kind != "file":
                return None
            other = self._hash_rel(b3hex, twin, actual.size, dfd)
        except StoreError as e:
            return f"the compressed copy beside the raw file: {e}"
        except OSError as e:
            return f"the compressed copy beside the raw file: {files.why(e)}"
        if other != actual:
            return f"the compressed copy beside the raw file holds other bytes ({other.blake3}, {other.size} bytes)"
        return None

    def _index_entries(self, problem: files.Problem) -> Iterator[tuple[str, bytes | str | None]]:
        """(``sha256:<hex>``, its bytes) of every index entry, or why they cannot be had: None for what is not a
        regular file (a folder, a FIFO: never waited on), a sentence for a link or an entry that cannot be read."""
        for folder, name, _ in files.leaves(self._root, "sha256", 1, problem):
            rel = f"{folder}/{name}"
            try:
                body: bytes | str | None = files.read_head(self._root, rel, INDEX_MAX)
            except NotAFile:
                body = None
            except OSError as e:
                body = files.why(e)
            yield f"sha256:{name}", body

    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> StoreVerifyReport:
        """Re-hash every blob (name, meta), then check every sha256 index entry points at a blob
        whose sha256 is that entry's name. A missing store is a failure, not an empty success.
        ``progress(blobs checked, blobs)`` after each blob. What the store never makes — a link anywhere
        below its root, a file where it keeps folders — and what cannot be read are failures too."""
        try:
            top = files.kind_of(self._root, "blake3")
        except OSError as e:
            top = files.why(e)
        if top is None or top not in ("dir", "link"):
            why = "no blob store here (home missing?)" if top is None else f"its blake3 folder: {top}"
            return StoreVerifyReport(0, (BlobCheck(str(self.root), False, why),))
        strays: list[BlobCheck] = []

        def stray(path: str, kind: str, why: str) -> None:
            strays.append(BlobCheck(path, False, why))

        def link_or_unreadable(path: str, kind: str, why: str) -> None:
            if kind in ("link", "unreadable"):  # a stray file beside meta/ab or sha256/ab is passed over
                stray(path, kind, why)

        for _ in self._names(stray):  # one listing for what the blob tree holds besides blobs
            pass
        blobs = check_every_blob(self, progress, listing=lambda: self._names(lambda *_: None))
        index = judge_index(self._index_entries(link_or_unreadable), blobs, self._is_stored)
        dangling = index.dangling
        for folder, name, kind in files.leaves(self._root, "meta", 1, link_or_unreadable):
            if self._is_stored(name.removesuffix(".json")):
                continue  # the blob's own check judged its meta
            if kind != "file":  # a folder, a FIFO, a link: never written by a put: not the leftover of one
                strays.append(BlobCheck(f"{folder}/{name}", False, files.LINK_FOR_FILE if kind == "link" else
                                        "not a regular file where a meta belongs"))
                continue
            dangling.append(f"blake3:{name.removesuffix('.json')} (meta)")
        return StoreVerifyReport(blobs.checked, tuple(blobs.bad + index.bad + strays), index.checked, tuple(dangling))

    # -- removal -----------------------------------------------------------------------------
    def gc(self, referenced: Iterable[str], *, grace_seconds: float = 3600.0, dry_run: bool = False,
           progress: Callable[[int, int], None] | None = None) -> GcReport:
        """Remove blobs no receipt references (``progress(blobs looked at, blobs)`` as it goes), and what
        unfinished puts left behind (``g6.store.folder_gc``).

        ``grace_seconds`` protects blobs written moments ago whose receipt is not appended yet
        (the capture path writes the blob first, then the receipt).
        """
        from g6.store.folder_gc import collect

        return collect(self, referenced, grace_seconds=grace_seconds, dry_run=dry_run, progress=progress)

    def remove(self, ref: BlobRef) -> bool:
        """Take one blob out on purpose (a redaction): bytes, meta, then index entry (``g6.store.folder_gc``)."""
        from g6.store.folder_gc import remove_blob

        return remove_blob(self, ref)

    def worker_opener(self) -> Callable[[], BlobBackend] | None:
        return functools.partial(BlobStore, self.root, fsync=False, create=False)

    def close(self) -> None:
        """Nothing to release: every call opens and closes its own files (here for ``BlobBackend``)."""
