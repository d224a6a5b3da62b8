"""The ledger's tables in one PostgreSQL database: the same rows, on a shared server.

The columns, the entry hashes and every check are the log's (``g6.ledger.log``), as for SQLite;
this module holds only PostgreSQL's SQL, the connection and the write lock. Where SQLite
serialises writers with ``BEGIN IMMEDIATE`` (its file lock), here a write transaction first takes
a transaction-level advisory lock (``pg_advisory_xact_lock``) on a key derived from the ledger's
schema, so appends from any number of processes on any number of hosts read the head and insert
under one lock, in the database, and the lock goes with the transaction (a crashed writer cannot
hold it). Every psycopg error becomes a :class:`LedgerBackendError` that says what to check.

Receipts are stored as ``text``, never ``jsonb``: the chain hashes the exact bytes that were signed.
psycopg is imported where it is used, so that a SQLite home never loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from g6.errors import LedgerBackendError, LedgerError
from g6.ledger.chain import RECEIPT_COLUMNS, layout_problem

_SCHEMA = """
CREATE TABLE IF NOT EXISTS receipts (
    seq bigint PRIMARY KEY, receipt_id text NOT NULL UNIQUE, kind text, outcome text, fetched_at text,
    receipt text NOT NULL, prev_hash text NOT NULL, entry_hash text NOT NULL);
CREATE INDEX IF NOT EXISTS receipts_kind ON receipts (kind, seq);
CREATE TABLE IF NOT EXISTS checkpoints (
    id bigserial PRIMARY KEY, size bigint NOT NULL, root text NOT NULL, note text NOT NULL, created_at text);
CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text);
CREATE TABLE IF NOT EXISTS trusted_keys (key_id text PRIMARY KEY, public_key text NOT NULL, added_at text);
CREATE TABLE IF NOT EXISTS merkle_hashes (id bigint PRIMARY KEY, hash bytea NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint_extras (
    id bigserial PRIMARY KEY, size bigint NOT NULL, root text NOT NULL, kind text NOT NULL, name text NOT NULL,
    value text NOT NULL, added_at text, UNIQUE (size, root, kind, name, value));
"""
_CREATE_TREE = "CREATE TABLE IF NOT EXISTS merkle_hashes (id bigint PRIMARY KEY, hash bytea NOT NULL)"
_TABLES = ("receipts", "checkpoints", "meta", "trusted_keys", "merkle_hashes", "checkpoint_extras")
# what a reading open requires: trusted_keys is read with the ledger; merkle_hashes is not (older
# set-ups lack it)
REQUIRED_TABLES = ("receipts", "checkpoints", "meta", "trusted_keys")
_COLUMNS = ", ".join(RECEIPT_COLUMNS)
# A whole-ledger scan (entries, the Merkle leaves, verify's ranges) reads pages of this many rows by
# seq, never one result of the whole ledger.
_PAGE = 5000


def redact(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def _where(url: str) -> str:
    p = urlsplit(url)
    return f"{p.hostname or 'localhost'}:{p.port or 5432}"


def explain(url: str, e: BaseException) -> LedgerBackendError:
    """A psycopg error as a one-line typed error naming the backend and what to check."""
    msg = " ".join((str(e).strip().splitlines() or [""])[0].split()) or type(e).__name__
    low = msg.lower()
    where = f"ledger backend PostgreSQL at {redact(url)}"
    if "password authentication failed" in low or "no password supplied" in low:
        hint = "check the user name and password in G6_LEDGER_URL"
    elif "does not exist" in low and "database" in low:
        hint = "create the database (createdb) or fix its name in G6_LEDGER_URL"
    elif "permission denied" in low or "insufficient privilege" in low:
        hint = "grant this role SELECT, INSERT on the ledger's tables"
    elif any(s in low for s in ("connection refused", "could not connect", "timeout", "timed out",
                                "server closed", "connection is closed", "terminating connection",
                                "consuming input failed", "connection failed", "the connection is lost")):
        hint = f"check that PostgreSQL is running and accepts TCP connections at {_where(url)}"
    else:
        hint = "see the PostgreSQL server log"
    return LedgerBackendError(f"{where}: {msg}; {hint}")


class PostgresRows:
    """One ledger in one PostgreSQL database (its tables in the connection's ``search_path``)."""

    # every psycopg error is a LedgerBackendError (``explain``), which verify reports as a whole
    unreadable: tuple[type[BaseException], ...] = ()

    def __init__(self, url: str, *, connect_timeout: float = 10.0, readonly: bool = False) -> None:
        import psycopg

        self.url = url
        self._connect_timeout = connect_timeout
        self.path = redact(url)  # messages name the backend, never the password
        self.readonly = readonly
        self.broken: str | None = None
        try:
            conn = psycopg.connect(url, autocommit=True, connect_timeout=max(1, int(connect_timeout)))
        except psycopg.Error as e:
            raise explain(url, e) from None
        schema = conn.execute("SELECT current_schema()").fetchone()
        if schema is None or schema[0] is None:
            conn.close()
            raise LedgerBackendError(f"ledger backend PostgreSQL at {redact(url)}: no schema to create tables in; "
                                     "check the search_path of this role")
        digest = hashlib.sha256(f"g6.ledger.lock\n{schema[0]}".encode()).digest()
        self._c = conn
        self._lock_key = int.from_bytes(digest[:8], "big", signed=True)
        self._in_tx = False
        if readonly:
            self._check_layout()
        else:
            self._setup()

    # -- the connection ----------------------------------------------------------------------
    def _live(self) -> Any:
        """The connection; a new one if the old was lost between transactions (server restart, idle
        timeout). A connection lost inside a transaction is not replaced: that transaction failed."""
        import psycopg

        if (self._c.closed or self._c.broken) and not self._in_tx:
            try:
                self._c = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            except psycopg.Error as e:
                raise explain(self.url, e) from None
        return self._c

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement; its cursor (psycopg reads the whole result)."""
        import psycopg

        try:
            return self._live().execute(sql, tuple(params))
        except psycopg.Error as e:
            raise explain(self.url, e) from None

    def _many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        import psycopg

        try:
            with self._live().cursor() as cur:
                cur.executemany(sql, rows)
        except psycopg.Error as e:
            raise explain(self.url, e) from None

    def _pages(self, cols: str, after: int | None, hi: int | None = None) -> Iterator[tuple[Any, ...]]:
        """``SELECT seq, cols`` of the rows after seq ``after`` (None: from the lowest) up to ``hi``,
        ``_PAGE`` at a time by seq (keyset pagination), so memory stays flat whatever the ledger's
        size. Each row is yielded with its seq first."""
        upto = "" if hi is None else " AND seq <= %s"
        bound = () if hi is None else (hi,)
        if after is None:
            page = self._q(f"SELECT seq, {cols} FROM receipts WHERE TRUE{upto} ORDER BY seq LIMIT %s",
                           (*bound, _PAGE)).fetchall()
        else:
            page = self._q(f"SELECT seq, {cols} FROM receipts WHERE seq > %s{upto} ORDER BY seq LIMIT %s",
                           (after, *bound, _PAGE)).fetchall()
        while True:
            yield from page
            if len(page) < _PAGE:
                return
            page = self._q(f"SELECT seq, {cols} FROM receipts WHERE seq > %s{upto} ORDER BY seq LIMIT %s",
                           (page[-1][0], *bound, _PAGE)).fetchall()

    def _has_table(self, name: str) -> bool:
        return bool(self._q("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0])

    @property
    def connection(self) -> Any:
        return self._c

    def present(self) -> bool:
        return True

    def reopen_if_changed(self) -> bool:
        return False  # nothing is read lock-free here: the server gives each query a consistent view

    def reopen(self) -> PostgresRows:
        return PostgresRows(self.url, connect_timeout=self._connect_timeout, readonly=self.readonly)

    def worker_opener(self) -> Callable[[], PostgresRows] | None:
        return None  # verify runs in this process (its worker processes read SQLite files)

    def close(self) -> None:
        self._c.close()

    # -- schema ------------------------------------------------------------------------------
    def _check_layout(self) -> None:
        """Read-only: say what is missing instead of creating it."""
        missing = [t for t in REQUIRED_TABLES if not self._has_table(t)]
        if missing:
            self.broken = f"the ledger at {self.path} lacks the table(s) {', '.join(missing)}"
            return
        self.broken = self.layout_problem()

    def layout_problem(self) -> str | None:
        columns = {r[0] for r in self._q("SELECT column_name FROM information_schema.columns"
                                         " WHERE table_name = 'receipts' AND table_schema = current_schema()")}
        return layout_problem(columns, self.log_id)

    def _setup(self) -> None:
        if all(self._has_table(t) for t in _TABLES):
            return  # set up already (and a role that may only read or append need not create anything)
        with self.write():  # two first writers at once must not both create the tables
            for stmt in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                self._q(stmt)
            self._q("INSERT INTO meta (key, value) VALUES ('log_id', %s) ON CONFLICT (key) DO NOTHING",
                    (os.urandom(8).hex(),))

    # -- transactions ------------------------------------------------------------------------
    def _begin(self, sql: str, lock: bool) -> None:
        """BEGIN (and the ledger's lock), as one step: a failure rolls back only what this opened."""
        import psycopg

        c = self._live()
        try:
            c.execute(sql)
        except psycopg.Error as e:
            raise explain(self.url, e) from None
        self._in_tx = True
        try:
            if lock:
                c.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
        except psycopg.Error as e:
            self._in_tx = False
            if not (c.closed or c.broken):
                with contextlib.suppress(psycopg.Error):
                    c.execute("ROLLBACK")
            raise explain(self.url, e) from None

    def _end(self) -> None:
        import psycopg

        self._in_tx = False
        try:
            self._c.execute("COMMIT")
        except psycopg.Error as e:
            raise explain(self.url, e) from None

    def _rollback(self) -> None:
        """Roll back an open transaction; one that died with its connection has nothing to undo, and
        a failing ROLLBACK never replaces the error that caused it."""
        import psycopg

        if not self._in_tx:
            return
        self._in_tx = False
        if not (self._c.closed or self._c.broken):
            with contextlib.suppress(psycopg.Error):
                self._c.execute("ROLLBACK")

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        self._begin("BEGIN", lock=True)
        try:
            yield
            self._end()
        except BaseException:
            self._rollback()
            raise

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        self._begin("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", lock=False)
        try:
            yield
            self._end()
        except BaseException:
            self._rollback()
            raise

    def disk_full(self, error: BaseException, doing: str) -> LedgerError | None:
        return None  # the server's disk: a full one arrives as a psycopg error, explained like any other

    # -- receipts ----------------------------------------------------------------------------
    def append_rows(self, rows: Sequence[tuple[Any, ...]]) -> None:
        self._many(f"INSERT INTO receipts ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", rows)

    def head(self) -> tuple[int, str] | None:
        row = self._q("SELECT seq, entry_hash FROM receipts ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else None

    def count(self) -> int:
        return int(self._q("SELECT count(*) FROM receipts").fetchone()[0])

    def row_at(self, seq: int) -> tuple[Any, ...] | None:
        return self._q(f"SELECT {_COLUMNS} FROM receipts WHERE seq = %s", (seq,)).fetchone()

    def find(self, receipt_id: str) -> tuple[Any, ...] | None:
        return self._q(f"SELECT {_COLUMNS} FROM receipts WHERE receipt_id = %s", (receipt_id,)).fetchone()

    def select(self, *, kind: str | None = None, limit: int | None = None,
               newest_first: bool = False) -> Iterable[tuple[Any, ...]]:
        # read whole (pages for the plain scan), so callers may query the ledger while they iterate
        if not kind and limit is None and not newest_first:
            return list(self._pages(_COLUMNS[len("seq, "):], 0))
        sql = f"SELECT {_COLUMNS} FROM receipts"
        args: list[Any] = []
        if kind:
            sql += " WHERE kind = %s"
            args.append(kind)
        sql += " ORDER BY seq" + (" DESC" if newest_first else "")
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        return self._q(sql, args).fetchall()

    def rows_between(self, lo: int | None, hi: int) -> Iterable[tuple[Any, ...]]:
        return self._pages(_COLUMNS[len("seq, "):], None if lo is None else lo - 1, hi)

    def rows_after(self, seq: int, limit: int) -> list[tuple[Any, ...]]:
        return self._q(f"SELECT {_COLUMNS} FROM receipts WHERE seq > %s ORDER BY seq LIMIT %s",
                       (seq, limit)).fetchall()

    def receipts(self, limit: int | None = None) -> Iterable[Any]:
        if limit is None:
            return (r[1] for r in self._pages("receipt", 0))
        return (r[0] for r in self._q("SELECT receipt FROM receipts ORDER BY seq LIMIT %s", (limit,)).fetchall())

    def duplicate_receipt_ids(self, limit: int) -> list[tuple[Any, int]]:
        return self._q("SELECT receipt_id, count(*) FROM receipts GROUP BY receipt_id HAVING count(*) > 1"
                       " ORDER BY min(seq) LIMIT %s", (limit,)).fetchall()

    def receipt_ids_unique(self) -> bool:
        # a unique, non-partial index on receipt_id alone, on the receipts table this connection reads
        row = self._q("SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                      " AND a.attnum = i.indkey[0] WHERE i.indrelid = to_regclass('receipts') AND i.indisunique"
                      " AND i.indnatts = 1 AND i.indpred IS NULL AND a.attname = 'receipt_id'").fetchone()
        return bool(row and row[0])

    def rows_below_one(self) -> tuple[int, Any]:
        count, low = self._q("SELECT count(*), min(seq) FROM receipts WHERE seq < 1").fetchone()
        return count, low

    # -- identity ----------------------------------------------------------------------------
    def log_id(self) -> Any:
        row = self._q("SELECT value FROM meta WHERE key = 'log_id'").fetchone()
        return None if row is None else row[0]

    def set_log_id(self, log_id: str) -> None:
        self._q("UPDATE meta SET value = %s WHERE key = 'log_id'", (log_id,))

    def meta_value(self, name: str) -> Any:
        row = self._q("SELECT value FROM meta WHERE key = %s", (name,)).fetchone()
        return None if row is None else row[0]

    def set_meta_value(self, name: str, value: str) -> None:
        self._q("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (name, value))

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint_notes(self) -> list[tuple[Any, Any, Any]]:
        return self._q("SELECT id, size, note FROM checkpoints ORDER BY id").fetchall()

    def checkpoint_records(self) -> list[tuple[Any, Any, Any, Any]]:
        return self._q("SELECT size, root, note, created_at FROM checkpoints ORDER BY id").fetchall()

    def add_checkpoint(self, size: int, root: str, note: str, created_at: str | None) -> None:
        self._q("INSERT INTO checkpoints (size, root, note, created_at) VALUES (%s, %s, %s, %s)",
                (size, root, note, created_at))

    # -- trusted keys (the table is made at set-up, so a role that may not create tables reads it) --
    def checkpoint_extras(self) -> list[tuple[Any, Any, Any, Any, Any, Any]]:
        if not self._has_table("checkpoint_extras"):  # a ledger set up before extras were kept
            return []
        return self._q("SELECT size, root, kind, name, value, added_at FROM checkpoint_extras ORDER BY id").fetchall()

    def add_checkpoint_extra(self, size: int, root: str, kind: str, name: str, value: str, added_at: str) -> None:
        self._q("INSERT INTO checkpoint_extras (size, root, kind, name, value, added_at) VALUES "
                "(%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", (size, root, kind, name, value, added_at))

    def remove_checkpoint_extra(self, size: int, root: str, kind: str, name: str, value: str) -> None:
        self._q("DELETE FROM checkpoint_extras WHERE size = %s AND root = %s AND kind = %s AND name = %s AND "
                "value = %s", (size, root, kind, name, value))

    def trusted_key_rows(self) -> list[tuple[Any, Any]]:
        return self._q("SELECT key_id, public_key FROM trusted_keys ORDER BY key_id").fetchall()

    def add_trusted_key(self, key_id: str, public_key: str, added_at: str) -> None:
        self._q("INSERT INTO trusted_keys (key_id, public_key, added_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (key_id) DO NOTHING", (key_id, public_key, added_at))

    # -- the stored Merkle tree --------------------------------------------------------------
    def tree_table_exists(self) -> bool:
        return self._has_table("merkle_hashes")

    def ensure_tree_table(self) -> None:
        if not self.tree_table_exists():  # made at set-up; only a table dropped since is missing
            self._q(_CREATE_TREE)

    def hash_count(self) -> int:
        row = self._q("SELECT max(id) FROM merkle_hashes").fetchone()
        return 0 if row is None or row[0] is None else int(row[0]) + 1

    def read_hashes(self, ids: list[int]) -> dict[int, bytes]:
        if not ids:
            return {}
        return {int(k): bytes(v) for k, v in self._q("SELECT id, hash FROM merkle_hashes WHERE id = ANY(%s)",
                                                      (list(ids),)).fetchall()}

    def hashes_between(self, start: int, end: int) -> Iterable[tuple[int, bytes]]:
        return self._q("SELECT id, hash FROM merkle_hashes WHERE id >= %s AND id < %s ORDER BY id",
                       (start, end)).fetchall()

    def insert_hashes(self, rows: Sequence[tuple[int, bytes]]) -> None:
        self._many("INSERT INTO merkle_hashes (id, hash) VALUES (%s, %s)", rows)
