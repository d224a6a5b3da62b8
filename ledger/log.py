"""The ledger: an append-only SQLite table of signed receipts, each row chained to the last.

Each row stores the receipt (canonical JSON, signature included), ``prev_hash`` (the entry hash of
the row before it; 64 zeros for the first) and its own ``entry_hash``::

    entry_hash = sha256("g6.ledger.v1\\n" + seq + "\\n" + prev_hash + "\\n" + canonical receipt)

so an edited, deleted, inserted or reordered row breaks the chain at that row. Appends run inside
``BEGIN IMMEDIATE``: SQLite's write lock serialises writers across processes, and each reads the
head and inserts under that lock, so two processes appending at once cannot fork the chain.
Removing rows from the *end* leaves a valid shorter chain; the checkpoints the ledger issued catch
that unless they were deleted too, and only a checkpoint kept outside the home catches everything
(``verify(kept=…)``, see ``g6.ledger.kept``). The columns beside the receipt (``receipt_id``,
``kind``, ``outcome``, ``fetched_at``) are lookup copies: verify checks each against the receipt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from g6.errors import InputError, LedgerDiskFull, LedgerError, ReceiptNotFound
from g6.ledger import stored_tree
from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.merkle import MerkleTree, TreeView, leaf_hash
from g6.ledger.note import Checkpoint, NoteError, parse_note, sign_checkpoint, signed_by
from g6.ledger.receipts import Receipt, utc_now
from g6.store import BlobRef, BlobStore
from g6.store.diskfull import is_disk_full

GENESIS = "sha256:" + "0" * 64
_DOMAIN = b"g6.ledger.v1\n"
TABLES = ("receipts", "checkpoints", "meta")
RECEIPT_COLUMNS = ("seq", "receipt_id", "kind", "outcome", "fetched_at", "receipt", "prev_hash", "entry_hash")
# SQLite's words for "no space" (SQLITE_FULL) and for a write the OS refused (EFBIG past a file-size
# limit surfaces as SQLITE_IOERR_WRITE, ENOSPC while growing the WAL index as SQLITE_IOERR_SHMSIZE).
_SQLITE_FULL = frozenset({"SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE", "SQLITE_IOERR_SHMSIZE",
                          "SQLITE_IOERR_FSYNC"})


def _ledger_disk_full(e: BaseException) -> bool:
    return getattr(e, "sqlite_errorname", None) in _SQLITE_FULL or is_disk_full(e)


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


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    seq: int
    receipt: Receipt
    prev_hash: str
    entry_hash: str


@dataclass(frozen=True, slots=True)
class Check:
    """One verdict: which check, on which row, whether it held, and why not."""

    check: str  # "signature" | "chain" | "blob" | "database" | "checkpoint" | "kept_checkpoint"
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
        for name in ("database", "consistency", "signature", "chain", "blob", "tree", "checkpoint",
                     "kept_checkpoint"):
            cs = self.of(name)
            extra = self.passed.get(name, 0)
            if name in ("database", "consistency", "tree", "checkpoint", "kept_checkpoint") and not cs and not extra:
                continue
            bad = [c.to_json() for c in cs if not c.ok]
            out["checks"][name] = {"ok": not bad, "checked": len(cs) + extra, "failed": len(bad), "failures": bad}
        return out


class Ledger:
    """One ledger file. Takes a path; opens nothing global.

    ``readonly=True`` opens for reading only: nothing is created (no folder, no file, no table, no log
    id) and the file is left byte-for-byte as found; a missing or empty file, a missing table or a
    missing log id makes ``verify`` fail with a database verdict saying so.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 60.0, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._broken: str | None = None
        self._busy_timeout = busy_timeout
        self._snapshot: tuple[tuple[int, int] | None, ...] | None = None  # files as an immutable read found them
        if readonly:
            self._conn = self._open_readonly(busy_timeout)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None)
        self.db = sqlite_utils.Database(self._conn)
        try:
            if readonly:
                self._check_layout()
            else:
                self._setup()
        except sqlite3.DatabaseError as e:
            if not readonly:
                self._write_failed(e, "opening")
            # A damaged file (truncated, overwritten) must still give a verdict, so opening does
            # not fail: verify() reports it and every other operation raises LedgerError.
            full = " (reading this WAL ledger needs its -shm index grown: disk full?)" if readonly and \
                _ledger_disk_full(e) else ""
            self._broken = self._broken or f"ledger database unreadable: {e}{full}"

    def _open_readonly(self, busy_timeout: float) -> sqlite3.Connection:
        """A connection that cannot write. ``mode=ro`` still creates the WAL side files of a WAL
        database (and must grow ``-shm``, which fails on a full disk), so when no ``-wal`` file is
        there, or an empty one (nothing committed beyond the main file), the file is opened
        ``immutable``: SQLite then reads it as plain bytes and creates nothing. Such a read takes no
        lock, so the files' sizes and times are noted and ``reopen_if_changed`` reads again when a
        writer came by meanwhile."""
        # an in-memory connection stands in when there is no file to read, so verify() can still answer
        empty = sqlite3.connect(":memory:", isolation_level=None)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            self._broken = f"no ledger at {self.path} (nothing was recorded in this home, or the ledger was removed)"
            return empty
        except OSError as e:
            self._broken = f"cannot read the ledger at {self.path}: {e}"
            return empty
        if not self.path.is_file():
            self._broken = f"the ledger at {self.path} is not a file"
            return empty
        if size == 0:
            self._broken = f"the ledger at {self.path} is an empty file (0 bytes): no tables, no log id"
            return empty
        empty.close()
        try:
            pending = Path(f"{self.path}-wal").stat().st_size > 0
        except FileNotFoundError:
            pending = False
        self._snapshot = None if pending else self._file_state()
        uri = self.path.resolve().as_uri() + ("?mode=ro" if pending else "?immutable=1")
        return sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)

    def _file_state(self) -> tuple[tuple[int, int] | None, ...]:
        out: list[tuple[int, int] | None] = []
        for p in (self.path, Path(f"{self.path}-wal")):
            try:
                st = p.stat()
                out.append((st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def reopen_if_changed(self) -> bool:
        """After reading as an immutable file: if a writer has touched the ledger or its WAL since
        it was opened, open it again (so the next read is of a consistent, current state)."""
        if self._snapshot is None or self._file_state() == self._snapshot:
            return False
        self._conn.close()
        self._broken = None
        self._conn = self._open_readonly(self._busy_timeout)
        self.db = sqlite_utils.Database(self._conn)
        try:
            self._check_layout()
        except sqlite3.DatabaseError as e:
            self._broken = self._broken or f"ledger database unreadable: {e}"
        return True

    def _check_layout(self) -> None:
        """Read-only: say what is missing instead of creating it."""
        if self._broken is not None:
            return
        missing = self._missing_tables(self.REQUIRED_TABLES)
        if missing:
            self._broken = f"the ledger at {self.path} lacks the table(s) {', '.join(missing)}"
            return
        self._broken = self._layout_problem()

    # What a reading open requires; another backend keeps more tables with the ledger.
    REQUIRED_TABLES: tuple[str, ...] = TABLES

    def _missing_tables(self, tables: Sequence[str]) -> list[str]:
        names = set(self.db.table_names())
        return [t for t in tables if t not in names]

    def _receipt_columns(self) -> set[str]:
        return {r[1] for r in self._conn.execute("PRAGMA table_info(receipts)")}

    def _layout_problem(self) -> str | None:
        cols = self._receipt_columns()
        lacking = [c for c in RECEIPT_COLUMNS if c not in cols]
        if lacking:
            return f"the receipts table lacks the column(s) {', '.join(lacking)}"
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
        if row is None or not isinstance(row[0], str) or not row[0]:
            return "the meta table holds no log id (the log's identity, part of every checkpoint's origin)"
        return None

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
            self._rollback()
            raise

    def present(self) -> bool:
        """Whether there is a ledger to read at all (a file here; a server's is always there)."""
        return self.path.exists()

    def _usable(self) -> sqlite3.Connection:
        if self._broken is not None:
            raise LedgerError(f"ledger {self.path} is not usable: {self._broken}; run `g6 ledger verify`")
        return self._conn

    def _writable(self) -> sqlite3.Connection:
        if self.readonly:
            raise LedgerError(f"ledger {self.path} was opened read-only")
        return self._usable()

    def _rollback(self) -> None:
        """Roll back if a transaction is still open. SQLite may already have rolled back (after
        SQLITE_FULL, for one), and a failing ROLLBACK must never replace the error that caused it."""
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def _write_failed(self, e: BaseException, doing: str) -> None:
        """Re-raise a disk-full SQLite/OS error as LedgerDiskFull, keeping the real error in the message."""
        if isinstance(e, sqlite3.Error | OSError) and _ledger_disk_full(e):
            raise LedgerDiskFull(f"disk full (or file-size limit reached) while {doing} {self.path}; nothing was "
                                 f"written, free space and run the command again [{LedgerDiskFull.code}: {e}]") from e

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
        try:
            self._writable().execute("BEGIN IMMEDIATE")
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
        except BaseException as e:
            self._rollback()
            self._write_failed(e, "appending to")
            raise
        return signed

    # -- reading ---------------------------------------------------------------------------
    def _entry(self, row: tuple[Any, ...]) -> LedgerEntry:
        seq, text, prev, h = row
        if not isinstance(seq, int) or seq < 1:
            # verify walks 1..head only: a row outside it was never checked, so it is never served
            raise LedgerError(f"ledger {self.path} holds a row at seq={seq!r}, outside its sequence 1..head; "
                              "run `g6 ledger verify`")
        try:
            if not isinstance(text, str):
                raise InputError(f"the receipt is stored as {type(text).__name__}, not text")
            data = json.loads(text)
            if not isinstance(data, dict):
                raise InputError(f"the receipt is a JSON {type(data).__name__}, not an object")
            return LedgerEntry(seq, Receipt.from_json(data), prev, h)
        except (InputError, ValueError) as e:
            raise LedgerError(f"ledger {self.path} row seq={seq} is malformed: {e}; run `g6 ledger verify`") from None

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
            e = self._entry(row)
            if kind and e.receipt.kind != kind:
                continue  # the kind column is only an index: the signed receipt decides
            yield e

    def __len__(self) -> int:
        return int(self._usable().execute("SELECT count(*) FROM receipts").fetchone()[0])

    def head(self) -> tuple[int, str]:
        row = self._usable().execute("SELECT seq, entry_hash FROM receipts ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, GENESIS)

    # -- transparency --------------------------------------------------------------------
    @property
    def origin(self) -> str:
        row = self._usable().execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
        if row is None or not isinstance(row[0], str) or not row[0]:
            # never made up again: a new log id would be a new log, and old checkpoints would not apply
            raise LedgerError(f"ledger {self.path} holds no log id (meta table); run `g6 ledger verify`")
        return f"g6-evidence/{row[0]}"

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        """RFC 9162 leaf hashes of the receipts (canonical JSON, signature included), in ledger order."""
        sql = "SELECT receipt FROM receipts ORDER BY seq" + (" LIMIT ?" if size is not None else "")
        rows = self._usable().execute(sql, (size,) if size is not None else ())
        return [stored_leaf_hash(r[0]) for r in rows]

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
            stored_tree.append_leaves(conn, have, (stored_leaf_hash(r[0]) for r in rows))

    def index_of(self, receipt_id: str) -> int:
        row = self._usable().execute("SELECT seq FROM receipts WHERE receipt_id = ?", (receipt_id,)).fetchone()
        if row is None:
            raise ReceiptNotFound(f"no receipt {receipt_id!r} in {self.path}")
        return int(row[0]) - 1

    def checkpoint(self, key: SigningKey) -> tuple[Checkpoint, str]:
        """Sign and keep a checkpoint of the whole ledger as it is now."""
        conn = self._writable()
        try:
            conn.execute("BEGIN IMMEDIATE")
            size, _ = self.head()
            self._tree_catch_up(size)
            tree = stored_tree.StoredTree(lambda ids: stored_tree.read_hashes(conn, ids), size)
            last = conn.execute("SELECT receipt FROM receipts ORDER BY seq DESC LIMIT 1").fetchone()
            if size and tree.leaf(size - 1) != stored_leaf_hash(last[0]):
                raise LedgerError(f"ledger {self.path}: the stored Merkle tree disagrees with the last receipt; "
                                  "run `g6 ledger verify`")
            cp = Checkpoint(self.origin, size, tree.root())
            note = sign_checkpoint(cp, key)
            conn.execute("INSERT INTO checkpoints (size, root, note, created_at) VALUES (?, ?, ?, ?)",
                         (cp.size, cp.root.hex(), note, utc_now()))
            conn.execute("COMMIT")
        except BaseException as e:
            self._rollback()
            self._write_failed(e, "keeping a checkpoint in")
            raise
        return cp, note

    def checkpoints(self) -> list[tuple[Checkpoint, str]]:
        rows = self._usable().execute("SELECT id, note FROM checkpoints ORDER BY id").fetchall()
        out = []
        for cid, note in rows:
            try:
                if not isinstance(note, str):
                    raise NoteError(f"stored as {type(note).__name__}")
                out.append((Checkpoint.parse(parse_note(note)[0]), note))
            except NoteError as e:
                raise LedgerError(f"ledger {self.path}: checkpoint {cid} is malformed ({e}); run `g6 ledger verify`")\
                    from None
        return out

    def latest_checkpoint(self) -> tuple[Checkpoint, str] | None:
        cps = self.checkpoints()
        return cps[-1] if cps else None

    def checkpoint_at(self, size: int) -> tuple[Checkpoint, str]:
        for cp, note in reversed(self.checkpoints()):
            if cp.size == size:
                return cp, note
        raise ReceiptNotFound(f"no checkpoint of size {size} was issued; `g6 ledger checkpoints` lists them")

    def referenced_digests(self, *, progress: Callable[[int, int], None] | None = None) -> set[str]:
        """Every blob digest a receipt names (``progress(receipts read, receipts)`` every 1024)."""
        out: set[str] = set()
        total = self.head()[0] if progress is not None else 0
        n = 0
        for n, e in enumerate(self.entries(), 1):
            if e.receipt.content:
                out.update(str(v) for k, v in e.receipt.content.items() if k in ("blake3", "sha256"))
            if progress is not None and n % 1024 == 0:
                progress(n, max(total, n))
        if progress is not None:
            progress(n, n)
        return out

    # -- verifying -------------------------------------------------------------------------
    def verify(self, keys: Mapping[str, VerifyKey], store: BlobStore | None = None,
               kept: Sequence[tuple[str, str]] = (), *, workers: int | None = None,
               since: Checkpoint | None = None,
               progress: Callable[[int, int], None] | None = None) -> LedgerVerifyReport:
        """Check every signature, every chain link, every column beside the receipt, (with ``store``)
        every referenced blob and the stored Merkle hashes, on ``workers`` processes (default: every
        core; 1: in this process). ``kept`` holds (label, signed note) checkpoints kept away from the
        ledger: each must be extended by the ledger as it is now (see ``g6.ledger.kept``).

        With ``since`` (a checkpoint whose signature the caller has checked), prove the ledger
        extends it and check only the rows after it (see ``g6.ledger.verify_ranges``).
        ``progress(receipts checked, receipts to check)`` is called as the rows are checked."""
        from g6.ledger import verify_ranges
        from g6.ledger.kept import check_kept_checkpoints

        if self._broken is not None:
            return LedgerVerifyReport(0, (Check("database", False, None, None, self._broken),
                                          *check_kept_checkpoints(self, kept, keys)))
        checks: list[Check] = []
        passed: dict[str, int] = {}
        rows = 0
        try:
            problem = self._layout_problem()
            if problem is not None:
                return LedgerVerifyReport(0, (Check("database", False, None, None, problem),
                                              *check_kept_checkpoints(self, kept, keys)))
            last_seq, _ = self.head()
            stray = self._rows_outside_sequence()
            if stray is not None:
                checks.append(stray)
            if since is not None:
                found, counts, rows = verify_ranges.verify_since(self._conn, keys, store, self.origin, since,
                                                                   last_seq, progress)
            else:
                tree_size, found = verify_ranges._tree_count_check(self._conn, last_seq)
                more, counts, rows = verify_ranges.verify_ranges(self.path, self._conn, keys, store, last_seq,
                                                                   tree_size, workers, progress)
                found += more
            checks.extend(found)
            passed = dict(counts)
            tree_ok = not any(c.check == "tree" and not c.ok for c in checks)
            checks.extend(self._checkpoint_checks(keys, trust_stored_tree=tree_ok))
            checks.extend(check_kept_checkpoints(self, kept, keys))
        except sqlite3.DatabaseError as e:
            checks.append(Check("database", False, None, None, f"ledger database unreadable: {e}"))
        return LedgerVerifyReport(rows, tuple(checks), passed)

    def _rows_outside_sequence(self) -> Check | None:
        """Verify walks the rows 1..head (a gap in it is a chain failure); a row below 1 (seq 0, a
        negative seq) would be served by ``get`` and ``entries`` without ever being checked."""
        count, low = self._conn.execute("SELECT count(*), min(seq) FROM receipts WHERE seq < 1").fetchone()
        if not count:
            return None
        return Check("chain", False, low if isinstance(low, int) else None, None,
                     f"{count} row(s) below seq 1 (lowest {low}): rows outside 1..head are never checked "
                     "(planted or renumbered rows)")

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
            if not isinstance(note, str):
                out.append(Check("checkpoint", False, None, None, f"{label}: stored as {type(note).__name__}"))
                continue
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
    def _chain_check(seq: int, rid: str, text: Any, data: Any, stored_prev: str, stored_hash: str,
                     prev_seq: int, prev_hash: str, columns: Mapping[str, Any]) -> Check:
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
            elif (indexed := store.indexed_as(expect.sha256)) != expect.blake3:
                cache[key] = (False, f"{expect.sha256}: " + (f"the sha256 index points at {indexed}" if indexed
                                                             else "not indexed"))
            else:
                cache[key] = (True, "")
        ok, detail = cache[key]
        return Check("blob", ok, seq, rid, detail)
