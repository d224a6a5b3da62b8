"""One history per bundle: every checkpoint a bundle shows must be its own or provably consistent with it.

A log's key can sign two histories (the same origin and size, two roots) and show each to someone
else. A bundle must never hold across them. Every checkpoint the bundle shows — its ``checkpoint.note``,
the one inside each inclusion proof, both inside each consistency proof — and every checkpoint the
grader kept (``g6 bundle verify --checkpoint KEPT``) is judged against the bundle's own checkpoint:

* the same tree (origin, size and root): fine;
* the same size, another root: two histories, each signed by the log's key; so is a consistency proof
  between two signed checkpoints that fails. Both are named as Go's sumdb client names them,
  "misbehavior detected", and both signed notes are kept in the report (:class:`Fork`);
* another size: fine only if a consistency proof between that size and the bundle's travels in the
  bundle (``proofs/consistency/<old>-<new>.tlog-consistency``, one of the two sizes the bundle's) and
  holds, and the checkpoint it carries at that size is this very tree; else the verdict says no proof
  travels, so it cannot be checked offline (fail closed).

Nothing here trusts the bundle's word: consistency proofs are parsed, both of their checkpoints must
verify with the key that verified the bundle's, and their sizes must be the ones their name says.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Sequence

from g6.errors import G6Error
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import EMPTY_ROOT, ProofError, verify_consistency
from g6.ledger.note import Checkpoint, NoteError, open_checkpoint, parse_note
from g6.ledger.proofs import parse_consistency
from g6.prove.bundle_report import MISBEHAVIOR, BundleCheck, Fork, Seen
from g6.prove.bundle_zip import RECORD_ERRORS, quoted

CONSISTENCY = re.compile(r"proofs/consistency/(0|[1-9][0-9]{0,18})-(0|[1-9][0-9]{0,18})\.tlog-consistency")


TIMESTAMP = re.compile(r"timestamps/([1-9][0-9]{0,18})-(0|[1-9][0-9]{0,5})\.json")


def timestamp_name(size: int, n: int) -> str:
    """The member of the n-th RFC 3161 token over the log's checkpoint of ``size``."""
    return f"timestamps/{size}-{n}.json"


def consistency_name(old: int, new: int) -> str:
    return f"proofs/consistency/{old}-{new}.tlog-consistency"


def _sizes(name: str) -> tuple[int, ...]:
    m = CONSISTENCY.fullmatch(name)
    return tuple(int(x) for x in m.groups()) if m else ()


def same_tree(a: Checkpoint, b: Checkpoint) -> bool:
    return (a.origin, a.size, a.root) == (b.origin, b.size, b.root)


def described(cp: Checkpoint) -> str:
    return f"size {cp.size} root {base64.b64encode(cp.root).decode()}"


