"""The ledger on PostgreSQL: the same rows, chain and checks as the SQLite ledger, on a shared server.

:class:`PostgresLedger` is a :class:`~g6.ledger.log.Ledger` whose connection is PostgreSQL: every
query, the chaining, the signatures and the verification are the SQLite ledger's own code; only the
schema set-up, the connection and the write lock differ. Where SQLite serialises writers with
``BEGIN IMMEDIATE`` (its file lock), here a write transaction first takes a transaction-level
advisory lock (``pg_advisory_xact_lock``) on a key derived from the ledger's schema, so appends
from any number of processes on any number of hosts read the head and insert under one lock, in
the database, and the lock goes with the transaction (a crashed writer cannot hold it).

Receipts are stored as ``text``, never ``jsonb``: the chain hashes the exact bytes that were signed.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from g6.errors import LedgerBackendError
from g6.ledger.keys import VerifyKey
from g6.ledger.log import Check, Ledger, LedgerVerifyReport
from g6.ledger.note import Checkpoint
from g6.store import BlobStore

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
"""
_TABLES = ("receipts", "checkpoints", "meta", "trusted_keys", "merkle_hashes")


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


class _PgConnection:
    """The few ``sqlite3.Connection`` calls the ledger makes, on a psycopg connection.

    ``?`` placeholders become ``%s`` (none of the ledger's SQL holds a literal ``?`` or ``%``);
    ``BEGIN IMMEDIATE`` becomes ``BEGIN`` plus the ledger's advisory lock; every psycopg error
    becomes a :class:`LedgerBackendError` that says what to check.
    """

    def __init__(self, conn: Any, url: str, lock_key: int) -> None:
        self._c = conn
        self._url = url
        self._lock_key = lock_key
        self._in_tx = False

    def _live(self) -> Any:
        """The connection; a new one if the old was lost between transactions (server restart, idle
        timeout). A connection lost inside a transaction is not replaced: that transaction failed."""
        import psycopg

        if (self._c.closed or self._c.broken) and not self._in_tx:
            try:
                self._c = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            except psycopg.Error as e:
                raise explain(self._url, e) from None
        return self._c

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        import psycopg

        try:
            if sql == "BEGIN IMMEDIATE":
                return self._begin()
            if sql in ("COMMIT", "ROLLBACK"):
                self._in_tx = False
                if sql == "ROLLBACK" and (self._c.closed or self._c.broken):
                    return None  # the transaction died with its connection: nothing to undo
                return self._c.execute(sql)
            scan = _SCAN.fullmatch(sql)
            if scan is not None and not params:
                return _Pages(self, scan["cols"])
            return self._live().execute(_pg_sql(sql), tuple(params))
        except psycopg.Error as e:
            raise explain(self._url, e) from None

    def execute_pg(self, sql: str, params: Sequence[Any]) -> Any:
        """One query in psycopg's own placeholders."""
        import psycopg

        try:
            return self._live().execute(sql, tuple(params))
        except psycopg.Error as e:
            raise explain(self._url, e) from None

    def _begin(self) -> Any:
        """BEGIN and the ledger's lock, as one step: the caller rolls back only what this opened."""
        import psycopg

        c = self._live()
        c.execute("BEGIN")
        self._in_tx = True
        try:
            return c.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
        except psycopg.Error:
            self._in_tx = False
            if not (c.closed or c.broken):
                c.execute("ROLLBACK")
            raise

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        import psycopg

        try:
            with self._live().cursor() as cur:
                cur.executemany(_pg_sql(sql), rows)
        except psycopg.Error as e:
            raise explain(self._url, e) from None

    @property
    def in_transaction(self) -> bool:
        return self._in_tx

    def has_table(self, name: str) -> bool:
        return bool(self.execute("SELECT to_regclass(?) IS NOT NULL", (name,)).fetchone()[0])

    def close(self) -> None:
        self._c.close()


