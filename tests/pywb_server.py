"""pywb for the replay tests (tests/test_warc_replay.py, tests/serve/test_memento_pywb.py): where its commands
are, and its ``wayback`` server on a free loopback port, stopped by its PID.

pywb lives in its own venv (``.tools/pywb``, or ``$G6_PYWB_BIN``): its wheel installs a top-level ``tests``
package that would shadow this project's tests in a shared environment. (This module is not named ``pywb``,
so that it cannot shadow pywb itself either.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> str:
    """The path of pywb's command ``name`` (``wayback``, ``wb-manager``) or of ``wacz``; the test is skipped
    when it is not installed, or fails when ``G6_REQUIRE_TOOLS`` is set (CI)."""
    dirs = [os.environ.get("G6_PYWB_BIN", ""), str(ROOT / ".tools" / "pywb" / "bin"), str(Path(sys.executable).parent)]
    for d in filter(None, dirs):
        if (Path(d) / name).exists():
            return str(Path(d) / name)
    found = shutil.which(name)
    if found:
        return found
    hint = "python3 -m venv .tools/pywb && .tools/pywb/bin/pip install pywb" if name != "wacz" else "pip install wacz"
    if os.environ.get("G6_REQUIRE_TOOLS"):
        pytest.fail(f"{name} is not installed: {hint}")
    pytest.skip(f"{name} is not installed: {hint}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def no_proxy_env() -> dict[str, str]:
    """This environment without its proxy settings (pywb must reach loopback directly)."""
    return {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


@contextmanager
def wayback(root: Path, log: Path) -> Iterator[str]:
    """``wayback`` serving the collections of ``root`` (its working folder: ``collections/`` or
    ``config.yaml``) on a free loopback port, its output in ``log``: the base URL ``http://127.0.0.1:PORT``,
    once it answers. Stopped by its PID on leaving."""
    exe = tool("wayback")
    with log.open("wb") as out:
        proc = None
        url = ""
        for _ in range(3):  # a port taken between choosing and binding: choose again
            port = free_port()
            proc = subprocess.Popen([exe, "-b", "127.0.0.1", "-p", str(port)], cwd=root, stdout=out,
                                    stderr=subprocess.STDOUT, env=no_proxy_env())
            url = f"http://127.0.0.1:{port}"
            if _wait_ready(proc, url):
                break
            proc.terminate()
            proc.wait(30)
            proc = None
        assert proc is not None, log.read_text()[-2000:]
        try:
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], url: str) -> bool:
    """Poll until pywb answers (a bounded wait for start-up, not a timing assertion)."""
    with httpx.Client(trust_env=False, timeout=5) as c:
        for _ in range(600):
            if proc.poll() is not None:
                return False
            try:
                if c.get(url + "/").status_code == 200:
                    return True
            except httpx.TransportError:
                pass
            try:
                proc.wait(0.1)
            except subprocess.TimeoutExpired:
                pass
    return False
