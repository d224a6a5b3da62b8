"""Run ``g6 serve`` as a real subprocess on a free loopback port (``--port 0``, the port read from its
stderr line), stopped by PID. No port is chosen here, so nothing depends on a port being free.

:func:`started` is the general part (any server that prints the line it serves on); ``bench/serve.py``
runs its servers with it too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

SERVING = re.compile(r"serving .* on (http://\S+/) ")


@contextmanager
def started(cmd: Sequence[str], ready: re.Pattern[str], *, env: Mapping[str, str] | None = None,
            cwd: Path | None = None) -> Iterator[re.Match[str]]:
    """``cmd`` as a subprocess for the block, then stopped by its PID (SIGTERM; SIGKILL after 30 s): the match
    of ``ready`` in the first line of its stderr that has one (where it serves). The lines are read as they
    come, a blocking read, so no timing is involved; a process that ends first raises ``RuntimeError`` with
    what it said. Its stdout is discarded."""
    proc = subprocess.Popen(list(cmd), env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        seen: list[str] = []
        assert proc.stderr is not None
        for line in proc.stderr:  # blocks until the line comes or the process ends: no timing involved
            seen.append(line)
            if m := ready.search(line):
                break
        else:
            raise RuntimeError(f"{' '.join(cmd[:6])} did not start (exit {proc.wait()}): {''.join(seen)[-2000:]}")
        yield m
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def served(home: Path, *args: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/``) of ``g6 --home HOME serve --port 0 ARGS``."""
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "g6", "--home", str(home), "serve", "--port", "0", *args]
    with started(cmd, SERVING, env=full_env) as m:
        yield m.group(1)
