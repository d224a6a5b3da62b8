"""Ctrl-C while ``g6`` loads its commands (most of a second, before click runs) used to print a KeyboardInterrupt
traceback and end by the signal (a new user's finding); now it ends as every Ctrl-C in g6 does: ``g6:
interrupted`` on stderr, exit 130. The interrupt is raised at the import itself (no timing): the console script and
``python -m g6`` both go through ``g6.console``."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

INTERRUPTED_AT_IMPORT = """
import builtins, runpy, sys
real = builtins.__import__
def interrupting(name, *args, **kwargs):
    if name == "g6.cli" or name.startswith("g6.cli."):
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = interrupting
sys.argv = ["g6", "ledger", "verify"]
if sys.argv[0] and {how!r} == "module":
    runpy.run_module("g6", run_name="__main__")
else:
    from g6.console import main
    main()
"""


@pytest.mark.parametrize("how", ["script", "module"])
def test_ctrl_c_while_the_commands_load_is_one_line_and_exit_130(how: str) -> None:
    p = subprocess.run([sys.executable, "-c", INTERRUPTED_AT_IMPORT.format(how=how)], capture_output=True,
                       text=True, timeout=120)
    assert (p.returncode, p.stderr, p.stdout) == (130, "g6: interrupted\n", ""), p.stderr


def test_the_console_script_is_g6_console() -> None:
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "g6"]
    assert script.value == "g6.console:main"


def test_g6_console_loads_nothing_heavy() -> None:
    """What runs before the guard is in place: the package's light modules only."""
    code = "import sys; import g6.console; print(sorted(m for m in sys.modules if m.startswith(('g6', 'click'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "['g6', 'g6.console', 'g6.errors']", out