class History:
    """The bundle's checkpoint (``bundle``, already verified), and what the bundle's consistency proofs
    (the members ``names`` of that pattern, read with ``read``) prove about other sizes. ``keys(size)``
    are the keys a checkpoint of that size may be signed with (the log's key then: a rotation changes it,
    :mod:`g6.prove.bundle_keys`); ``keys_said`` names them in a verdict ("a pinned key")."""

    def __init__(self, bundle: Seen, keys: Callable[[int], Sequence[VerifyKey]], keys_said: str,
                 read: Callable[[str], bytes], names: Iterable[str]) -> None:
        self.bundle = bundle
        self.keys = keys
        self.keys_said = keys_said
        self.forks: list[Fork] = []
        self.problems: list[str] = []
        self.links: dict[int, tuple[str, Seen]] = {}  # other size -> (member, the checkpoint it proves)
        self.broken: dict[int, str] = {}  # other size -> why the proof carried for it does not hold
        self.used: set[str] = set()
        self.foreign = 0  # inclusion proofs against another checkpoint, proven consistent
        for name in sorted(names, key=_sizes):
            self._link(name, read)

    # -- reading the consistency proofs ------------------------------------------------------------
    def _open(self, note: str) -> Checkpoint:
        why = "no key to check it with"
        for k in self.keys(Checkpoint.parse(parse_note(note)[0]).size):
            try:
                return open_checkpoint(note, k, self.bundle.cp.origin)
            except NoteError as e:
                why = str(e)
        raise NoteError(why)

    def _fork(self, detail: str, a: Seen, b: Seen) -> None:
        pair = {(a.cp.size, a.cp.root), (b.cp.size, b.cp.root)}
        if not any({(s.cp.size, s.cp.root) for s in f.checkpoints} == pair for f in self.forks):
            self.forks.append(Fork(detail, (a, b)))

    def _link(self, name: str, read: Callable[[str], bytes]) -> None:
        m = CONSISTENCY.fullmatch(name)
        assert m is not None
        old, new = int(m.group(1)), int(m.group(2))
        b = self.bundle.cp
        other_size = old if new == b.size else new
        if not (0 < old < new and b.size in (old, new)):
            self.problems.append(f"{name} does not start or end at the bundle's checkpoint (size {b.size})")
            return
        try:
            proof = parse_consistency(read(name).decode("utf-8"))
        except (*RECORD_ERRORS, G6Error) as e:
            self._broken(other_size, f"{name}: {quoted(e, 160)[1:-1]}")
            return
        if (proof.old, proof.new) != (old, new):
            self._broken(other_size, f"{name} says it proves size {proof.old} -> {proof.new}")
            return
        try:
            old_cp, new_cp = self._open(proof.old_note), self._open(proof.new_note)
        except NoteError as e:
            self._broken(other_size, f"{name}: a checkpoint in it is not signed by {self.keys_said}: "
                                     f"{quoted(e, 160)[1:-1]}")
            return
        if (old_cp.size, new_cp.size) != (old, new):
            self._broken(other_size, f"{name}: its checkpoints are of sizes {old_cp.size} and {new_cp.size}")
            return
        old_seen = Seen(f"{name} (size {old})", old_cp, proof.old_note)
        new_seen = Seen(f"{name} (size {new})", new_cp, proof.new_note)
        mine, other = (old_seen, new_seen) if old == b.size else (new_seen, old_seen)
        if not same_tree(mine.cp, b):
            self._fork(f"{name} carries another checkpoint of size {b.size} than the bundle's checkpoint.note",
                       mine, self.bundle)
            self._broken(other_size, f"{name}: {MISBEHAVIOR}")
            return
        try:
            verify_consistency(old, new, proof.hashes, old_cp.root, new_cp.root)
        except ProofError as e:
            self._fork(f"{name}: no consistency from size {old} to {new} ({e})", old_seen, new_seen)
            self._broken(other_size, f"{name}: {MISBEHAVIOR} (the proof from size {old} to {new} fails: {e})")
            return
        self.links[other_size] = (name, other)

    def _broken(self, size: int, why: str) -> None:
        self.broken[size] = why
        self.problems.append(why)

    # -- judging one checkpoint ----------------------------------------------------------------------
    def relate(self, label: str, cp: Checkpoint, note: str, *, kept: bool = False) -> tuple[bool, str]:
        """Whether ``cp`` (signature already verified) is the bundle's checkpoint or provably consistent
        with it, and in words why (or why not). A fork it shows is kept in ``forks``."""
        ok, why = self._relate(label, cp, note, kept)
        if not ok and not kept:
            self.problems.append(f"{label}: {why}")
        elif ok and not kept and not same_tree(cp, self.bundle.cp):
            self.foreign += 1
        return ok, why

    def _relate(self, label: str, cp: Checkpoint, note: str, kept: bool) -> tuple[bool, str]:
        b = self.bundle.cp
        if cp.origin != b.origin:
            return False, f"it is a checkpoint of {cp.origin}, the bundle's is of {b.origin}"
        if same_tree(cp, b):
            return True, f"size {cp.size}: the bundle's own checkpoint"
        seen = Seen(label, cp, note)
        if cp.size == b.size:
            self._fork(f"{label} and the bundle's checkpoint.note are both of size {b.size}, with two roots",
                       seen, self.bundle)
            return False, f"{MISBEHAVIOR}: it and the bundle's checkpoint.note are both of size {b.size}, " \
                          "with two roots"
        if cp.size == 0:
            ok = cp.root == EMPTY_ROOT
            return ok, "size 0: every tree extends the empty one" if ok else \
                "a checkpoint of size 0 whose root is not the empty tree's"
        if cp.size in self.broken:
            return False, self.broken[cp.size]
        link = self.links.get(cp.size)
        if link is None:
            lo, hi = sorted((cp.size, b.size))
            why = f"the bundle carries no consistency proof from size {lo} to {hi} ({consistency_name(lo, hi)})"
            if kept:
                why = (f"cannot be checked offline: {why}; ask for a bundle made with "
                       "`g6 bundle MANIFEST -o ZIP --checkpoint KEPT`")
            return False, why
        name, other = link
        if not same_tree(other.cp, cp):
            self._fork(f"{label} and {name} are both of size {cp.size}, with two roots", seen, other)
            return False, f"{MISBEHAVIOR}: it and the checkpoint {name} carries are both of size {cp.size}, " \
                          "with two roots"
        self.used.add(name)
        lo, hi = sorted((cp.size, b.size))
        return True, f"size {lo} -> {hi}: consistent ({name})"

    def kept(self, label: str, note: str) -> tuple[bool, str]:
        """A checkpoint the grader kept: signed by a trusted key, and of this bundle's history."""
        try:
            cp = Checkpoint.parse(parse_note(note)[0])
        except NoteError as e:
            return False, f"not a signed checkpoint: {quoted(e, 160)[1:-1]}"
        if cp.origin != self.bundle.cp.origin:
            return False, f"it is a checkpoint of {quoted(cp.origin)}, the bundle's is of {self.bundle.cp.origin}"
        try:
            cp = self._open(note)
        except NoteError as e:
            return False, f"not signed by {self.keys_said} (size {cp.size}): {quoted(e, 160)[1:-1]}"
        ok, why = self.relate(label, cp, note, kept=True)
        if ok and same_tree(cp, self.bundle.cp):
            why = f"size {cp.size} -> {cp.size}: the bundle's own checkpoint"
        return ok, why

    def check(self, inclusion_proofs: int) -> BundleCheck:
        """The ``history`` verdict: one history across every checkpoint the bundle (and the grader) showed."""
        b = self.bundle.cp
        if self.forks or self.problems:
            parts = ([f"{MISBEHAVIOR}: " + "; ".join(f.detail for f in self.forks)] if self.forks else []) + \
                list(dict.fromkeys(self.problems))
            more = f"; and {len(parts) - 8} more" if len(parts) > 8 else ""
            return BundleCheck("history", False, "; ".join(parts[:8]) + more)
        mine = inclusion_proofs - self.foreign
        said = f"{mine} inclusion proof{'s' if mine != 1 else ''} against the bundle's checkpoint (size {b.size})"
        if not self.foreign:
            said = f"every inclusion proof is against the bundle's checkpoint (size {b.size})"
        else:
            said += f", {self.foreign} against checkpoints proven consistent with it ({', '.join(sorted(self.used))})"
        if self.links:
            sizes = ", ".join(str(s) for s in sorted(self.links))
            said += f"; consistent with the log's checkpoints of size {sizes} (proofs in the bundle)"
        return BundleCheck("history", True, said)
