"""The whole exception tree of g6, in one place.

    G6Error
    ├── StoreError
    │   ├── BlobNotFound
    │   ├── BadDigest            (a digest string that is not ``algo:hex`` of the right length)
    │   └── StoreBackendError    (the object store is down or refuses: names it and what to check)
    ├── LedgerError
    │   ├── SigningKeyError      (no signing key, an unreadable or unknown key)
    │   ├── ReceiptNotFound
    │   └── LedgerBackendError   (the ledger database is down or refuses: names it and what to check)
    ├── ConfigError              (a bad setting in the environment or ``$G6_HOME/.env``)
    └── InputError               (bad input from a caller: a URL, a flag, a file)

Fetch failures are *not* exceptions: a fetch always returns a typed outcome (see
``g6.adapters.outcomes``), because a failure is evidence too and gets a receipt.
"""


class G6Error(Exception):
    """Base of every error g6 raises on purpose."""

    code = "G6_E_INTERNAL"


class StoreError(G6Error):
    code = "G6_E_STORE"


class BlobNotFound(StoreError):
    code = "G6_E_STORE_BLOB_NOT_FOUND"


class BadDigest(StoreError):
    code = "G6_E_STORE_BAD_DIGEST"


class StoreBackendError(StoreError):
    code = "G6_E_STORE_BACKEND"


class LedgerError(G6Error):
    code = "G6_E_LEDGER"


class LedgerBackendError(LedgerError):
    code = "G6_E_LEDGER_BACKEND"


class SigningKeyError(LedgerError):
    code = "G6_E_LEDGER_KEY"


class ReceiptNotFound(LedgerError):
    code = "G6_E_LEDGER_RECEIPT_NOT_FOUND"


class ConfigError(G6Error):
    code = "G6_E_CONFIG"


class InputError(G6Error):
    code = "G6_E_INPUT"
