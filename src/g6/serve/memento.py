"""(to be written) the memento routes of g6 serve."""

from __future__ import annotations

from typing import Any

from starlette.routing import BaseRoute


def routes(reader: Any, **options: Any) -> list[BaseRoute]:
    return []
