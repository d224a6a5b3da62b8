"""Run ``g6 serve`` as a real subprocess on a free loopback port (``--port 0``, the port read from its
stderr line), stopped by PID. No port is chosen here, so nothing depends on a port being free.

:func:`started` is the general part (any server that prints the line it serves on); ``bench/serve.py``
runs its servers with it too. With ``clean=True`` (what :func:`served`, and so every ``g6 serve`` test,
asks) the server must also *stop* cleanly: after the signal it exits 0 and everything it wrote on stderr
after its ready line is empty (no traceback, no ``Application shutdown failed``, no ``interrupted``). The
tests read that stderr only after the process ended, so a shutdown that goes wrong cannot pass unseen."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

SERVING = re.compile(r"serving .* on (http://\S+/) ")
STOP_WAIT = 60.0  # seconds a stopped server has to exit before it is killed (SIGKILL, by PID) and the test fails
# exec'd in the child before the server: SIGINT ignored, as a CI runner, `nohup` or a shell's `cmd &` leaves it
# (the server inherits SIG_IGN, as with Popen's preexec_fn, which is not safe in a test process with threads)
IGNORING_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                   "os.execv(sys.argv[1], sys.argv[1:])")


def stop_process(proc: subprocess.Popen[str], how: signal.Signals) -> int | None:
    """Send ``how`` to ``proc`` (by its PID) and wait for it; the exit status, or None when it did not exit
    within :data:`STOP_WAIT` seconds (then it was killed)."""
    if proc.poll() is None:
        proc.send_signal(how)
    try:
        return proc.wait(timeout=STOP_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def assert_clean_stop(returncode: int | None, stderr: str, how: signal.Signals, what: str = "the server") -> None:
    """A server stopped by ``how`` exited 0 and wrote nothing more on stderr (``stderr``: what it wrote after
    its ready line, read once it had ended)."""
    assert returncode is not None, f"{what} did not stop within {STOP_WAIT:.0f} s of {how.name} (killed)"
    assert returncode == 0 and not stderr.strip(), \
        f"{what} stopped by {how.name}: exit {returncode}, stderr after it started:\n{stderr[-4000:]}"


@contextmanager
def started(cmd: Sequence[str], ready: re.Pattern[str], *, env: Mapping[str, str] | None = None,
            cwd: Path | None = None, stop: signal.Signals = signal.SIGTERM, clean: bool = False,
            sigint_ignored: bool = False) -> Iterator[re.Match[str]]:
    """``cmd`` as a subprocess for the block, then stopped by its PID with ``stop`` (SIGKILL after
    :data:`STOP_WAIT` seconds): the match of ``ready`` in the first line of its stderr that has one (where it
    serves). The lines are read as they come, a blocking read, so no timing is involved; a process that ends
    first raises ``RuntimeError`` with what it said. The rest of its stderr is read by a thread (so a chatty
    server never blocks on a full pipe) and, with ``clean``, checked once it has ended
    (:func:`assert_clean_stop`), unless the block itself failed. ``sigint_ignored`` starts it with SIGINT
    ignored. Its stdout is discarded."""
    full = [sys.executable, "-c", IGNORING_SIGINT, *cmd] if sigint_ignored else list(cmd)
    proc = subprocess.Popen(full, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rest: list[str] = []
    drain = threading.Thread(target=lambda: rest.extend(proc.stderr or ()), daemon=True)
    try:
        seen: list[str] = []
        assert proc.stderr is not None
        for line in proc.stderr:  # blocks until the line comes or the process ends: no timing involved
            seen.append(line)
            if m := ready.search(line):
                break
        else:
            raise RuntimeError(f"{' '.join(cmd[:6])} did not start (exit {proc.wait()}): {''.join(seen)[-2000:]}")
        drain.start()
        yield m
    except BaseException:
        stop_process(proc, stop)
        raise
    returncode = stop_process(proc, stop)
    drain.join(STOP_WAIT)  # EOF comes when the server and anything it started have closed the pipe
    if clean:
        assert not drain.is_alive(), f"{cmd[:6]}: something it started still holds its stderr open"
        assert_clean_stop(returncode, "".join(rest), stop, " ".join(cmd[:6]))


@contextmanager
def served(home: Path, *args: str, env: Mapping[str, str] | None = None, stop: signal.Signals = signal.SIGTERM,
           sigint_ignored: bool = False) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/``) of ``g6 --home HOME serve --port 0 ARGS``, stopped with ``stop``
    at the end of the block and checked to have stopped cleanly (exit 0, nothing on stderr)."""
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "g6", "--home", str(home), "serve", "--port", "0", *args]
    with started(cmd, SERVING, env=full_env, stop=stop, clean=True, sigint_ignored=sigint_ignored) as m:
        yield m.group(1)
