"""`--home DIR` after the command (`g6 ledger verify --home DIR`) works as `g6 --home DIR ledger verify`."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from g6.cli import cli
from g6.home import EvidenceHome


def leaves(cmd: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    if isinstance(cmd, click.Group):
        return [leaf for name, sub in cmd.commands.items() for leaf in leaves(sub, (*path, name))]
    return [(path, cmd)]


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, list(args), env={"G6_HOME": None})
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def made(tmp_path: Path) -> Path:
    root = tmp_path / "h"
    ev = EvidenceHome(root, fsync=False)
    ev.keys.init()
    ev.close()
    code, _, err = run("--home", str(root), "ledger", "checkpoint")  # creates the ledger and its log id
    assert code == 0, err
    return root


def test_every_command_takes_home_after_its_name() -> None:
    missing = [" ".join(p) for p, c in leaves(cli) if not any("--home" in o.opts for o in c.params)]
    assert missing == []


@pytest.mark.parametrize("args", [("ledger", "verify"), ("ledger", "list"), ("keys", "show"), ("blob", "verify")])
def test_after_the_command_as_before(made: Path, args: tuple[str, ...]) -> None:
    before = run("--home", str(made), *args, "--json")
    after = run(*args, "--home", str(made), "--json")
    assert before[0] == after[0] == 0, after[2]
    assert json.loads(before[1]) == json.loads(after[1])


def test_the_home_given_is_the_one_used(made: Path, tmp_path: Path) -> None:
    """keys show against an empty folder fails (no key): so --home after the command is not ignored."""
    code, out, _ = run("keys", "show", "--json", "--home", str(made))
    assert code == 0 and json.loads(out)["signing"]["checkpoint_verifier_key"]
    code, _, err = run("keys", "show", "--home", str(tmp_path / "empty"))
    assert code != 0 and "g6:" in err


def test_twice_the_same_is_fine_twice_different_is_usage(made: Path, tmp_path: Path) -> None:
    assert run("--home", str(made), "ledger", "list", "--home", f"{made}/")[0] == 0
    code, _, err = run("--home", str(made), "ledger", "list", "--home", str(tmp_path / "other"))
    assert code == 2 and "--home given twice" in err and str(tmp_path / "other") in err


def test_demo_keeps_its_own_home_option() -> None:
    demo = cli.commands["demo"]
    assert [o.name for o in demo.params if "--home" in o.opts] == ["demo_home"]
