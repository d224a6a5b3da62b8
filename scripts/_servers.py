"""What scripts/witness.py and scripts/tsa.py share: one-line typed errors, the start-up lines (for a
person, or ``export`` lines with ``--print-env``), and stopping on Ctrl-C or SIGTERM."""

from __future__ import annotations

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
    print("running on 127.0.0.1 until Ctrl-C", file=human, flush=True)
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
