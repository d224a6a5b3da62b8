"""Which blob store: ``G6_BLOB_URL`` picks a folder (``file:///path``, the default) or S3 (``s3://bucket/prefix``).

Both stores answer the same calls (:class:`BlobBackend`); :func:`copy_blobs` moves every blob from
one to another, re-hashing each on the way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol
from urllib.parse import unquote, urlsplit

from g6.errors import ConfigError, StoreError
from g6.store.blobs import BlobCheck, BlobRef, BlobStore, GcReport, StoreVerifyReport, hash_stream
from g6.store.digest import Digest


class BlobWriterLike(Protocol):
    size: int

    def write(self, chunk: bytes) -> None: ...
    def commit(self) -> BlobRef: ...
    def abort(self) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> None: ...


class BlobBackend(Protocol):
    """What the rest of g6 asks of a blob store, whichever it is."""

    def writer(self) -> BlobWriterLike: ...
    def put_stream(self, chunks: Iterable[bytes] | BinaryIO) -> BlobRef: ...
    def put(self, data: bytes) -> BlobRef: ...
    def has(self, digest: str | Digest) -> bool: ...
    def open(self, digest: str | Digest) -> BinaryIO: ...
    def read(self, digest: str | Digest) -> bytes: ...
    def info(self, digest: str | Digest) -> BlobRef: ...
    def iter_digests(self) -> Iterator[str]: ...
    def check(self, digest: str | Digest, expect: BlobRef | None = None) -> BlobCheck: ...
    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> StoreVerifyReport: ...
    def gc(self, referenced: Iterable[str], *, grace_seconds: float = 3600.0, dry_run: bool = False,
           progress: Callable[[int, int], None] | None = None) -> GcReport: ...


def open_store(url: str | None, default_root: str | os.PathLike[str], *, fsync: bool = True,
               env: Mapping[str, str] | None = None, create: bool = True, compression: str = "zstd") -> Any:
    """The store at ``url`` (``None`` or empty: the folder ``default_root``). ``env`` holds
    ``G6_S3_ENDPOINT`` and, if set there, the AWS credential variables. ``create=False`` (reading
    commands) makes no folder; ``compression`` applies to a folder store (S3 objects are kept raw)."""
    if not url:
        return BlobStore(default_root, fsync=fsync, create=create, compression=compression)
    scheme = urlsplit(url).scheme.lower()
    if scheme == "file":
        p = urlsplit(url)
        if p.netloc not in ("", "localhost") or not p.path:
            raise ConfigError(f"G6_BLOB_URL {url!r}: write file:///path/to/folder")
        return BlobStore(Path(unquote(p.path)), fsync=fsync, create=create, compression=compression)
    if scheme == "s3":
        from g6.store.s3 import store_from_env

        merged = {**{k: v for k, v in os.environ.items() if k.startswith("AWS_")}, **dict(env or {})}
        try:
            return store_from_env(url, merged)
        except ValueError as e:
            raise ConfigError(f"G6_BLOB_URL: {e}") from None
    raise ConfigError(f"G6_BLOB_URL must start file:/// or s3://, got {url.split(':', 1)[0]}:…")


def describe(store: Any) -> str:
    return str(getattr(store, "url", None) or store.root)


@dataclass(frozen=True, slots=True)
class BlobCopyReport:
    copied: int
    already: int
    bad: tuple[BlobCheck, ...]

    @property
    def ok(self) -> bool:
        return not self.bad

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "copied": self.copied, "already_there": self.already,
                "bad": [{"digest": b.digest, "detail": b.detail} for b in self.bad]}


def copy_blobs(src: Any, dst: Any, *, progress: Callable[[int, int], None] | None = None) -> BlobCopyReport:
    """Copy every blob of ``src`` into ``dst``, streamed and re-hashed on the way
    (``progress(blobs done, blobs)`` after each, copied, skipped or refused).

    A blob ``dst`` holds already (same digest, whole) is skipped, so a stopped copy resumes. A blob
    whose bytes no longer match its name or its recorded sha256/size is not copied and is reported.
    """
    copied, already, bad = 0, 0, []
    total = sum(1 for _ in src.iter_digests()) if progress is not None else 0  # a listing, no reads
    for digest in src.iter_digests():
        if progress is not None:
            progress(copied + already + len(bad), max(total, copied + already + len(bad) + 1))
        if dst.has(digest) and dst.info(digest).size == src.info(digest).size:
            already += 1
            continue
        want = src.info(digest)
        with src.open(digest) as f, dst.writer() as w:
            got = hash_stream(f, w.write)
            if got != want or got.blake3 != digest:
                w.abort()  # bytes that are not what the source says: never stored under its name
                bad.append(BlobCheck(digest, False, f"source bytes hash to {got.blake3} ({got.size} bytes); "
                                                    "not copied"))
                continue
            ref = w.commit()
        if ref != want:
            raise StoreError(f"{digest}: stored as {ref.blake3}, not what the source holds")
        copied += 1
    if progress is not None:
        progress(copied + already + len(bad), copied + already + len(bad))
    return BlobCopyReport(copied, already, tuple(bad))
