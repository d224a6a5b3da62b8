"""Checks against checkpoints kept away from the ledger (``g6 ledger verify --checkpoint FILE``).

The checkpoints a ledger keeps in its own table prove nothing against someone who can write the
file: they can delete rows from the end *and* the checkpoints that covered them, or rebuild the
whole history and sign it with a key they add to ``keys/trusted/``. A checkpoint note the user kept
elsewhere is out of their reach, so the ledger as it is now must be an append-only extension of it:
the same origin (log id), at least as many receipts, the tree at the kept size has the kept root,
and an RFC 9162 consistency proof from the kept tree to today's head verifies.

Only the ledger's public reading methods (``origin``, ``tree``) are used, so this holds for any
ledger backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from g6.errors import G6Error
from g6.ledger.chain import Check
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import ProofError, TreeView, verify_consistency
from g6.ledger.note import Checkpoint, NoteError, parse_note, signed_by
from g6.ledger.rows import LedgerView

CHECK = "kept_checkpoint"


def check_kept_checkpoints(ledger: LedgerView, kept: Sequence[tuple[str, str]],
                           keys: Mapping[str, VerifyKey]) -> list[Check]:
    """One verdict per kept (label, note): does the ledger as it is now extend it?"""
    if not kept:
        return []
    try:
        origin = ledger.origin
        tree = ledger.tree()
    except (G6Error, OSError, *ledger.rows.unreadable) as e:
        return [Check(CHECK, False, None, None, f"{label}: the ledger cannot be read ({e})") for label, _ in kept]
    out = []
    for label, note in kept:
        ok, why = _check_one(note, origin, tree, keys)
        out.append(Check(CHECK, ok, None, None, f"{label}: {why}"))
    return out


def _check_one(note: str, origin: str, tree: TreeView, keys: Mapping[str, VerifyKey]) -> tuple[bool, str]:
    try:
        cp = Checkpoint.parse(parse_note(note)[0])
    except NoteError as e:
        return False, f"not a signed checkpoint: {e}"
    if not any(signed_by(note, k, cp.origin) for k in keys.values()):
        return False, f"not signed by a trusted key (size {cp.size} of {cp.origin})"
    if cp.origin != origin:
        return False, f"it is a checkpoint of {cp.origin}, this ledger is {origin} (replaced or re-created?)"
    size = len(tree)
    if cp.size > size:
        return False, (f"it covers {cp.size} receipts, the ledger now holds only {size} "
                       "(receipts removed from the end)")
    if tree.root(cp.size) != cp.root:
        return False, f"the first {cp.size} receipts no longer hash to its root (history rewritten)"
    if cp.size == 0:
        return True, f"size 0 -> {size}: every ledger extends the empty one"
    try:
        verify_consistency(cp.size, size, tree.consistency_proof(cp.size, size), cp.root, tree.root())
    except ProofError as e:
        return False, f"no consistency from size {cp.size} to {size}: {e}"
    return True, f"size {cp.size} -> {size}: consistent"
