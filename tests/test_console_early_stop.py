"""``g6 mcp`` counts SIGINT and SIGTERM from the console script's first line, before the CLI's modules load (most
of a second, seconds on a busy machine): a stop an MCP client sends then ends the server with exit 0 instead of
killing it by the signal, or being lost when the parent left SIGINT ignored. Any other command keeps Python's
Ctrl-C while it loads. Checked at the moment ``g6.cli`` is first imported: which signals the process catches then
(``/proc/self/status``: SigCgt), with no timing involved."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from g6.console import command_named

# stop the console script where it first imports g6.cli, and say which of SIGINT and SIGTERM it catches by then
PROBE = r"""
import importlib.abc, os, sys
class Probe(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "g6.cli":
            mask = next(int(l.split()[1], 16) for l in open("/proc/self/status") if l.startswith("SigCgt:"))
            print(" ".join(str(s) for s in (2, 15) if mask & (1 << (s - 1))), flush=True)
            os._exit(0)
        return None
sys.meta_path.insert(0, Probe())
sys.argv = ["g6", *sys.argv[1:]]
from g6.console import main
main()
"""


def caught_when_the_cli_loads(*argv: str) -> set[int]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return {int(s) for s in out.stdout.split()}


@pytest.mark.parametrize("argv", [("mcp",), ("-q", "mcp"), ("--home", "/tmp/x", "mcp"), ("--debug", "mcp", "--help")])
def test_g6_mcp_catches_both_stop_signals_before_the_cli_loads(argv: tuple[str, ...]) -> None:
    assert caught_when_the_cli_loads(*argv) == {signal.SIGINT, signal.SIGTERM}


@pytest.mark.parametrize("argv", [("fetch", "mcp"), ("--home", "mcp", "fetch", "http://x/"), ("--", "mcp"), ()])
def test_other_commands_keep_pythons_ctrl_c_while_loading(argv: tuple[str, ...]) -> None:
    assert signal.SIGTERM not in caught_when_the_cli_loads(*argv)


def test_the_command_is_the_first_word_past_the_groups_options() -> None:
    assert command_named(["--home", "mcp", "report", "check"]) == "report"
    assert command_named(["-q", "--debug", "mcp"]) == "mcp"
    assert command_named(["--home=/x", "mcp"]) == "mcp"
    assert command_named([]) is None and command_named(["--", "mcp"]) is None
