"""What scripts/witness.py and scripts/tsa.py share: one-line typed errors, the start-up lines (for a
person, or ``export`` lines with ``--print-env``), and stopping on Ctrl-C or SIGTERM."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import sys
from typing import NoReturn


class Refused(Exception):
    """One line for the user and the exit code: 2 for bad input, 1 for what failed."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def fail(prog: str, e: Refused) -> NoReturn:
    print(f"{prog}: {e}", file=sys.stderr, flush=True)
    sys.exit(e.code)


def port_arg(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise Refused(f"--port must be a number from 0 to 65535, not {value!r}", 2)
    return port


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def announce(lines: list[tuple[str, str]], env: dict[str, str], print_env: bool) -> None:
    """The human lines (on stderr with ``--print-env``, which puts one ``export …`` line on stdout)."""
    human = sys.stderr if print_env else sys.stdout
    width = max(len(k) for k, _ in lines)
    for k, v in lines:
        print(f"{k + ':':<{width + 1}} {v}", file=human)
    # started with `&` (as the README does), Ctrl-C cannot reach it: say what stops it there
    print(f"running on 127.0.0.1 until Ctrl-C, or `kill {os.getpid()}` (its PID) when it runs in the background",
          file=human, flush=True)
    if print_env:
        print("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()), flush=True)


def die_with_parent() -> None:
    """For ``preexec_fn``: on Linux, the child gets SIGTERM when this script ends, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def stop_on_sigterm() -> None:
    """SIGTERM (a PID stopped) ends the foreground run the way Ctrl-C does, so the children are stopped."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)
    signal.signal(signal.SIGINT, handler)  # also when started with `&` from a script, which ignores SIGINT


def guarded(cmd: list[str]) -> list[str]:
    """``cmd`` run under a small Python guard that gets SIGTERM when this script ends (even by SIGKILL) and
    then stops ``cmd`` by its PID: for a setgid program such as ssh-agent, whose exec clears
    PR_SET_PDEATHSIG."""
    return [sys.executable, __file__, "guard", *cmd]


def _guard(cmd: list[str]) -> int:
    import subprocess

    die_with_parent()
    child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)

    def stop(signum: int, frame: object) -> None:
        if child.poll() is None:
            child.terminate()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    if os.getppid() == 1:  # the script ended before the guard could ask to be told
        stop(0, None)
    try:
        return child.wait()
    finally:
        if child.poll() is None:
            child.kill()


if __name__ == "__main__" and sys.argv[1:2] == ["guard"]:
    sys.exit(_guard(sys.argv[2:]))
