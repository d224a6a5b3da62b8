"""Which ledger: ``G6_LEDGER_URL`` picks SQLite (``sqlite:///path``, the default) or PostgreSQL.

Also what both backends share beyond the receipts themselves: the public keys trusted for a shared
ledger (a ``trusted_keys`` table that lives with the ledger, filled by ``g6 keys trust``), and
:func:`copy_ledger`, which moves a ledger row by row to another backend, verifying as it goes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from g6.errors import ConfigError, InputError, LedgerError
from g6.ledger.keys import VerifyKey
from g6.ledger.log import GENESIS, Ledger, entry_hash
from g6.ledger.receipts import Receipt, utc_now

_TRUST_TABLE = ("CREATE TABLE IF NOT EXISTS trusted_keys (key_id text PRIMARY KEY, public_key text NOT NULL,"
                " added_at text)")


def open_ledger(url: str | None, default_path: str | os.PathLike[str], *, readonly: bool = False) -> Ledger:
    """The ledger at ``url`` (``None`` or empty: the SQLite file at ``default_path``). ``readonly``
    (reading commands) creates nothing: no file, table or log id."""
    if not url:
        return Ledger(default_path, readonly=readonly)
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        return Ledger(_sqlite_path(url), readonly=readonly)
    if scheme in ("postgresql", "postgres"):
        from g6.ledger.postgres import PostgresLedger

        return PostgresLedger(url, readonly=readonly)
    raise ConfigError(f"G6_LEDGER_URL must start sqlite:/// or postgresql://, got {url.split(':', 1)[0]}:…")


def _sqlite_path(url: str) -> Path:
    p = urlsplit(url)
    if p.netloc not in ("", "localhost"):
        raise ConfigError(f"G6_LEDGER_URL {url!r}: a SQLite ledger is a local file; write sqlite:///path")
    if not p.path or p.path == "/":
        raise ConfigError(f"G6_LEDGER_URL {url!r} names no file; write sqlite:///path/to/ledger.sqlite")
    return Path(unquote(p.path))


# -- trusted keys kept with the ledger -----------------------------------------------------------
def _trust_table(ledger: Ledger, *, create: bool) -> Any:
    """The ledger's connection if it has a ``trusted_keys`` table (made when ``create``), else None.
    PostgreSQL makes the table at set-up, so a role that may not create tables still reads it; reading
    never writes, so verifying a read-only SQLite file works."""
    from g6.ledger.postgres import PostgresLedger

    conn = ledger._usable()
    if isinstance(ledger, PostgresLedger):
        return conn
    if create:
        conn.execute(_TRUST_TABLE)
        return conn
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'trusted_keys'").fetchone()
    return conn if found else None


def trust_key(ledger: Ledger, key: VerifyKey) -> None:
    """Trust ``key`` for everyone who verifies this ledger (idempotent)."""
    conn = _trust_table(ledger, create=True)
    conn.execute("INSERT INTO trusted_keys (key_id, public_key, added_at) VALUES (?, ?, ?)"
                 " ON CONFLICT (key_id) DO NOTHING", (key.key_id, key.to_text(), utc_now()))


def trusted_keys(ledger: Ledger) -> dict[str, VerifyKey]:
    """The keys kept with the ledger. A row whose key id does not match its key is ignored: the id
    is what a signature names, so a mislabelled key must never vouch for it."""
    conn = _trust_table(ledger, create=False)
    out: dict[str, VerifyKey] = {}
    if conn is None:
        return out
    for kid, text in conn.execute("SELECT key_id, public_key FROM trusted_keys ORDER BY key_id").fetchall():
        try:
            k = VerifyKey.from_text(text)
        except LedgerError:
            continue
        if k.key_id == kid:
            out[kid] = k
    return out


# -- copying a ledger to another backend ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class CopyReport:
    copied: int
    already: int
    checkpoints: int
    keys: int
    size: int
    root: str

    def to_json(self) -> dict[str, Any]:
        return {"copied": self.copied, "already_there": self.already, "checkpoints_copied": self.checkpoints,
                "keys_copied": self.keys, "size": self.size, "root": self.root}


_COLUMNS = "seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash"


def copy_ledger(src: Ledger, dst: Ledger, keys: Mapping[str, VerifyKey], *, batch: int = 500,
                progress: Callable[[int, int], None] | None = None) -> CopyReport:
    """Copy every row of ``src`` to ``dst`` byte for byte (same receipts, hashes, log id, checkpoints).

    Each row is checked before it is written: its chain link, its entry hash and its signature
    (against ``keys``). Rows go in batches, each one transaction under ``dst``'s write lock, so an
    interrupted copy resumes where it stopped: ``dst`` must be empty or hold exactly the first rows
    of ``src`` (the same head hash), else nothing is written. ``progress(rows in dst, rows in src)``
    after each batch. Raises :class:`LedgerError` on a row
    that fails its checks, with everything before it copied.
    """
    s, d = src._usable(), _trust_table(dst, create=True)
    src_origin = src.origin
    d.execute("BEGIN IMMEDIATE")
    try:
        done, dst_head = dst.head()
        n_cp = d.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        if done == 0 and n_cp == 0:  # a fresh ledger takes the source's identity (checkpoint origin)
            d.execute("UPDATE meta SET value = ? WHERE key = 'log_id'", (src_origin.split("/", 1)[1],))
        elif dst.origin != src_origin:
            raise LedgerError(f"{dst.path} is another ledger ({dst.origin}, not {src_origin}); copy to an empty one")
        if done:
            row = s.execute("SELECT entry_hash FROM receipts WHERE seq = ?", (done,)).fetchone()
            if row is None or row[0] != dst_head:
                raise LedgerError(f"{dst.path} holds {done} receipts that are not the first {done} of {src.path};"
                                  " copy to an empty ledger")
        d.execute("COMMIT")
    except BaseException:
        d.execute("ROLLBACK")
        raise
    already, copied, prev = done, 0, dst_head if done else GENESIS
    signers: set[str] = set()
    total = src.head()[0] if progress is not None else 0
    while True:
        rows = s.execute(f"SELECT {_COLUMNS} FROM receipts WHERE seq > ? ORDER BY seq LIMIT ?",
                         (done, batch)).fetchall()
        if not rows:
            break
        for row in rows:
            signers.add(_check_row(row, done, prev, keys))
            done, prev = row[0], row[7]
        d.execute("BEGIN IMMEDIATE")
        try:
            if dst.head() != (rows[0][0] - 1, rows[0][6]):
                raise LedgerError(f"{dst.path} changed during the copy (another writer?); copy stopped")
            d.executemany(f"INSERT INTO receipts ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                          [tuple(r) for r in rows])
            d.execute("COMMIT")
        except BaseException:
            d.execute("ROLLBACK")
            raise
        copied += len(rows)
        if progress is not None:
            progress(done, max(total, done))
    have = {r[0] for r in d.execute("SELECT note FROM checkpoints").fetchall()}
    cps = 0
    for size, root, note, created in s.execute("SELECT size, root, note, created_at FROM checkpoints ORDER BY id"):
        if note not in have:
            d.execute("INSERT INTO checkpoints (size, root, note, created_at) VALUES (?, ?, ?, ?)",
                      (size, root, note, created))
            cps += 1
    # the keys that vouched for the copied rows go with the ledger, so anyone can verify the copy
    dst_keys = trusted_keys(dst)
    wanted = {**trusted_keys(src), **{kid: keys[kid] for kid in signers}}
    for k in wanted.values():
        if k.key_id not in dst_keys:
            trust_key(dst, k)
    tree = dst.tree()
    return CopyReport(copied, already, cps, len(set(wanted) - set(dst_keys)), len(tree), tree.root().hex())


def _check_row(row: tuple[Any, ...], prev_seq: int, prev_hash: str, keys: Mapping[str, VerifyKey]) -> str:
    """Check one row before it is copied; return the id of the key that signed it."""
    seq, rid, _kind, _outcome, _at, text, stored_prev, stored_hash = row
    if seq != prev_seq + 1 or stored_prev != prev_hash or entry_hash(seq, stored_prev, text.encode()) != stored_hash:
        raise LedgerError(f"row {seq} ({rid}) breaks the chain; run `g6 ledger verify` on the source; copy stopped")
    try:
        receipt = Receipt.from_json(json.loads(text))
    except (ValueError, InputError) as e:
        raise LedgerError(f"row {seq} ({rid}) is not a readable receipt ({e}); copy stopped") from None
    ok, why = receipt.verify_signature(keys)
    if not ok or receipt.receipt_id != rid:
        raise LedgerError(f"row {seq} ({rid}): {why or 'receipt id disagrees'}; trust its key (g6 keys trust) "
                          "or fix the source; copy stopped")
    assert receipt.signature is not None  # verify_signature passed
    return receipt.signature.key_id
