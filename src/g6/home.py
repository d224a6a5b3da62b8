"""One evidence home: the blob store, the ledger and the keys under one root folder.

The ledger and the store default to files under the root; ``ledger_url`` / ``blob_url``
(``G6_LEDGER_URL`` / ``G6_BLOB_URL``) put them on PostgreSQL and S3 instead (see
``g6.ledger.open`` and ``g6.store.open``). The keys always stay in the root.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from g6.errors import LedgerError
from g6.ledger import KeyDir, Ledger, LedgerVerifyReport, Receipt, SigningKey, VerifyKey, open_ledger, trusted_keys
from g6.store import BlobBackend, open_store


class EvidenceHome:
    """``root/knowledge/fetched`` (blobs), ``root/knowledge/ledger.sqlite``, ``root/keys``.

    ``readonly=True`` is for commands that only read: no folder, file, table or log id is created,
    and a missing home or ledger shows up as a failed database check in ``verify``. ``ledger_url``
    and ``blob_url`` (``G6_LEDGER_URL``, ``G6_BLOB_URL``) put the ledger or the blobs elsewhere
    (PostgreSQL, S3); ``env`` carries the S3 settings. ``allow_open_key`` (``G6_ALLOW_OPEN_KEY``) lets
    the home sign with a key file group or others may read (``g6.ledger.keys.KeyDir``).
    """

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = True, readonly: bool = False,
                 blob_compression: str = "zstd", ledger_url: str | None = None, blob_url: str | None = None,
                 env: Mapping[str, str] | None = None, allow_open_key: bool = False) -> None:
        self.root = Path(root)
        self.readonly = readonly
        self.store: BlobBackend = open_store(blob_url, self.root / "knowledge" / "fetched", fsync=fsync, env=env,
                                           create=not readonly, compression=blob_compression)
        try:
            self.ledger: Ledger = open_ledger(ledger_url, self.root / "knowledge" / "ledger.sqlite",
                                              readonly=readonly)
        except BaseException:
            self.store.close()
            raise
        self.keys = KeyDir(self.root / "keys", allow_open_key=allow_open_key)
        self._key: SigningKey | None = None

    @classmethod
    def from_settings(cls, settings: Any, **kw: Any) -> EvidenceHome:
        """The home a :class:`g6.config.Settings` describes, backends included."""
        from g6.store.compression import parse_setting

        v = settings.values
        kw.setdefault("blob_compression", parse_setting(v.get("G6_BLOB_COMPRESSION", "")))
        kw.setdefault("allow_open_key", bool(getattr(settings, "allow_open_key", False)))
        return cls(settings.home, ledger_url=v.get("G6_LEDGER_URL") or None, blob_url=v.get("G6_BLOB_URL") or None,
                   env=v, **kw)

    def close(self) -> None:
        self.ledger.close()
        self.store.close()

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

    def trusted(self) -> dict[str, VerifyKey]:
        """The keys this home trusts: its own key folder's and those kept with the ledger (``g6 keys trust``)."""
        return {**trusted_keys(self.ledger), **self.keys.trusted()}

    def verify(self, keys: Mapping[str, VerifyKey] | None = None,
               kept: Sequence[tuple[str, str]] = (), *,
               progress: Callable[[int, int], None] | None = None) -> LedgerVerifyReport:
        """Verify the ledger and its blobs. ``keys`` pins the public keys (``keys/trusted/`` and the
        ledger's trusted keys are then not consulted); ``kept`` are (label, note) checkpoints kept
        outside the home. ``progress(receipts checked, receipts)`` is called as it goes."""
        if keys is None:
            try:
                keys = self.trusted()
            except LedgerError:  # the ledger cannot be read: verify says why in its database verdict
                keys = self.keys.trusted()
        report = self.ledger.verify(keys, self.store, kept, progress=progress)
        if self.ledger.reopen_if_changed():  # a writer came by during a lock-free read: read again
            report = self.ledger.verify(keys, self.store, kept, progress=progress)
        return report
