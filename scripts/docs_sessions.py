"""One walkthrough of a docs page run as a reader runs it: one shell, its commands in order, in a network
and PID namespace of its own (used by scripts/docs_examples.py).

Why a namespace. The pages show the ports a reader gets: the demo site on 8421, ``g6 serve`` on 8426,
noida-db on 9200. A check that ran the commands on those ports on the machine itself would depend on
them being free; one that rewrote them to free ports would not run what the page says (``g6 demo
--serve`` with no ``--port``), and a port found free can be taken before the server binds it. Each
session here runs in ``unshare --net --pid --fork --mount-proc``: its own loopback, where every port is
free because nothing else lives there, so the commands run exactly as written and sessions run side by
side; and its own PID namespace, whose processes all end with it, so nothing a walkthrough started can
outlive the check even when the check itself is killed (``--kill-child``).

A session's shell is one ``bash`` (``set -m``, as an interactive shell: a job started with ``&`` has
its own process group and takes SIGINT, and ``kill %1`` works). Each command is sourced from a file, its
stdout and stderr together into another, so ``cd``, variables and background jobs carry from one
command to the next as in a terminal. ``A$`` lines run in another shell, started from the session's
shell (its exported settings and folder) the first time it is used, as ``bash`` typed there would.

At the end the check stops what the walkthrough left running, by PID: each shell's jobs get SIGTERM (each
job's process group, as ``kill %1`` sends it) and are waited for; then every process still in the
namespace other than the shell is a leftover and a problem of the page (a server that ignores SIGTERM,
a detached daemon never stopped, the server of ``a && server &`` after ``kill`` of the job's PID alone).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

STOP_WITHIN = 60.0  # seconds the jobs get to end after SIGTERM (a bound for a hung server, not a timing)
GONE_WITHIN = 30.0  # seconds a stopped daemon gets to leave the namespace


class SessionBroken(Exception):
    """The shell did not answer within its bound, or died: the rest of the session cannot run."""


def namespace_command() -> list[str]:
    """The command that starts a session's first shell in namespaces of its own, loopback up."""
    for tool in ("unshare", "ip", "ps", "bash"):
        if shutil.which(tool) is None:
            raise SystemExit(f"the docs' examples need {tool} (util-linux, iproute2, procps, bash): each "
                             "walkthrough runs in a network namespace of its own")
    cmd = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child"]
    if os.geteuid() != 0:  # a user namespace gives an unprivileged user the right to the other two
        cmd[1:1] = ["--user", "--map-root-user"]
    return [*cmd, "bash", "--norc", "--noprofile", "-c", "ip link set lo up && exec bash --norc --noprofile -s"]


class Shell:
    """One bash of the session: commands go in on ``write_fd``, a ``__g6_done N RC`` line per command
    comes back on ``read_fd``; what a command prints goes to a file."""

    def __init__(self, name: str, write_fd: int, read_fd: int, ctl: Path) -> None:
        self.name, self.write_fd, self.read_fd, self.ctl = name, write_fd, read_fd, ctl
        self.buffer = b""
        self.count = 0
        self.send("set -m; __g6_rc=0\n")

    def send(self, text: str) -> None:
        data = text.encode()
        while data:
            data = data[os.write(self.write_fd, data):]

    def run(self, script: str, timeout: float) -> tuple[int, str, dict[str, str]]:
        """``script`` sourced in this shell: its exit code, what it printed, and the exported settings after."""
        self.count += 1
        n, tag = self.count, f"{self.name or '_'}-{self.count}"
        (self.ctl / f"cmd-{tag}.sh").write_text(script + "\n", encoding="utf-8")
        out, env = self.ctl / f"out-{tag}", self.ctl / f"env-{self.name or '_'}"
        # $? is the previous command's on entry (`(exit N)` last on each line), as at a prompt
        self.send(f". {_q(self.ctl / f'cmd-{tag}.sh')} > {_q(out)} 2>&1 < /dev/null; __g6_rc=$?; "
                  f"env -0 > {_q(env)}; echo \"__g6_done {n} $__g6_rc\"; (exit $__g6_rc)\n")
        rc = self._wait_done(n, timeout)
        printed = out.read_bytes().decode("utf-8", "replace") if out.exists() else ""
        exported = dict(kv.split("=", 1) for kv in env.read_text(errors="replace").split("\0") if "=" in kv) \
            if env.exists() else {}
        return rc, printed, exported

    def _wait_done(self, n: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(rb"__g6_done (\d+) (\d+)\n", self.buffer)
            if m and int(m[1]) == n:
                self.buffer = self.buffer[m.end():]
                return int(m[2])
            if m:  # an older marker (a command that timed out cannot be followed): drop it
                self.buffer = self.buffer[m.end():]
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise SessionBroken(f"shell {self.name or '(main)'}: no answer within {timeout:.0f} s")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 65536)
                if not chunk:
                    raise SessionBroken(f"shell {self.name or '(main)'} ended")
                self.buffer += chunk


