"""Signed receipts and the append-only, hash-chained ledger that holds them (SQLite or PostgreSQL).

The package face: what app code imports. Inside, the modules form one import DAG (a test checks it):
value and crypto modules (verdict, receipts, keys, note, merkle, proofs, chain) at the bottom, then the
backend protocol (``backends.rows``) and the stored tree, the backends (``backends.sqlite``, ``backends.postgres``),
the checks (``verification``: kept, verify_ranges, verify_blobs, verify, with the key timeline of keyring and the
row rules of row_rules), the log written once over the protocol (log), and opening by URL (``backends.open``).
What lets others check the log (witnesses' cosignatures and policies, RFC 3161 timestamps, tiles) is
``g6.ledger.transparency``, over the value modules.
"""

from g6.ledger.backends.open import CopyReport, PostgresLedger, copy_ledger, open_ledger, trust_key, trusted_keys
from g6.ledger.chain import Check, LedgerEntry, LedgerVerifyReport
from g6.ledger.keyring import KeyTimeline, key_entry
from g6.ledger.keys import KeyDir, SigningKey, VerifyKey
from g6.ledger.log import Ledger
from g6.ledger.note import Checkpoint, NoteError
from g6.ledger.proofs import (
                              ConsistencyProof,
                              InclusionProof,
                              ProofReport,
                              verify_consistency_proof,
                              verify_inclusion_proof,
)
from g6.ledger.receipts import AllowlistDecision, Hop, Receipt, Signature
from g6.ledger.verification.verify import Trust

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
    "KeyTimeline",
    "Ledger",
    "LedgerEntry",
    "LedgerVerifyReport",
    "Receipt",
    "Signature",
    "SigningKey",
    "Trust",
    "VerifyKey",
    "copy_ledger",
    "key_entry",
    "open_ledger",
    "trust_key",
    "trusted_keys",
    "verify_consistency_proof",
    "verify_inclusion_proof",
]
