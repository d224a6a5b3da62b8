"""``g6.ledger.cosignature``, the import path docs/python-api.md named before the move:
``g6.ledger.transparency.cosignature``."""

from g6.ledger.transparency.cosignature import check_cosignatures, parse_cosigner_key, with_cosignatures

__all__ = ["check_cosignatures", "parse_cosigner_key", "with_cosignatures"]
