"""Published JSON Schemas of g6's JSON shapes (read with importlib.resources)."""

import json
from importlib import resources
from typing import Any


def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (e.g. ``"receipt.v1"``) as a dict."""
    return json.loads((resources.files("g6.schemas") / f"{name}.schema.json").read_text())
