"""An unreadable folder or file in the store is a blob verdict (exit 1), never an internal error (exit 70);
issue 27.

How the read is made to fail: ``chmod 000`` on the folder or file. Root ignores permissions, so when the
tests run as root the home is copied to a folder every user may traverse, given to the unprivileged uid
65534 (``nobody``), and each command runs in a forked child that drops to that uid (``os.setgid``,
``os.setgroups([])``, ``os.setuid``) before it runs the command in-process with click's runner: the
kernel then refuses the reads (EACCES) exactly as it would for any user. (The child cannot ``exec`` a new
interpreter, which lives under ``/root``; what the command imports lazily is imported first, by the same
command run once on the untouched home.) Not as root, the commands simply run as the user, for whom
``chmod 000`` already makes the reads fail.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from g6.cli import cli

NOBODY = 65534


def _invoke(home: Path, *args: str) -> dict[str, Any]:
    r = CliRunner().invoke(cli, ["--home", str(home), *args])
    return {"exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr}


def as_other_user(home: Path, *args: str) -> dict[str, Any]:
    """``g6 --home HOME ARGS`` as a user permissions apply to (see the module's docstring)."""
    if os.geteuid() != 0:
        return _invoke(home, *args)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, run, report, and never return into pytest
        try:
            os.close(rfd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            out = json.dumps(_invoke(home, *args)).encode()
        except BaseException as e:  # noqa: BLE001 - reported to the parent as an internal error
            out = json.dumps({"exit_code": -1, "stdout": "", "stderr": f"child failed: {e!r}"}).encode()
        with os.fdopen(wfd, "wb") as w:
            w.write(out)
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as r:
        data = r.read()
    os.waitpid(pid, 0)
    return json.loads(data)


@pytest.fixture
def shared(ev: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The ``ev`` home (two fetched pages, one kept compressed, one raw) where the other user can reach it."""
    if os.geteuid() != 0:
        yield ev
        return
    base = Path(tempfile.mkdtemp(prefix="g6-unreadable-"))
    try:
        base.chmod(0o755)
        home = base / "h"
        shutil.copytree(ev["home"], home, symlinks=True)
        for dirpath, dirnames, filenames in os.walk(home):
            for name in (dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)):
                os.chown(name, NOBODY, NOBODY, follow_symlinks=False)
        moved = {k: home / Path(v).relative_to(ev["home"]) for k, v in ev.items()
                 if isinstance(v, Path) and Path(v).is_relative_to(ev["home"])}
        yield {**ev, **moved, "home": home}
    finally:
        for dirpath, dirnames, _ in os.walk(base):  # a folder left at 000 cannot be removed by its walk
            for n in dirnames:
                os.chmod(os.path.join(dirpath, n), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def _targets(ev: dict[str, Any]) -> dict[str, Path]:
    root = ev["big_path"].parents[3]
    small, big = ev["small"], ev["big"]
    b3 = small["blake3"].split(":", 1)[1]
    sha = small["sha256"].split(":", 1)[1]
    return {
        "the blake3 folder": root / "blake3",
        "an outer fan-out folder": ev["small_path"].parents[1],
        "an inner fan-out folder": ev["small_path"].parent,
        "a raw blob": ev["small_path"],
        "a compressed blob": ev["big_path"],
        "a meta file": root / "meta" / b3[:2] / f"{b3}.json",
        "a meta fan-out folder": root / "meta" / b3[:2],
        "the meta folder": root / "meta",
        "the sha256 index folder": root / "sha256",
        "a sha256 index fan-out folder": root / "sha256" / sha[:2],
        "a sha256 index entry": root / "sha256" / sha[:2] / sha,
        "a compressed blob's meta": root / "meta" / big["blake3"].split(":", 1)[1][:2],
    }


TARGETS = list(_targets({"big_path": Path("/a/b/c/d/e"), "small_path": Path("/a/b/c/d/f"),
                         "small": {"blake3": "blake3:" + "ab" * 32, "sha256": "sha256:" + "cd" * 32},
                         "big": {"blake3": "blake3:" + "ef" * 32}}))


def _warm_up(home: Path) -> None:
    """Each command once on the untouched home (as this user): it passes, and whatever it imports
    lazily is imported before a child drops its privileges."""
    for args in (("blob", "verify"), ("ledger", "verify"), ("blob", "verify", "--json"),
                 ("ledger", "verify", "--json"), ("blob", "gc", "--dry-run")):
        r = _invoke(home, *args)
        assert r["exit_code"] == 0, r


def _no_internal_error(r: dict[str, Any], what: str) -> None:
    text = r["stdout"] + r["stderr"]
    assert r["exit_code"] == 1, f"{what}: exit {r['exit_code']}: {text}"
    assert "internal error" not in text and "Traceback" not in text, f"{what}: {text}"


@pytest.mark.parametrize("target", TARGETS)
def test_an_unreadable_part_of_the_store_is_a_blob_verdict(shared: dict[str, Any], target: str) -> None:
    _warm_up(shared["home"])
    path = _targets(shared)[target]
    mode = stat.S_IMODE(path.lstat().st_mode)
    path.chmod(0)
    try:
        r = as_other_user(shared["home"], "blob", "verify", "--json")
        _no_internal_error(r, f"blob verify with {target} unreadable")
        report = json.loads(r["stdout"])
        assert not report["ok"] and any("cannot be read" in b["detail"] for b in report["bad"]), report
        r = as_other_user(shared["home"], "ledger", "verify", "--json")
        _no_internal_error(r, f"ledger verify with {target} unreadable")
        assert not json.loads(r["stdout"])["checks"]["blob"]["ok"], r["stdout"]
        r = as_other_user(shared["home"], "ledger", "verify")
        _no_internal_error(r, f"ledger verify (text) with {target} unreadable")
        assert "blob       FAILED" in r["stdout"], r["stdout"]
        r = as_other_user(shared["home"], "blob", "gc", "--dry-run")  # collects nothing around a hole
        text = r["stdout"] + r["stderr"]
        assert r["exit_code"] in (0, 1) and "internal error" not in text and "Traceback" not in text, text
        if "folder" in target and "meta" not in target and "sha256" not in target:
            assert r["exit_code"] == 1 and r["stderr"].startswith("g6: ") and "cannot be read" in r["stderr"], r
    finally:
        path.chmod(mode)
    assert as_other_user(shared["home"], "blob", "verify")["exit_code"] == 0  # readable again: whole again


@pytest.mark.parametrize("target", ["an inner fan-out folder", "a raw blob", "a sha256 index entry"])
def test_an_unreadable_blob_is_refused_by_blob_cat_in_one_line(shared: dict[str, Any], target: str) -> None:
    """(A raw blob whose meta alone cannot be read is still served, hashed against its name and the digest
    asked for, as a raw blob with no meta is: its meta is not needed to read it; ``blob verify`` fails it.)"""
    _warm_up(shared["home"])
    r = _invoke(shared["home"], "blob", "cat", shared["small"]["sha256"])
    assert r["exit_code"] == 0
    path = _targets(shared)[target]
    mode = stat.S_IMODE(path.lstat().st_mode)
    path.chmod(0)
    try:
        r = as_other_user(shared["home"], "blob", "cat", shared["small"]["sha256"])
    finally:
        path.chmod(mode)
    _no_internal_error(r, f"blob cat with {target} unreadable")
    assert r["stdout"] == "" and len(r["stderr"].splitlines()) == 1 and r["stderr"].startswith("g6: "), r
