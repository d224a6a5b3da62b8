"""The ledger: an append-only SQLite table of signed receipts, each row chained to the last.

Each row stores the receipt (canonical JSON, signature included), ``prev_hash`` (the entry hash of
the row before it; 64 zeros for the first) and its own ``entry_hash``::

    entry_hash = sha256("g6.ledger.v1\\n" + seq + "\\n" + prev_hash + "\\n" + canonical receipt)

so an edited, deleted, inserted or reordered row breaks the chain at that row. Appends run inside
``BEGIN IMMEDIATE``: SQLite's write lock serialises writers across processes, and each reads the
head and inserts under that lock, so two processes appending at once cannot fork the chain.
Removing rows from the *end* leaves a valid shorter chain; that needs a checkpoint held elsewhere
(see the Merkle checkpoints in the transparency issue) and is not claimed here.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from g6.errors import LedgerError, ReceiptNotFound
from g6.ledger import stored_tree
from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.merkle import MerkleTree, TreeView, leaf_hash
from g6.ledger.note import Checkpoint, NoteError, parse_note, sign_checkpoint, signed_by
from g6.ledger.receipts import Receipt, utc_now
from g6.store import BlobRef, BlobStore

GENESIS = "sha256:" + "0" * 64
_DOMAIN = b"g6.ledger.v1\n"


def entry_hash(seq: int, prev_hash: str, canonical_receipt: bytes) -> str:
    h = hashlib.sha256(_DOMAIN)
    h.update(f"{seq}\n{prev_hash}\n".encode())
    h.update(canonical_receipt)
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    seq: int
    receipt: Receipt
    prev_hash: str
    entry_hash: str


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict: which check, on which row, whether it held, and why not."""

    check: str  # "signature" | "chain" | "blob" | "database"
    ok: bool
    seq: int | None = None
    receipt_id: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "seq": self.seq, "receipt_id": self.receipt_id,
                "detail": self.detail}


@dataclass(frozen=True, slots=True)
class LedgerVerifyReport:
    rows: int
    checks: tuple[Check, ...]
    # passing checks counted but not kept one by one (a large ledger keeps failures only)
    passed: Mapping[str, int] = field(default_factory=dict)

    def of(self, check: str) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.check == check)

    def failures(self, check: str | None = None) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.ok and (check is None or c.check == check))

    @property
    def ok(self) -> bool:
        return not self.failures()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "rows": self.rows, "checks": {}}
        for name in ("database", "consistency", "signature", "chain", "blob", "tree", "checkpoint"):
            cs = self.of(name)
            extra = self.passed.get(name, 0)
            if name in ("database", "consistency", "tree", "checkpoint") and not cs and not extra:
                continue
            bad = [c.to_json() for c in cs if not c.ok]
            out["checks"][name] = {"ok": not bad, "checked": len(cs) + extra, "failed": len(bad), "failures": bad}
        return out