_QMARK = re.compile(r"\?")
# A whole-ledger scan (verify, the Merkle leaves): read in pages by seq, never as one result.
_SCAN = re.compile(r"SELECT (?P<cols>[a-z_, ]+) FROM receipts ORDER BY seq")
_PAGE = 5000


class _Pages:
    """The rows of a whole-ledger scan, fetched ``_PAGE`` at a time by seq (keyset pagination), so
    memory stays flat whatever the ledger's size. Iterate it once, like a cursor."""

    def __init__(self, conn: _PgConnection, cols: str) -> None:
        self._conn = conn
        self._sql = f"SELECT seq, {cols} FROM receipts WHERE seq > %s ORDER BY seq LIMIT %s"

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        last = 0
        while True:
            rows = self._conn.execute_pg(self._sql, (last, _PAGE)).fetchall()
            for row in rows:
                yield tuple(row[1:])
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self)


def _pg_sql(sql: str) -> str:
    return _QMARK.sub("%s", sql)


class PostgresLedger(Ledger):
    """One ledger in one PostgreSQL database (its tables in the connection's ``search_path``)."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0, readonly: bool = False) -> None:
        import psycopg  # no super().__init__(): there is no file

        self.url = url
        self.path = redact(url)  # type: ignore[assignment] # messages name the backend, never the password
        self.readonly = readonly
        self._broken = None
        self._snapshot = None  # nothing read lock-free here: the server gives each query a consistent view
        self._busy_timeout = connect_timeout
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
        self._conn = _PgConnection(conn, url, int.from_bytes(digest[:8], "big", signed=True))  # type: ignore[assignment]
        self.db = None  # type: ignore[assignment] # sqlite-utils is the SQLite ledger's; nothing here uses it
        if readonly:
            self._check_layout()
        else:
            self._setup()

    def present(self) -> bool:
        return True

    # trusted_keys is read with the ledger; merkle_hashes is not required to read (older set-ups lack it)
    REQUIRED_TABLES = ("receipts", "checkpoints", "meta", "trusted_keys")

    def _missing_tables(self, tables: Sequence[str]) -> list[str]:
        return [t for t in tables if not self._conn.has_table(t)]  # type: ignore[attr-defined]

    def _receipt_columns(self) -> set[str]:
        return {r[0] for r in self._conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'receipts'"
            " AND table_schema = current_schema()").fetchall()}

    def _setup(self) -> None:
        conn = self._conn
        if not self._missing_tables(_TABLES):
            return  # set up already (and a role that may only read or append need not create anything)
        conn.execute("BEGIN IMMEDIATE")  # two first writers at once must not both create the tables
        try:
            for stmt in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                conn.execute(stmt)
            conn.execute("INSERT INTO meta (key, value) VALUES ('log_id', ?) ON CONFLICT (key) DO NOTHING",
                         (os.urandom(8).hex(),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def entries(self, *, kind: str | None = None, limit: int | None = None,
                newest_first: bool = False) -> Iterator[Any]:
        # psycopg reads a whole result; yielding from a list keeps the connection free for callers
        # that query the ledger while they iterate (the SQLite cursor allowed that too).
        return iter(list(super().entries(kind=kind, limit=limit, newest_first=newest_first)))

    def verify(self, keys: Mapping[str, VerifyKey], store: BlobStore | None = None,
               kept: Sequence[tuple[str, str]] = (), *, workers: int | None = None,
               since: Checkpoint | None = None,
               progress: Callable[[int, int], None] | None = None) -> LedgerVerifyReport:
        """The SQLite ledger's checks, in this process (worker processes open SQLite files); a server
        that fails mid-way is a failed ``database`` verdict."""
        try:
            return super().verify(keys, store, kept, workers=1, since=since, progress=progress)
        except LedgerBackendError as e:
            return LedgerVerifyReport(0, (Check("database", False, None, None, str(e)),))
