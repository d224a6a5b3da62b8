"""Proof files a grader verifies offline with only the public key.

Inclusion — the C2SP tlog-proof format (https://c2sp.org/tlog-proof), the ``extra`` line binding
the receipt id (and, for a receipt signed by a writer other than the log's key, carrying the key
entries that made that writer one, see ``key_proof_extra``)::

    c2sp.org/tlog-proof@v1
    extra <base64 of the receipt id>
    index <leaf index>
    <base64 hash>            (the RFC 9162 inclusion path, one per line)

    <signed checkpoint note>

Consistency — the same shape (g6's own header, as C2SP defines no consistency file)::

    g6-evidence/tlog-consistency@v1
    old <size>
    new <size>
    <base64 hash>            (the RFC 9162 consistency path)

    <signed old checkpoint>
    ---
    <signed new checkpoint>

Verification returns a verdict per check, never a bare bool.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from g6.errors import InputError
from g6.ledger.keyring import KeyTimeline, timeline
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from g6.ledger.note import MAX_NOTE, Checkpoint, NoteError, decimal, note_text, open_checkpoint, parse_note
from g6.ledger.receipts import Receipt, RepeatedKey, refuse_repeated_keys
from g6.ledger.verdict import CheckVerdict

INCLUSION_HEADER = "c2sp.org/tlog-proof@v1"
CONSISTENCY_HEADER = "g6-evidence/tlog-consistency@v1"
KEYS_EXTRA = b"g6-evidence/key-entries@v1\n"  # extra data: this line, the receipt id, a line, then JSON
MAX_KEY_ENTRIES = 64  # key entries one proof may carry (a chain of writers adding writers is short)
MAX_PROOF = 2 * MAX_NOTE + (1 << 16)  # two checkpoint notes and a path of at most 64 hashes, with room
MAX_RECEIPT = 16 << 20  # a receipt is a few KiB; a file past this is not one


class ProofFormatError(InputError):
    code = "G6_E_PROOF_FORMAT"


ProofCheck = CheckVerdict  # one verdict on a proof; the name g6.prove imports


@dataclass(frozen=True, slots=True)
class ProofReport:
    kind: str  # "inclusion" | "consistency"
    checks: tuple[ProofCheck, ...]

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "ok": self.ok, "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True, slots=True)
class InclusionProof:
    index: int
    hashes: tuple[bytes, ...]
    checkpoint_note: str
    extra: bytes | None = None

    def text(self) -> str:
        lines = [INCLUSION_HEADER]
        if self.extra is not None:
            lines.append(f"extra {base64.b64encode(self.extra).decode()}")
        lines.append(f"index {self.index}")
        lines += [base64.b64encode(h).decode() for h in self.hashes]
        return "\n".join(lines) + "\n\n" + self.checkpoint_note


@dataclass(frozen=True, slots=True)
class ConsistencyProof:
    old: int
    new: int
    hashes: tuple[bytes, ...]
    old_note: str
    new_note: str

    def text(self) -> str:
        lines = [CONSISTENCY_HEADER, f"old {self.old}", f"new {self.new}"]
        lines += [base64.b64encode(h).decode() for h in self.hashes]
        return "\n".join(lines) + "\n\n" + self.old_note + "---\n" + self.new_note


def _b64(s: str, what: str) -> bytes:
    try:
        return base64.b64decode(s, validate=True)
    except ValueError:  # binascii.Error, or a plain ValueError for a non-ASCII str
        raise ProofFormatError(f"{what} is not base64: {s[:40]!r}") from None


def _num(line: str, word: str) -> int:
    head, _, value = line.partition(" ")
    n = decimal(value) if head == word else None
    if n is None:
        raise ProofFormatError(f"expected '{word} <number>' (ASCII digits, no leading zero), got {line[:40]!r}")
    return n


def proof_text(data: str | bytes) -> str:
    """A proof's text as every reader takes it: the notes' own reader (``note_text``: strict UTF-8, no
    CR, BOM or NUL, the same message), bounded by ``MAX_PROOF``; ``ProofFormatError`` otherwise."""
    try:
        return note_text(data, MAX_PROOF)
    except NoteError as e:
        raise ProofFormatError(str(e)) from None


def _checkpoint_format(note: str, which: str) -> None:
    """A checkpoint carried in a proof must be a well-formed one (its numbers, its base64, no CR…):
    what it holds is part of the proof's format. Its signature is checked later, as its own verdict."""
    try:
        Checkpoint.parse(parse_note(note)[0])
    except NoteError as e:
        raise ProofFormatError(f"{which}: {e}") from None


