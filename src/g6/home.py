"""One evidence home: the blob store, the ledger and the keys under one root folder.

The ledger and the store default to files under the root; ``ledger_url`` / ``blob_url``
(``G6_LEDGER_URL`` / ``G6_BLOB_URL``) put them on PostgreSQL and S3 instead (see
``g6.ledger.backends.open`` and ``g6.store.open``). The keys always stay in the root.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from g6.errors import BadDigest, BlobRedacted, LedgerError
from g6.ledger import (
    KeyDir,
    Ledger,
    LedgerVerifyReport,
    Receipt,
    SigningKey,
    Trust,
    VerifyKey,
    open_ledger,
    takedown,
    trusted_keys,
)
from g6.ledger.redactions import Redactions
from g6.store import BlobBackend, open_store
from g6.store.digest import Digest


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

    # -- writer keys, recorded in the log (g6.ledger.keyring) --------------------------------------------
    def add_writer(self, key: VerifyKey, reason: str = "") -> Receipt:
        """Add ``key`` as a writer of this log: a key entry signed by this home's key."""
        return self.ledger.add_key(key, self.signing_key(), reason)

    def retire_key(self, key: VerifyKey, reason: str = "") -> Receipt:
        """Retire ``key`` in this log: a key entry signed by this home's key; nothing it signs after
        counts, and appends with it are refused."""
        return self.ledger.retire_key(key, self.signing_key(), reason)

    def rotate_key(self) -> tuple[SigningKey, list[Receipt]]:
        """A new signing key in place of this home's: the log records it (the new key added by the old, then
        the old retired by the new in a handover that vouches for it), and the old public key stays in
        ``keys/trusted`` for its receipts."""
        new = SigningKey.generate()
        entries = []
        recorded = self.ledger.present() and len(self.ledger) > 0
        if recorded:  # the new key may sign from the row after this entry; the old key must sign it
            old = self.signing_key()
            entries.append(self.ledger.add_key(new.public, old, "rotation"))
        self.keys.init(force=True, key=new)
        self._key = new
        if recorded:
            # a handover: the new key vouches for the old one's rows, so pinning the current key is enough
            entries.append(self.ledger.retire_key(old.public, new, "rotation", handover=True))
        return new, entries

    # -- redactions and holds, recorded in the log (g6.ledger.redactions, g6.ledger.takedown) --------------
    def redactions(self) -> Redactions:
        """The redaction and hold entries of this home's log that count for the keys it trusts: what every
        reader asks before it serves a body (redacted: never served) and what ``g6 blob gc`` finishes."""
        return takedown.current(self.ledger, self.trust().roots())

    def removal_roots(self) -> dict[str, tuple[VerifyKey, str]]:
        """The keys an operation that takes bytes out trusts (``g6 blob redact|expire|gc``): this home's own key
        folder only. The ledger's trusted-keys table is writable by whoever can write the database, so a key
        planted there never makes anything delete bytes (readers, which only refuse to serve, trust it too)."""
        return {kid: (k, f"in {self.keys.trusted_dir}") for kid, k in self.keys.trusted().items()}

    def refuse_redacted(self, asked: str | Mapping[str, Any] | None, red: Redactions | None = None) -> None:
        """``BlobRedacted`` when ``asked`` (a digest, or a receipt's ``content``: any blob reference) was taken
        out by a redaction entry: what every reader of a body calls first, so it says redacted, never missing or
        damaged. ``red``: the redactions already read (a caller asking for many bodies reads them once)."""
        if red is None:
            if not self.ledger.present():
                return  # a store without its ledger (nothing was ever recorded): no redaction either
            red = self.redactions()
        if isinstance(asked, str):
            with contextlib.suppress(BadDigest):
                asked = str(Digest.parse(asked))  # as entries write it; a bad digest is the read's to refuse
        gone = red.of(asked) if isinstance(asked, str) else red.of_content(asked)
        if gone is not None:
            raise BlobRedacted(f"{gone.blob.blake3} was {gone.said()}: the home no longer serves these bytes; the "
                               f"receipts that read them still prove they were read (entry {gone.receipt_id})",
                               gone.seq)

    def trusted(self) -> dict[str, VerifyKey]:
        """The keys this home trusts: its own key folder's and those kept with the ledger (``g6 keys trust``)."""
        return {**trusted_keys(self.ledger), **self.keys.trusted()}

    def trust(self, keys: Mapping[str, VerifyKey] | None = None, *, strict_time: bool = False) -> Trust:
        """Whom a verify of this home trusts, and why: ``keys`` pinned (the home's folder and the ledger's
        table are then not consulted), else the keys in ``keys/trusted`` and the ledger's trusted-keys
        table. Either way a key entry in the log can add writers and retire keys (``g6.ledger.keyring``)."""
        if keys is not None:
            return Trust(dict(keys), {kid: "pinned" for kid in keys}, strict_time=strict_time)
        try:
            table = trusted_keys(self.ledger)
        except LedgerError:  # the ledger cannot be read: verify says why in its database verdict
            table = {}
        folder = self.keys.trusted()
        why = {kid: "in the ledger's trusted-keys table" for kid in table}
        why.update({kid: f"in {self.keys.trusted_dir}" for kid in folder})
        return Trust({**table, **folder}, why, strict_time=strict_time)

    def verify(self, keys: Mapping[str, VerifyKey] | None = None,
               kept: Sequence[tuple[str, str]] = (), *,
               progress: Callable[[int, int], None] | None = None, strict_time: bool = False,
               workers: int | None = None) -> LedgerVerifyReport:
        """Verify the ledger and its blobs. ``keys`` pins the public keys (``keys/trusted/`` and the
        ledger's trusted keys are then not consulted); ``kept`` are (label, note) checkpoints kept
        outside the home. ``progress(receipts checked, receipts)`` is called as it goes; ``strict_time``
        makes a clock warning a failure; ``workers``: processes (default: every core; 1: this one)."""
        trust = self.trust(keys, strict_time=strict_time)
        report = self.ledger.verify(trust, self.store, kept, progress=progress, workers=workers)
        if self.ledger.reopen_if_changed():  # a writer came by during a lock-free read of a quiet file: again
            report = self.ledger.verify(trust, self.store, kept, progress=progress, workers=workers)
        return report
