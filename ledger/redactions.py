"""Removing is evidence too: redaction and legal-hold entries, and what a reader makes of them.

The model is C2SP's tlog-addenda: the log commits to a body's digests (a receipt's ``content``); the bytes
are kept beside it in the blob store, keyed by those digests; *redacted* means the store stops serving
them while the log still proves they existed, when, where from, and who read them. The removal is itself
an entry of the log, so it is chained, signed, in the Merkle tree and provable offline like any receipt:

* a **redaction entry** (``kind: "redaction"``) names the bodies removed and the copies derived from them
  (``request.blobs``: their blake3, sha256 and size, ``role`` ``body``, ``derived`` or ``resource`` (a
  sub-resource of a rendered capture), and for a derived copy the body it came ``from`` and the receipt ``via``
  which it was made; for a resource, its page's blob and its own read), the receipts that named those
  bytes (``request.receipts``), a ``reason`` and the operator's ``note``. Receipts stay as they are;
* a **hold entry** (``kind: "hold"``, ``request.action`` ``hold`` or ``release``) puts digests under a legal
  hold, or lifts one: a held digest is never redacted nor collected until it is released.

An entry counts (``Redactions``) only when it is signed by a key valid at its seq (the key timeline of
``g6.ledger.keyring``), bound to that place in this log (``log``: origin and seq, signed), covered by the
stored Merkle tree, and well formed. Anything else is a failed ``redaction`` verdict and redacts nothing,
so a forged, edited, moved or copied entry cannot make a missing body pass: the body is then missing, and
``ledger verify`` fails on it as it always did. A redaction of a digest under hold, a hold of a redacted
one and a release of one not held are failed verdicts too: the log shows the hold was broken.

A redaction covers the digest, not one receipt: every receipt naming those bytes (before or after the
entry) reads as redacted, and a body that comes back (a later read of the same bytes) is never served and
is removed again by ``g6 blob gc``. No I/O here beyond reading rows; the removal itself is
``g6.ledger.takedown``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from g6.errors import InputError
from g6.ledger import stored_tree
from g6.ledger.backends.rows import LedgerRows
from g6.ledger.chain import Check
from g6.ledger.keyring import KeyTimeline, parsed_entry
from g6.ledger.receipts import (
    Receipt,
    check_signature,
    log_position,
)
from g6.store import BlobBackend
from g6.store.digest import Digest

REDACTION, HOLD = "redaction", "hold"  # the two entry kinds
ENTRY_KINDS = (REDACTION, HOLD)
REDACT, HOLD_ACTION, RELEASE = "redact", "hold", "release"
# a redacted blob's role: the bytes read, a copy made from them, or a sub-resource a rendered capture loaded (a
# read of its own, taken out with the page: ``g6.ledger.takedown``)
BODY, DERIVED, RESOURCE = "body", "derived", "resource"
ROLES = (BODY, DERIVED, RESOURCE)
REDACTED_CODE = "G6_E_BLOB_REDACTED"
HELD_CODE, RELEASED_CODE = "G6_E_BLOB_HOLD", "G6_E_BLOB_HOLD_RELEASED"
RETENTION = "retention"  # the reason ``g6 blob expire`` gives
MAX_REASON = 200  # characters: a reason is a short phrase (court-order, gdpr-art-17, retention…)
MAX_NOTE = 2000  # characters: the operator's note (a ticket, an order's reference)
CHECKS_NAMED = 8  # failing entries named in the verdicts; the rest are counted


@dataclass(frozen=True, slots=True)
class BlobNamed:
    """One blob an entry names: its digests and size, and (in a redaction) why it is named."""

    blake3: str
    sha256: str
    size: int
    role: str = BODY
    source: str | None = None  # a derived copy: the blake3 of the body it was made from (a resource: its page's)
    via: str | None = None  # a derived copy: the receipt that made it (a convert, a capture; a resource: its read)

    def to_json(self, with_role: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"blake3": self.blake3, "sha256": self.sha256, "size": self.size}
        if with_role:
            out["role"] = self.role
            if self.source is not None:
                out["from"] = self.source
            if self.via is not None:
                out["via"] = self.via
        return out

    @classmethod
    def from_json(cls, d: Any) -> BlobNamed:
        if not isinstance(d, Mapping):
            raise InputError("a blob it names is not an object")
        b3, sha, size = d.get("blake3"), d.get("sha256"), d.get("size")
        for value, algo in ((b3, "blake3"), (sha, "sha256")):
            if not isinstance(value, str) or Digest.parse(value).algo != algo or value != str(Digest.parse(value)):
                raise InputError(f"a blob's {algo} digest is not one: {str(value)[:80]!r}")
        if type(size) is not int or size < 0:
            raise InputError("a blob's size is not a whole number of bytes")
        role = d.get("role", BODY)
        if role not in ROLES:
            raise InputError(f"a blob's role is {str(role)[:20]!r}, not body, derived or resource")
        source, via = d.get("from"), d.get("via")
        if source is not None and not isinstance(source, str) or via is not None and not isinstance(via, str):
            raise InputError("a derived blob's from and via are not text")
        return cls(str(b3), str(sha), size, str(role), source, via)


def _checked_words(reason: str, note: str) -> tuple[str, str]:
    reason, note = reason.strip(), note.strip()
    if not reason:
        raise InputError("a reason is required (--reason): court-order, gdpr-erasure, takedown-notice, leaked-"
                         "credentials, retention…; it is signed into the log with the entry")
    if len(reason) > MAX_REASON or "\n" in reason:
        raise InputError(f"the reason is one line of at most {MAX_REASON} characters; put the rest in --note")
    if len(note) > MAX_NOTE:
        raise InputError(f"the note is at most {MAX_NOTE} characters")
    return reason, note


def redaction_entry(blobs: Sequence[BlobNamed], receipts: Sequence[str], reason: str, note: str = "") -> Receipt:
    """An unsigned redaction entry of ``blobs`` (bodies and their derived copies), for ``Ledger.append``."""
    reason, note = _checked_words(reason, note)
    if not blobs:
        raise InputError("a redaction entry names at least one blob")
    request: dict[str, Any] = {"action": REDACT, "blobs": [b.to_json() for b in blobs],
                               "receipts": sorted(set(receipts)), "reason": reason}
    if note:
        request["note"] = note
    return Receipt(kind=REDACTION, source="g6", request=request, outcome="ok", outcome_code=REDACTED_CODE)


def hold_entry(action: str, blobs: Sequence[BlobNamed], reason: str, note: str = "") -> Receipt:
    """An unsigned hold (``action`` hold) or release entry of ``blobs``."""
    if action not in (HOLD_ACTION, RELEASE):
        raise InputError(f"a hold entry holds or releases, not {action!r}")
    reason, note = _checked_words(reason, note)
    if not blobs:
        raise InputError("a hold entry names at least one blob")
    request: dict[str, Any] = {"action": action, "blobs": [b.to_json(with_role=False) for b in blobs],
                               "reason": reason}
    if note:
        request["note"] = note
    return Receipt(kind=HOLD, source="g6", request=request, outcome="ok",
                   outcome_code=HELD_CODE if action == HOLD_ACTION else RELEASED_CODE)


@dataclass(frozen=True, slots=True)
class Redacted:
    """A digest a valid redaction entry covers: the entry's seq, id, reason and note, and the blob."""

    seq: int
    receipt_id: str
    reason: str
    note: str
    blob: BlobNamed

    def said(self) -> str:
        """``redacted at seq 12 (court-order)``: how every reader words it."""
        return f"redacted at seq {self.seq} ({self.reason})"

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "receipt_id": self.receipt_id, "reason": self.reason, "note": self.note,
                **self.blob.to_json()}