def parse_inclusion(text: str | bytes) -> InclusionProof:
    text = proof_text(text)
    head, sep, note = text.partition("\n\n")
    if not sep:
        raise ProofFormatError("a proof is a header block, a blank line, then a checkpoint")
    lines = head.split("\n")
    if lines[0] != INCLUSION_HEADER:
        raise ProofFormatError(f"not a {INCLUSION_HEADER} proof")
    rest = lines[1:]
    extra = None
    if rest and rest[0].startswith("extra "):
        extra = _b64(rest.pop(0)[6:], "extra data")
    if not rest:
        raise ProofFormatError("missing index line")
    index = _num(rest.pop(0), "index")
    hashes = tuple(_b64(h, "proof hash") for h in rest)
    if any(len(h) != 32 for h in hashes):
        raise ProofFormatError("every proof hash is 32 bytes")
    _checkpoint_format(note, "the checkpoint")
    return InclusionProof(index, hashes, note, extra)


def parse_consistency(text: str | bytes) -> ConsistencyProof:
    text = proof_text(text)
    head, sep, notes = text.partition("\n\n")
    if not sep:
        raise ProofFormatError("a proof is a header block, a blank line, then two checkpoints")
    lines = head.split("\n")
    if lines[0] != CONSISTENCY_HEADER or len(lines) < 3:
        raise ProofFormatError(f"not a {CONSISTENCY_HEADER} proof")
    old, new = _num(lines[1], "old"), _num(lines[2], "new")
    hashes = tuple(_b64(h, "proof hash") for h in lines[3:])
    if any(len(h) != 32 for h in hashes):
        raise ProofFormatError("every proof hash is 32 bytes")
    old_note, sep2, new_note = notes.partition("\n---\n")
    if not sep2:
        raise ProofFormatError("the two checkpoints are separated by a line '---'")
    _checkpoint_format(old_note + "\n", "the old checkpoint")
    _checkpoint_format(new_note, "the new checkpoint")
    return ConsistencyProof(old, new, hashes, old_note + "\n", new_note)


def _receipt_bytes(receipt: Receipt | Mapping[str, Any] | bytes | str) -> tuple[bytes, Receipt]:
    if isinstance(receipt, Receipt):
        r = receipt
    else:
        try:  # a repeated key: json.loads keeps the last, and the leaf would be hashed over what a reader keeping
            # the first never sees
            data = json.loads(receipt, object_pairs_hook=refuse_repeated_keys) if isinstance(
                receipt, bytes | str) else receipt
        except RepeatedKey as e:
            raise ProofFormatError(f"the receipt repeats the key {str(e)[:80]!r} in an object: not the JSON it was "
                                   "signed as") from None
        if not isinstance(data, Mapping):
            raise ProofFormatError("the receipt is not a JSON object")
        r = Receipt.from_json(data)
    return r.canonical_bytes(with_signature=True), r


def key_proof_extra(receipt_id: str, entries: list[tuple[int, str, tuple[bytes, ...]]]) -> bytes:
    """The ``extra`` data of a proof that carries key entries: each (leaf index, stored canonical text,
    inclusion path against the proof's own checkpoint)."""
    body = [{"index": i, "receipt": text, "hashes": [base64.b64encode(h).decode() for h in hashes]}
            for i, text, hashes in entries]
    return KEYS_EXTRA + receipt_id.encode() + b"\n" + json.dumps(body, separators=(",", ":")).encode()


