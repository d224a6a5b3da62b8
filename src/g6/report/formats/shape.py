"""Typed access to a parsed JSON report: each getter names the path it read in the error it raises, so a
report of the wrong shape is one clear ``ReportMalformed`` line and never a ``KeyError`` or ``TypeError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from g6.errors import ReportMalformed


def at(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


class Shape:
    """Getters over one report, all raising ``ReportMalformed("NAME: at PATH: …")``."""

    def __init__(self, name: str, fmt: str) -> None:
        self.name = name
        self.format = fmt

    def fail(self, where: str, what: str) -> ReportMalformed:
        article = "an" if self.format[:1].lower() in "aeiou" else "a"
        return ReportMalformed(f"{self.name}: not {article} {self.format} report: at {where or 'the top'}: {what}",
                               where)

    def obj(self, value: object, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected an object, found {_kind(value)}")
        return value

    def arr(self, value: object, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, found {_kind(value)}")
        return value

    def get(self, parent: Mapping[str, Any], where: str, *keys: str, required: bool = True) -> Any:
        """The first of ``keys`` present in ``parent`` (several spellings: ``groundingMetadata`` and
        ``grounding_metadata``)."""
        for k in keys:
            if k in parent:
                return parent[k]
        if required:
            raise self.fail(at(where, keys[0]), "missing")
        return None

    def text(self, value: object, where: str, *, optional: bool = False) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, found {_kind(value)}")
        return value

    def index(self, value: object, where: str, *, default: int | None = None) -> int:
        """A non-negative integer (JSON ``1.0`` is refused: offsets are whole)."""
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(where, f"expected a whole number, found {_kind(value)}")
        if value < 0:
            raise self.fail(where, f"expected a whole number of 0 or more, found {value}")
        return value


def type_of(value: object) -> str | None:
    """A JSON object's ``type`` (or the first of its types) when it is a string, else None."""
    if not isinstance(value, Mapping):
        return None
    t = value.get("type", value.get("@type"))
    if isinstance(t, list) and t:
        t = t[0]
    return t if isinstance(t, str) else None