@dataclass(frozen=True, slots=True)
class Held:
    seq: int
    receipt_id: str
    reason: str
    blob: BlobNamed


@dataclass
class Redactions:
    """The redaction and hold entries of one log that count, read in seq order (see the module docstring).
    ``entries`` holds the seq of every such entry read, valid or not (verify fails a row whose kind column
    hid it from this pass)."""

    redacted: dict[str, Redacted] = field(default_factory=dict)  # blake3 and sha256 digest -> the redaction
    held: dict[str, Held] = field(default_factory=dict)  # blake3 -> the hold in force
    entries: set[int] = field(default_factory=set)
    receipts: set[str] = field(default_factory=set)  # every receipt a counting redaction entry names
    counted: int = 0  # redaction entries that count
    problems: list[Check] = field(default_factory=list)
    _more: int = 0

    def of(self, digest: str | None) -> Redacted | None:
        """The redaction covering ``digest`` (blake3:… or sha256:…), or None."""
        return self.redacted.get(digest) if digest else None

    def of_content(self, content: Mapping[str, Any] | None) -> Redacted | None:
        """The redaction covering a receipt's ``content`` (by its blake3, else its sha256), or None."""
        if not content:
            return None
        return self.of(str(content.get("blake3", ""))) or self.of(str(content.get("sha256", "")))

    def bodies(self) -> list[Redacted]:
        """Every redacted blob once (by blake3), by seq."""
        seen = {r.blob.blake3: r for r in self.redacted.values()}
        return sorted(seen.values(), key=lambda r: (r.seq, r.blob.blake3))

    def hold_of(self, digest: str) -> Held | None:
        if digest in self.held:
            return self.held[digest]
        return next((h for h in self.held.values() if h.blob.sha256 == digest), None)

    def summary(self) -> dict[str, int]:
        return {"entries": self.counted, "redacted": len(self.bodies()), "held": len(self.held)}

    def counts(self, store: BlobBackend | None) -> dict[str, int]:
        """What ``ledger verify`` reports (empty when the log holds no such entry): the entries that count, the
        blobs redacted, those still in ``store`` (a removal not finished: ``g6 blob gc`` finishes it), held."""
        if not self.entries:
            return {}
        out = self.summary()
        if store is not None:
            out["pending"] = sum(1 for r in self.bodies() if store.has(r.blob.blake3))
        return out

    def _fail(self, seq: int, rid: str, detail: str) -> None:
        if len(self.problems) < CHECKS_NAMED:
            self.problems.append(Check("redaction", False, seq, rid, detail))
        else:
            self._more += 1

    def checks(self) -> list[Check]:
        """The ``redaction`` verdicts: each entry that does not count, or one passing verdict for those that do."""
        out = list(self.problems)
        if self._more:
            out.append(Check("redaction", False, None, None, f"{self._more} more redaction or hold entries that "
                                                             "do not count"))
        if not out and self.entries:
            s = self.summary()
            n, red = len(self.entries), s["redacted"]
            out.append(Check("redaction", True, None, None,
                             f"{n} redaction and hold {'entry' if n == 1 else 'entries'}, each signed by a key valid "
                             f"where it stands: {red} {'blob' if red == 1 else 'blobs'} redacted, {s['held']} held"))
        return out

    # -- reading ---------------------------------------------------------------------------------------
    def read(self, timeline: KeyTimeline, origin: str, seq: int, rid: str, text: Any, covered: int) -> None:
        """Take in the entry stored at ``seq`` (in seq order); one that does not count is a failed verdict."""
        self.entries.add(seq)
        try:
            data = _signed(timeline, origin, seq, text, covered)
            kind, request = data["kind"], data["request"]
            if not isinstance(request, Mapping):
                raise InputError("its request is not an object")
            blobs = [BlobNamed.from_json(b) for b in _listed(request.get("blobs"), "blobs")]
            reason = request.get("reason")
            note = request.get("note", "")
            if not isinstance(reason, str) or not reason or not isinstance(note, str):
                raise InputError("its reason or note is not text")
            if not blobs:
                raise InputError("it names no blob")
            if kind == REDACTION:
                if request.get("action") != REDACT:
                    raise InputError(f"a redaction entry's action is {str(request.get('action'))[:20]!r}")
                receipts = _listed(request.get("receipts"), "receipts")
                if not all(isinstance(r, str) for r in receipts):
                    raise InputError("its receipts are not receipt ids")
                self._redact(seq, str(data["receipt_id"]), reason, note, blobs)
                self.receipts.update(receipts)
            else:
                self._hold(seq, str(data["receipt_id"]), str(request.get("action")), reason, blobs)
        except (InputError, KeyError, TypeError, ValueError, AttributeError) as e:
            self._fail(seq, rid, f"{_kind_of(text)} entry does not count: {e}")

    def _redact(self, seq: int, rid: str, reason: str, note: str, blobs: list[BlobNamed]) -> None:
        held = [b.blake3 for b in blobs if b.blake3 in self.held]
        if held:
            h = self.held[held[0]]
            raise InputError(f"it redacts {held[0]}, under a legal hold since seq {h.seq} ({h.reason}) and never "
                             "released")
        self.counted += 1
        for b in blobs:
            r = Redacted(seq, rid, reason, note, b)
            self.redacted.setdefault(b.blake3, r)  # the first redaction of a digest is the one readers name
            self.redacted.setdefault(b.sha256, r)

    def _hold(self, seq: int, rid: str, action: str, reason: str, blobs: list[BlobNamed]) -> None:
        if action == HOLD_ACTION:
            gone = [b.blake3 for b in blobs if b.blake3 in self.redacted]
            if gone:
                raise InputError(f"it holds {gone[0]}, redacted at seq {self.redacted[gone[0]].seq}")
            for b in blobs:
                self.held.setdefault(b.blake3, Held(seq, rid, reason, b))
        elif action == RELEASE:
            loose = [b.blake3 for b in blobs if b.blake3 not in self.held]
            if loose:
                raise InputError(f"it releases {loose[0]}, which no hold covers")
            for b in blobs:
                del self.held[b.blake3]
        else:
            raise InputError(f"a hold entry's action is {action[:20]!r}, not hold or release")