def key_entries_of(extra: bytes) -> tuple[str, list[tuple[int, str, tuple[bytes, ...]]]]:
    """(receipt id, key entries) of a proof's ``extra``; ProofFormatError for anything else."""
    if not extra.startswith(KEYS_EXTRA):
        return extra.decode(errors="replace"), []
    rid, sep, body = extra[len(KEYS_EXTRA):].partition(b"\n")
    try:
        items = json.loads(body) if sep else None
        if not isinstance(items, list) or len(items) > MAX_KEY_ENTRIES:
            raise ValueError(f"a list of at most {MAX_KEY_ENTRIES} key entries")
        out = []
        for it in items:
            index, text, hashes = it["index"], it["receipt"], it["hashes"]
            if type(index) is not int or index < 0 or not isinstance(text, str) or not isinstance(hashes, list):
                raise ValueError("each key entry has an index, its receipt's text and its hashes")
            path = tuple(_b64(h, "key entry proof hash") for h in hashes)
            if any(len(h) != 32 for h in path):
                raise ValueError("every proof hash is 32 bytes")
            out.append((index, text, path))
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        raise ProofFormatError(f"the key entries in the proof's extra data are malformed: {e}") from None
    return rid.decode(errors="replace"), sorted(out)


def _given(key: VerifyKey | Sequence[VerifyKey]) -> dict[str, tuple[VerifyKey, str]]:
    keys = [key] if isinstance(key, VerifyKey) else list(key)
    return {k.key_id: (k, "given with --key") for k in keys}


def verify_inclusion_proof(text: str | bytes, receipt: Receipt | Mapping[str, Any] | bytes | str,
                           key: VerifyKey | Sequence[VerifyKey], origin: str | None = None) -> ProofReport:
    """Check a receipt's inclusion proof with only the public key: no ledger, no network.

    ``key`` is the log's key (or several: each trusted from the first row). A receipt signed by another
    writer verifies when the proof carries the key entries that made that writer one (each signed by a key
    valid where it stands, back to a given key, and each included in the same checkpoint), or, for a key
    the log had before a rotation, the handover in which a given key succeeded it; the checkpoint may be
    signed by any key so proven."""
    checks: list[ProofCheck] = []
    try:
        proof = parse_inclusion(text)
        bound, entries = key_entries_of(proof.extra) if proof.extra is not None else (None, [])
        checks.append(ProofCheck("format", True))
    except ProofFormatError as e:
        return ProofReport("inclusion", (ProofCheck("format", False, str(e)),))
    roots = _given(key)
    # each entry must sign its place: the leaf it is proven at, in the log the checkpoint names (its signature,
    # and the origin pinned, checked below)
    claimed = Checkpoint.parse(parse_note(proof.checkpoint_note)[0]).origin
    tl = timeline(roots, [(index + 1, f"key entry at leaf {index}", entry) for index, entry, _ in entries],
                  origin=origin or claimed)
    if entries:
        bad = [f"leaf {c.seq - 1}: {c.detail}" for c in tl.problems if c.seq is not None]
        checks.append(ProofCheck("key_entries", not bad, "; ".join(bad) if bad else
                                 f"{len(entries)} key entries from {', '.join(roots)}"))
    try:
        canonical, r = _receipt_bytes(receipt)
        ok, why = r.verify_signature(tl.keys())
        if ok and r.signature is not None:
            late = tl.why_not(r.signature.key_id, proof.index + 1)
            ok, why = (False, late) if late else (True, "")
        checks.append(ProofCheck("receipt_signature", ok, "" if ok else why))
    except (ValueError, InputError, RecursionError) as e:  # RecursionError: JSON nested past json's limit
        return ProofReport("inclusion", (*checks, ProofCheck("receipt", False, f"unreadable receipt: {e}")))
    if bound is not None:
        checks.append(ProofCheck("receipt_binding", bound == r.receipt_id,
                                 "" if bound == r.receipt_id else f"the proof is for {bound}, not {r.receipt_id}"))
    cp = _open_by_any(proof.checkpoint_note, tl, origin, checks)
    if cp is None:
        return ProofReport("inclusion", tuple(checks))
    if r.log is not None:
        want = {"origin": cp.origin, "seq": proof.index + 1}
        checks.append(ProofCheck("receipt_place", dict(r.log) == want, "" if dict(r.log) == want else
                                 f"the receipt is signed for {r.log.get('origin')} #{r.log.get('seq')}, the proof "
                                 f"puts it at {cp.origin} #{proof.index + 1}"))
    try:
        verify_inclusion(proof.index, cp.size, leaf_hash(canonical), proof.hashes, cp.root)
        for index, entry, hashes in entries:
            verify_inclusion(index, cp.size, leaf_hash(entry.encode()), hashes, cp.root)
        checks.append(ProofCheck("inclusion", True, f"leaf {proof.index} of {cp.size}"
                                 + (f", and {len(entries)} key entries" if entries else "")))
    except ProofError as e:
        checks.append(ProofCheck("inclusion", False, str(e)))
    return ProofReport("inclusion", tuple(checks))


