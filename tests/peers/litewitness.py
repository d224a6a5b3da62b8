"""A real litewitness (filippo.io/torchwood v0.6.1) on 127.0.0.1 for the tests: its Ed25519 key made with
ssh-keygen and held by an ssh-agent started here, its database made with witnessctl, a port the kernel
picked (tried again when another process took it first), everything stopped by the PIDs started here.

``started_litewitness(folder, name)`` is a context manager giving a ``Litewitness``: its URL, its cosigning
verifier key (read from what it prints), ``register(home)`` to make a home's log known to it, and
``signing_key()``, the witness's own key read back from its ssh-keygen file (a test that needs what this
witness would have answered at another time signs that with it)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.peers.go_tools import go_tool

START_TRIES = 5
DEADLINE = 30.0  # a bound for a hung start, not a timing


def wait_for(what: str, ok: Callable[[], bool], proc: subprocess.Popen[bytes] | None = None,
             log: Path | None = None) -> None:
    """Poll ``ok()`` until it holds; fail when ``proc`` ends first or the deadline passes (no fixed sleep)."""
    end = time.monotonic() + DEADLINE
    while not ok():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the process ended ({proc.returncode}): "
                               f"{log.read_text(errors='replace')[-800:] if log else ''}")
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not ready after {DEADLINE} s")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class Litewitness:
    name: str
    url: str
    vkey: str
    db: Path
    witnessctl: Path
    key_file: Path
    pid: int

    def register(self, home: Any) -> None:
        """Make ``home``'s log (its origin and checkpoint verifier key) known to this witness."""
        from g6.prove.proofs import note_verifier_key

        origin, vkey = home.ledger.origin, note_verifier_key(home)
        for args in (["add-log", "-db", str(self.db), "-origin", origin],
                     ["add-key", "-db", str(self.db), "-origin", origin, "-key", vkey]):
            r = subprocess.run([str(self.witnessctl), *args], capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr

    def witness(self, label: str = "lw") -> Any:
        """This witness as a policy names it (``label``), with its key and URL."""
        from g6.ledger.transparency.cosignature import parse_cosigner_key
        from g6.ledger.transparency.policy import PolicyWitness

        return PolicyWitness(label, parse_cosigner_key(self.vkey), self.url)

    def signing_key(self) -> Any:
        """The witness's own Ed25519 key, as a ``g6.ledger.keys.SigningKey``."""
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import load_ssh_private_key

        from g6.ledger.keys import SigningKey

        key = load_ssh_private_key(self.key_file.read_bytes(), password=None)
        assert isinstance(key, Ed25519PrivateKey)
        return SigningKey(key)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):  # by the PIDs started here, nothing else
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@contextmanager
def started_litewitness(d: Path, name: str) -> Iterator[Litewitness]:
    """A litewitness named ``name`` whose key, agent socket, database and log live in folder ``d``."""
    lw_bin, ctl = go_tool("litewitness"), go_tool("witnessctl")
    d.mkdir(parents=True, exist_ok=True)
    sock = d / "agent.sock"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "g6-test", "-f", str(d / "witness")],
                   check=True, timeout=60)
    fp = subprocess.run(["ssh-keygen", "-lf", str(d / "witness.pub")], capture_output=True, text=True,
                        check=True).stdout.split()[1]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        procs.append(agent)
        wait_for("ssh-agent", sock.exists, agent)
        subprocess.run(["ssh-add", "-q", str(d / "witness")], env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
                       check=True, timeout=60, capture_output=True)
        db = d / "lw.db"
        # the database exists before litewitness opens it (a log nobody submits for)
        subprocess.run([str(ctl), "add-log", "-db", str(db), "-origin", "example.invalid/placeholder"], check=True,
                       capture_output=True, timeout=60)
        for attempt in range(START_TRIES):  # a port picked free may be taken before litewitness binds it
            port = free_port()
            log = d / f"litewitness.{attempt}.log"
            with log.open("wb") as out:
                lw = subprocess.Popen([str(lw_bin), "-db", str(db), "-name", name, "-key", fp,
                                       "-ssh-agent", str(sock), "-listen", f"127.0.0.1:{port}"],
                                      stdout=out, stderr=subprocess.STDOUT)
            procs.append(lw)
            try:
                wait_for("litewitness", lambda p=port: answers(p), lw, log)
                break
            except RuntimeError:
                if lw.poll() is not None and "address already in use" in log.read_text(errors="replace"):
                    continue
                raise
        else:
            raise RuntimeError(f"litewitness did not start in {START_TRIES} tries")
        wait_for("litewitness vkey", lambda: "vkey=" in log.read_text(errors="replace"), lw, log)
        vkey = log.read_text(errors="replace").split("vkey=", 1)[1].split()[0].strip('"')
        yield Litewitness(name, f"http://127.0.0.1:{port}", vkey, db, ctl, d / "witness", lw.pid)
    finally:
        _stop(procs)
