"""One evidence home: the blob store, the ledger and the keys under one root folder."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from g6.ledger import KeyDir, Ledger, LedgerVerifyReport, Receipt, SigningKey, VerifyKey
from g6.store import BlobStore


class EvidenceHome:
    """``root/knowledge/fetched`` (blobs), ``root/knowledge/ledger.sqlite``, ``root/keys``.

    ``readonly=True`` is for commands that only read: no folder, file, table or log id is created,
    and a missing home or ledger shows up as a failed database check in ``verify``.
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True, readonly: bool = False,
                 blob_compression: str = "zstd") -> None:
        self.root = Path(root)
        self.readonly = readonly
        self.store = BlobStore(self.root / "knowledge" / "fetched", fsync=fsync, create=not readonly,
                               compression=blob_compression)
        self.ledger = Ledger(self.root / "knowledge" / "ledger.sqlite", readonly=readonly)
        self.keys = KeyDir(self.root / "keys")
        self._key: SigningKey | None = None

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> EvidenceHome:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def signing_key(self) -> SigningKey:
        if self._key is None:
            self._key = self.keys.load_signing()
        return self._key

    def record(self, receipt: Receipt) -> Receipt:
        """Sign and append one receipt; its blob (if any) must already be in the store."""
        return self.ledger.append(receipt, self.signing_key())

    def verify(self, keys: Mapping[str, VerifyKey] | None = None,
               kept: Sequence[tuple[str, str]] = ()) -> LedgerVerifyReport:
        """Verify the ledger and its blobs. ``keys`` pins the public keys (``keys/trusted/`` is then
        not consulted); ``kept`` are (label, note) checkpoints kept outside the home."""
        keys = self.keys.trusted() if keys is None else keys
        report = self.ledger.verify(keys, self.store, kept)
        if self.ledger.reopen_if_changed():  # a writer came by during a lock-free read: read again
            report = self.ledger.verify(keys, self.store, kept)
        return report
