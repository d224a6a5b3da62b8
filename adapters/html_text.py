"""``g6.adapters.html_text``, the import path docs/python-api.md named before the move: ``g6.adapters.html.text``."""

from g6.adapters.html.text import extract_html

__all__ = ["extract_html"]
