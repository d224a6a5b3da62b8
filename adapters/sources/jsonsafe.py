"""Reading untrusted JSON replies: bytes in, a dict or a typed failure out."""

from __future__ import annotations

import json
from typing import Any


class JSONParseError(ValueError):
    pass


def parse_json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise JSONParseError(f"not JSON: {str(e)[:120]}") from None
    if not isinstance(data, dict):
        raise JSONParseError(f"expected a JSON object, got {type(data).__name__}")
    return data


def as_int(value: Any) -> int | None:
    """An integer that JSON really sent (bools are not counts)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
