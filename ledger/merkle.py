"""RFC 9162 Merkle trees over receipts: leaf and node hashes, roots, inclusion and consistency proofs.

Leaf hash = SHA-256(0x00 || leaf), node hash = SHA-256(0x01 || left || right); the tree of n
leaves splits at the largest power of two below n (RFC 9162 §2.1.1). Proof generation follows
§2.1.3.1 (PATH) and §2.1.4.1 (SUBPROOF); verification follows the algorithms of §2.1.3.2 and
§2.1.4.2, with the edge cases the CT test vectors pin down (a consistency proof from an empty tree
is meaningless; equal sizes need an empty proof and equal roots).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

EMPTY_ROOT = hashlib.sha256(b"").digest()


class ProofError(ValueError):
    """A proof that does not verify; the message says which step failed."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two strictly below n (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


class TreeView:
    """The RFC 9162 proof algorithms over any source of subtree hashes (``_mth``): an in-memory
    list of leaves (:class:`MerkleTree`) or the hashes a ledger keeps (``g6.ledger.stored_tree``)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _mth(self, lo: int, hi: int) -> bytes:
        raise NotImplementedError

    def root(self, size: int | None = None) -> bytes:
        size = len(self) if size is None else size
        if not 0 <= size <= len(self):
            raise ValueError(f"tree size {size} is outside 0..{len(self)}")
        return self._mth(0, size)

    def inclusion_proof(self, index: int, size: int | None = None) -> list[bytes]:
        size = len(self) if size is None else size
        if not 0 <= index < size <= len(self):
            raise ValueError(f"no leaf {index} in a tree of size {size}")
        return self._path(index, 0, size)

    def _path(self, m: int, lo: int, hi: int) -> list[bytes]:
        n = hi - lo
        if n == 1:
            return []
        k = _split(n)
        if m < k:
            return [*self._path(m, lo, lo + k), self._mth(lo + k, hi)]
        return [*self._path(m - k, lo + k, hi), self._mth(lo, lo + k)]

    def consistency_proof(self, old: int, new: int | None = None) -> list[bytes]:
        new = len(self) if new is None else new
        if not 0 < old <= new <= len(self):
            raise ValueError(f"no consistency proof from size {old} to size {new}")
        return self._subproof(old, 0, new, True)

    def _subproof(self, m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
        n = hi - lo
        if m == n:
            return [] if whole else [self._mth(lo, hi)]
        k = _split(n)
        if m <= k:
            return [*self._subproof(m, lo, lo + k, whole), self._mth(lo + k, hi)]
        return [*self._subproof(m - k, lo + k, hi, False), self._mth(lo, lo + k)]


class MerkleTree(TreeView):
    """A tree over precomputed leaf hashes; subtree roots are memoised, so proofs cost O(n) once."""

    def __init__(self, leaf_hashes: Sequence[bytes]) -> None:
        self.leaves = list(leaf_hashes)
        self._memo: dict[tuple[int, int], bytes] = {}

    def __len__(self) -> int:
        return len(self.leaves)

    def _mth(self, lo: int, hi: int) -> bytes:
        n = hi - lo
        if n == 0:
            return EMPTY_ROOT
        if n == 1:
            return self.leaves[lo]
        key = (lo, hi)
        hit = self._memo.get(key)
        if hit is None:
            k = _split(n)
            hit = node_hash(self._mth(lo, lo + k), self._mth(lo + k, hi))
            if n & (n - 1) == 0:  # only complete subtrees are shared between trees of different sizes
                self._memo[key] = hit
        return hit


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2: the root the proof leads to, or ProofError."""
    if index < 0 or index >= size:
        raise ProofError(f"index {index} is not below tree size {size}")
    if len(leaf) != 32 or any(len(p) != 32 for p in proof):
        raise ProofError("every hash is 32 bytes")
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the path to the root")
    return r


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> None:
    if root_from_inclusion(index, size, leaf, proof) != root:
        raise ProofError("the inclusion proof leads to another root")


def verify_consistency(old: int, new: int, proof: Sequence[bytes], old_root: bytes, new_root: bytes) -> None:
    """RFC 9162 §2.1.4.2. Raises ProofError unless the tree of size ``new`` extends that of size ``old``."""
    if any(len(p) != 32 for p in proof):
        raise ProofError("every hash is 32 bytes")
    if new < old:
        raise ProofError(f"the new size {new} is below the old size {old}")
    if old == 0:
        raise ProofError("a consistency proof from the empty tree proves nothing")
    if old == new:
        if proof:
            raise ProofError("equal sizes take an empty proof")
        if old_root != new_root:
            raise ProofError("equal sizes but different roots")
        return
    if not proof:
        raise ProofError("empty proof")
    if len(old_root) != 32 or len(new_root) != 32:
        raise ProofError("every hash is 32 bytes")
    path = list(proof)
    if old & (old - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError("the proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the path to the root")
    if fr != old_root:
        raise ProofError("the proof does not lead to the old root: the old tree was rewritten")
    if sr != new_root:
        raise ProofError("the proof does not lead to the new root")
