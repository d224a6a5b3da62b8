"""g6-evidence: a content-addressed evidence store and signed receipt ledger.

The public surface is small: ``g6.store.BlobStore``, ``g6.ledger.Ledger`` / ``Receipt`` /
``SigningKey``, ``g6.adapters.CheckedClient`` and ``g6.fetch.capture`` (fetch -> store -> ledger).
This module must stay light: it imports no network library.
"""

from g6.errors import G6Error

__version__ = "0.1.0"
TOOL_NAME = "g6-evidence"

__all__ = ["G6Error", "TOOL_NAME", "__version__"]
