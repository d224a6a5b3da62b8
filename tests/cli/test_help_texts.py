"""Help texts match the commands: every option has help, and each group's text names exactly its subcommands."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from g6.cli import cli


def walk(cmd: click.Command, path: tuple[str, ...] = ("g6",)) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from walk(sub, (*path, name))


COMMANDS = list(walk(cli))
GROUPS = [(p, c) for p, c in COMMANDS if isinstance(c, click.Group) and p != ("g6",)]
LEAF_NAMES = {p[-1] for p, c in COMMANDS if not isinstance(c, click.Group)}  # group names are also plain words


def test_the_walk_sees_the_tree() -> None:
    """The walks below cover every command (so they can fail), not an empty list."""
    names = {" ".join(p) for p, _ in COMMANDS}
    assert {"g6 ledger prove", "g6 manifest sign", "g6 keys trust", "g6 blob gc", "g6 export wacz"} <= names
    assert len(COMMANDS) > 35


@pytest.mark.parametrize(("path", "cmd"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_has_help(path: tuple[str, ...], cmd: click.Command) -> None:
    missing = [p.opts[0] for p in cmd.params
               if isinstance(p, click.Option) and "--help" not in p.opts and not (p.help or "").strip()]
    assert missing == [], f"{' '.join(path)}: options without help: {missing}"
    assert (cmd.help or "").strip(), f"{' '.join(path)} has no help text"


@pytest.mark.parametrize(("path", "group"), GROUPS, ids=[" ".join(p) for p, _ in GROUPS])
def test_group_help_names_exactly_its_subcommands(path: tuple[str, ...], group: click.Group) -> None:
    """`manifest --help` names no `show` that does not exist; `ledger --help` names all its subcommands."""
    r = CliRunner().invoke(cli, [*path[1:], "--help"], prog_name="g6")
    assert r.exit_code == 0, r.output
    text, _, listing = r.output.partition("Commands:")
    listed = {line.split()[0] for line in listing.splitlines() if line.startswith("  ") and line.split()}
    assert listed == set(group.commands)  # click's listing is the tree: the check below is on our words
    described = text.split("Options:")[0].partition("\n\n")[2]  # the group's own words, not its usage line
    words = set(re.findall(r"[a-z][a-z-]*", described))
    assert set(group.commands) <= words, f"{' '.join(path)}: its help does not name {set(group.commands) - words}"
    others = (words & LEAF_NAMES) - set(group.commands)
    assert others == set(), f"{' '.join(path)}: its help names commands it does not have: {others}"


def test_demo_home_after_the_command(tmp_path: Path) -> None:
    """`g6 demo --home DIR` is understood (as `g6 --home DIR demo` is): a home that is a file is refused by it."""
    (tmp_path / "f").write_text("x")
    r = CliRunner().invoke(cli, ["demo", "--home", str(tmp_path / "f")], prog_name="g6")
    assert r.exit_code == 2 and r.stderr.startswith("g6: --home ") and "is not a folder" in r.stderr
    assert "--home" in CliRunner().invoke(cli, ["demo", "--help"]).output


LISTED_IN = [(("g6",), cli), *GROUPS]  # every help that lists commands: `g6 --help` and each group's


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize(("path", "group"), LISTED_IN, ids=[" ".join(p) for p, _ in LISTED_IN])
def test_every_summary_in_a_listing_is_whole(path: tuple[str, ...], group: click.Group, width: int) -> None:
    """click cuts a summary taken from a docstring at the listing's width and adds "..." (`g6 --help` said
    "Fetch URL (or every URL in --input FILE)..."): each command's whole summary is shown, a sentence, on
    one line at 80 columns (wrapped, never cut, on a narrower terminal)."""
    r = CliRunner().invoke(cli, [*path[1:], "--help"], prog_name="g6", terminal_width=width)
    assert r.exit_code == 0, r.output
    listing = r.output.split("Options:", 1)[1].split("\n\n", 1)[1]  # the sections after the options
    assert "..." not in listing and "…" not in listing, listing
    flat = " ".join(listing.split())
    for name, sub in group.commands.items():
        summary = sub.get_short_help_str(limit=10_000)
        assert summary.endswith("."), f"{' '.join((*path, name))}: {summary!r} is not a sentence"
        assert f"{name} {summary}" in flat, f"{' '.join((*path, name))}: {summary!r} is not shown whole"
        if width == 80:
            assert any(line.split()[:1] == [name] and line.rstrip().endswith(summary)
                       for line in listing.splitlines()), f"{' '.join((*path, name))}: not on one line"
