"""A bundle's keys over time: which key may sign for the log where, back to the keys the grader trusts.

The keys a grader pins (``--key``) are trusted of their own accord. The log's key entries make others
valid over a range of its rows (:mod:`g6.ledger.keyring`): a writer the log added, the key after a
rotation (added by the key before it), and the key before a rotation (vouched for by the handover its
successor signed). A bundle does not carry the log, but its inclusion proofs carry the key entries
their receipt and checkpoint need, each with its inclusion path. Here the entries of every proof
against the bundle's own checkpoint are gathered, kept only when included in that checkpoint's tree,
and read into one timeline of the log's keys. It says which keys may sign the bundle's checkpoint and
the other checkpoints the bundle (or the grader) shows, each valid at that checkpoint's size, and which
may have signed the manifest. Nothing else is trusted: an entry that is not included, or not signed by
a key valid where it stands, makes no key valid; every verdict that names a key says where it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from g6.errors import G6Error
from g6.ledger.keyring import FOREVER, KeyLife, KeyTimeline, timeline
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import ProofError, leaf_hash, verify_inclusion
from g6.ledger.note import Checkpoint, NoteError, parse_note
from g6.ledger.proofs import key_entries_of, parse_inclusion
from g6.prove.bundle_report import UsedKey

INCLUSION_PROOF = re.compile(r"proofs/[A-Za-z0-9_-]{1,100}\.tlog-proof")  # a receipt's, as the layout names it


class BundleKeys:
    """The timeline of the log's keys a bundle shows: its ``roots`` (the keys used: pinned, or shipped with
    --trust-bundle-keys) and the key entries its proofs carry, included in the checkpoint ``cp``."""

    def __init__(self, roots: Sequence[UsedKey], cp: Checkpoint | None = None, proofs: Iterable[bytes] = ()) -> None:
        self.roots = {k.key_id: k for k in roots}
        entries = _included_entries(cp, proofs) if cp is not None else {}
        self.timeline: KeyTimeline = timeline({k.key_id: (k.key, k.source) for k in roots},
                                              [(i + 1, f"key entry at leaf {i}", text)
                                               for i, text in sorted(entries.items())],
                                              origin=cp.origin if cp is not None else None)
        self.entries = len(entries)

    def at(self, size: int) -> list[VerifyKey]:
        """The keys that may sign a checkpoint of ``size`` receipts (valid at its last one), roots first."""
        lives = [life for life in self.timeline.lives.values() if life.valid_at(max(size, 1))]
        return [life.key for life in sorted(lives, key=lambda x: not x.root)]

    def keys(self) -> dict[str, VerifyKey]:
        return self.timeline.keys()

    def life(self, key_id: str) -> KeyLife | None:
        return self.timeline.lives.get(key_id)

    def retired_at(self, key_id: str) -> int | None:
        life = self.life(key_id)
        return None if life is None or life.valid_to == FOREVER else life.valid_to

    def said(self, key_id: str) -> str:
        """The key as a verdict names it: its id and where it came from (a root: pinned or shipped; any
        other: the log's key entries the bundle carries, back to such a key)."""
        root = self.roots.get(key_id)
        if root is not None:
            return root.said()
        life = self.life(key_id)
        if life is None:
            return f"{key_id} (unknown)"
        sources = sorted({k.source for k in self.roots.values()})
        return f"{key_id} ({life.why}: key entries in the bundle, back to a key {' / '.join(sources)})"

    def problems(self) -> list[str]:
        return [f"leaf {c.seq - 1}: {c.detail}" for c in self.timeline.problems if c.seq is not None]


def _included_entries(cp: Checkpoint, proofs: Iterable[bytes]) -> dict[int, str]:
    """leaf index -> stored text of every key entry a proof against ``cp``'s tree carries, whose path
    includes it in that tree. A proof that cannot be read is its own citation's verdict, not this one's."""
    out: dict[int, str] = {}
    for data in proofs:
        try:
            proof = parse_inclusion(data)
            if proof.extra is None:
                continue
            _, carried = key_entries_of(proof.extra)
            theirs = Checkpoint.parse(parse_note(proof.checkpoint_note)[0])
        except (G6Error, NoteError, ValueError):
            continue
        if (theirs.origin, theirs.size, theirs.root) != (cp.origin, cp.size, cp.root):
            continue  # a proof against another checkpoint: its entries are judged with it
        for index, text, path in carried:
            if index in out:
                continue
            try:
                verify_inclusion(index, cp.size, leaf_hash(text.encode()), path, cp.root)
            except (ProofError, ValueError):  # ValueError: text that is no UTF-8 (a lone surrogate)
                continue
            out[index] = text
    return out
