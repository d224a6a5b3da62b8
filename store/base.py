"""What every blob store is: the one interface (:class:`BlobBackend`), the values its calls return, and
what the stores share rather than each writing it again.

Two stores implement the interface side by side: a folder (``g6.store.folder``) and an S3 bucket
(``g6.store.s3``); ``g6.store.open.open_store`` picks one by URL. Written here once is everything that
must not differ between them, because a reader trusts it whichever store it has: how a body's two
digests are computed (``digests``, ``hash_stream``), what a sha256 index entry must hold
(``index_target``), and when bytes are refused instead of served (``refuse_mismatch``, used by every
verified read: ``VerifiedReads``). The stores only list, read and write.
"""

from __future__ import annotations

import abc
import hashlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol, Self

import blake3

from g6.errors import BadDigest, BlobCorrupt, BlobNotFound
from g6.store.digest import Digest

CHUNK = 1 << 20  # what a streamed read or put hands on at a time: large enough that per-call costs vanish
INDEX_MAX = 1 << 10  # an index entry is 71 bytes ("blake3:" and 64 hex): a larger one is not read whole
PARALLEL_AFTER = 1 << 20  # below this a second hashing thread costs about what it saves (``digests``)


# -- values ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BlobRef:
    """What the store knows of one blob."""

    blake3: str
    sha256: str
    size: int

    def to_json(self) -> dict[str, object]:
        return {"blake3": self.blake3, "sha256": self.sha256, "size": self.size}


@dataclass(frozen=True, slots=True)
class BlobCheck:
    """One verdict of ``check`` or ``verify``: a blob (or an index entry, or a stray file) and what is wrong."""

    digest: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class StoreVerifyReport:
    checked: int
    bad: tuple[BlobCheck, ...]
    index_checked: int = 0
    dangling: tuple[str, ...] = ()  # sha256 index entries of puts that never finished (``gc`` sweeps them)

    @property
    def ok(self) -> bool:
        return not self.bad


@dataclass(frozen=True, slots=True)
class GcReport:
    removed: tuple[str, ...]
    kept: int
    temp_files_removed: int
    skipped_young: tuple[str, ...] = field(default=())
    index_entries_removed: int = 0  # meta and sha256 entries left by puts that never finished


# -- the interface -----------------------------------------------------------------------------------
class BlobWriterLike(Protocol):
    """An unfinished put: ``write`` chunks as they arrive, then ``commit`` (the blob is visible under its
    digest only once that returns) or ``abort`` (nothing is kept). Leaving the ``with`` block without a
    commit aborts."""

    size: int

    def write(self, chunk: bytes) -> None: ...
    def commit(self) -> BlobRef: ...
    def abort(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...


class BlobBackend(Protocol):
    """What the rest of g6 asks of a blob store, whichever it is (folder or S3).

    Every digest argument is ``blake3:<hex>`` or ``sha256:<hex>`` (the latter through the sha256 index).
    A blob is visible under its digest only once whole; a second put of the same bytes stores nothing.
    ``read``/``open`` serve what is stored; ``read_checked``, ``open_verified`` and ``read_as`` hash it
    first and refuse (``BlobCorrupt``) bytes that are not what was asked for: what is handed on as
    evidence goes through those.
    """

    @property
    def root(self) -> Path | str:
        """Where the blobs are: the folder, or the ``s3://bucket/prefix/`` URL (what messages name)."""
        ...

    def writer(self) -> BlobWriterLike: ...
    def put_stream(self, chunks: Iterable[bytes] | BinaryIO) -> BlobRef: ...
    def put(self, data: bytes) -> BlobRef: ...
    def has(self, digest: str | Digest) -> bool: ...
    def open(self, digest: str | Digest) -> BinaryIO: ...
    def open_verified(self, digest: str | Digest) -> BinaryIO: ...
    def read(self, digest: str | Digest) -> bytes: ...
    def read_checked(self, digest: str | Digest) -> tuple[BlobRef, bytes]: ...
    def read_as(self, content: Mapping[str, Any]) -> bytes: ...
    def indexed_as(self, digest: str | Digest) -> str | None: ...
    def info(self, digest: str | Digest) -> BlobRef: ...
    def iter_digests(self) -> Iterator[str]: ...
    def check(self, digest: str | Digest, expect: BlobRef | None = None) -> BlobCheck: ...
    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> StoreVerifyReport: ...
    def gc(self, referenced: Iterable[str], *, grace_seconds: float = 3600.0, dry_run: bool = False,
           progress: Callable[[int, int], None] | None = None) -> GcReport: ...
    def remove(self, ref: BlobRef) -> bool:
        """Take the blob ``ref`` names out on purpose (a redaction): its bytes first, then its meta and its sha256
        index entry (when it names this blob). A second call finishes what a crash left of the first; whether
        anything was removed. Only ``g6.ledger.takedown`` calls it, after its signed entry is appended."""
        ...

    def close(self) -> None: ...

    def worker_opener(self) -> Callable[[], BlobBackend] | None:
        """A picklable callable that opens this store read-only in a forked worker process, or None when
        only this process may read it (its client cannot cross a fork): blob checks then stay here."""
        ...


# -- hashing -----------------------------------------------------------------------------------------
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


# -- the checks between stored bytes and a reader ----------------------------------------------------
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


# -- what both stores inherit ------------------------------------------------------------------------
# Abstract base classes rather than stubs that raise: a store that forgot a method the shared code
# calls cannot even be made, instead of failing on the first call that needs it.
class StreamedPut(abc.ABC):
    """``put_stream`` and ``put`` over the store's ``writer``: a body is always written the one way, so
    a whole-bytes put keeps every guarantee of a streamed one (hashed as written, visible once whole)."""

    @abc.abstractmethod
    def writer(self) -> BlobWriterLike: ...

    def put_stream(self, chunks: Iterable[bytes] | BinaryIO) -> BlobRef:
        """Store a body given as an iterable of chunks or a binary file object."""
        with self.writer() as w:
            if hasattr(chunks, "read"):
                reader: BinaryIO = chunks  # type: ignore[assignment]
                while block := reader.read(CHUNK):
                    w.write(block)
            else:
                for block in chunks:
                    w.write(block)
            return w.commit()

    def put(self, data: bytes) -> BlobRef:
        return self.put_stream([data])


class VerifiedReads(abc.ABC):
    """The reads that check before they serve, for any store with ``_resolve`` (digest -> blake3
    hex, through the sha256 index) and ``read``."""

    @abc.abstractmethod
    def _resolve(self, digest: str | Digest) -> str: ...

    @abc.abstractmethod
    def read(self, digest: str | Digest) -> bytes: ...

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
