"""``g6 mcp`` stops on SIGINT and SIGTERM (exit 0, no traceback), whatever the parent left SIGINT at, and a
tool call under way when the signal comes finishes first: its receipt is appended and its answer sent.

The server speaks newline-delimited JSON-RPC on stdin/stdout; the tests write it by hand so that they hold
the pipes and choose when each signal arrives. No step waits on a clock: the call under way is held by the
loopback page itself (its handler waits for the test's go-ahead), and the test releases it only once the
server has said on stderr that it is stopping."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from g6.demo.site import LocalSite, Reply, SeenRequest
from tests.children import Children

pytestmark = pytest.mark.signals
IGNORE_SIGINT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                 "os.execvp(sys.argv[1], sys.argv[1:])")


def env_for(home: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_MCP_SENSITIVE": "fetch"})
    return e


def start(children: Children, home: Path, sigint_ignored: bool) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "g6", "mcp"]
    if sigint_ignored:  # as a CI runner or `cmd &` starts it: SIGINT ignored, inherited through exec
        cmd = [sys.executable, "-c", IGNORE_SIGINT, *cmd]
    # Children starts the command with SIGINT at its default; the prefix puts back what such a parent leaves
    return children.start(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env_for(home))


def send(proc: subprocess.Popen[bytes], msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()


def answer(out: IO[bytes], id_: int) -> dict[str, Any]:
    while line := out.readline():
        msg = json.loads(line)
        if msg.get("id") == id_:
            return msg
    raise AssertionError(f"the server ended without answering request {id_}")


def initialise(proc: subprocess.Popen[bytes]) -> None:
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "test", "version": "1"}}})
    assert proc.stdout is not None
    assert "result" in answer(proc.stdout, 1)
    send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert answer(proc.stdout, 2)["result"]["tools"]


def stderr_lines(proc: subprocess.Popen[bytes]) -> tuple[list[str], threading.Thread]:
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            lines.append(raw.decode(errors="replace"))
    t = threading.Thread(target=read, daemon=True)
    t.start()
    return lines, t


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["sigint-default", "sigint-ignored-by-parent"])
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stops_with_exit_0_and_no_traceback(tmp_path: Path, children: Children, stop: signal.Signals,
                                            sigint_ignored: bool) -> None:
    proc = start(children, tmp_path / "home", sigint_ignored)
    lines, reader = stderr_lines(proc)
    initialise(proc)
    proc.send_signal(stop)
    assert proc.wait(timeout=60) == 0
    reader.join(timeout=60)
    assert not any("Traceback" in line for line in lines), "".join(lines)


def held_site() -> tuple[LocalSite, threading.Event, threading.Event]:
    """A loopback page whose answer waits for the test's go-ahead (``release``); ``arrived`` once asked."""
    arrived, release = threading.Event(), threading.Event()

    def held(req: SeenRequest) -> Reply:
        arrived.set()
        release.wait()
        return Reply(200, b"<html><body><p>Held until the server was told to stop.</p></body></html>")

    return LocalSite({"/held": held, "/robots.txt": Reply(404, b"")}), arrived, release


def fetch_call(id_: int, url: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": "fetch", "arguments": {"url": url}}}


def receipts_of(home: Path, path: str) -> list[str]:
    listed = subprocess.run([sys.executable, "-m", "g6", "ledger", "list", "--json"], env=env_for(home),
                            capture_output=True, text=True, check=True)
    return [r["outcome"] for r in json.loads(listed.stdout) if r["final_url"].endswith(path)]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_call_under_way_finishes_and_answers_before_the_stop(tmp_path: Path, children: Children,
                                                                stop: signal.Signals) -> None:
    site, arrived, release = held_site()
    home = tmp_path / "home"
    with site:
        proc = start(children, home, sigint_ignored=False)
        lines, reader = stderr_lines(proc)
        try:
            initialise(proc)
            send(proc, fetch_call(3, site.url("/held")))
            assert arrived.wait(timeout=120), "the fetch never reached the page"
            proc.send_signal(stop)
            while not any("g6: stopping once the" in line for line in lines):
                assert proc.poll() is None, "".join(lines)
                reader.join(timeout=0.1)
            send(proc, fetch_call(4, site.url("/held")))  # after the stop: refused, never run
            assert proc.stdout is not None
            refused = answer(proc.stdout, 4)
            assert "G6_E_MCP_STOPPING" in refused["error"]["message"]
        finally:
            release.set()
        result = answer(proc.stdout, 3)["result"]
        assert result["structuredContent"]["outcome"] == "ok", result
        assert proc.wait(timeout=60) == 0
        reader.join(timeout=60)
    assert not any("Traceback" in line for line in lines), "".join(lines)
    assert [r.path for r in site.requests if r.path == "/held"] == ["/held"]
    assert receipts_of(home, "/held") == ["ok"]


def test_the_client_ending_stdin_still_gets_the_answer_under_way(tmp_path: Path, children: Children) -> None:
    site, arrived, release = held_site()
    home = tmp_path / "home"
    with site:
        proc = start(children, home, sigint_ignored=False)
        try:
            initialise(proc)
            send(proc, fetch_call(3, site.url("/held")))
            assert arrived.wait(timeout=120), "the fetch never reached the page"
            assert proc.stdin is not None
            proc.stdin.close()
        finally:
            release.set()
        assert proc.stdout is not None
        assert answer(proc.stdout, 3)["result"]["structuredContent"]["outcome"] == "ok"
        assert proc.wait(timeout=60) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert b"Traceback" not in err, err
    assert receipts_of(home, "/held") == ["ok"]
