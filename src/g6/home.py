"""One evidence home: the blob store, the ledger and the keys under one root folder."""

from __future__ import annotations

import os
from pathlib import Path

from g6.ledger import KeyDir, Ledger, LedgerVerifyReport, Receipt, SigningKey
from g6.store import BlobStore


class EvidenceHome:
    """``root/knowledge/fetched`` (blobs), ``root/knowledge/ledger.sqlite``, ``root/keys``."""

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True, blob_compression: str = "zstd") -> None:
        self.root = Path(root)
        self.store = BlobStore(self.root / "knowledge" / "fetched", fsync=fsync, compression=blob_compression)
        self.ledger = Ledger(self.root / "knowledge" / "ledger.sqlite")
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

    def verify(self) -> LedgerVerifyReport:
        return self.ledger.verify(self.keys.trusted(), self.store)
