"""The launch and this process's file descriptors: Chromium starts whatever is open or closed here, gets its
DevTools pipe on fd 3 and 4, and inherits nothing else (finding 15 of the attack round: ``pass_fds=(3, 4)``
failed with EBADF when 3 or 4 was not open in g6's process)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from world import need_chromium

from g6.adapters.browser import BrowserProcess

ROOT = str(Path(__file__).resolve().parents[2])


def child_fds(pid: int) -> dict[int, str]:
    fds = {}
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            fds[int(entry.name)] = os.readlink(entry)
        except OSError:
            continue
    return fds


def test_the_browser_gets_its_pipe_on_3_and_4_and_inherits_nothing_else(tmp_path: Path) -> None:
    """An inheritable descriptor of this process (a file opened by a library, a socket handed down) is not
    Chromium's: only 0, 1 and 2 (/dev/null) and the two pipe ends reach it."""
    exe = need_chromium()
    leak = tmp_path / "leak.txt"
    fd = os.open(leak, os.O_WRONLY | os.O_CREAT)
    os.set_inheritable(fd, True)
    try:
        b = BrowserProcess(exe)
        try:
            fds = child_fds(b.pid)
        finally:
            b.close()
    finally:
        os.close(fd)
    assert str(leak) not in fds.values(), fds
    assert fds[3].startswith("pipe:") and fds[4].startswith("pipe:") and fds[3] != fds[4], fds
    assert b.info.product.startswith(("Chrome/", "HeadlessChrome/")), b.info


STARTS = textwrap.dedent("""
    import os, sys
    os.closerange(3, 1024)  # nothing open past stderr: subprocess's own pipe would take 3 and 4
    from g6.adapters.browser import BrowserProcess, find_chromium
    b = BrowserProcess(find_chromium())
    print("STARTED", b.info.product)
    b.close()
    try:
        BrowserProcess("/bin/true")  # exits at once: a failure still said, not a hang or a traceback
    except Exception as e:
        print("REFUSED", type(e).__name__)
""")


def test_the_browser_starts_with_3_and_4_free_and_a_failed_start_is_still_typed() -> None:
    need_chromium()
    r = subprocess.run([sys.executable, "-c", STARTS], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    assert "STARTED" in r.stdout and "REFUSED BrowserUnavailable" in r.stdout, r.stdout
