"""Checkpoints and proofs over an evidence home's ledger (``g6 ledger checkpoint|prove|consistency``)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from g6.errors import G6Error, ProofNotCovered
from g6.files import as_made_by_the_person
from g6.home import EvidenceHome
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import TreeView
from g6.ledger.note import Checkpoint, NoteError, signed_by, verifier_key
from g6.ledger.proofs import ConsistencyProof, InclusionProof, key_proof_extra
from g6.prove.witness import cosigned  # the kept cosignatures travel in every proof


def checkpoint(home: EvidenceHome) -> tuple[Checkpoint, str]:
    return home.ledger.checkpoint(home.signing_key())


def covering_checkpoint(home: EvidenceHome, index: int) -> tuple[Checkpoint, str, bool]:
    """The latest checkpoint if it covers leaf ``index`` and no retired key signed it; else a new one (the
    flag says so). After a rotation the latest may be the old key's: a proof against it would hold only for
    a grader who pins the old key, while one against the current key's holds for either (the key entries)."""
    latest = home.ledger.latest_checkpoint()
    if latest is not None and latest[0].size > index and not _signed_by_a_retired_key(home, latest[1]):
        return latest[0], latest[1], False
    cp, note = checkpoint(home)
    return cp, note, True


def _signed_by_a_retired_key(home: EvidenceHome, note: str) -> bool:
    for e in home.ledger.key_entries():
        if e.receipt.request.get("action") == "retire":
            with contextlib.suppress(G6Error, NoteError):
                if signed_by(note, VerifyKey.from_text(str(e.receipt.request.get("key"))), home.ledger.origin):
                    return True
    return False


def prove(home: EvidenceHome, receipt_id: str, tree: TreeView | None = None) -> tuple[InclusionProof, bool]:
    """Inclusion proof of one receipt. Pass ``tree`` when proving many receipts, so the ledger's
    leaves are hashed once, not once per proof. A receipt (or checkpoint) signed by a writer the log
    added carries the key entries that added it, back to a key no entry added (the log's), each with its
    own inclusion path, so a grader holding only the log's key can check it (``key_proof_extra``)."""
    index = home.ledger.index_of(receipt_id)
    cp, note, made = covering_checkpoint(home, index)
    return prove_at(home, receipt_id, index, cp, note, tree), made


def prove_latest(home: EvidenceHome, receipt_id: str) -> InclusionProof:
    """Inclusion proof of one receipt against the latest checkpoint the ledger issued, signing nothing
    (``g6 serve``: a read-only home); ``ProofNotCovered`` when that checkpoint is older than the receipt."""
    index = home.ledger.index_of(receipt_id)
    latest = home.ledger.latest_checkpoint()
    if latest is None or latest[0].size <= index:
        have = f"the latest covers {latest[0].size}" if latest else "the ledger has issued none"
        raise ProofNotCovered(f"no checkpoint covers receipt {receipt_id} (entry {index + 1}) yet ({have}): the "
                              "home's owner runs `g6 ledger checkpoint`")
    return prove_at(home, receipt_id, index, latest[0], latest[1])


def prove_at(home: EvidenceHome, receipt_id: str, index: int, cp: Checkpoint, note: str,
             tree: TreeView | None = None) -> InclusionProof:
    """Inclusion proof of the receipt at leaf ``index`` against the checkpoint ``cp`` (signed note ``note``)."""
    tree = tree if tree is not None and len(tree) >= cp.size else home.ledger.tree()
    if tree.root(cp.size) != cp.root:
        raise ValueError("the ledger no longer matches its latest checkpoint; run `g6 ledger verify`")
    proof = tree.inclusion_proof(index, cp.size)
    signer = home.ledger.get(receipt_id).signature
    entries = _key_entries_for(home, cp.size, note, {signer.key_id} if signer else set())
    extra = key_proof_extra(receipt_id, [(seq - 1, text, tuple(tree.inclusion_proof(seq - 1, cp.size)))
                                         for seq, text in entries]) if entries else receipt_id.encode()
    return InclusionProof(index, tuple(proof), cosigned(home.ledger, cp, note), extra)


def _key_entries_for(home: EvidenceHome, size: int, note: str, signers: set[str]) -> list[tuple[int, str]]:
    """(seq, stored text) of the key entries among the first ``size`` rows that a grader holding only the
    log's key needs: the add entry of each signer (of the receipt, of the checkpoint ``note``), of the key
    that signed that entry, and so on back to a key no entry added; and every retire entry of those keys,
    that last one included. A rotation's handover is such a retire entry: with it, a grader who pins the
    key the log has now can check what the key before it signed (``g6.ledger.keyring``)."""
    entries = [e for e in home.ledger.key_entries() if e.seq <= size]
    if not entries:
        return []
    named = {str(e.receipt.request.get("key_id")): str(e.receipt.request.get("key")) for e in entries}
    for kid, text in named.items():  # whoever signed the checkpoint: a key the log names, or the home's own
        with contextlib.suppress(G6Error, NoteError):
            if signed_by(note, VerifyKey.from_text(text)):
                signers.add(kid)
    added = {str(e.receipt.request.get("key_id")): e for e in entries if e.receipt.request.get("action") == "add"}
    chain: set[str] = set()  # keys an entry added, back from the signers
    seen: set[str] = set()  # those, the signers and the keys that added them: whose retire entries travel
    todo = list(signers)
    while todo:
        kid = todo.pop()
        seen.add(kid)
        if kid in chain or kid not in added:
            continue
        chain.add(kid)
        by = added[kid].receipt.signature
        if by is not None:
            todo.append(by.key_id)
    named_keys = seen
    picked = [e.seq for e in entries if str(e.receipt.request.get("key_id")) in named_keys
              and (e.receipt.request.get("action") == "retire" or str(e.receipt.request.get("key_id")) in chain)]
    return [(seq, str(home.ledger.rows.row_at(seq)[5])) for seq in picked]


def consistency(home: EvidenceHome, old: int, new: int) -> ConsistencyProof:
    old_cp, old_note = home.ledger.checkpoint_at(old)
    new_cp, new_note = home.ledger.checkpoint_at(new)
    if old > new:
        raise ValueError("OLD must not be larger than NEW")
    tree = home.ledger.tree()
    hashes = tree.consistency_proof(old, new) if old > 0 else []
    return ConsistencyProof(old, new, tuple(hashes), cosigned(home.ledger, old_cp, old_note),
                            cosigned(home.ledger, new_cp, new_note))


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
            as_made_by_the_person(f.fileno())  # mkstemp's 0600 would stay after the rename
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