def _open_by_any(note: str, tl: KeyTimeline, origin: str | None, checks: list[ProofCheck]) -> Checkpoint | None:
    """The checkpoint, signed by the given key or a key the proof's entries made a writer (valid at its size)."""
    error = "not signed by the given key"
    for life in tl.lives.values():
        try:
            cp = open_checkpoint(note, life.key, origin)
        except NoteError as e:
            error = str(e) if life.root else error
            continue
        if life.valid_at(max(cp.size, 1)):
            alone = life.root and sum(x.root for x in tl.lives.values()) == 1  # the one given key: no need to say
            who = "" if alone else f", signed by {life.key.key_id} ({life.why})"
            checks.append(ProofCheck("checkpoint_signature", True, f"{cp.origin} size {cp.size}{who}"))
            return cp
    checks.append(ProofCheck("checkpoint_signature", False, error))
    return None


def verify_consistency_proof(text: str | bytes, key: VerifyKey | Sequence[VerifyKey],
                             origin: str | None = None) -> ProofReport:
    """Check that the newer checkpoint's tree extends the older one's, with only the public key (or several:
    each checkpoint signed by one of them; one before a rotation and one after, say)."""
    try:
        proof = parse_consistency(text)
    except ProofFormatError as e:
        return ProofReport("consistency", (ProofCheck("format", False, str(e)),))
    checks = [ProofCheck("format", True)]
    cps: list[Checkpoint] = []
    keys = [k for k, _ in _given(key).values()]
    for label, note in (("old_checkpoint_signature", proof.old_note), ("new_checkpoint_signature", proof.new_note)):
        why = "no key to check it with"
        for k in keys:
            try:
                cps.append(open_checkpoint(note, k, origin))
                checks.append(ProofCheck(label, True, "" if len(keys) == 1 else f"signed by {k.key_id}"))
                break
            except NoteError as e:
                why = str(e)
        else:
            checks.append(ProofCheck(label, False, why))
    if len(cps) < 2:
        return ProofReport("consistency", tuple(checks))
    old, new = cps
    same = old.origin == new.origin and (old.size, new.size) == (proof.old, proof.new)
    checks.append(ProofCheck("sizes_and_origin", same, "" if same else "the checkpoints do not match the header"))
    try:
        verify_consistency(old.size, new.size, proof.hashes, old.root, new.root)
        checks.append(ProofCheck("consistency", True, f"size {old.size} -> {new.size}"))
    except ProofError as e:
        checks.append(ProofCheck("consistency", False, str(e)))
    return ProofReport("consistency", tuple(checks))


def parse_note_text(note: str) -> Checkpoint:
    return Checkpoint.parse(parse_note(note)[0])
