"""The ``g6`` console script (and ``python -m g6``). Loading the commands' modules takes most of a second; a Ctrl-C
then ends as a Ctrl-C anywhere else in g6 does (``g6: interrupted`` on stderr, exit 130), never with a traceback.
``g6 mcp`` is the exception: a server an MCP client starts and stops, it counts SIGINT and SIGTERM from here on
(``g6.mcp.stop``) and ends with exit 0 on either, however early. This module must stay light: it is what runs
before that loading."""

from __future__ import annotations

import sys

# the group's options that take a value (``g6 --home DIR mcp``): what follows one is not the command
_VALUED = frozenset({"--home"})


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` (without the program) names: its first word past the group's own options."""
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in _VALUED:
            skip = True
        elif a == "--":
            return None
        elif not a.startswith("-"):
            return a
    return None


def main() -> None:
    if command_named(sys.argv[1:]) == "mcp":
        from g6.mcp.stop import install_early

        install_early()
    try:
        from g6.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("g6: interrupted\n")
        sys.exit(130)
    run()
