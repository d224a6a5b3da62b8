"""The ledger's Merkle tree, kept: every complete subtree hash is stored as entries are appended.

Layout (Go ``sumdb/tlog``'s stored hashes): one table ``merkle_hashes (id, hash)``, kept by the
ledger's backend (``g6.ledger.backends.rows``). Appending leaf ``i`` stores its leaf hash, then the hash of
every complete subtree that leaf closes, in that order; ``stored_hash_index(level, i)`` says where the hash of the
subtree at ``level`` (2**level leaves) number ``i`` sits. A tree of ``n`` leaves therefore holds
``stored_hash_count(n)`` (< 2n) hashes in ids ``0 .. count-1``, and the id sequence is dense, so
the stored size is read back from ``max(id)``.

Any tree hash of size ``s <= n`` is a right fold of the at most log2(s) complete subtrees that
``s``'s binary form names, so a checkpoint, an inclusion proof or a consistency proof read O(log n)
rows instead of hashing every receipt. The rows are a cache: ``verify`` recomputes them from the
receipts and fails on any difference; they are never the only evidence for anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from g6.ledger.backends.rows import LedgerRows
from g6.ledger.chain import Check
from g6.ledger.merkle import EMPTY_ROOT, TreeView, node_hash


def stored_hash_index(level: int, n: int) -> int:
    """Where the hash of subtree ``n`` at ``level`` is stored (Go tlog.StoredHashIndex)."""
    for _ in range(level):
        n = 2 * n + 1
    i = 0
    while n > 0:
        i += n
        n >>= 1
    return i + level


def stored_hash_count(n: int) -> int:
    """How many hashes a tree of ``n`` leaves stores (Go tlog.StoredHashCount)."""
    if n == 0:
        return 0
    count = stored_hash_index(0, n - 1) + 1
    i = n - 1
    while i & 1:
        count += 1
        i >>= 1
    return count


def size_from_count(count: int) -> int | None:
    """The tree size that stores exactly ``count`` hashes, or None if no size does (a torn table)."""
    lo, hi = 0, count
    while lo < hi:  # smallest n with stored_hash_count(n) >= count
        mid = (lo + hi) // 2
        if stored_hash_count(mid) < count:
            lo = mid + 1
        else:
            hi = mid
    return lo if stored_hash_count(lo) == count else None


def subtrees(lo: int, hi: int) -> list[tuple[int, int]]:
    """The complete subtrees (level, index) that make up leaves [lo, hi), left to right.
    ``lo`` must be a multiple of a power of two >= hi - lo, as every range RFC 9162 splits into is."""
    out = []
    n = hi - lo
    while n:
        level = n.bit_length() - 1
        out.append((level, lo >> level))
        lo += 1 << level
        n -= 1 << level
    return out


def fold(hashes: list[bytes]) -> bytes:
    """The tree hash of complete subtrees given left to right (largest first)."""
    if not hashes:
        return EMPTY_ROOT
    h = hashes[-1]
    for left in reversed(hashes[:-1]):
        h = node_hash(left, h)
    return h


class Frontier:
    """The complete subtrees of the leaves appended so far (at most log2 n of them): enough to
    append the next leaf, emit the hashes it closes and give the current root."""

    def __init__(self, size: int = 0, hashes: list[bytes] | None = None) -> None:
        self.size = size
        self.stack: list[tuple[int, bytes]] = []
        if hashes:
            levels = [lv for lv, _ in subtrees(0, size)]
            if len(levels) != len(hashes):
                raise ValueError("frontier hashes do not match the tree size")
            self.stack = list(zip(levels, hashes, strict=True))

    def append(self, leaf: bytes) -> list[bytes]:
        """Add one leaf hash; returns the hashes to store, in stored order (leaf first)."""
        out = [leaf]
        h, level = leaf, 0
        while self.stack and self.stack[-1][0] == level:
            h = node_hash(self.stack.pop()[1], h)
            level += 1
            out.append(h)
        self.stack.append((level, h))
        self.size += 1
        return out

    def root(self) -> bytes:
        return fold([h for _, h in self.stack])


def stored_size(rows: LedgerRows) -> int | None:
    """Leaves the table covers; 0 without the table; None when the ids are not a whole tree."""
    if not rows.tree_table_exists():
        return 0
    return size_from_count(rows.hash_count())


def load_frontier(rows: LedgerRows, size: int) -> Frontier:
    ids = [stored_hash_index(lv, ix) for lv, ix in subtrees(0, size)]
    got = rows.read_hashes(ids)
    missing = [i for i in ids if i not in got]
    if missing:
        raise LookupError(f"stored tree hash {missing[0]} is missing")
    return Frontier(size, [got[i] for i in ids])


def append_leaves(rows: LedgerRows, size: int, leaves: Iterable[bytes], batch: int = 4096) -> int:
    """Store the hashes that appending ``leaves`` to a stored tree of ``size`` leaves adds.
    The caller holds the write transaction. Returns the new size."""
    fr = load_frontier(rows, size)
    next_id = stored_hash_count(size)
    out: list[tuple[int, bytes]] = []
    for leaf in leaves:
        for h in fr.append(leaf):
            out.append((next_id, h))
            next_id += 1
        if len(out) >= batch:
            rows.insert_hashes(out)
            out.clear()
    if out:
        rows.insert_hashes(out)
    return fr.size


def expected_hashes(leaves: Iterable[bytes], first_id: int = 0) -> Iterator[tuple[int, bytes]]:
    """(id, hash) as a tree built from empty over ``leaves`` stores them: what verify compares with."""
    fr = Frontier()
    i = first_id
    for leaf in leaves:
        for h in fr.append(leaf):
            yield i, h
            i += 1


class StoredTree(TreeView):
    """A tree of ``size`` leaves read from the stored hashes: O(log n) rows per root or proof."""

    def __init__(self, get: Callable[[list[int]], dict[int, bytes]], size: int) -> None:
        self._get = get
        self._size = size
        self._memo: dict[int, bytes] = {}

    def __len__(self) -> int:
        return self._size

    def _hashes(self, ids: list[int]) -> list[bytes]:
        want = [i for i in ids if i not in self._memo]
        if want:
            self._memo.update(self._get(want))
        try:
            return [self._memo[i] for i in ids]
        except KeyError as e:
            raise LookupError(f"stored tree hash {e.args[0]} is missing") from None

    def _mth(self, lo: int, hi: int) -> bytes:
        if hi == lo:
            return EMPTY_ROOT
        return fold(self._hashes([stored_hash_index(lv, ix) for lv, ix in subtrees(lo, hi)]))

    def leaf(self, index: int) -> bytes:
        return self._hashes([stored_hash_index(0, index)])[0]


def upper_tree_checks(rows: LedgerRows, frontiers: Sequence[Frontier], size: int, chunk: int, most: int) -> list[Check]:
    """The stored hashes above one range of ``chunk`` rows: fold the ranges' roots (``frontiers``, in
    order) as leaves at level log2(chunk) and compare with what ``rows`` (``LedgerRows``) stores; at
    most ``most`` failures are named."""
    base = chunk.bit_length() - 1
    expect: list[tuple[int, bytes, int]] = []  # (id, hash, level)
    stack: list[tuple[int, bytes]] = []
    for j, fr in enumerate(frontiers):
        if (j + 1) * chunk > size:
            break  # a part range closes nothing above itself
        if len(fr.stack) != 1 or fr.size != chunk:
            return [Check("tree", False, None, None, f"rows {j * chunk + 1}..{(j + 1) * chunk} are not "
                                                     f"{chunk} receipts, so the stored tree above them cannot match")]
        h, level = fr.stack[0][1], base
        while stack and stack[-1][0] == level:
            h = node_hash(stack.pop()[1], h)
            level += 1
            expect.append((stored_hash_index(level, j >> (level - base)), h, level))
        stack.append((level, h))
    if not expect:
        return []
    got = rows.read_hashes([i for i, _, _ in expect])
    bad = [(i, lv) for i, h, lv in expect if got.get(i) != h]
    if bad:
        return [Check("tree", False, None, None, f"stored tree hash {i} (level {lv}) differs from the hash of "
                                                 "the receipts") for i, lv in bad[:most]]
    return [Check("tree", True, None, None, f"{len(expect)} stored hashes above {chunk}-row ranges")]
