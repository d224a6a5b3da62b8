"""Checks against checkpoints kept away from the ledger (``g6 ledger verify --checkpoint FILE``).

The checkpoints a ledger keeps in its own table prove nothing against someone who can write the
file: they can delete rows from the end *and* the checkpoints that covered them, or rebuild the
whole history and sign it with a key they add to ``keys/trusted/``. A checkpoint note the user kept
elsewhere is out of their reach, so the ledger as it is now must be an append-only extension of it:
the same origin (log id), at least as many receipts, and the first ``size`` receipts hash to the kept
root. That root is computed from the receipts themselves, streamed once through a Merkle frontier
(O(log n) memory), never read from the stored Merkle hashes: those are a cache, and someone who
rewrites rows can leave the old cache in place (``verify``'s ``tree`` check catches that on its own;
this verdict must not call the rewritten history consistent meanwhile).

Only the ledger's reading interface (``origin``, ``head``, ``rows.receipts``) is used, so this holds
for any ledger backend: SQLite or PostgreSQL (``tests/backends/test_kept_checkpoints.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from g6.errors import G6Error
from g6.ledger.backends.rows import LedgerView
from g6.ledger.chain import Check, stored_leaf_hash
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import EMPTY_ROOT
from g6.ledger.note import Checkpoint, NoteError, parse_note, signed_by
from g6.ledger.stored_tree import Frontier

CHECK = "kept_checkpoint"


def check_kept_checkpoints(ledger: LedgerView, kept: Sequence[tuple[str, str]],
                           keys: Mapping[str, VerifyKey]) -> list[Check]:
    """One verdict per kept (label, note): does the ledger as it is now extend it?"""
    if not kept:
        return []
    try:
        origin = ledger.origin
        opened = [(label, _open(note, origin, keys)) for label, note in kept]
        sizes = {cp.size for _, cp in opened if isinstance(cp, Checkpoint)}
        roots, size = _roots_from_receipts(ledger, sizes)
    except (G6Error, OSError, *ledger.rows.unreadable) as e:
        return [Check(CHECK, False, None, None, f"{label}: the ledger cannot be read ({e})") for label, _ in kept]
    out = []
    for label, cp in opened:
        ok, why = (False, cp) if isinstance(cp, str) else _judge(cp, roots, size)
        out.append(Check(CHECK, ok, None, None, f"{label}: {why}"))
    return out


def _open(note: str, origin: str, keys: Mapping[str, VerifyKey]) -> Checkpoint | str:
    """The kept checkpoint, or why it is none this ledger can be checked against."""
    try:
        cp = Checkpoint.parse(parse_note(note)[0])
    except NoteError as e:
        return f"not a signed checkpoint: {e}"
    if not any(signed_by(note, k, cp.origin) for k in keys.values()):
        return f"not signed by a trusted key (size {cp.size} of {cp.origin})"
    if cp.origin != origin:
        return f"it is a checkpoint of {cp.origin}, this ledger is {origin} (replaced or re-created?)"
    return cp


def _roots_from_receipts(ledger: LedgerView, sizes: set[int]) -> tuple[dict[int, bytes], int]:
    """The tree root after each of ``sizes`` receipts (those the ledger holds), hashed from the receipts
    in ledger order, and how many receipts the ledger holds (its head, when every size is reached)."""
    roots = {0: EMPTY_ROOT} if 0 in sizes else {}
    last = max(sizes, default=0)
    frontier = Frontier()
    if last:
        for cell in ledger.rows.receipts():
            frontier.append(stored_leaf_hash(cell))
            if frontier.size in sizes:
                roots[frontier.size] = frontier.root()
            if frontier.size >= last:
                break
    held = ledger.head()[0]
    return roots, held if frontier.size >= last else min(held, frontier.size)


def _judge(cp: Checkpoint, roots: Mapping[int, bytes], size: int) -> tuple[bool, str]:
    if cp.size > size or cp.size not in roots:
        return False, (f"it covers {cp.size} receipts, the ledger now holds only {size} "
                       "(receipts removed from the end)")
    if roots[cp.size] != cp.root:
        return False, f"the first {cp.size} receipts no longer hash to its root (history rewritten)"
    if cp.size == 0:
        return True, f"size 0 -> {size}: every ledger extends the empty one"
    return True, f"size {cp.size} -> {size}: consistent"
