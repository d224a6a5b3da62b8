"""Browser tests: a real Chromium (skipped without one, failed without one under ``G6_REQUIRE_TOOLS``)."""

from __future__ import annotations

import sys
from pathlib import Path

# the tests here import their world as ``world``; ``pool``, a module's browser, is tests/conftest.py's
sys.path.insert(0, str(Path(__file__).resolve().parent))
