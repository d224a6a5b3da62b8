"""`g6 mcp`'s stop, as a new user found it: a line the SDK drops without an answer (``"jsonrpc": "1.0"``, no
``jsonrpc``, ``params`` not an object, an id that is an object) was counted as a request under way, so the
client's EOF never ended the server and one SIGTERM did not either; and a stop signal in the seconds before
the server is loaded was lost (SIGINT ignored by the parent) or killed it by the signal. No step waits on a
clock: each waits for the server's answer, for its exit, or for /proc to show the handler installed."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from g6.config import load_settings
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.mcp.server import serve
from g6.mcp.stop import StopSignals
from tests.children import Children
from tests.test_mcp_stop import answer, env_for, fetch_call, initialise, send, start, stderr_lines

pytestmark = pytest.mark.signals
DROPPED = [{"jsonrpc": "1.0", "id": 99, "method": "tools/list"},
           {"id": 103, "method": "tools/list"},
           {"jsonrpc": "2.0", "id": 102, "method": "tools/list", "params": 5},
           {"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}]


def dropped_then_answered(proc: subprocess.Popen[bytes]) -> None:
    """The lines the SDK answers nothing to, then a request it answers: the wire still counts that one."""
    initialise(proc)
    for msg in DROPPED:
        send(proc, msg)
    send(proc, {"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    assert proc.stdout is not None
    assert answer(proc.stdout, 7)["result"]["tools"]


@pytest.mark.parametrize("stop", ["eof", "SIGTERM", "SIGINT"])
def test_lines_the_sdk_drops_do_not_hold_the_stop(tmp_path: Path, children: Children, stop: str) -> None:
    proc = start(children, tmp_path / "home", sigint_ignored=stop == "SIGINT")
    dropped_then_answered(proc)
    if stop == "eof":
        assert proc.stdin is not None
        proc.stdin.close()
    else:
        proc.send_signal(getattr(signal, stop))
    assert proc.wait(timeout=60) == 0  # one signal, or the EOF, ends it: nothing it runs is under way
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    assert "under way" not in err and "Traceback" not in err, err


def caught(pid: int) -> int:
    """The signals ``pid`` has handlers for (SigCgt of /proc/PID/status), 0 once it has ended."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)


def is_g6_mcp(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError):
        return False
    return b"-c" not in argv and b"mcp" in argv  # past the helpers that exec it


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["sigint-default", "sigint-ignored-by-parent"])
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_while_the_server_loads_ends_it_with_exit_0(tmp_path: Path, children: Children,
                                                           stop: signal.Signals, sigint_ignored: bool) -> None:
    proc = start(children, tmp_path / "home", sigint_ignored)
    term = 1 << (signal.SIGTERM - 1)
    # the command counts stop signals from its start: SIGTERM caught means both are (no initialize is sent)
    while not (is_g6_mcp(proc.pid) and caught(proc.pid) & term):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        time.sleep(0.01)  # polling for a state, not waiting on a clock
    proc.send_signal(stop)
    assert proc.wait(timeout=60) == 0
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    assert "interrupted" not in err and "Traceback" not in err, err


def test_a_signal_counted_before_serve_ends_it_at_once(tmp_path: Path) -> None:
    """A stop counted while the command loaded (``StopSignals`` installed at its start) is serve's: it returns
    without taking over stdin or stdout (nothing was under way), instead of waiting for a second signal."""
    stops = StopSignals()
    stops.count = 1
    stops.stopped.set()
    fds = (os.fstat(0).st_ino, os.fstat(1).st_ino)
    serve(load_settings(env_for(tmp_path / "home")), stops)
    assert (os.fstat(0).st_ino, os.fstat(1).st_ino) == fds


def test_two_requests_under_one_id_are_both_waited_for(tmp_path: Path, children: Children) -> None:
    """The SDK runs and answers both requests of a repeated id: a stop waits for both answers, not for the
    first only (the second was then cut off by the SDK's EOF)."""
    came, release = threading.Semaphore(0), threading.Event()

    def held(req: SeenRequest) -> Reply:
        came.release()
        release.wait()
        return Reply(200, b"<html><body><p>Held until the server was told to stop.</p></body></html>")

    with LocalSite({"/held": held, "/robots.txt": Reply(404, b"")}) as site:
        proc = start(children, tmp_path / "home", sigint_ignored=False)
        lines, reader = stderr_lines(proc)
        try:
            initialise(proc)
            send(proc, fetch_call(3, site.url("/held")))
            send(proc, fetch_call(3, site.url("/held")))
            assert came.acquire(timeout=120) and came.acquire(timeout=120), "the fetches never reached the page"
            proc.send_signal(signal.SIGTERM)
            while not any("g6: stopping once the" in line for line in lines):
                assert proc.poll() is None, "".join(lines)
                reader.join(timeout=0.1)
        finally:
            release.set()
        assert proc.stdout is not None
        first, second = answer(proc.stdout, 3), answer(proc.stdout, 3)
        assert [a["result"]["structuredContent"]["outcome"] for a in (first, second)] == ["ok", "ok"]
        assert proc.wait(timeout=60) == 0
        reader.join(timeout=60)
    assert any("once the 2 requests under way finish" in line for line in lines), "".join(lines)
