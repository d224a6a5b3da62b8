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
from g6.ledger.backends.postgres import PostgresRows
from g6.ledger.chain import GENESIS, ORIGIN_PREFIX, entry_hash
from g6.ledger.keyring import KeyTimeline, timeline
from g6.ledger.keys import VerifyKey
from g6.ledger.log import Ledger
from g6.ledger.receipts import Receipt, utc_now


class PostgresLedger(Ledger):
    """One ledger in one PostgreSQL database (its tables in the connection's ``search_path``): the
    log over :class:`~g6.ledger.backends.postgres.PostgresRows`, a class of its own so that
    ``PostgresLedger(url)`` reads as it always did and code can still tell the backend by type."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0, readonly: bool = False) -> None:
        super().__init__(PostgresRows(url, connect_timeout=connect_timeout, readonly=readonly))
        self.url = url


def open_ledger(url: str | None, default_path: str | os.PathLike[str], *, readonly: bool = False) -> Ledger:
    """The ledger at ``url`` (``None`` or empty: the SQLite file at ``default_path``). ``readonly``
    (reading commands) creates nothing: no file, table or log id."""
    if not url:
        return Ledger(default_path, readonly=readonly)
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        return Ledger(_sqlite_path(url), readonly=readonly)
    if scheme in ("postgresql", "postgres"):
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
def trust_key(ledger: Ledger, key: VerifyKey) -> None:
    """Trust ``key`` for everyone who verifies this ledger (idempotent)."""
    ledger._usable().add_trusted_key(key.key_id, key.to_text(), utc_now())


def trusted_keys(ledger: Ledger) -> dict[str, VerifyKey]:
    """The keys kept with the ledger. A row whose key id does not match its key is ignored: the id
    is what a signature names, so a mislabelled key must never vouch for it. Reading never writes,
    so verifying a read-only SQLite file works."""
    out: dict[str, VerifyKey] = {}
    for kid, text in ledger._usable().trusted_key_rows():
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


def copy_ledger(src: Ledger, dst: Ledger, keys: Mapping[str, VerifyKey], *, batch: int = 500,
                progress: Callable[[int, int], None] | None = None, pinned: bool = False) -> CopyReport:
    """Copy every row of ``src`` to ``dst`` byte for byte (same receipts, hashes, log id, checkpoints).

    Each row is checked before it is written: its chain link, its entry hash and its signature, by a key
    valid at that row (``keys`` are the roots; the log's key entries add and retire writers, as verify
    reads them). The keys that go with the copy into ``dst``'s trusted-keys table are the source's table
    and the keys that signed copied rows; with ``pinned`` (``ledger copy --key``) only the given keys and
    the keys that signed copied rows: a key someone planted in the source's table stays behind.
    Rows go in batches, each one transaction under ``dst``'s write lock, so an
    interrupted copy resumes where it stopped: ``dst`` must be empty or hold exactly the first rows
    of ``src`` (the same head hash), else nothing is written. ``progress(rows in dst, rows in src)``
    after each batch. Raises :class:`LedgerError` on a row
    that fails its checks, with everything before it copied.
    """
    s, d = src._usable(), dst._usable()
    done, dst_head = _start_copy(src, dst)
    already, copied, prev = done, 0, dst_head if done else GENESIS
    signers: set[str] = set()
    total = src.head()[0] if progress is not None else 0
    key_rows = [(r[0], r[1], r[5]) for r in s.select(kind="key") if isinstance(r[0], int)]
    # every handover in the source vouches (a pinned current key covers the keys before it), while the rows
    # are read forward: the entries up to what dst already holds now, the rest as they are copied
    tl = timeline({kid: (k, "given") for kid, k in keys.items()}, [r for r in key_rows if r[0] <= done],
                  handovers=key_rows, origin=src.origin)
    while True:
        rows = s.rows_after(done, batch)
        if not rows:
            break
        for row in rows:
            signers.add(_check_row(row, done, prev, tl))
            done, prev = row[0], row[7]
        with d.write():
            if dst.head() != (rows[0][0] - 1, rows[0][6]):
                raise LedgerError(f"{dst.path} changed during the copy (another writer?); copy stopped")
            d.append_rows([tuple(r) for r in rows])
        copied += len(rows)
        if progress is not None:
            progress(done, max(total, done))
    have = {r[2] for r in d.checkpoint_records()}
    cps = 0
    for size, root, note, created in s.checkpoint_records():
        if note not in have:
            d.add_checkpoint(size, root, note, created)
            cps += 1
    for extra in s.checkpoint_extras():  # cosignatures and timestamps kept beside the checkpoints
        d.add_checkpoint_extra(*extra[:5], extra[5] or utc_now())
    # the keys that vouched for the copied rows go with the ledger, so anyone can verify the copy
    dst_keys = trusted_keys(dst)
    signed = {kid: tl.lives[kid].key for kid in signers if kid in tl.lives}
    wanted = {**(dict(keys) if pinned else trusted_keys(src)), **signed}
    for k in wanted.values():
        if k.key_id not in dst_keys:
            trust_key(dst, k)
    tree = dst.tree()
    return CopyReport(copied, already, cps, len(set(wanted) - set(dst_keys)), len(tree), tree.root().hex())


def _start_copy(src: Ledger, dst: Ledger) -> tuple[int, str]:
    """Under ``dst``'s write lock: a fresh ``dst`` takes the source's identity (checkpoint origin);
    one that is not empty must hold the first rows of ``src``. Returns ``dst``'s head."""
    s, d = src._usable(), dst._usable()
    src_origin = src.origin
    with d.write():
        done, dst_head = dst.head()
        if done == 0 and not d.checkpoint_notes():
            d.set_log_id(src_origin.removeprefix(ORIGIN_PREFIX))
        elif dst.origin != src_origin:
            raise LedgerError(f"{dst.path} is another ledger ({dst.origin}, not {src_origin}); copy to an empty one")
        if done:
            row = s.row_at(done)
            if row is None or row[7] != dst_head:
                raise LedgerError(f"{dst.path} holds {done} receipts that are not the first {done} of {src.path};"
                                  " copy to an empty ledger")
    return done, dst_head


