"""`g6 --help` lists the commands by task, as `git --help` does: every command in exactly one section."""

from __future__ import annotations

import re

from click.testing import CliRunner

from g6.cli import cli
from g6.cli.app import COMMAND_SECTIONS


def test_every_command_is_in_exactly_one_section() -> None:
    """A new command not placed in COMMAND_SECTIONS fails here (it would show under "Other commands")."""
    placed = [n for _, names in COMMAND_SECTIONS for n in names]
    assert len(placed) == len(set(placed)), "a command is in two sections"
    missing = sorted(set(cli.commands) - set(placed))
    assert missing == [], f"commands in no section of g6.cli.app.COMMAND_SECTIONS: {missing}"


def test_help_shows_the_sections_in_order() -> None:
    out = CliRunner().invoke(cli, ["--help"]).output
    titles = re.findall(r"^(\S[^:\n]*):$", out, re.M)
    assert titles[-len(COMMAND_SECTIONS):] == [t for t, _ in COMMAND_SECTIONS]
    assert "Other commands" not in out and "\nCommands:" not in out
    listed = re.findall(r"^  ([a-z][a-z-]*) {2,}", out.split(COMMAND_SECTIONS[0][0] + ":", 1)[1], re.M)
    assert listed[:5] == ["demo", "fetch", "cite", "recheck", "bundle"]  # start here, not alphabetical
    assert sorted(listed) == sorted(cli.commands)  # each once


def test_a_command_left_out_is_still_listed() -> None:
    """The fallback section: a command missing from the table is not hidden from users."""
    import click

    @click.command("zz-new")
    def new() -> None:
        """A new command."""

    cli.add_command(new)
    try:
        out = CliRunner().invoke(cli, ["--help"]).output
        assert "Other commands:" in out and "zz-new" in out
    finally:
        del cli.commands["zz-new"]
