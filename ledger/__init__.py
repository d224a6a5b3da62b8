"""Signed receipts and the append-only, hash-chained SQLite ledger that holds them."""

from g6.ledger.keys import KeyDir, SigningKey, VerifyKey
from g6.ledger.ledger import Check, Ledger, LedgerEntry, LedgerVerifyReport
from g6.ledger.note import Checkpoint, NoteError
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
    "InclusionProof",
    "NoteError",
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
    "verify_consistency_proof",
    "verify_inclusion_proof",
]
