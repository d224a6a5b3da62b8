"""Checkpoints and proofs over an evidence home's ledger (``g6 ledger checkpoint|prove|consistency``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from g6.home import EvidenceHome
from g6.ledger.merkle import TreeView
from g6.ledger.note import Checkpoint, verifier_key
from g6.ledger.proofs import ConsistencyProof, InclusionProof


def checkpoint(home: EvidenceHome) -> tuple[Checkpoint, str]:
    return home.ledger.checkpoint(home.signing_key())


def covering_checkpoint(home: EvidenceHome, index: int) -> tuple[Checkpoint, str, bool]:
    """The latest checkpoint if it covers leaf ``index``; else a new one (the flag says so)."""
    latest = home.ledger.latest_checkpoint()
    if latest is not None and latest[0].size > index:
        return latest[0], latest[1], False
    cp, note = checkpoint(home)
    return cp, note, True


def prove(home: EvidenceHome, receipt_id: str, tree: TreeView | None = None) -> tuple[InclusionProof, bool]:
    """Inclusion proof of one receipt. Pass ``tree`` when proving many receipts, so the ledger's
    leaves are hashed once, not once per proof."""
    index = home.ledger.index_of(receipt_id)
    cp, note, made = covering_checkpoint(home, index)
    tree = tree if tree is not None and len(tree) >= cp.size else home.ledger.tree()
    if tree.root(cp.size) != cp.root:
        raise ValueError("the ledger no longer matches its latest checkpoint; run `g6 ledger verify`")
    proof = tree.inclusion_proof(index, cp.size)
    return InclusionProof(index, tuple(proof), note, receipt_id.encode()), made


def consistency(home: EvidenceHome, old: int, new: int) -> ConsistencyProof:
    old_cp, old_note = home.ledger.checkpoint_at(old)
    new_cp, new_note = home.ledger.checkpoint_at(new)
    if old > new:
        raise ValueError("OLD must not be larger than NEW")
    tree = home.ledger.tree()
    hashes = tree.consistency_proof(old, new) if old > 0 else []
    return ConsistencyProof(old, new, tuple(hashes), old_note, new_note)


def note_verifier_key(home: EvidenceHome) -> str:
    """The C2SP verifier key for this ledger's checkpoints: <origin>+<key id>+<key>."""
    return verifier_key(home.ledger.origin, home.signing_key().public)


def write_note(path: Path, note: str) -> None:
    """Write a signed note to ``path`` whole or not at all (temp file beside it, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(note)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
