"""Browser tests: a real Chromium (skipped without one, failed without one under ``G6_REQUIRE_TOOLS``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from world import need_chromium  # noqa: E402

from g6.adapters.browser.pool import BrowserPool  # noqa: E402


@pytest.fixture(scope="module")
def pool() -> Iterator[BrowserPool]:
    """One locked-down browser for a module's captures (each in a context of its own)."""
    need_chromium()
    with BrowserPool(1) as p:
        yield p
