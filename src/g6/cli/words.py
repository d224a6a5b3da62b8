"""Counts as a person reads them: ``1 receipt``, ``2 receipts``, ``0 entries``.

Every count a command prints in a sentence goes through :func:`counted`, so that no line says
"1 citations" or hedges with a plural in brackets (tests/cli/test_words.py checks the command modules)."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` (with thousands separators: ``10,000``) and the noun in the number it takes: ``plural`` when the
    noun does not take a plain ``s``."""
    return f"{n:,} {noun if n == 1 else (plural if plural is not None else noun + 's')}"