class Ledger:
    """One ledger file. Takes a path; opens nothing global."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 60.0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None)
        self.db = sqlite_utils.Database(self._conn)
        self._broken: str | None = None
        try:
            self._setup()
        except sqlite3.DatabaseError as e:
            # A damaged file (truncated, overwritten) must still give a verdict, so opening does
            # not fail: verify() reports it and every other operation raises LedgerError.
            self._broken = str(e)

    def _setup(self) -> None:
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=FULL")
        if {"receipts", "checkpoints", "meta"} <= set(self.db.table_names()):
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            names = set(self.db.table_names())
            if "receipts" not in names:
                self.db["receipts"].create(
                    {"seq": int, "receipt_id": str, "kind": str, "outcome": str, "fetched_at": str,
                     "receipt": str, "prev_hash": str, "entry_hash": str},
                    pk="seq", not_null={"receipt_id", "receipt", "prev_hash", "entry_hash"},
                )
                self.db["receipts"].create_index(["receipt_id"], unique=True)
            if "checkpoints" not in names:
                self.db["checkpoints"].create({"id": int, "size": int, "root": str, "note": str, "created_at": str},
                                              pk="id", not_null={"size", "root", "note"})
            if "meta" not in names:
                self.db["meta"].create({"key": str, "value": str}, pk="key")
                # the log's identity: the checkpoint origin is g6-evidence/<log id>
                self._conn.execute("INSERT INTO meta (key, value) VALUES ('log_id', ?)", (os.urandom(8).hex(),))
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def _usable(self) -> sqlite3.Connection:
        if self._broken is not None:
            raise LedgerError(f"ledger {self.path} is damaged: {self._broken}; run `g6 ledger verify`")
        return self._conn

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------
    def append(self, receipt: Receipt, key: SigningKey) -> Receipt:
        """Sign ``receipt`` and append it. Returns the signed receipt."""
        return self.append_many([receipt], key)[0]

    def append_many(self, receipts: Iterable[Receipt], key: SigningKey) -> list[Receipt]:
        """Sign and append several receipts in one transaction (all or none)."""
        pairs = [r.sign_canonical(key) for r in receipts]
        signed = [p[0] for p in pairs]
        self._usable().execute("BEGIN IMMEDIATE")
        try:
            seq, prev = self.head()  # read inside the write lock, so no other writer can move it
            self._tree_catch_up(seq)
            rows = []
            for r, body in pairs:
                seq += 1
                h = entry_hash(seq, prev, body)
                rows.append((seq, r.receipt_id, r.kind, r.outcome, r.fetched_at, body.decode(), prev, h))
                prev = h
            self._conn.executemany(
                "INSERT INTO receipts (seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash,"
                " entry_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            stored_tree.append_leaves(self._conn, rows[0][0] - 1 if rows else seq,
                                      (leaf_hash(body) for _, body in pairs))
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return signed

    # -- reading ---------------------------------------------------------------------------
    @staticmethod
    def _entry(row: tuple[Any, ...]) -> LedgerEntry:
        seq, text, prev, h = row
        return LedgerEntry(seq, Receipt.from_json(json.loads(text)), prev, h)

    def get(self, receipt_id: str) -> Receipt:
        row = self._usable().execute(
            "SELECT seq, receipt, prev_hash, entry_hash FROM receipts WHERE receipt_id = ?", (receipt_id,)
        ).fetchone()
        if row is None:
            raise ReceiptNotFound(f"no receipt {receipt_id!r} in {self.path}")
        return self._entry(row).receipt

    def entries(self, *, kind: str | None = None, limit: int | None = None,
                newest_first: bool = False) -> Iterator[LedgerEntry]:
        sql = "SELECT seq, receipt, prev_hash, entry_hash FROM receipts"
        args: list[Any] = []
        if kind:
            sql += " WHERE kind = ?"
            args.append(kind)
        sql += " ORDER BY seq" + (" DESC" if newest_first else "")
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        for row in self._usable().execute(sql, args):
            yield self._entry(row)

    def __len__(self) -> int:
        return int(self._usable().execute("SELECT count(*) FROM receipts").fetchone()[0])

    def head(self) -> tuple[int, str]:
        row = self._usable().execute("SELECT seq, entry_hash FROM receipts ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, GENESIS)

    # -- transparency --------------------------------------------------------------------
    @property
    def origin(self) -> str:
        row = self._usable().execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
        return f"g6-evidence/{row[0]}"

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        """RFC 9162 leaf hashes of the receipts (canonical JSON, signature included), in ledger order."""
        sql = "SELECT receipt FROM receipts ORDER BY seq" + (" LIMIT ?" if size is not None else "")
        rows = self._usable().execute(sql, (size,) if size is not None else ())
        return [leaf_hash(r[0].encode()) for r in rows]

    def tree(self) -> TreeView:
        """The tree over every receipt: read from the stored hashes (O(log n) rows per root or
        proof) when they cover the ledger; else (an old ledger not written to since, opened
        read-only) computed in memory from the receipts, writing nothing."""
        conn = self._usable()
        n = self.head()[0]  # max(seq), O(log n); a ledger with a row gone from the middle fails verify anyway
        if n and stored_tree.stored_size(conn) == n:
            return stored_tree.StoredTree(lambda ids: stored_tree.read_hashes(conn, ids), n)
        return MerkleTree(self.leaf_hashes())

    def _tree_catch_up(self, size: int) -> None:
        """Inside a write transaction: make the stored tree cover the first ``size`` receipts.
        A ledger made before the tree was kept (or by an older g6) is hashed once, here."""
        conn = self._conn
        stored_tree.ensure_table(conn)
        have = stored_tree.stored_size(conn)
        if have is None or have > size:
            raise LedgerError(f"ledger {self.path}: the stored Merkle tree does not match the receipts "
                              f"({stored_tree.stored_count(conn)} hashes for {size} receipts); "
                              "run `g6 ledger verify`")
        if have < size:
            rows = conn.execute("SELECT receipt FROM receipts WHERE seq > ? ORDER BY seq", (have,))
            stored_tree.append_leaves(conn, have, (leaf_hash(r[0].encode()) for r in rows))

    def index_of(self, receipt_id: str) -> int:
        row = self._usable().execute("SELECT seq FROM receipts WHERE receipt_id = ?", (receipt_id,)).fetchone()
        if row is None:
            raise ReceiptNotFound(f"no receipt {receipt_id!r} in {self.path}")
        return int(row[0]) - 1

    def checkpoint(self, key: SigningKey) -> tuple[Checkpoint, str]:
        """Sign and keep a checkpoint of the whole ledger as it is now."""
        conn = self._usable()
        conn.execute("BEGIN IMMEDIATE")
        try:
            size, _ = self.head()
            self._tree_catch_up(size)
            tree = stored_tree.StoredTree(lambda ids: stored_tree.read_hashes(conn, ids), size)
            last = conn.execute("SELECT receipt FROM receipts ORDER BY seq DESC LIMIT 1").fetchone()
            if size and tree.leaf(size - 1) != leaf_hash(last[0].encode()):
                raise LedgerError(f"ledger {self.path}: the stored Merkle tree disagrees with the last receipt; "
                                  "run `g6 ledger verify`")
            cp = Checkpoint(self.origin, size, tree.root())
            note = sign_checkpoint(cp, key)
            conn.execute("INSERT INTO checkpoints (size, root, note, created_at) VALUES (?, ?, ?, ?)",
                         (cp.size, cp.root.hex(), note, utc_now()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return cp, note

    def checkpoints(self) -> list[tuple[Checkpoint, str]]:
        rows = self._usable().execute("SELECT note FROM checkpoints ORDER BY id").fetchall()
        return [(Checkpoint.parse(parse_note(r[0])[0]), r[0]) for r in rows]

    def latest_checkpoint(self) -> tuple[Checkpoint, str] | None:
        cps = self.checkpoints()
        return cps[-1] if cps else None

    def checkpoint_at(self, size: int) -> tuple[Checkpoint, str]:
        for cp, note in reversed(self.checkpoints()):
            if cp.size == size:
                return cp, note
        raise ReceiptNotFound(f"no checkpoint of size {size} was issued; `g6 ledger checkpoints` lists them")

    def referenced_digests(self) -> set[str]:
        out: set[str] = set()
        for e in self.entries():
            if e.receipt.content:
                out.update(str(v) for k, v in e.receipt.content.items() if k in ("blake3", "sha256"))
        return out

    # -- verifying -------------------------------------------------------------------------
    def verify(self, keys: Mapping[str, VerifyKey], store: BlobStore | None = None, *,
               workers: int | None = None, since: Checkpoint | None = None) -> LedgerVerifyReport:
        """Check every signature, every chain link, (with ``store``) every referenced blob and the
        stored Merkle hashes, on ``workers`` processes (default: every core; 1: in this process).

        With ``since`` (a checkpoint whose signature the caller has checked), prove the ledger
        extends it and check only the rows after it (see ``g6.ledger.verify_parallel``)."""
        from g6.ledger import verify_parallel

        if self._broken is not None:
            return LedgerVerifyReport(0, (Check("database", False, None, None,
                                                f"ledger database unreadable: {self._broken}"),))
        checks: list[Check] = []
        passed: dict[str, int] = {}
        rows = 0
        try:
            last_seq, _ = self.head()
            if since is not None:
                found, counts, rows = verify_parallel.verify_since(self._conn, keys, store, self.origin, since,
                                                                   last_seq)
            else:
                tree_size, found = verify_parallel._tree_count_check(self._conn, last_seq)
                more, counts, rows = verify_parallel.verify_ranges(self.path, self._conn, keys, store, last_seq,
                                                                   tree_size, workers)
                found += more
            checks.extend(found)
            passed = dict(counts)
            tree_ok = not any(c.check == "tree" and not c.ok for c in checks)
            checks.extend(self._checkpoint_checks(keys, trust_stored_tree=tree_ok))
        except sqlite3.DatabaseError as e:
            checks.append(Check("database", False, None, None, f"ledger database unreadable: {e}"))
        return LedgerVerifyReport(rows, tuple(checks), passed)

    def _checkpoint_checks(self, keys: Mapping[str, VerifyKey], *, trust_stored_tree: bool = False) -> list[Check]:
        """Every checkpoint issued must be signed and match the tree's root at its size now:
        this is what catches rows removed from the end, or an old row rewritten."""
        rows = self._conn.execute("SELECT id, size, note FROM checkpoints ORDER BY id").fetchall()
        if not rows:
            return []
        # the stored hashes only once verify has recomputed them; else the receipts themselves
        tree = self.tree() if trust_stored_tree else MerkleTree(self.leaf_hashes())
        origin = self.origin
        out = []
        for cid, size, note in rows:
            label = f"checkpoint {cid} (size {size})"
            try:
                text, sigs = parse_note(note)
                cp = Checkpoint.parse(text)
                signer = next((k for k in keys.values() if signed_by(note, k, cp.origin)), None)
                if signer is None:
                    out.append(Check("checkpoint", False, None, None, f"{label}: not signed by a trusted key"))
                    continue
                if cp.origin != origin:
                    out.append(Check("checkpoint", False, None, None, f"{label}: origin {cp.origin} is not {origin}"))
                elif cp.size > len(tree):
                    out.append(Check("checkpoint", False, None, None,
                                     f"{label}: the ledger now holds only {len(tree)} receipts (rows removed?)"))
                elif tree.root(cp.size) != cp.root:
                    out.append(Check("checkpoint", False, None, None,
                                     f"{label}: the first {cp.size} receipts no longer hash to its root"))
                else:
                    out.append(Check("checkpoint", True, None, None, label))
            except NoteError as e:
                out.append(Check("checkpoint", False, None, None, f"{label}: {e}"))
        return out

    @staticmethod
    def _chain_check(seq: int, rid: str, text: str, data: Any, stored_prev: str, stored_hash: str,
                     prev_seq: int, prev_hash: str) -> Check:
        problems = []
        if seq != prev_seq + 1:
            problems.append(f"sequence jumps from {prev_seq} to {seq} (row removed?)")
        if stored_prev != prev_hash:
            problems.append("prev_hash does not match the row before (row removed, inserted or moved?)")
        if entry_hash(seq, stored_prev, text.encode()) != stored_hash:
            problems.append("entry hash does not match the row's content (row edited or moved?)")
        if not isinstance(data, dict):
            problems.append("receipt is not a JSON object")
        elif data.get("receipt_id") != rid:
            problems.append("receipt_id column disagrees with the receipt")
        return Check("chain", not problems, seq, rid, "; ".join(problems))

    @staticmethod
    def _blob_check(store: BlobStore, seq: int, rid: str, content: Mapping[str, Any],
                    cache: dict[tuple[str, str, int], tuple[bool, str]]) -> Check:
        try:
            expect = BlobRef(str(content["blake3"]), str(content["sha256"]), int(content["size"]))
        except (KeyError, TypeError, ValueError):
            return Check("blob", False, seq, rid, "receipt's content block is malformed")
        key = (expect.blake3, expect.sha256, expect.size)
        if key not in cache:
            c = store.check(expect.blake3, expect)
            if not c.ok:
                cache[key] = (False, f"{expect.blake3}: {c.detail}")
            elif not store.has(expect.sha256):
                cache[key] = (False, f"{expect.sha256}: not indexed")
            else:
                cache[key] = (True, "")
        ok, detail = cache[key]
        return Check("blob", ok, seq, rid, detail)
