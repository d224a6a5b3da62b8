"""The ledger: an append-only log of signed receipts, each row chained to the last, on any backend.

:class:`Ledger` is written once over the rows a backend provides (``g6.ledger.backends.rows.LedgerRows``):
SQLite (``Ledger(path)``, the default) or PostgreSQL (``g6.ledger.backends.open.PostgresLedger``). It signs
and chains receipts (``g6.ledger.chain``), keeps the stored Merkle tree (``g6.ledger.stored_tree``)
in step with the receipts, issues checkpoints and serves the tree, and delegates verifying to
``g6.ledger.verification.verify``.

An append reads the head and inserts inside the backend's write transaction, which serialises
every writer (SQLite's ``BEGIN IMMEDIATE``, PostgreSQL's advisory lock), so two processes appending
at once cannot fork the chain. Removing rows from the *end* leaves a valid shorter chain; the
checkpoints the ledger issued catch that unless they were deleted too, and only a checkpoint kept
outside the home catches everything (``verify(kept=…)``, see ``g6.ledger.verification.kept``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from g6.errors import (
    InputError,
    LedgerBackendError,
    LedgerError,
    ReceiptNotFound,
    ReceiptTooLarge,
    SigningKeyError,
)
from g6.ledger import stored_tree
from g6.ledger.backends.rows import LedgerRows
from g6.ledger.backends.sqlite import SqliteRows
from g6.ledger.chain import (
    GENESIS,
    ORIGIN_PREFIX,
    Check,
    LedgerEntry,
    LedgerVerifyReport,
    entry_hash,
    stored_leaf_hash,
)
from g6.ledger.keyring import ADD, RETIRE, key_entry
from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.merkle import MerkleTree, TreeView, leaf_hash
from g6.ledger.note import Checkpoint, NoteError, parse_note, sign_checkpoint
from g6.ledger.receipts import Receipt, log_position, utc_now
from g6.ledger.transparency.tiles import MAX_ENTRY
from g6.ledger.verification.verify import Trust, verify_ledger
from g6.store import BlobBackend

# meta rows "retired:<key id>" = the seq of its retire entry: what an append refuses by (verify reads
# the key entries themselves, never this note)
RETIRED_META = "retired:"


class Ledger:
    """One ledger. ``Ledger(path)`` opens the SQLite file at ``path`` (``busy_timeout``, ``readonly``
    apply to it); ``Ledger(rows)`` is the log over rows some backend opened. Opens nothing global.

    ``readonly=True`` opens for reading only: nothing is created (no folder, no file, no table, no log
    id) and the file is left byte-for-byte as found; a missing or empty file, a missing table or a
    missing log id makes ``verify`` fail with a database verdict saying so.
    """

    def __init__(self, source: str | os.PathLike[str] | LedgerRows, *, busy_timeout: float = 60.0,
                 readonly: bool = False) -> None:
        if isinstance(source, str | os.PathLike):
            source = SqliteRows(source, busy_timeout=busy_timeout, readonly=readonly)
        self.rows: LedgerRows = source

    def reopen(self) -> Ledger:
        """The same ledger over a connection of its own, for another thread."""
        return Ledger(self.rows.reopen())

    @property
    def path(self) -> Any:
        """What messages name: the file, or the server's URL without its password."""
        return self.rows.path

    @property
    def readonly(self) -> bool:
        return self.rows.readonly

    def present(self) -> bool:
        """Whether there is a ledger to read at all (a file here; a server's is always there)."""
        return self.rows.present()

    def reopen_if_changed(self) -> bool:
        """After reading lock-free: if a writer came by meanwhile, open again (see the backend)."""
        return self.rows.reopen_if_changed()

    def _usable(self) -> LedgerRows:
        if self.rows.broken is not None:
            raise LedgerError(f"ledger {self.path} is not usable: {self.rows.broken}; run `g6 ledger verify`")
        return self.rows

    def _writable(self) -> LedgerRows:
        if self.rows.readonly:
            raise LedgerError(f"ledger {self.path} was opened read-only")
        return self._usable()

    def _write_failed(self, e: BaseException, doing: str) -> None:
        """Re-raise a disk-full error as LedgerDiskFull, keeping the real error in the message."""
        full = self.rows.disk_full(e, doing)
        if full is not None:
            raise full from e

    def close(self) -> None:
        self.rows.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------
    def append(self, receipt: Receipt, key: SigningKey) -> Receipt:
        """Sign ``receipt`` and append it. Returns the signed receipt."""
        return self.append_many([receipt], key)[0]

    def append_many(self, receipts: Iterable[Receipt], key: SigningKey, *,
                    decide: Callable[[], Iterable[Receipt]] | None = None) -> list[Receipt]:
        """Sign and append several receipts in one transaction (all or none). Each is signed inside the
        write lock, bound to the place it gets (``log``: this log's origin and its row's seq), so the
        same receipt cannot stand at another place. A key retired in this log signs nothing more. A receipt
        whose signed canonical JSON is over 65,535 bytes (an entry of a published log) is refused
        (``ReceiptTooLarge``), and with it the whole batch. ``decide``: called inside the write lock, after
        the head is read, for the receipts to append instead of ``receipts`` (an entry that depends on what
        the log holds, a redaction refused for a digest held meanwhile; what it raises appends nothing)."""
        unsigned = list(receipts)
        try:
            rows = self._writable()
            with rows.write():
                seq, prev = self.head()  # read inside the write lock, so no other writer can move it
                retired = rows.meta_value(RETIRED_META + key.key_id)
                if retired is not None:
                    raise SigningKeyError(f"{key.key_id} was retired in {self.origin} at seq {retired}: it signs "
                                          "nothing more here; use the key that replaced it (`g6 keys show`)")
                origin = self.origin
                if decide is not None:
                    unsigned = list(decide())
                self._tree_catch_up(seq)
                new, signed, bodies = [], [], []
                for r in unsigned:
                    seq += 1
                    s, body = replace(r, log=log_position(origin, seq)).sign_canonical(key)
                    if len(body) > MAX_ENTRY:  # a published log's entry bundle holds at most this (uint16)
                        raise ReceiptTooLarge(f"receipt {s.receipt_id} would be {len(body):,} bytes of canonical "
                                              f"JSON; a receipt is at most {MAX_ENTRY:,} (an entry of a published "
                                              "log, C2SP tlog-tiles): nothing was appended")
                    h = entry_hash(seq, prev, body)
                    new.append((seq, s.receipt_id, s.kind, s.outcome, s.fetched_at, body.decode(), prev, h))
                    signed.append(s)
                    bodies.append(body)
                    prev = h
                    if s.kind == "key" and s.request.get("action") == RETIRE:
                        rows.set_meta_value(RETIRED_META + str(s.request.get("key_id")), str(seq))
                rows.append_rows(new)
                stored_tree.append_leaves(rows, new[0][0] - 1 if new else seq, (leaf_hash(b) for b in bodies))
        except BaseException as e:
            self._write_failed(e, "appending to")
            raise
        return signed

    def add_key(self, key: VerifyKey, by: SigningKey, reason: str = "") -> Receipt:
        """Append a key entry adding ``key`` as a writer of this log, signed by ``by`` (a key valid here)."""
        return self.append(key_entry(ADD, key, reason), by)

    def retire_key(self, key: VerifyKey, by: SigningKey, reason: str = "", *, handover: bool = False) -> Receipt:
        """Append a key entry retiring ``key``: rows after it signed by ``key`` fail verify, and appends
        with it are refused. ``handover``: ``by`` succeeds ``key`` (which added it) and vouches for it, so a
        verifier who trusts ``by`` trusts ``key`` up to here (``g6.ledger.keyring``; ``g6 keys rotate``)."""
        return self.append(key_entry(RETIRE, key, reason, by.public if handover else None), by)

    def key_entries(self) -> list[LedgerEntry]:
        """The log's key entries, by seq."""
        return list(self.entries(kind="key"))

    def _tree_catch_up(self, size: int) -> None:
        """Inside a write transaction: make the stored tree cover the first ``size`` receipts.
        A ledger made before the tree was kept (or by an older g6) is hashed once, here."""
        rows = self.rows
        rows.ensure_tree_table()
        have = stored_tree.stored_size(rows)
        if have is None or have > size:
            raise LedgerError(f"ledger {self.path}: the stored Merkle tree does not match the receipts "
                              f"({rows.hash_count()} hashes for {size} receipts); run `g6 ledger verify`")
        if have < size:
            # size is the highest seq, read under the same lock: these are the rows after ``have``
            stored_tree.append_leaves(rows, have, (stored_leaf_hash(r[5]) for r in rows.rows_between(have + 1, size)))

    # -- reading ---------------------------------------------------------------------------
    def _entry(self, row: tuple[Any, ...]) -> LedgerEntry:
        seq, text, prev, h = row[0], row[5], row[6], row[7]
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
        row = self._usable().find(receipt_id)
        if row is None:
            raise ReceiptNotFound(f"no receipt {receipt_id!r} in {self.path}")
        return self._entry(row).receipt

    def entries(self, *, kind: str | None = None, limit: int | None = None,
                newest_first: bool = False) -> Iterator[LedgerEntry]:
        for row in self._usable().select(kind=kind or None, limit=limit, newest_first=newest_first):
            e = self._entry(row)
            if kind and e.receipt.kind != kind:
                continue  # the kind column is only an index: the signed receipt decides
            yield e

    def __len__(self) -> int:
        return self._usable().count()

    def head(self) -> tuple[int, str]:
        return self._usable().head() or (0, GENESIS)

    def index_of(self, receipt_id: str) -> int:
        row = self._usable().find(receipt_id)
        if row is None:
            raise ReceiptNotFound(f"no receipt {receipt_id!r} in {self.path}")
        return int(row[0]) - 1

    def referenced_digests(self, *, progress: Callable[[int, int], None] | None = None) -> set[str]:
        """Every blob digest a receipt names (``progress(receipts read, receipts)`` every 1024)."""
        out: set[str] = set()
        total = self.head()[0] if progress is not None else 0
        n = 0
        for n, e in enumerate(self.entries(), 1):
            for _, ref in e.receipt.blobs():  # the body and the certificates a server presented
                if isinstance(ref, Mapping):
                    out.update(str(v) for k, v in ref.items() if k in ("blake3", "sha256"))
            if progress is not None and n % 1024 == 0:
                progress(n, max(total, n))
        if progress is not None:
            progress(n, n)
        return out

    # -- transparency --------------------------------------------------------------------
    @property
    def origin(self) -> str:
        log_id = self._usable().log_id()
        if not isinstance(log_id, str) or not log_id:
            # never made up again: a new log id would be a new log, and old checkpoints would not apply
            raise LedgerError(f"ledger {self.path} holds no log id (meta table); run `g6 ledger verify`")
        return ORIGIN_PREFIX + log_id

    def leaf_hashes(self, size: int | None = None) -> list[bytes]:
        """RFC 9162 leaf hashes of the receipts (canonical JSON, signature included), in ledger order."""
        return [stored_leaf_hash(r) for r in self._usable().receipts(size)]

    def tree(self) -> TreeView:
        """The tree over every receipt: read from the stored hashes (O(log n) rows per root or
        proof) when they cover the ledger; else (an old ledger not written to since, opened
        read-only) computed in memory from the receipts, writing nothing."""
        rows = self._usable()
        n = self.head()[0]  # max(seq), O(log n); a ledger with a row gone from the middle fails verify anyway
        if n and stored_tree.stored_size(rows) == n:
            return stored_tree.StoredTree(rows.read_hashes, n)
        return MerkleTree(self.leaf_hashes())

    def checkpoint(self, key: SigningKey) -> tuple[Checkpoint, str]:
        """Sign and keep a checkpoint of the whole ledger as it is now."""
        rows = self._writable()
        try:
            with rows.write():
                size, _ = self.head()
                self._tree_catch_up(size)
                tree = stored_tree.StoredTree(rows.read_hashes, size)
                last = rows.row_at(size) if size else None  # the highest seq, under the same lock
                if last is not None and tree.leaf(size - 1) != stored_leaf_hash(last[5]):
                    raise LedgerError(f"ledger {self.path}: the stored Merkle tree disagrees with the last receipt; "
                                      "run `g6 ledger verify`")
                cp = Checkpoint(self.origin, size, tree.root())
                note = sign_checkpoint(cp, key)
                rows.add_checkpoint(cp.size, cp.root.hex(), note, utc_now())
        except BaseException as e:
            self._write_failed(e, "keeping a checkpoint in")
            raise
        return cp, note

    def keep_beside(self, cp: Checkpoint, kind: str, name: str, value: str, *, replacing: Iterable[str] = ()) -> None:
        """Keep ``value`` beside checkpoint ``cp``: what another party vouches for it with (``kind``
        "cosignature": a witness's signature line, ``name`` the witness; "rfc3161": an RFC 3161 token,
        DER in base64, ``name`` the TSA). Kept, not trusted: whoever reads it checks it. The values in
        ``replacing`` kept under the same kind and name go, in the same transaction (a witness's older
        cosignatures of ``cp``, once its newest is kept)."""
        rows = self._writable()
        try:
            with rows.write():
                rows.add_checkpoint_extra(cp.size, cp.root.hex(), kind, name, value, utc_now())
                for old in replacing:
                    if old != value:
                        rows.remove_checkpoint_extra(cp.size, cp.root.hex(), kind, name, old)
        except BaseException as e:
            self._write_failed(e, "keeping a checkpoint's extras in")
            raise

    def kept_beside(self, cp: Checkpoint, kind: str | None = None) -> list[tuple[str, str, str]]:
        """(kind, name, value) kept beside checkpoint ``cp`` (of ``kind`` only, when given)."""
        root = cp.root.hex()
        return [(k, n, v) for size, r, k, n, v, _ in self._usable().checkpoint_extras()
                if size == cp.size and r == root and (kind is None or k == kind)]

    def all_kept_beside(self, kind: str) -> list[tuple[int, str, str, str]]:
        """(size, hex root, name, value) of everything of ``kind`` kept beside any checkpoint, oldest first."""
        return [(size, r, n, v) for size, r, k, n, v, _ in self._usable().checkpoint_extras() if k == kind]

    def checkpoints(self) -> list[tuple[Checkpoint, str]]:
        out = []
        for cid, _size, note in self._usable().checkpoint_notes():
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

    # -- verifying -------------------------------------------------------------------------
    def verify(self, keys: Mapping[str, VerifyKey] | Trust, store: BlobBackend | None = None,
               kept: Sequence[tuple[str, str]] = (), *, workers: int | None = None,
               since: Checkpoint | None = None,
               progress: Callable[[int, int], None] | None = None) -> LedgerVerifyReport:
        """Check every signature, every chain link, every column beside the receipt, (with ``store``)
        every referenced blob and the stored Merkle hashes, on ``workers`` processes (default: every
        core; 1: in this process; a backend whose rows only its own connection reads: in this
        process). ``kept`` holds (label, signed note) checkpoints kept away from the ledger: each
        must be extended by the ledger as it is now (see ``g6.ledger.verification.kept``).

        With ``since`` (a checkpoint whose signature the caller has checked), prove the ledger
        extends it and check only the rows after it (see ``g6.ledger.verification.verify``).
        ``progress(receipts checked, receipts to check)`` is called as the rows are checked.
        A backend that fails mid-way (a server gone) is a failed ``database`` verdict.

        ``keys`` are the verifier's roots of trust; a ``Trust`` also says why each is trusted, the clock
        to judge dates by and whether a clock warning fails (see ``g6.ledger.keyring``, ``row_rules``)."""
        try:
            return verify_ledger(self, keys, store, kept, workers=workers, since=since, progress=progress)
        except LedgerBackendError as e:
            return LedgerVerifyReport(0, (Check("database", False, None, None, str(e)),))
