"""``g6.ledger.policy``, the import path docs/python-api.md named before the move: ``g6.ledger.transparency.policy``."""

from g6.ledger.transparency.policy import parse_policy, read_policy

__all__ = ["parse_policy", "read_policy"]
