"""What ``g6 bundle verify`` says: the keys it used and where each came from, a verdict per citation, the
bundle-wide checks, and any two signed checkpoints of the log that show two histories (``bundle-verify.v1``)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from g6.ledger.keys import VerifyKey
from g6.ledger.note import Checkpoint
from g6.ledger.proofs import ProofCheck as BundleCheck

PINNED = "pinned with --key"
SHIPPED = "shipped inside the bundle, not pinned"
MISBEHAVIOR = "misbehavior detected: the log shows two histories"


@dataclass(frozen=True, slots=True)
class PinnedKey:
    """A key the verifier trusts. A C2SP verifier key also names its log (``origin``), and then the
    checkpoint must be of that log, as ``g6 verify-proof`` requires; an ``ed25519:`` key names none."""

    key: VerifyKey
    origin: str | None = None


@dataclass(frozen=True, slots=True)
class UsedKey:
    """A key the verification used, and where it came from (``PINNED`` or ``SHIPPED``)."""

    key: VerifyKey
    source: str
    origin: str | None = None

    @property
    def key_id(self) -> str:
        return self.key.key_id

    def said(self) -> str:
        """The key as every verdict line names it: its id and where it came from."""
        return f"{self.key.key_id} ({self.source})"


@dataclass(frozen=True, slots=True)
class Seen:
    """A checkpoint whose signature verified, and where the bundle (or the grader) showed it."""

    label: str
    cp: Checkpoint
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "origin": self.cp.origin, "size": self.cp.size,
                "root": base64.b64encode(self.cp.root).decode(), "note": self.note}


@dataclass(frozen=True, slots=True)
class Fork:
    """Two checkpoints of one log, both signed by a key the verifier trusts, that cannot be of one
    history: the same size with two roots, or a consistency proof between them that fails."""

    detail: str
    checkpoints: tuple[Seen, Seen]

    def to_json(self) -> dict[str, Any]:
        return {"detail": self.detail, "checkpoints": [s.to_json() for s in self.checkpoints]}


@dataclass(frozen=True, slots=True)
class CitationVerdict:
    """One citation. ``citation_id``, ``receipt_id``, ``url``, ``quote``, ``outcome`` and ``http_status``
    are set only from what verified (the signed receipt, the body that hashes to it); they are None where
    that failed. ``failed_read``: the cited read failed (a 403 page, a 404 page…): its words are not
    evidence of the page's."""

    position: int
    checks: tuple[BundleCheck, ...]
    citation_id: str | None = None
    receipt_id: str | None = None
    url: str | None = None
    quote: str | None = None
    outcome: str | None = None
    http_status: int | None = None
    failed_read: bool = False
    # the cited body was taken out by a redaction entry the bundle carries and proves: its seq, receipt id,
    # reason and note (``g6.prove.bundle_redactions``); such a citation never holds
    redaction: Mapping[str, Any] | None = None
    # the id the bundle's manifest gives the citation, as written and never verified (None when it has no id's
    # form): what names a citation that failed, whose ``citation_id`` is None
    named_id: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def label(self) -> str:
        """``citation 2 (c_5adff0bbdadc47af)``: its place in the manifest, and its id (the verified one, else the
        manifest's own)."""
        name = self.citation_id or self.named_id
        return f"citation {self.position}" + (f" ({name})" if name else "")

    def read_words(self) -> str | None:
        """``read blocked, HTTP 403``: the cited read as the verified receipt tells it."""
        if self.outcome is None:
            return None
        status = f"HTTP {self.http_status}" if self.http_status is not None else "no HTTP status"
        return f"read {self.outcome}, {status}"

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "ok": self.ok, "citation_id": self.citation_id,
                "receipt_id": self.receipt_id, "url": self.url, "quote": self.quote, "outcome": self.outcome,
                "http_status": self.http_status, "failed_read": self.failed_read,
                "redaction": dict(self.redaction) if self.redaction is not None else None,
                "manifest_citation_id": self.named_id, "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True, slots=True)
class BundleReport:
    manifest_id: str | None  # only from a manifest whose signature verified
    bundle_checks: tuple[BundleCheck, ...]
    citations: tuple[CitationVerdict, ...] = field(default=())
    manifest_signed: bool = False
    declared_bytes: int = 0
    inflated_bytes: int = 0
    keys: tuple[UsedKey, ...] = ()
    forks: tuple[Fork, ...] = ()
    manifest_key: str | None = None  # the key id that signed the manifest, when its signature verified
    manifest_key_said: str | None = None  # that key, and where it came from (pinned, or the log's key entries)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.bundle_checks) and all(c.ok for c in self.citations) and \
            bool(self.citations) and not self.forks

    @property
    def misbehavior(self) -> bool:
        return bool(self.forks)

    @property
    def pinned(self) -> bool:
        """Every key used was pinned by the verifier (none was taken from the bundle)."""
        return bool(self.keys) and all(k.source == PINNED for k in self.keys)

    def key_said(self, key_id: str | None) -> str | None:
        """``ed25519:… (pinned with --key)``: a key id, and where the key came from."""
        used = next((k for k in self.keys if k.key_id == key_id), None)
        if used is None and key_id is not None and key_id == self.manifest_key:
            return self.manifest_key_said  # a key the log's key entries vouch for, back to a used key
        return used.said() if used is not None else None

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "manifest_id": self.manifest_id, "manifest_signed": self.manifest_signed,
                "declared_bytes": self.declared_bytes, "inflated_bytes": self.inflated_bytes,
                "keys": [{"key_id": k.key_id, "source": k.source} for k in self.keys],
                "misbehavior": self.misbehavior, "forks": [f.to_json() for f in self.forks],
                "bundle_checks": [c.to_json() for c in self.bundle_checks],
                "citations": [c.to_json() for c in self.citations]}