def _listed(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"its {what} are not a list")
    return value


def _kind_of(text: Any) -> str:
    try:
        kind = json.loads(text).get("kind") if isinstance(text, str) else None
    except (ValueError, AttributeError):
        kind = None
    return "a hold" if kind == HOLD else "a redaction"


def _signed(timeline: KeyTimeline, origin: str, seq: int, text: Any, covered: int) -> dict[str, Any]:
    """The entry's JSON if it counts where it stands: signed by a key valid at ``seq``, bound to ``origin``
    at ``seq``, inside the first ``covered`` leaves of the stored tree; else InputError saying why not."""
    data, sig, message = parsed_entry(text, tuple(ENTRY_KINDS), "a redaction or hold entry")
    ok, why = check_signature(sig, timeline.keys(), message, "entry")
    if not ok:
        raise InputError(why)
    late = timeline.why_not(sig.key_id, seq)
    if late is not None:
        raise InputError(late)
    if data.get("log") != log_position(origin, seq):
        raise InputError(f"it is signed for {data.get('log')!r:.80}, but stands at {origin} #{seq} (moved, replayed "
                         "or copied from another log)")
    if seq > covered:
        raise InputError(f"the stored Merkle tree covers {covered} entries, not this one (an entry no checkpoint "
                         "or proof can cover)")
    return data


