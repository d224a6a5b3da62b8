"""Signed receipts and the append-only, hash-chained SQLite ledger that holds them."""

from g6.ledger.keys import KeyDir, SigningKey, VerifyKey
from g6.ledger.ledger import Check, Ledger, LedgerEntry, LedgerVerifyReport
from g6.ledger.receipts import AllowlistDecision, Hop, Receipt, Signature

__all__ = [
    "AllowlistDecision",
    "Check",
    "Hop",
    "KeyDir",
    "Ledger",
    "LedgerEntry",
    "LedgerVerifyReport",
    "Receipt",
    "Signature",
    "SigningKey",
    "VerifyKey",
]
