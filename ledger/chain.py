"""The hash chain and the verdicts: what a ledger row is and how it is judged, with no I/O.

Each row stores the receipt (canonical JSON, signature included), ``prev_hash`` (the entry hash of
the row before it; ``GENESIS`` for the first) and its own ``entry_hash``::

    entry_hash = sha256("g6.ledger.v1\\n" + seq + "\\n" + prev_hash + "\\n" + canonical receipt)

so an edited, deleted, inserted or reordered row breaks the chain at that row. The columns beside
the receipt (``receipt_id``, ``kind``, ``outcome``, ``fetched_at``) are lookup copies: verify checks
each against the receipt (``chain_check``). Every backend stores these columns, in this order
(``RECEIPT_COLUMNS``), so the log, verify and copy read one row shape whatever the engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from g6.ledger.merkle import leaf_hash
from g6.ledger.receipts import Receipt

GENESIS = "sha256:" + "0" * 64
_DOMAIN = b"g6.ledger.v1\n"
# one stored row, in this order: every backend's row reads return tuples of these columns
RECEIPT_COLUMNS = ("seq", "receipt_id", "kind", "outcome", "fetched_at", "receipt", "prev_hash", "entry_hash")
# a checkpoint's origin is ORIGIN_PREFIX + the log id kept in the ledger's meta table
ORIGIN_PREFIX = "g6-evidence/"


def stored_bytes(value: Any) -> bytes:
    """The bytes of a ``receipt`` cell as stored. A cell edited to a blob or a number still hashes
    (to something that matches nothing), so a damaged row is a verdict, never a traceback."""
    return value if isinstance(value, bytes) else str(value).encode()


def stored_leaf_hash(value: Any) -> bytes:
    """RFC 9162 leaf hash of a ``receipt`` cell (see ``stored_bytes``)."""
    return leaf_hash(stored_bytes(value))


def entry_hash(seq: int, prev_hash: str, canonical_receipt: bytes) -> str:
    h = hashlib.sha256(_DOMAIN)
    h.update(f"{seq}\n{prev_hash}\n".encode())
    h.update(canonical_receipt)
    return "sha256:" + h.hexdigest()


def entry_hash_prefix() -> hashlib._Hash:
    """The entry hash's state after its domain: ``entry_hash`` is ``entry_hash_prefix().copy()`` then
    the same updates (verify copies it once a row instead of hashing the domain again)."""
    return hashlib.sha256(_DOMAIN)


def layout_problem(receipt_columns: set[str], read_log_id: Callable[[], Any]) -> str | None:
    """What a backend's tables lack for a ledger to be read: a receipts column, or the log id
    (read only once the columns are there, as a damaged table may not be readable)."""
    lacking = [c for c in RECEIPT_COLUMNS if c not in receipt_columns]
    if lacking:
        return f"the receipts table lacks the column(s) {', '.join(lacking)}"
    log_id = read_log_id()
    if not isinstance(log_id, str) or not log_id:
        return "the meta table holds no log id (the log's identity, part of every checkpoint's origin)"
    return None


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    seq: int
    receipt: Receipt
    prev_hash: str
    entry_hash: str


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict: which check, on which row, whether it held, and why not."""

    check: str  # "signature" | "chain" | "binding" | "time" | "keys" | "blob" | "database" | "checkpoint"…
    ok: bool
    seq: int | None = None
    receipt_id: str | None = None
    detail: str = ""
    warning: bool = False  # holds, but looks wrong (a clock): listed, and a failure under --strict-time

    def to_json(self) -> dict[str, Any]:
        out = {"check": self.check, "ok": self.ok, "seq": self.seq, "receipt_id": self.receipt_id,
               "detail": self.detail}
        if self.warning:
            out["warning"] = True
        return out


# the verdicts a report shows, in this order; the optional ones only when a check of that kind ran
CHECK_NAMES = ("database", "consistency", "signature", "chain", "binding", "duplicates", "keys", "wacz_keys", "time",
               "blob", "redaction", "tree", "checkpoint", "kept_checkpoint", "witnesses", "timestamp", "fetched_at")
OPTIONAL_CHECKS = ("database", "consistency", "binding", "duplicates", "keys", "wacz_keys", "time", "redaction",
                   "tree", "checkpoint", "kept_checkpoint", "witnesses", "timestamp", "fetched_at")


@dataclass(frozen=True, slots=True)
class LedgerVerifyReport:
    rows: int
    checks: tuple[Check, ...]
    # passing checks counted but not kept one by one (a large ledger keeps failures only)
    passed: Mapping[str, int] = field(default_factory=dict)
    # receipts bound to their place, under the old rule, and clock warnings (``g6.ledger.row_rules``)
    stats: Mapping[str, int] = field(default_factory=dict)
    keys: tuple[Mapping[str, Any], ...] = ()  # which keys verify trusted, why, and where they were valid
    # every RFC 3161 token checked (``g6.ledger.transparency.timestamped``)
    timestamps: tuple[Mapping[str, Any], ...] = ()
    # redaction entries that count, blobs they redact, of those still in the store, held (``g6.ledger.redactions``)
    redactions: Mapping[str, int] = field(default_factory=dict)

    def warnings(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.warning and c.ok)

    def of(self, check: str) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.check == check)

    def failures(self, check: str | None = None) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.ok and (check is None or c.check == check))

    @property
    def ok(self) -> bool:
        return not self.failures()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "rows": self.rows, "checks": {}}
        for name in CHECK_NAMES:
            cs = self.of(name)
            extra = self.passed.get(name, 0)
            if name in OPTIONAL_CHECKS and not cs and not extra:
                continue
            bad = [c.to_json() for c in cs if not c.ok]
            entry: dict[str, Any] = {"ok": not bad, "checked": len(cs) + extra, "failed": len(bad), "failures": bad}
            warned = [c.to_json() for c in cs if c.ok and c.warning]
            if warned:
                entry["warnings"] = warned
            out["checks"][name] = entry
        if self.stats:
            out["rules"] = {"bound": self.stats.get("bound", 0), "old_rule": self.stats.get("unbound", 0),
                            "clock_warnings": self.stats.get("warnings", 0)}
        if self.keys:
            out["keys"] = [dict(k) for k in self.keys]
        if self.timestamps:
            out["timestamps"] = [dict(t) for t in self.timestamps]
        if self.redactions:
            out["redactions"] = dict(self.redactions)
        return out


def chain_check(seq: int, rid: str, text: Any, data: Any, stored_prev: str, stored_hash: str,
                prev_seq: int, prev_hash: str, columns: Mapping[str, Any]) -> Check:
    """The checked path's chain verdict on one row, every problem worded."""
    problems = []
    if seq != prev_seq + 1:
        problems.append(f"sequence jumps from {prev_seq} to {seq} (row removed?)")
    if stored_prev != prev_hash:
        problems.append("prev_hash does not match the row before (row removed, inserted or moved?)")
    if not isinstance(text, str):
        problems.append(f"receipt stored as {type(text).__name__}, not text")
    elif entry_hash(seq, stored_prev, text.encode()) != stored_hash:
        problems.append("entry hash does not match the row's content (row edited or moved?)")
    if not isinstance(data, dict):
        problems.append("receipt is not a JSON object")
    else:
        # the columns kept beside the receipt (for lookups and listing) must say what it says
        problems.extend(f"{name} column disagrees with the signed receipt" for name, value in columns.items()
                        if data.get(name) != value)
    return Check("chain", not problems, seq, rid, "; ".join(problems))
