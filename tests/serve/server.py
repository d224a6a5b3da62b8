"""Run ``g6 serve`` as a real subprocess on a free loopback port (``--port 0``, the port read from its
stderr line), stopped by PID. No port is chosen here, so nothing depends on a port being free."""

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
def served(home: Path, *args: str, env: Mapping[str, str] | None = None) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/``) of ``g6 --home HOME serve --port 0 ARGS``."""
    full_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    cmd: Sequence[str] = [sys.executable, "-m", "g6", "--home", str(home), "serve", "--port", "0", *args]
    proc = subprocess.Popen(cmd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        seen: list[str] = []
        assert proc.stderr is not None
        for line in proc.stderr:  # blocks until the line comes or the process ends: no timing involved
            seen.append(line)
            if m := SERVING.search(line):
                break
        else:
            raise AssertionError(f"g6 serve did not start (exit {proc.wait()}): {''.join(seen)}")
        yield m.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
