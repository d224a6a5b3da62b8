"""What ``verify`` does on every blob store (folder or S3): the one pass that re-hashes every blob, and
the one judge of the sha256 index entries. The stores differ only in how they list blobs and read an
index entry; how an entry is judged is the same everywhere, so it is written once. (The verdicts,
``BlobCheck`` and ``StoreVerifyReport``, live in ``g6.store.base`` with the other values every store
returns.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from g6.errors import BadDigest
from g6.store.base import BlobCheck, BlobRef
from g6.store.digest import Digest


class CheckedStore(Protocol):
    """What ``check_every_blob`` needs of a store: its listing, and one blob's verdict with the bytes' own
    digests beside it (None when they could not be hashed)."""

    def iter_digests(self) -> Iterator[str]: ...
    def _check(self, digest: str) -> tuple[BlobCheck, BlobRef | None]: ...


@dataclass(slots=True)
class BlobPass:
    """The outcome of re-hashing every blob once: the verdicts, and each whole blob's sha256."""

    checked: int = 0
    bad: list[BlobCheck] = field(default_factory=list)
    listed: set[str] = field(default_factory=set)  # blake3 hex of every blob listed, good or bad
    sha_of: dict[str, str] = field(default_factory=dict)  # blake3 hex -> its sha256, for the index entries


def check_every_blob(store: CheckedStore, progress: Callable[[int, int], None] | None = None,
                     listing: Callable[[], Iterable[str]] | None = None) -> BlobPass:
    """``store._check`` on every blob it lists (``progress(blobs checked, blobs)`` after each), keeping the
    sha256 of every blob whose bytes hash to its name, so the index entries are judged without hashing
    anything again. ``listing`` lists the blobs instead of ``store.iter_digests`` (one that reports what
    it cannot list elsewhere, rather than stopping)."""
    out = BlobPass()
    names = listing or store.iter_digests
    total = sum(1 for _ in names()) if progress is not None else 0  # a listing, no hashing
    for d in names():
        out.checked += 1
        b3hex = d.split(":", 1)[1]
        out.listed.add(b3hex)
        c, actual = store._check(d)
        if actual is not None and actual.blake3 == d:
            out.sha_of[b3hex] = actual.sha256
        if not c.ok:
            out.bad.append(c)
        if progress is not None:
            progress(out.checked, max(total, out.checked))
    return out


@dataclass(slots=True)
class IndexPass:
    checked: int = 0
    bad: list[BlobCheck] = field(default_factory=list)
    dangling: list[str] = field(default_factory=list)


def judge_index(entries: Iterable[tuple[str, bytes | str | None]], blobs: BlobPass,
                is_stored: Callable[[str], bool]) -> IndexPass:
    """Judge every sha256 index entry, given as (``sha256:<hex>``, its bytes, or None when it could not be
    read, or a sentence saying why not: a link, unreadable): bad unless it holds a blake3 digest; dangling
    (a put that never finished, not evidence of anything) when no blob is stored under that digest
    (``is_stored(blake3 hex)``), unless a stored blob
    has the entry's sha256 (then the entry was turned away from it: bad); bad when the blob it names has
    another sha256. An entry naming a blob that failed its own check is that blob's failure,
    reported once. Last, a whole blob with no entry under its sha256 at all is bad: reads by its sha256
    cannot find it (an entry there that is bad is already reported under that sha256).
    """
    out = IndexPass()
    seen: set[str] = set()
    whole_shas = set(blobs.sha_of.values())
    for name, body in entries:
        out.checked += 1
        seen.add(name)
        if isinstance(body, str):
            out.bad.append(BlobCheck(name, False, f"index entry: {body}"))
            continue
        try:
            if body is None:
                raise BadDigest("unreadable")
            target = Digest.parse(body.decode().strip())
            if target.algo != "blake3":
                raise BadDigest("not blake3")
        except (BadDigest, UnicodeDecodeError):
            out.bad.append(BlobCheck(name, False, "index entry does not hold a blake3 digest"))
            continue
        sha = blobs.sha_of.get(target.hex)
        if sha is None:
            if name in whole_shas:  # a stored blob has this sha256: not an unfinished put, a redirection
                out.bad.append(BlobCheck(name, False, f"index entry points at {target}, not at the stored blob "
                                                      "whose sha256 this is"))
            elif not is_stored(target.hex):
                out.dangling.append(name)
            continue  # a blob that failed its own check above
        if sha != name:
            out.bad.append(BlobCheck(name, False, f"index entry points at {target}, whose sha256 is {sha}"))
    out.bad.extend(BlobCheck(f"blake3:{b3hex}", False, f"it has no sha256 index entry: {sha} finds no blob")
                   for b3hex, sha in sorted(blobs.sha_of.items()) if sha not in seen)
    return out
