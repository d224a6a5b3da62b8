"""``g6.adapters.interstitial``, the import path docs/python-api.md named before the move:
``g6.adapters.html.interstitial``."""

from g6.adapters.html.interstitial import WallCheck, detect

__all__ = ["WallCheck", "detect"]
