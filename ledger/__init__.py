"""Signed receipts and the append-only, hash-chained SQLite ledger that holds them."""

from g6.ledger.keys import KeyDir, SigningKey, VerifyKey
from g6.ledger.log import Check, Ledger, LedgerEntry, LedgerVerifyReport
from g6.ledger.note import Checkpoint, NoteError
from g6.ledger.open import CopyReport, copy_ledger, open_ledger, trust_key, trusted_keys
from g6.ledger.postgres import PostgresLedger
from g6.ledger.proofs import (
                              ConsistencyProof,
                              InclusionProof,
                              ProofReport,
                              verify_consistency_proof,
                              verify_inclusion_proof,
)
from g6.ledger.receipts import AllowlistDecision, Hop, Receipt, Signature

__all__ = [
    "AllowlistDecision",
    "Check",
    "Checkpoint",
    "ConsistencyProof",
    "CopyReport",
    "InclusionProof",
    "NoteError",
    "PostgresLedger",
    "ProofReport",
    "Hop",
    "KeyDir",
    "Ledger",
    "LedgerEntry",
    "LedgerVerifyReport",
    "Receipt",
    "Signature",
    "SigningKey",
    "VerifyKey",
    "copy_ledger",
    "open_ledger",
    "trust_key",
    "trusted_keys",
    "verify_consistency_proof",
    "verify_inclusion_proof",
]
