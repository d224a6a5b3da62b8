"""tests/children.py: what a test starts and signals gets SIGINT and SIGTERM at their defaults though the test
command was started with them ignored, and nothing it started (children of children included) outlives the
test, whether it passes, fails, or passes leaving something running (then it fails)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.children import Children, running_in_group

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.signals

# a process that ignores SIGINT and SIGTERM and starts one that does too; prints both PIDs, then waits for ever
STUBBORN = """
import os, signal, time
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
kid = os.fork()
if kid == 0:
    while True:
        time.sleep(3600)
print(os.getpid(), kid, flush=True)
while True:
    time.sleep(3600)
"""


def _ignored(status: str) -> set[signal.Signals]:
    mask = int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.M)[1], 16)  # type: ignore[index]
    return {s for s in (signal.SIGINT, signal.SIGTERM) if mask & (1 << (s - 1))}


def test_a_child_gets_sigint_and_sigterm_at_their_defaults_when_the_tests_ignore_them() -> None:
    """As when the test command runs in the background: this process ignores both for the test's time. A
    child started as usual inherits that (what made the Ctrl-C tests fail); one started by Children does
    not. ``cat`` sets no handler of its own, so its /proc status shows what it was given."""
    before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        usual = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True, timeout=60)
        with Children() as kids:
            p = kids.start(["cat", "/proc/self/status"], stdout=subprocess.PIPE, text=True)
            status = p.communicate(timeout=60)[0]
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    assert _ignored(usual.stdout) == {signal.SIGINT, signal.SIGTERM}  # the premise: it is inherited
    assert _ignored(status) == set()
    assert p.returncode == 0


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _inner_pytest(tmp_path: Path, body: str) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """``body`` as a test file run by a pytest of its own (with tests/children.py as its plugin); the PIDs its
    test wrote to ``pids``."""
    test = tmp_path / "test_inner.py"
    test.write_text(textwrap.dedent(body).replace("STUBBORN", repr(STUBBORN)))
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.children", "-p", "no:cacheprovider", "-q",
                        "-c", os.devnull, "--rootdir", str(tmp_path), str(test)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return r, [int(x) for x in (tmp_path / "pids").read_text().split()]


INNER = """
    import subprocess, sys
    from pathlib import Path

    def test_inner(children):
        p = children.start([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True)
        Path(__file__).with_name("pids").write_text(p.stdout.readline())
        children.grace = 0.5
        assert {ENDING}
"""


def test_what_a_failing_test_started_is_killed_with_its_group(tmp_path: Path) -> None:
    r, pids = _inner_pytest(tmp_path, INNER.replace("{ENDING}", "False, 'fails here'"))
    assert r.returncode == 1 and "1 failed" in r.stdout and "still running" not in r.stdout, r.stdout + r.stderr
    assert len(pids) == 2 and not [p for p in pids if _alive(p)]
    assert running_in_group(pids[0]) == []


def test_a_test_that_passes_leaving_a_process_running_fails_and_the_process_is_killed(tmp_path: Path) -> None:
    r, pids = _inner_pytest(tmp_path, INNER.replace("{ENDING}", "True"))
    assert r.returncode == 1 and "1 passed, 1 error" in r.stdout, r.stdout + r.stderr
    assert "still running after the test: " in r.stdout and f"{pids[0]} " in r.stdout
    assert len(pids) == 2 and not [p for p in pids if _alive(p)]


def test_a_test_whose_processes_end_passes(tmp_path: Path) -> None:
    """The other side: a process stopped by the test (the group ends) leaves nothing to report."""
    r, _ = _inner_pytest(tmp_path, """
        import os, signal, subprocess, sys
        from pathlib import Path

        def test_inner(children):
            p = children.start([sys.executable, "-c", "import time; print(1, flush=True); time.sleep(3600)"],
                               stdout=subprocess.PIPE, text=True)
            Path(__file__).with_name("pids").write_text(str(p.pid))
            assert p.stdout.readline() == "1\\n"
            os.killpg(p.pid, signal.SIGINT)
            assert p.wait(60) != 0
    """)
    assert r.returncode == 0 and "1 passed" in r.stdout and "error" not in r.stdout, r.stdout + r.stderr


def _prefix(ci: list[str], name: str) -> str:
    (line,) = [line for line in ci if line.startswith(f"{name}=(python3 -c '")]
    return line.split("'")[1]


def test_ci_runs_the_suite_with_sigint_ignored_and_the_signal_tests_again_with_its_default() -> None:
    """.ci/run's steps: the whole suite started as a CI runner starts it (SIGINT ignored, checked here on ``cat``),
    then the tests that send signals again with SIGINT at its default; each run tagged and its tag checked
    afterwards for anything left running."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ignoring, default = _prefix(ci, "SIGINT_IGNORED"), _prefix(ci, "SIGINT_DEFAULT")
    for code, ignored in ((ignoring, True), (default, False)):
        before = signal.signal(signal.SIGINT, signal.SIG_DFL if ignored else signal.SIG_IGN)  # the opposite first
        try:
            status = subprocess.run([sys.executable, "-c", code, "cat", "/proc/self/status"], capture_output=True,
                                    text=True, timeout=60).stdout
        finally:
            signal.signal(signal.SIGINT, before)
        assert (signal.SIGINT in _ignored(status)) is ignored
    assert 'G6_TEST_RUN="suite-$$" "${SIGINT_IGNORED[@]}" python3 scripts/run_tests.py' in ci
    assert '.venv/bin/python tests/children.py "suite-$$" || exit 1' in ci
    assert 'G6_TEST_RUN="signals-$$" "${SIGINT_DEFAULT[@]}" python3 scripts/run_tests.py -m signals || exit 1' in ci
    assert '.venv/bin/python tests/children.py "signals-$$" || exit 1' in ci
