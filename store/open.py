"""Which blob store: ``G6_BLOB_URL`` picks a folder (``file:///path``, the default) or S3 (``s3://bucket/prefix``).

Both stores answer the same calls (:class:`g6.store.base.BlobBackend`), so :func:`open_store` returns
that interface and its callers are typed with it, not with either store; :func:`copy_blobs` moves
every blob from one to another, re-hashing each on the way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from g6.errors import ConfigError, StoreError
from g6.store.base import BlobBackend, BlobCheck, hash_stream
from g6.store.folder import BlobStore
from g6.store.s3 import store_from_env


def open_store(url: str | None, default_root: str | os.PathLike[str], *, fsync: bool = True,
               env: Mapping[str, str] | None = None, create: bool = True,
               compression: str = "zstd") -> BlobBackend:
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
        merged = {**{k: v for k, v in os.environ.items() if k.startswith("AWS_")}, **dict(env or {})}
        try:
            return store_from_env(url, merged)
        except ValueError as e:
            raise ConfigError(f"G6_BLOB_URL: {e}") from None
    raise ConfigError(f"G6_BLOB_URL must start file:/// or s3://, got {url.split(':', 1)[0]}:…")


def describe(store: BlobBackend) -> str:
    """What messages call the store: its folder, or its ``s3://`` URL (an S3 store's ``root``)."""
    return str(store.root)


@dataclass(frozen=True, slots=True)
class BlobCopyReport:
    copied: int
    already: int
    bad: tuple[BlobCheck, ...]
    skipped: int = 0  # blobs left behind on purpose (``skip``: redacted bytes are never copied anywhere)

    @property
    def ok(self) -> bool:
        return not self.bad

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "copied": self.copied, "already_there": self.already,
                "bad": [{"digest": b.digest, "detail": b.detail} for b in self.bad], "skipped": self.skipped}


def copy_blobs(src: BlobBackend, dst: BlobBackend, *, skip: Collection[str] = (),
               progress: Callable[[int, int], None] | None = None) -> BlobCopyReport:
    """Copy every blob of ``src`` into ``dst``, streamed and re-hashed on the way
    (``progress(blobs done, blobs)`` after each, copied, skipped or refused).

    A blob ``dst`` holds already (same digest, whole) is skipped, so a stopped copy resumes. A blob
    whose bytes no longer match its name or its recorded sha256/size is not copied and is reported. A blob
    named (by blake3) in ``skip`` is left behind and counted (the caller's redacted blobs).
    """
    copied, already, skipped = 0, 0, 0
    bad: list[BlobCheck] = []
    total = sum(1 for _ in src.iter_digests()) if progress is not None else 0  # a listing, no reads
    for digest in src.iter_digests():
        if progress is not None:
            progress(copied + already + skipped + len(bad), max(total, copied + already + skipped + len(bad) + 1))
        if digest in skip:
            skipped += 1
            continue
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
        progress(copied + already + skipped + len(bad), copied + already + skipped + len(bad))
    return BlobCopyReport(copied, already, tuple(bad), skipped)