def _check_row(row: tuple[Any, ...], prev_seq: int, prev_hash: str, tl: KeyTimeline) -> str:
    """Check one row before it is copied (a key entry also moves the timeline on); return the id of the key
    that signed it."""
    seq, rid, _kind, _outcome, _at, text, stored_prev, stored_hash = row
    if seq != prev_seq + 1 or stored_prev != prev_hash or entry_hash(seq, stored_prev, text.encode()) != stored_hash:
        raise LedgerError(f"row {seq} ({rid}) breaks the chain; run `g6 ledger verify` on the source; copy stopped")
    try:
        receipt = Receipt.from_json(json.loads(text))
    except (ValueError, InputError) as e:
        raise LedgerError(f"row {seq} ({rid}) is not a readable receipt ({e}); copy stopped") from None
    if receipt.kind == "key":
        before = len(tl.problems)
        tl.read(seq, rid, text)
        if len(tl.problems) > before:
            raise LedgerError(f"row {seq} ({rid}): {tl.problems[-1].detail}; copy stopped")
    ok, why = receipt.verify_signature(tl.keys())
    if ok and receipt.signature is not None:
        late = tl.why_not(receipt.signature.key_id, seq)
        ok, why = (False, late) if late else (True, "")
    if not ok or receipt.receipt_id != rid:
        raise LedgerError(f"row {seq} ({rid}): {why or 'receipt id disagrees'}; trust its key (g6 keys trust) "
                          "or fix the source; copy stopped")
    assert receipt.signature is not None  # verify_signature passed
    return receipt.signature.key_id
