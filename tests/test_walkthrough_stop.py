"""The servers the README starts with `&` say how to stop them there: Ctrl-C cannot reach a background job,
so each line that says it runs "until Ctrl-C" also names `kill PID`, with its PID (the README said "Ctrl-C
stops it" of `g6 demo --serve … &`). `g6 demo --serve` is tested in tests/test_readme_examples.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _until(proc: subprocess.Popen[str], start: str) -> str:
    assert proc.stderr is not None
    for line in proc.stderr:  # bounded by the server: it prints this line once it listens, or ends
        if line.startswith(start):
            return line.rstrip("\n")
    raise AssertionError(f"no line starting {start!r} (exit {proc.wait(30)})")


def test_the_tsa_says_kill_with_its_pid_and_stops_on_it(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "tsa.py"), "--port", "0", "--state",
                             str(tmp_path / "tsa"), "--print-env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        line = _until(proc, "running on 127.0.0.1")
        assert line == (f"running on 127.0.0.1 until Ctrl-C, or `kill {proc.pid}` (its PID) when it runs in the "
                        "background")
        assert proc.stdout is not None and proc.stdout.readline().startswith("export ")
        proc.send_signal(signal.SIGTERM)  # what that `kill` sends
        assert proc.wait(30) == 0
        assert "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_g6_serve_says_kill_with_its_pid(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")} | {"G6_HOME": str(tmp_path / "home")}
    init = subprocess.run([sys.executable, "-m", "g6", "keys", "init"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert init.returncode == 0, init.stderr
    proc = subprocess.Popen([sys.executable, "-m", "g6", "serve", "--port", "0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = _until(proc, "g6: serving ")
        assert line.endswith(f"(Ctrl-C stops it, or `kill {proc.pid}` when it runs in the background)"), line
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
