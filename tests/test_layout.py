"""Packaging guards: every package folder is listed, no bare top-level names leak, layers hold."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import g6

ROOT = Path(__file__).resolve().parent.parent
CARD = {"ledger": "g6.ledger", "adapters": "g6.adapters", "store": "g6.store", "schemas": "g6.schemas"}


def test_every_package_folder_is_listed_in_pyproject() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {"g6"}
    for folder, dotted in CARD.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((dotted, *rel)))
        assert cfg["package-dir"][dotted] == folder
    for init in (ROOT / "src" / "g6").rglob("__init__.py"):  # subpackages of g6 itself (g6.knowledge, g6.core)
        rel = init.parent.relative_to(ROOT / "src" / "g6").parts
        found.add(".".join(("g6", *rel)))
    assert found == listed


def test_no_bare_card_names_are_imported() -> None:
    for mod in pkgutil.walk_packages(g6.__path__, "g6."):
        if not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
    for name in ("g6.store", "g6.ledger", "g6.adapters", "g6.schemas"):
        importlib.import_module(name)
    leaked = set(CARD) & set(sys.modules)
    assert not leaked, f"bare top-level modules imported: {leaked}"


def test_store_and_ledger_do_not_import_httpx() -> None:
    code = "import sys, g6.store, g6.ledger; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_schemas_ship_as_package_data() -> None:
    from g6.schemas import load

    for name in ("receipt.v1", "fetch-result.v1", "ledger-verify.v1", "search-result.v1", "manifest.v1",
                 "recheck-report.v1", "fetch-result.runx.v1"):
        assert load(name)["$schema"].startswith("https://json-schema.org/")
