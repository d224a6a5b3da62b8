"""A ledger's own database connection, for tests that tamper with its tables as an attacker with
database access would.

The tampering statements are written once, with SQLite's ``?`` placeholders; on PostgreSQL this
helper turns them into psycopg's ``%s``. Only tests do that: each ledger backend writes its own SQL
(``g6.ledger.backends.sqlite``, ``g6.ledger.backends.postgres``) and nothing in the ledger rewrites SQL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from g6.ledger import Ledger


class _Qmark:
    """A psycopg connection that takes ``?`` placeholders (the tests' statements hold no literal ``?``)."""

    def __init__(self, conn: Any) -> None:
        self._c = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._c.execute(sql.replace("?", "%s"), tuple(params))


def raw_sql(ledger: Ledger) -> Any:
    conn = ledger._usable().connection
    return conn if isinstance(conn, sqlite3.Connection) else _Qmark(conn)