def read_redactions(timeline: KeyTimeline, origin: str, rows: Iterable[tuple[Any, Any, Any]],
                    covered: int) -> Redactions:
    """The redactions of one log: its redaction and hold rows as (seq, receipt id, stored text), in any
    order (read here by seq), judged against ``timeline`` (the keys valid where) and the ``covered`` leaves
    of the stored tree."""
    out = Redactions()
    for seq, rid, text in sorted(((s, r, t) for s, r, t in rows if isinstance(s, int)), key=lambda x: x[0]):
        out.read(timeline, origin, seq, rid if isinstance(rid, str) else repr(rid), text, covered)
    return out


def redactions_of(rows: LedgerRows, timeline: KeyTimeline, origin: str) -> Redactions:
    """``read_redactions`` over a backend's rows (its index on kind finds the few entries), against the
    stored tree as it is: what verify, the removal and every reader use."""
    covered = stored_tree.stored_size(rows) or 0
    found = [(r[0], r[1], r[5]) for kind in ENTRY_KINDS for r in rows.select(kind=kind)]
    return read_redactions(timeline, origin, found, covered)


__all__ = ["BODY", "DERIVED", "ENTRY_KINDS", "HOLD", "REDACTION", "RESOURCE", "RETENTION", "ROLES", "BlobNamed", "Held",
           "Redacted", "Redactions", "hold_entry", "read_redactions", "redaction_entry", "redactions_of"]
