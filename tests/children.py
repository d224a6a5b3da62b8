"""The processes a test sends signals to (``@pytest.mark.signals``), started through :class:`Children` (the
``children`` fixture, or ``with Children() as c``): each with SIGINT and SIGTERM at their defaults, in a
process group of its own, and that whole group (workers, trackers, helpers it started) killed by its ID
with SIGKILL when the test ends, so that nothing a test started outlives it, pass or fail. A test that
passes but leaves one running fails (after a bounded wait for what was already ending).

Why the defaults: the test command started in the background (a CI runner, a shell script's ``cmd &``)
runs with SIGINT ignored, and an ignored signal stays ignored through fork and exec, so the Ctrl-C a test
sends a ``g6 fetch --processes`` batch would never arrive (Python keeps an inherited SIG_IGN).
``subprocess``'s ``restore_signals`` resets only SIGPIPE, SIGXFZ and SIGXFSZ, and ``preexec_fn`` is not safe
in a process with threads (each test's loopback servers are threads), so the child starts as a small Python
that resets both signals and then execs the command: the same PID, nothing else changed.

``python tests/children.py TAG`` (``.ci/run``) lists what is still running with ``G6_TEST_RUN=TAG`` in its
environment once a test run has ended, kills it by PID, and exits 1 if there was any.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

# seconds a test's processes have, after it ended, to end by themselves before they are called left behind
GRACE = 30.0
RESET_SIGNALS = ("import os, signal, sys\n"
                 "for s in (signal.SIGINT, signal.SIGTERM):\n"
                 "    signal.signal(s, signal.SIG_DFL)\n"
                 "signal.pthread_sigmask(signal.SIG_UNBLOCK, (signal.SIGINT, signal.SIGTERM))\n"
                 "os.execvp(sys.argv[1], sys.argv[1:])\n")


def _stat(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp…), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def running_in_group(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` that still run (a zombie has ended: only its parent's wait is
    missing)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(entry.name)) is not None:
            if int(stat[2]) == pgid and stat[0] != "Z":
                found.append(int(entry.name))
    return found


def shown(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"{pid} {cmd[:200]}"


class Children:
    """The processes one test started (:meth:`start`), each the leader of its own process group. ``grace``: the
    seconds they have, once the test passed, to end by themselves."""

    def __init__(self, grace: float = GRACE) -> None:
        self.procs: list[subprocess.Popen[Any]] = []
        self.grace = grace

    def start(self, cmd: Sequence[str | os.PathLike[str]], **popen: Any) -> subprocess.Popen[Any]:
        """``subprocess.Popen(cmd, **popen)`` with SIGINT and SIGTERM at their defaults and in a new session
        (its own process group, its PID the group's ID; ``os.killpg(p.pid, …)`` is a terminal's Ctrl-C)."""
        if popen.pop("start_new_session", True) is not True:
            raise ValueError("a child of Children always gets a session (and process group) of its own")
        proc = subprocess.Popen([sys.executable, "-S", "-c", RESET_SIGNALS, *map(os.fspath, cmd)],
                                start_new_session=True, **popen)
        self.procs.append(proc)
        return proc

    def end(self, grace: float = GRACE) -> list[str]:
        """Wait up to ``grace`` seconds in all for every group to end, then kill what is left of each by its
        group ID (SIGKILL) and reap the leaders. Returns what was left (PID and command line)."""
        deadline = time.monotonic() + grace
        left: list[str] = []
        for proc in self.procs:
            while (members := running_in_group(proc.pid)) and time.monotonic() < deadline:
                proc.poll()  # reaps the leader once it ended
                time.sleep(0.05)
            left += [shown(pid) for pid in members]
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(60)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        return left

    def __enter__(self) -> Children:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        left = self.end(grace=0 if exc_type is not None else self.grace)
        if left and exc_type is None:
            raise AssertionError("still running after the test: " + "; ".join(left))


def stopped_once_reached(children: Children, cmd: Sequence[str | os.PathLike[str]], reached: threading.Event,
                         release: threading.Event, sig: int = signal.SIGINT, wait: float = 120.0,
                         **popen: Any) -> tuple[int, str, str]:
    """Start ``cmd`` (text output captured), wait until ``reached`` is set (a loopback page holding the request
    sets it, so the stop falls in the middle of the work without any timing), send ``sig`` to its whole process
    group as a terminal's Ctrl-C does, then ``release`` the page. Its exit code, stdout and stderr."""
    proc = children.start(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    try:
        if not reached.wait(wait):
            raise AssertionError(f"{os.fspath(cmd[0])}… never reached the page it is stopped at")
        os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=wait)
    finally:
        release.set()
    return proc.returncode, out, err


PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Whether the test itself passed, for :func:`children` (a failed one gets no grace: the failure is
    the report, and what it left is killed at once)."""
    report = yield
    if report.when == "call":  # type: ignore[attr-defined]
        item.stash[PASSED] = report.passed  # type: ignore[attr-defined]
    return report


@pytest.fixture
def children(request: pytest.FixtureRequest) -> Iterator[Children]:
    """The processes a test starts and signals; killed by process group at its end (see :class:`Children`).
    tests/conftest.py imports it and :func:`pytest_runtest_makereport` (``-p tests.children`` elsewhere)."""
    kids = Children()
    yield kids
    passed = request.node.stash.get(PASSED, False)
    left = kids.end(kids.grace if passed else 0)
    if left and passed:
        pytest.fail("still running after the test: " + "; ".join(left), pytrace=False)


def left_running(tag: str) -> list[int]:
    """The processes whose environment has ``G6_TEST_RUN=tag`` (a test run's, and everything it started)."""
    mark = f"G6_TEST_RUN={tag}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                env = Path(entry.path, "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mark in env and (stat := _stat(entry.name)) is not None and stat[0] != "Z":
                found.append(int(entry.name))
    return found


def main(tag: str) -> int:
    deadline = time.monotonic() + GRACE
    while (left := left_running(tag)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left:
        print(f"left running: {shown(pid)}", file=sys.stderr)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