def _q(path: Path | str) -> str:
    return "'" + str(path).replace("'", "'\\''") + "'"


@dataclass
class Namespace:
    """The session's namespaces and shells: the main one, started with them, and ``A``, ``B``… on demand."""

    ctl: Path
    env: dict[str, str]
    cwd: Path
    proc: subprocess.Popen[bytes] | None = None
    shells: dict[str, Shell] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def __enter__(self) -> Namespace:
        self.ctl.mkdir(parents=True, exist_ok=True)
        with (self.ctl / "shell.err").open("wb") as err:
            self.proc = subprocess.Popen(namespace_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, env=self.env, cwd=self.cwd, start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.shells[""] = Shell("", self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.ctl)
        return self

    def shell(self, name: str) -> Shell:
        """Shell ``name``: started from the main shell's state the first time, over two FIFOs (opened
        read-write here, so that neither open waits for the other side)."""
        if name not in self.shells:
            fifo_in, fifo_out = self.ctl / f"shell-{name}.in", self.ctl / f"shell-{name}.out"
            os.mkfifo(fifo_in)
            os.mkfifo(fifo_out)
            w, r = os.open(fifo_in, os.O_RDWR), os.open(fifo_out, os.O_RDWR)
            self.shells[""].send(f"bash --norc --noprofile -s < {_q(fifo_in)} > {_q(fifo_out)} "
                                 f"2> {_q(self.ctl / f'shell-{name}.err')} & disown $!\n")
            self.shells[name] = Shell(name, w, r, self.ctl)
        return self.shells[name]

    def stop(self) -> None:
        """Each shell's jobs stopped by PID (SIGTERM, waited for), the other shells ended, then anything
        still running in the namespace is a leftover (a problem); the namespace ends with its first shell."""
        try:
            for name in sorted(self.shells, key=lambda n: n == ""):  # the main shell last
                # each job's process group, as `kill %N` signals it: all of `a && b &`, not only its subshell
                self.shells[name].run("__g6_jobs=$(jobs -p | sed 's/^/-/'); "
                                      "[ -z \"$__g6_jobs\" ] || { kill -TERM -- $__g6_jobs; wait; }", STOP_WITHIN)
                if name:
                    self.shells[name].send("exit\n")
            left = self._leftovers()
            if left:
                self.problems.append("left running after its jobs were stopped: " + "; ".join(left))
        except SessionBroken as e:
            self.problems.append(f"the servers it started did not stop when asked (SIGTERM): {e}")
            self.close(kill=True)
        else:
            self.close()

    def _leftovers(self) -> list[str]:
        main = self.shells[""]
        deadline = time.monotonic() + GONE_WITHIN
        while True:
            _, said, _ = main.run("ps -ww -e -o pid=,stat=,args=", STOP_WITHIN)
            left = []
            for line in said.splitlines():
                pid, stat, args = (line.split(None, 2) + ["", ""])[:3]
                if pid != "1" and not stat.startswith("Z") and not args.startswith("ps -ww -e -o"):
                    left.append(f"{args} (PID {pid})")
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)

    def close(self, kill: bool = False) -> None:
        """The shells closed; with ``kill`` (a shell that does not answer), the namespace ended at once: its
        first process gone (unshare kills it with itself), the kernel ends every other one in it."""
        if self.proc is None:
            return
        for name, sh in self.shells.items():
            if name:
                for fd in (sh.write_fd, sh.read_fd):
                    os.close(fd)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if kill:
            self.proc.kill()
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc = None

    def __exit__(self, *exc: object) -> None:
        self.close(kill=exc[0] is not None)
