"""Every command of the click tree is documented: a page of README.md or docs/ names it in a heading
(``## `g6 ledger list …` and `g6 ledger verify …` ``, ``g6 manifest sign|verify``) or runs it in a console
example (``$ g6 --home X ledger verify``)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import docs_examples as rx  # noqa: E402

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*)$")
GLOBAL_FLAGS = {"-q", "--quiet", "--debug"}  # the `g6` group's own options, before a command
GLOBAL_WITH_VALUE = {"--home"}
# `g6` where a shell command starts: after ;, |, &, (, $( or a backtick, and any VAR=value words
G6 = re.compile(r"(?:^|[;&|(`\n]|\$\()\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:python3? -m )?g6(?=\s)")


def command_paths(group: click.Group, prefix: tuple[str, ...] = ("g6",)) -> Iterator[tuple[str, ...]]:
    """Every command and group under ``group``, as the words one types (``("g6", "ledger", "verify")``)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        yield (*prefix, name)
        if isinstance(cmd, click.Group):
            yield from command_paths(cmd, (*prefix, name))


def named(group: click.Group, words: list[str]) -> set[tuple[str, ...]]:
    """The commands ``g6 WORDS…`` names: global options skipped, ``a|b`` read as either."""
    i = 0
    while i < len(words) and (words[i] in GLOBAL_FLAGS or words[i] in GLOBAL_WITH_VALUE
                              or words[i].startswith("--home=")):
        i += 2 if words[i] in GLOBAL_WITH_VALUE else 1
    found: set[tuple[str, ...]] = set()
    level: list[tuple[tuple[str, ...], click.Command]] = [(("g6",), group)]
    for word in words[i:]:
        following = []
        for path, cmd in level:
            if not isinstance(cmd, click.Group):
                continue
            ctx = click.Context(cmd)
            for alt in word.strip("`;)|&").split("|"):
                sub = cmd.get_command(ctx, alt)
                if sub is not None:
                    following.append(((*path, alt), sub))
        if not following:
            break
        found |= {path for path, _ in following}
        level = following
    return found


def documented(group: click.Group, pages: Iterable[tuple[str, str]]) -> set[tuple[str, ...]]:
    """The commands the pages name in a heading's inline code or run in a console example."""
    found: set[tuple[str, ...]] = set()
    for name, text in pages:
        in_code = False
        for line in text.split("\n"):
            if FENCE.match(line):
                in_code = not in_code
                continue
            m = None if in_code else HEADING.match(line)
            if m:
                for span in re.findall(r"`([^`]+)`", m[1]):
                    if span.startswith("g6 "):
                        found |= named(group, span.split()[1:])
        for block in rx.parse(text, name):
            for command in block.commands:
                for g6 in G6.finditer(command.text):
                    found |= named(group, command.text[g6.end():].split())
    return found


def undocumented(group: click.Group, pages: Iterable[tuple[str, str]]) -> list[str]:
    docs = documented(group, pages)
    return [" ".join(path) for path in command_paths(group)
            if path not in docs and not any(d[:len(path)] == path for d in docs)]


def test_every_command_is_documented() -> None:
    from g6.cli import cli

    pages = [(rx.page_name(p), p.read_text(encoding="utf-8")) for p in rx.doc_pages()]
    missing = undocumented(cli, pages)
    assert missing == [], "commands no page of README.md or docs/ documents in a heading or a console example: " \
                          + ", ".join(missing)


def test_the_tree_is_walked_to_its_leaves() -> None:
    from g6.cli import cli

    paths = {" ".join(p) for p in command_paths(cli)}
    assert {"g6 ledger", "g6 ledger verify", "g6 blob copy", "g6 manifest sign", "g6 verify-proof"} <= paths
    assert len(paths) > 35


def test_an_undocumented_command_is_named() -> None:
    @click.group()
    @click.option("--home")
    @click.option("-q", "--quiet", is_flag=True)
    def g6(home: str | None, quiet: bool) -> None: ...

    @g6.group()
    def ledger() -> None: ...

    for sub in ("verify", "list", "copy", "prove"):
        ledger.command(sub)(lambda: None)

    @g6.group()
    def keys() -> None: ...

    keys.command("show")(lambda: None)
    keys.command("trust")(lambda: None)
    g6.command("fetch")(lambda: None)
    g6.command("hidden", hidden=True)(lambda: None)

    page = ("## `g6 ledger list [--kind K]` and `g6 ledger verify|prove`\n\n"
            "text that says g6 ledger copy and `g6 keys trust` outside a heading or an example\n\n"
            "<!-- example: s -->\n```console\n$ g6 --home /tmp/x -q keys show | head; echo g6 fetch\nok\n```\n")
    assert undocumented(g6, [("page.md", page)]) == ["g6 fetch", "g6 keys trust", "g6 ledger copy"]
    page += "<!-- example: s -->\n```console\n$ R=$(python3 -m g6 fetch x); A=1 g6 ledger copy --to y\n```\n"
    assert undocumented(g6, [("page.md", page)]) == ["g6 keys trust"]
