"""The ledger's tables in one SQLite file (the default backend).

Writers are serialised by SQLite's own lock: a write transaction is ``BEGIN IMMEDIATE``, so each
writer reads the head and inserts under that lock, and two processes appending at once cannot
fork the chain. A reading open (``readonly``) creates nothing: no folder, no file, no table, no
log id, and the file is left byte for byte as found; what is missing becomes ``broken`` (a failed
``database`` verdict), never an error at open. A damaged file (truncated, overwritten) is opened
all the same, for the same reason: verify must still give a verdict.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlite_utils

from g6.errors import LedgerDiskFull, LedgerError
from g6.ledger.chain import RECEIPT_COLUMNS, layout_problem
from g6.store.diskfull import is_disk_full

TABLES = ("receipts", "checkpoints", "meta")  # what a reading open requires
_COLUMNS = ", ".join(RECEIPT_COLUMNS)
_CREATE_TREE = "CREATE TABLE IF NOT EXISTS merkle_hashes (id INTEGER PRIMARY KEY, hash BLOB NOT NULL)"
# what others vouch for a checkpoint with (cosignatures, timestamp tokens): made when the first is kept
_CREATE_EXTRAS = ("CREATE TABLE IF NOT EXISTS checkpoint_extras (id INTEGER PRIMARY KEY, size INTEGER NOT NULL, "
                  "root TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, added_at TEXT, "
                  "UNIQUE (size, root, kind, name, value))")
# verify reads the key entries before anything else: by this index, not by a scan of every receipt
_KIND_INDEX = "receipts_kind"
_CREATE_KIND_INDEX = f"CREATE INDEX IF NOT EXISTS {_KIND_INDEX} ON receipts (kind, seq)"
# made when a key is first trusted, so that a ledger nobody trusted a key in keeps its three tables
_CREATE_TRUST = ("CREATE TABLE IF NOT EXISTS trusted_keys (key_id text PRIMARY KEY, public_key text NOT NULL,"
                 " added_at text)")
# SQLite's words for "no space" (SQLITE_FULL) and for a write the OS refused (EFBIG past a file-size
# limit surfaces as SQLITE_IOERR_WRITE, ENOSPC while growing the WAL index as SQLITE_IOERR_SHMSIZE).
_SQLITE_FULL = frozenset({"SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_TRUNCATE", "SQLITE_IOERR_SHMSIZE",
                          "SQLITE_IOERR_FSYNC"})


def ledger_disk_full(e: BaseException) -> bool:
    return getattr(e, "sqlite_errorname", None) in _SQLITE_FULL or is_disk_full(e)


class SqliteRows:
    """One ledger file. Takes a path; opens nothing global."""

    unreadable: tuple[type[BaseException], ...] = (sqlite3.DatabaseError,)

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 60.0, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self.broken: str | None = None
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
            if not readonly and (full := self.disk_full(e, "opening")) is not None:
                raise full from e
            # A damaged file must still give a verdict, so opening does not fail: verify() reports
            # it and every other operation raises LedgerError.
            hint = " (reading this WAL ledger needs its -shm index grown: disk full?)" if readonly and \
                ledger_disk_full(e) else ""
            self.broken = self.broken or f"ledger database unreadable: {e}{hint}"

    def reopen(self) -> SqliteRows:
        return SqliteRows(self.path, busy_timeout=self._busy_timeout, readonly=self.readonly)

    @classmethod
    def reader(cls, path: str | os.PathLike[str]) -> SqliteRows:
        """The file's rows for a verify worker process: its own read-only connection, nothing
        checked or created (the parent opened the ledger and checked its layout)."""
        self = cls.__new__(cls)
        self.path = Path(path)
        self.readonly = True
        self.broken = None
        self._busy_timeout = 60.0
        self._snapshot = None
        self._conn = sqlite3.connect(f"file:{self.path.resolve()}?mode=ro", uri=True, timeout=60.0)
        return self

    def worker_opener(self) -> Callable[[], SqliteRows] | None:
        return functools.partial(SqliteRows.reader, str(self.path))

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
            self.broken = f"no ledger at {self.path} (nothing was recorded in this home, or the ledger was removed)"
            return empty
        except OSError as e:
            self.broken = f"cannot read the ledger at {self.path}: {e}"
            return empty
        if not self.path.is_file():
            self.broken = f"the ledger at {self.path} is not a file"
            return empty
        if size == 0:
            self.broken = f"the ledger at {self.path} is an empty file (0 bytes): no tables, no log id"
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
        self.broken = None
        self._conn = self._open_readonly(self._busy_timeout)
        self.db = sqlite_utils.Database(self._conn)
        try:
            self._check_layout()
        except sqlite3.DatabaseError as e:
            self.broken = self.broken or f"ledger database unreadable: {e}"
        return True

    # -- schema ------------------------------------------------------------------------------
    def _table_names(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _check_layout(self) -> None:
        """Read-only: say what is missing instead of creating it."""
        if self.broken is not None:
            return
        names = self._table_names()
        missing = [t for t in TABLES if t not in names]
        if missing:
            self.broken = f"the ledger at {self.path} lacks the table(s) {', '.join(missing)}"
            return
        self.broken = self.layout_problem()

    def layout_problem(self) -> str | None:
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(receipts)")}
        return layout_problem(columns, self.log_id)

    def _setup(self) -> None:
        self._wait_for_lock(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
        self._conn.execute("PRAGMA synchronous=FULL")
        if set(TABLES) <= self._wait_for_lock(self._table_names):
            if not self._has_index(_KIND_INDEX):  # a ledger made before key entries: indexed once, here
                with self.write():
                    self._conn.execute(_CREATE_KIND_INDEX)
            return
        with self.write():  # two first writers at once must not both create the tables
            names = self._table_names()
            if "receipts" not in names:
                self.db["receipts"].create(
                    {"seq": int, "receipt_id": str, "kind": str, "outcome": str, "fetched_at": str,
                     "receipt": str, "prev_hash": str, "entry_hash": str},
                    pk="seq", not_null={"receipt_id", "receipt", "prev_hash", "entry_hash"},
                )
                self.db["receipts"].create_index(["receipt_id"], unique=True)
                self._conn.execute(_CREATE_KIND_INDEX)
            if "checkpoints" not in names:
                self.db["checkpoints"].create(
                    {"id": int, "size": int, "root": str, "note": str, "created_at": str},
                    pk="id", not_null={"size", "root", "note"})
            if "meta" not in names:
                self.db["meta"].create({"key": str, "value": str}, pk="key")
                # the log's identity: the checkpoint origin is g6-evidence/<log id>
                self._conn.execute("INSERT INTO meta (key, value) VALUES ('log_id', ?)", (os.urandom(8).hex(),))

    def _wait_for_lock(self, step: Callable[[], Any]) -> Any:
        """``step``, again while another first writer holds the file: switching a new file to WAL, or
        reading its schema while another process creates it, answers "database is locked" at once
        (SQLite calls no busy handler there), where any other write would wait ``busy_timeout``."""
        deadline = time.monotonic() + self._busy_timeout
        pause = 0.001
        while True:
            try:
                return step()
            except sqlite3.OperationalError as e:
                if getattr(e, "sqlite_errorname", "") not in ("SQLITE_BUSY", "SQLITE_LOCKED") \
                        or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    @property
    def connection(self) -> sqlite3.Connection:
        return self._conn

    def present(self) -> bool:
        return self.path.exists()

    def close(self) -> None:
        self._conn.close()

    # -- transactions ------------------------------------------------------------------------
    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        # a deferred transaction: SQLite keeps the WAL snapshot of its first read until it ends
        self._conn.execute("BEGIN")
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    def _rollback(self) -> None:
        """Roll back if a transaction is still open. SQLite may already have rolled back (after
        SQLITE_FULL, for one), and a failing ROLLBACK must never replace the error that caused it."""
        if self._conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def disk_full(self, error: BaseException, doing: str) -> LedgerError | None:
        if isinstance(error, sqlite3.Error | OSError) and ledger_disk_full(error):
            return LedgerDiskFull(f"disk full (or file-size limit reached) while {doing} {self.path}; nothing was "
                                  f"written, free space and run the command again [{LedgerDiskFull.code}: {error}]")
        return None

    # -- receipts ----------------------------------------------------------------------------
    def append_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._conn.executemany(f"INSERT INTO receipts ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def head(self) -> tuple[int, str] | None:
        row = self._conn.execute("SELECT seq, entry_hash FROM receipts ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else None

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM receipts").fetchone()[0])

    def row_at(self, seq: int) -> tuple[Any, ...] | None:
        return self._conn.execute(f"SELECT {_COLUMNS} FROM receipts WHERE seq = ?", (seq,)).fetchone()

    def find(self, receipt_id: str) -> tuple[Any, ...] | None:
        return self._conn.execute(f"SELECT {_COLUMNS} FROM receipts WHERE receipt_id = ?", (receipt_id,)).fetchone()

    def select(self, *, kind: str | None = None, limit: int | None = None,
               newest_first: bool = False) -> Iterable[tuple[Any, ...]]:
        sql = f"SELECT {_COLUMNS} FROM receipts"
        args: list[Any] = []
        if kind:
            sql += " WHERE kind = ?"
            args.append(kind)
        sql += " ORDER BY seq" + (" DESC" if newest_first else "")
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return self._conn.execute(sql, args)

    def rows_between(self, lo: int | None, hi: int) -> Iterable[tuple[Any, ...]]:
        if lo is None:
            return self._conn.execute(f"SELECT {_COLUMNS} FROM receipts WHERE seq <= ? ORDER BY seq", (hi,))
        return self._conn.execute(f"SELECT {_COLUMNS} FROM receipts WHERE seq >= ? AND seq <= ? ORDER BY seq",
                                  (lo, hi))

    def rows_after(self, seq: int, limit: int) -> list[tuple[Any, ...]]:
        return self._conn.execute(f"SELECT {_COLUMNS} FROM receipts WHERE seq > ? ORDER BY seq LIMIT ?",
                                  (seq, limit)).fetchall()

    def receipts(self, limit: int | None = None) -> Iterable[Any]:
        if limit is None:
            cur = self._conn.execute("SELECT receipt FROM receipts ORDER BY seq")
        else:
            cur = self._conn.execute("SELECT receipt FROM receipts ORDER BY seq LIMIT ?", (limit,))
        return (r[0] for r in cur)

    def duplicate_receipt_ids(self, limit: int) -> list[tuple[Any, int]]:
        return self._conn.execute("SELECT receipt_id, count(*) FROM receipts GROUP BY receipt_id HAVING count(*) > 1"
                                  " ORDER BY min(seq) LIMIT ?", (limit,)).fetchall()

    def receipt_ids_unique(self) -> bool:
        for _seq, name, unique, _origin, partial in self._conn.execute("PRAGMA index_list(receipts)"):
            if unique and not partial:
                cols = [r[2] for r in self._conn.execute("SELECT * FROM pragma_index_info(?)", (name,))]
                if cols == ["receipt_id"]:
                    return True
        return False

    def rows_below_one(self) -> tuple[int, Any]:
        count, low = self._conn.execute("SELECT count(*), min(seq) FROM receipts WHERE seq < 1").fetchone()
        return count, low

    # -- identity ----------------------------------------------------------------------------
    def log_id(self) -> Any:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
        return None if row is None else row[0]

    def set_log_id(self, log_id: str) -> None:
        self._conn.execute("UPDATE meta SET value = ? WHERE key = 'log_id'", (log_id,))

    def meta_value(self, name: str) -> Any:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def set_meta_value(self, name: str, value: str) -> None:
        self._conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                           "excluded.value", (name, value))

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint_notes(self) -> list[tuple[Any, Any, Any]]:
        return self._conn.execute("SELECT id, size, note FROM checkpoints ORDER BY id").fetchall()

    def checkpoint_records(self) -> list[tuple[Any, Any, Any, Any]]:
        return self._conn.execute("SELECT size, root, note, created_at FROM checkpoints ORDER BY id").fetchall()

    def add_checkpoint(self, size: int, root: str, note: str, created_at: str | None) -> None:
        self._conn.execute("INSERT INTO checkpoints (size, root, note, created_at) VALUES (?, ?, ?, ?)",
                           (size, root, note, created_at))

    def checkpoint_extras(self) -> list[tuple[Any, Any, Any, Any, Any, Any]]:
        if not self._has_table("checkpoint_extras"):
            return []
        return self._conn.execute("SELECT size, root, kind, name, value, added_at FROM checkpoint_extras "
                                  "ORDER BY id").fetchall()

    def add_checkpoint_extra(self, size: int, root: str, kind: str, name: str, value: str, added_at: str) -> None:
        self._conn.execute(_CREATE_EXTRAS)
        self._conn.execute("INSERT INTO checkpoint_extras (size, root, kind, name, value, added_at) VALUES "
                           "(?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", (size, root, kind, name, value, added_at))

    def remove_checkpoint_extra(self, size: int, root: str, kind: str, name: str, value: str) -> None:
        if self._has_table("checkpoint_extras"):
            self._conn.execute("DELETE FROM checkpoint_extras WHERE size = ? AND root = ? AND kind = ? AND name = ? "
                               "AND value = ?", (size, root, kind, name, value))

    # -- trusted keys ------------------------------------------------------------------------
    def _has_index(self, name: str) -> bool:
        return self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                                  (name,)).fetchone() is not None

    def _has_table(self, name: str) -> bool:
        return self._conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                  (name,)).fetchone() is not None

    def trusted_key_rows(self) -> list[tuple[Any, Any]]:
        # reading never writes (verifying a read-only file works), so a missing table is no keys
        if not self._has_table("trusted_keys"):
            return []
        return self._conn.execute("SELECT key_id, public_key FROM trusted_keys ORDER BY key_id").fetchall()

    def add_trusted_key(self, key_id: str, public_key: str, added_at: str) -> None:
        self._conn.execute(_CREATE_TRUST)
        self._conn.execute("INSERT INTO trusted_keys (key_id, public_key, added_at) VALUES (?, ?, ?)"
                           " ON CONFLICT (key_id) DO NOTHING", (key_id, public_key, added_at))

    # -- the stored Merkle tree --------------------------------------------------------------
    def tree_table_exists(self) -> bool:
        return self._has_table("merkle_hashes")

    def ensure_tree_table(self) -> None:
        if not self.tree_table_exists():  # a ledger made before the tree was kept (or by an older g6)
            self._conn.execute(_CREATE_TREE)

    def hash_count(self) -> int:
        row = self._conn.execute("SELECT max(id) FROM merkle_hashes").fetchone()
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def read_hashes(self, ids: list[int]) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for i in range(0, len(ids), 500):  # under SQLite's limit on bound parameters
            part = ids[i:i + 500]
            q = f"SELECT id, hash FROM merkle_hashes WHERE id IN ({','.join('?' * len(part))})"
            out.update({int(k): bytes(v) for k, v in self._conn.execute(q, part)})
        return out

    def hashes_between(self, start: int, end: int) -> Iterable[tuple[int, bytes]]:
        return self._conn.execute("SELECT id, hash FROM merkle_hashes WHERE id >= ? AND id < ? ORDER BY id",
                                  (start, end))

    def insert_hashes(self, rows: Sequence[tuple[int, bytes]]) -> None:
        self._conn.executemany("INSERT INTO merkle_hashes (id, hash) VALUES (?, ?)", rows)
