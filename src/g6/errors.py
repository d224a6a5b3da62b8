"""The whole exception tree of g6, in one place.

    G6Error
    ├── StoreError
    │   ├── BlobNotFound
    │   └── BadDigest            (a digest string that is not ``algo:hex`` of the right length)
    ├── LedgerError
    │   ├── SigningKeyError      (no signing key, an unreadable or unknown key)
    │   └── ReceiptNotFound
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


class LedgerError(G6Error):
    code = "G6_E_LEDGER"


class SigningKeyError(LedgerError):
    code = "G6_E_LEDGER_KEY"


class ReceiptNotFound(LedgerError):
    code = "G6_E_LEDGER_RECEIPT_NOT_FOUND"


class ConfigError(G6Error):
    code = "G6_E_CONFIG"


class InputError(G6Error):
    code = "G6_E_INPUT"


class BundleError(InputError):
    """A bundle that cannot be made or read: a bad manifest given to ``g6 bundle``, an unreadable zip."""

    code = "G6_E_BUNDLE"


class BundleMemberError(BundleError):
    """One member of a bundle is unsafe or does not match what ``bundle.json`` declares for it."""

    code = "G6_E_BUNDLE_MEMBER"
