"""``g6 blob gc`` on the folder store: unreferenced blobs past a grace period, the temp files of puts that
stopped, and the meta and sha256 index entries a put left before its last rename; and ``remove``, one blob
taken out on purpose (a redaction, ``g6.ledger.takedown``).

Nothing is removed through a symbolic link (the folders are reached as every read reaches them,
``g6.store.folder_files``), and a link, or a folder that cannot be read, is left for ``verify`` to report:
a blob listing with a hole in it stops gc (``StoreError``), it never collects around it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

from g6.errors import BadDigest, BlobCorrupt, BlobNotFound, StoreError
from g6.store import folder_files as files
from g6.store.base import INDEX_MAX, BlobRef, GcReport
from g6.store.digest import Digest


class BlobStore(Protocol):
    """What gc needs of the folder store (``g6.store.folder.BlobStore``; a protocol, so this module does not
    import the store that imports it)."""

    root: Path
    _root: str

    def _resolve(self, digest: str) -> str: ...
    def _stored(self, b3hex: str) -> tuple[str, bool] | None: ...
    def _is_stored(self, b3hex: str) -> bool: ...
    def _meta_rel(self, b3hex: str) -> str: ...
    def _sha_rel(self, shahex: str) -> str: ...
    def iter_digests(self) -> Iterator[str]: ...
    def info(self, digest: str) -> BlobRef: ...


def collect(store: BlobStore, referenced: Iterable[str], *, grace_seconds: float = 3600.0, dry_run: bool = False,
            progress: Callable[[int, int], None] | None = None) -> GcReport:
    """Remove blobs no receipt references (``progress(blobs looked at, blobs)`` as it goes).

    ``grace_seconds`` protects blobs written moments ago whose receipt is not appended yet
    (the capture path writes the blob first, then the receipt). Nothing is removed through a link,
    and a link (or what cannot be read) is left for ``verify`` to report.
    """
    keep = set()
    for r in referenced:
        # a damaged sha256 entry is for `verify` to report; a receipt names the blob by blake3 too
        with contextlib.suppress(BlobNotFound, BlobCorrupt, BadDigest):
            keep.add(store._resolve(r))
    now = time.time()
    removed, young, kept = [], [], 0
    digests = list(store.iter_digests())  # a StoreError for a folder that cannot be read: never a partial gc
    for i, d in enumerate(digests):
        if progress is not None:
            progress(i, len(digests))
        hexd = d.split(":", 1)[1]
        if hexd in keep:
            kept += 1
            continue
        try:
            found = store._stored(hexd)
            mtime = files.lstat(store._root, found[0]).st_mtime if found is not None else 0.0
        except OSError:
            continue  # a link, or unreadable: for `verify` to report, never for gc to follow
        if found is None:
            continue
        if now - mtime < grace_seconds:
            young.append(d)
            continue
        removed.append(d)
        if not dry_run:
            ref = store.info(d)
            try:
                files.unlink(store._root, found[0])
                files.unlink(store._root, store._meta_rel(hexd))
                with contextlib.suppress(BadDigest):
                    files.unlink(store._root, store._sha_rel(Digest.parse(ref.sha256).hex))
            except OSError as e:
                raise StoreError(f"gc could not remove blob {d}: {files.why(e)}") from None
    if progress is not None:
        progress(len(digests), len(digests))
    try:
        temps = [(f"tmp/{n}", files.lstat(store._root, f"tmp/{n}").st_mtime)
                 for n, kind in files.entries(store._root, "tmp") if kind != "dir"]
    except (FileNotFoundError, NotADirectoryError):
        temps = []
    except OSError as e:
        raise StoreError(f"the blob store's temp folder {store.root / 'tmp'}: {files.why(e)}; nothing "
                         "was removed from it") from None
    old = [rel for rel, mtime in temps if now - mtime >= grace_seconds]
    if not dry_run:
        for rel in old:
            _remove(store, rel)
    return GcReport(tuple(removed), kept, len(old), tuple(young),
                    _sweep_unfinished(store, now, grace_seconds, dry_run))

def remove_blob(store: BlobStore, ref: BlobRef) -> bool:
    """Take one blob out: its bytes first (raw or compressed), then its meta, then its sha256 index entry when
    it names this blob. Whatever a crash leaves is a blob gone with leftovers ``verify`` calls dangling and
    ``gc`` sweeps, never an index entry without its bytes being missing; a second call finishes the first.
    Whether anything was removed. Nothing through a link (``StoreError``: ``verify`` reports it)."""
    b3 = Digest.parse(ref.blake3)
    sha = Digest.parse(ref.sha256)
    if b3.algo != "blake3" or sha.algo != "sha256":
        raise BadDigest(f"a blob is removed by its blake3 and sha256 digests, not {ref.blake3} and {ref.sha256}")
    removed = False
    try:
        for name in (b3.hex, b3.hex + ".zst"):
            removed |= files.unlink(store._root, f"blake3/{b3.hex[:2]}/{b3.hex[2:4]}/{name}")
        removed |= files.unlink(store._root, store._meta_rel(b3.hex))
        rel = store._sha_rel(sha.hex)
        try:
            target = files.read_head(store._root, rel, INDEX_MAX).decode().strip()
        except (OSError, UnicodeDecodeError):
            target = None
        if target == str(b3):  # another blob's entry (a redirection) is for `verify` to report, not ours to drop
            removed |= files.unlink(store._root, rel)
    except OSError as e:
        raise StoreError(f"could not remove blob {b3}: {files.why(e)}") from None
    return removed


def _sweep_unfinished(store: BlobStore, now: float, grace_seconds: float, dry_run: bool) -> int:
    """Meta and sha256 index entries whose blob is absent: a put that stopped before its data
    rename (crash, full disk). Past the grace period they are removed."""
    orphans: list[str] = []
    for folder, name, kind in files.leaves(store._root, "meta", 1, lambda *_: None):
        if kind == "file" and not store._is_stored(name.removesuffix(".json")):
            orphans.append(f"{folder}/{name}")  # (anything else there is for `verify` to report)
    for folder, name, _ in files.leaves(store._root, "sha256", 1, lambda *_: None):
        rel = f"{folder}/{name}"
        try:
            target = Digest.parse(files.read_head(store._root, rel, INDEX_MAX).decode().strip()).hex
        except (BadDigest, OSError, UnicodeDecodeError):
            continue  # a damaged entry is for `verify` to report, not for gc to hide
        if not store._is_stored(target):
            orphans.append(rel)
    n = 0
    for rel in orphans:
        try:
            mtime = files.lstat(store._root, rel).st_mtime
        except OSError:
            continue
        if now - mtime >= grace_seconds:
            n += 1
            if not dry_run:
                _remove(store, rel)
    return n


def _remove(store: BlobStore, rel: str) -> None:
    try:
        files.unlink(store._root, rel)
    except OSError as e:
        raise StoreError(f"gc could not remove {rel}: {files.why(e)}") from None
