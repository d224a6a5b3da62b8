"""What a ledger backend provides: the one protocol the log, verify and copy are written over.

A backend (``g6.ledger.backends.sqlite``, ``g6.ledger.backends.postgres``) keeps five tables in its engine's own SQL:
``receipts`` (the columns ``g6.ledger.chain.RECEIPT_COLUMNS``, receipts stored as text so the
signed bytes are kept exactly), ``checkpoints``, ``meta`` (the log id), ``trusted_keys`` and
``merkle_hashes`` (the stored tree, ``g6.ledger.stored_tree``). It stores and reads rows and
serialises writers; it decides nothing. Chaining, signing, the tree's hashes and every check are
the log's (``g6.ledger.log``) and verify's, written once over this protocol, so both engines give
the same rows, hashes and verdicts.

A row is a tuple in ``RECEIPT_COLUMNS`` order, cells as the engine returns them (a damaged cell may
be of any type: judging it is verify's job). Reads of a whole ledger (``receipts``, ``select``
without a filter, ``rows_between``) may be lazy and paged; callers iterate them once.

Extension points: a new kind of row (another table kept with the ledger) is a method pair here
(append, read) implemented by each backend; a backend whose rows another process can open for
itself returns an opener from ``worker_opener`` and verify then spreads over every core.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from g6.errors import LedgerError
from g6.ledger.merkle import TreeView

ReceiptRow = tuple[Any, ...]  # one stored row, in RECEIPT_COLUMNS order


@runtime_checkable
class LedgerRows(Protocol):
    """The tables of one ledger in one engine."""

    path: Any  # what messages name: the file's Path, or the server's URL without its password
    readonly: bool  # opened for reading: nothing is ever created or written
    broken: str | None  # why the ledger cannot be read (missing file, table, log id…), found at open
    unreadable: tuple[type[BaseException], ...]  # what a damaged database raises on a read (a verdict)

    # -- the database ------------------------------------------------------------------------
    @property
    def connection(self) -> Any:
        """The engine's own connection, for tools and tests that look at the tables directly."""
        ...

    def present(self) -> bool:
        """Whether there is a ledger to read at all (a file; a server's is always there)."""
        ...

    def layout_problem(self) -> str | None:
        """What the tables lack for the ledger to be read (a column, the log id), or None."""
        ...

    def reopen_if_changed(self) -> bool:
        """After a lock-free read: open again if a writer came by meanwhile; whether it did."""
        ...

    def reopen(self) -> LedgerRows:
        """Another connection to the same ledger with the same settings, for another thread (a
        connection is used by the thread that opened it)."""
        ...

    def worker_opener(self) -> Callable[[], LedgerRows] | None:
        """A picklable callable that opens these rows read-only in another process, or None when
        only this connection can read them (verify then runs in this process)."""
        ...

    def close(self) -> None: ...

    # -- transactions ------------------------------------------------------------------------
    def write(self) -> AbstractContextManager[None]:
        """A write transaction that serialises every writer of this ledger (any process, any host
        the engine serves), taken before the head is read; committed when the block ends, rolled
        back when it raises (a failing rollback never replaces the error that caused it)."""
        ...

    def read_snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every read inside it sees one state of the ledger."""
        ...

    def disk_full(self, error: BaseException, doing: str) -> LedgerError | None:
        """``error`` as a typed disk-full error naming what was being done, or None if it is not one."""
        ...

    # -- receipts ----------------------------------------------------------------------------
    def append_rows(self, rows: Sequence[ReceiptRow]) -> None:
        """Insert rows; only inside ``write``."""
        ...

    def head(self) -> tuple[int, str] | None:
        """(seq, entry_hash) of the highest seq, or None for an empty ledger."""
        ...

    def count(self) -> int: ...

    def row_at(self, seq: int) -> ReceiptRow | None: ...

    def find(self, receipt_id: str) -> ReceiptRow | None:
        """The row whose ``receipt_id`` column is this id."""
        ...

    def select(self, *, kind: str | None = None, limit: int | None = None,
               newest_first: bool = False) -> Iterable[ReceiptRow]:
        """Rows by seq (``kind``: whose kind column is that), at most ``limit`` of them."""
        ...

    def rows_between(self, lo: int | None, hi: int) -> Iterable[ReceiptRow]:
        """Rows with lo <= seq <= hi (``lo`` None: every seq up to ``hi``), by seq."""
        ...

    def rows_after(self, seq: int, limit: int) -> list[ReceiptRow]:
        """The first ``limit`` rows with a seq above ``seq``, by seq."""
        ...

    def receipts(self, limit: int | None = None) -> Iterable[Any]:
        """The receipt cells by seq: the first ``limit``, or all of them."""
        ...

    def duplicate_receipt_ids(self, limit: int) -> list[tuple[Any, int]]:
        """(receipt id, rows holding it) for ids held by more than one row, at most ``limit``."""
        ...

    def receipt_ids_unique(self) -> bool:
        """Whether the engine itself keeps receipt ids unique (a unique index on that column alone)."""
        ...

    def rows_below_one(self) -> tuple[int, Any]:
        """(how many rows have a seq below 1, the lowest such seq)."""
        ...

    # -- identity ----------------------------------------------------------------------------
    def log_id(self) -> Any:
        """The log id cell as stored (None when there is no such row)."""
        ...

    def set_log_id(self, log_id: str) -> None: ...

    def meta_value(self, name: str) -> Any:
        """A value of the meta table (None when absent): what writers note for one another, never trusted
        by verify (the retired keys an append refuses, say)."""
        ...

    def set_meta_value(self, name: str, value: str) -> None:
        """Only inside ``write``."""
        ...

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint_notes(self) -> list[tuple[Any, Any, Any]]:
        """(id, size, note) of every checkpoint the ledger issued, by id."""
        ...

    def checkpoint_records(self) -> list[tuple[Any, Any, Any, Any]]:
        """(size, root, note, created_at) of every checkpoint, by id: what a copy carries over."""
        ...

    def add_checkpoint(self, size: int, root: str, note: str, created_at: str | None) -> None: ...

    def checkpoint_extras(self) -> list[tuple[Any, Any, Any, Any, Any, Any]]:
        """(size, root, kind, name, value, added_at) of everything kept beside a checkpoint (a witness's
        cosignature, a timestamp token), in the order added; nothing, and nothing created, without the table."""
        ...

    def add_checkpoint_extra(self, size: int, root: str, kind: str, name: str, value: str, added_at: str) -> None:
        """Keep ``value`` beside the checkpoint of (size, root); the same (size, root, kind, name, value)
        twice is kept once."""
        ...

    def remove_checkpoint_extra(self, size: int, root: str, kind: str, name: str, value: str) -> None:
        """Drop what was kept beside the checkpoint of (size, root) as (kind, name, value), when it is there
        (a witness's older cosignature, once a newer one by the same key is kept)."""
        ...

    # -- keys trusted for everyone who verifies this ledger ----------------------------------
    def trusted_key_rows(self) -> list[tuple[Any, Any]]:
        """(key_id, public key text) by key id; nothing, and nothing created, without the table."""
        ...

    def add_trusted_key(self, key_id: str, public_key: str, added_at: str) -> None:
        """Idempotent (a key id already there is kept as it is)."""
        ...

    # -- the stored Merkle tree (ids and hashes as g6.ledger.stored_tree lays them out) -------
    def tree_table_exists(self) -> bool: ...

    def ensure_tree_table(self) -> None: ...

    def hash_count(self) -> int:
        """The highest stored id + 1 (0 for none): the ids are dense in a sound table."""
        ...

    def read_hashes(self, ids: list[int]) -> dict[int, bytes]:
        """The stored hashes of these ids that exist."""
        ...

    def hashes_between(self, start: int, end: int) -> Iterable[tuple[int, bytes]]:
        """(id, hash) with start <= id < end, by id."""
        ...

    def insert_hashes(self, rows: Sequence[tuple[int, bytes]]) -> None:
        """Insert (id, hash) rows; only inside ``write``."""
        ...


class LedgerView(Protocol):
    """What verify and the kept-checkpoint checks read of a ledger: the log
    (``g6.ledger.log.Ledger``) provides it, so they need not import the log."""

    @property
    def rows(self) -> LedgerRows: ...

    @property
    def path(self) -> Any: ...

    @property
    def origin(self) -> str: ...

    def head(self) -> tuple[int, str]: ...

    def tree(self) -> TreeView: ...

    def leaf_hashes(self, size: int | None = None) -> list[bytes]: ...
