"""The quick start's two servers, each started by its one command as a reader would: scripts/witness.py
(litewitness for a home's log) and scripts/tsa.py (an openssl TSA). Each is started on a port the system
picks, waited for by reading the ``export …`` line it prints once it answers (then checked it answers),
used through the g6 CLI (a checkpoint cosigned, or timestamped, then verified against the policy or the
pinned root), stopped by its PID, and checked to leave none of its children running. Nothing is skipped:
a missing tool (Go, ssh-agent, openssl) fails the test and says which."""

from __future__ import annotations

import os
import selectors
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.children import Children

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
START_WITHIN = 120.0  # a bound for a hung start (litewitness may be built first), not a timing


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home)
    return env


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=_env(home),
                          timeout=120)


def _children(pid: int) -> set[int]:
    """Every process under ``pid`` (from /proc), now."""
    out: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except FileNotFoundError:
            continue
        for t in tasks:
            try:
                kids = {int(k) for k in Path(f"/proc/{p}/task/{t}/children").read_text().split()}
            except (FileNotFoundError, ProcessLookupError):
                continue
            out |= kids
            todo += list(kids)
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _answers(url: str) -> bool:
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def started(args: list[str], home: Path, kids: Children) -> Iterator[tuple[dict[str, str], set[int]]]:
    """The script running (``--print-env``): its exports and the PIDs of its children, stopped by PID after
    (and its process group killed at the test's end, through ``kids``, whatever happened)."""
    proc = kids.start([sys.executable, *args, "--print-env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      env=_env(home), text=True)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        end = time.monotonic() + START_WITHIN
        line = ""
        while not line:
            if not sel.select(timeout=max(0.0, end - time.monotonic())):
                raise AssertionError(f"{args[0]} printed nothing within {START_WITHIN} s")
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                raise AssertionError(f"{args[0]} ended ({proc.returncode}): {proc.stderr.read()}")
        assert line.startswith("export "), line
        env = dict(w.split("=", 1) for w in shlex.split(line)[1:])
        kids = _children(proc.pid)
        yield env, kids
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(30)
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
    assert rc == 0, err
    assert "Traceback" not in err


def _gone(pids: set[int]) -> bool:
    end = time.monotonic() + 30
    while any(_alive(p) for p in pids):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.signals
def test_witness_cosigns_a_checkpoint_and_stops_its_children(tmp_path: Path, children: Children) -> None:
    home = tmp_path / "home"
    assert g6(home, "keys", "init").returncode == 0
    with started([str(SCRIPTS / "witness.py"), "--home", str(home), "--port", "0", "--state",
                  str(tmp_path / "w")], home, children) as (env, kids):
        url, vkey, policy = env["G6_WITNESS_URL"], env["G6_WITNESS_VKEY"], Path(env["G6_WITNESS_POLICY"])
        assert url.startswith("http://127.0.0.1:") and _answers(url)
        assert vkey.startswith("localhost/g6-witness+") and len(kids) == 3  # ssh-agent (and its guard), litewitness
        log_vkey = g6(home, "keys", "show", "--json").stdout.split('"checkpoint_verifier_key": "')[1].split('"')[0]
        assert policy.read_text().splitlines()[1:] == [f"log {log_vkey}", f"witness local {vkey} {url}",
                                                       "quorum local"]
        r = g6(home, "ledger", "checkpoint", "--policy", str(policy))
        assert r.returncode == 0, r.stderr
        assert "g6: witness local cosigned size 0 (from size 0)" in r.stderr
        assert "\n— localhost/g6-witness " in r.stdout
        r = g6(home, "ledger", "checkpoint", "--witness", url, "--witness-key", vkey)  # the same, without a policy
        assert r.returncode == 0, r.stderr
        r = g6(home, "ledger", "verify", "--policy", str(policy))
        assert r.returncode == 0 and "witnesses  ok" in r.stdout, r.stdout + r.stderr
    assert _gone(kids), [p for p in kids if _alive(p)]


@pytest.mark.signals
def test_tsa_timestamps_a_checkpoint_and_stops(tmp_path: Path, children: Children) -> None:
    home = tmp_path / "home"
    assert g6(home, "keys", "init").returncode == 0
    with started([str(SCRIPTS / "tsa.py"), "--port", "0", "--state", str(tmp_path / "tsa")], home,
                 children) as (env, kids):
        url, root = env["G6_TSA_URL"], Path(env["G6_TSA_ROOT"])
        assert url.startswith("http://127.0.0.1:") and url.endswith("/tsa") and _answers(url)
        assert root.read_text().startswith("-----BEGIN CERTIFICATE-----")
        r = g6(home, "ledger", "checkpoint", "--tsa", url, "--tsa-name", "local")
        assert r.returncode == 0 and "g6: TSA local: token kept beside checkpoint" in r.stderr, r.stderr
        r = g6(home, "ledger", "verify", "--tsa-root", str(root))
        assert r.returncode == 0 and "timestamp  ok checked=1" in r.stdout, r.stdout + r.stderr
        assert "existed before " in r.stdout and "(TSA local)" in r.stdout
    assert _gone(kids)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    no_home = {k: v for k, v in _env(tmp_path).items() if k != "G6_HOME"}
    for args in ([str(SCRIPTS / "tsa.py"), "--port", "http"],
                 [str(SCRIPTS / "witness.py"), "--home", str(tmp_path), "--port", "99999"],
                 [str(SCRIPTS / "witness.py"), "--home", str(SCRIPTS / "tsa.py")],
                 [str(SCRIPTS / "witness.py")]):
        r = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=no_home, timeout=60)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = subprocess.run([sys.executable, str(SCRIPTS / "tsa.py"), "--port", str(s.getsockname()[1])],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("tsa.py: cannot listen on 127.0.0.1:") and "in use" in r.stderr


def test_a_missing_tool_is_named_with_how_to_get_it(tmp_path: Path) -> None:
    bare = tmp_path / "bin"
    bare.mkdir()
    env = {**_env(tmp_path / "home"), "PATH": str(bare)}
    r = subprocess.run([sys.executable, str(SCRIPTS / "tsa.py")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 1 and r.stderr == ("tsa.py: openssl is not on PATH: the TSA is `openssl ts -reply` "
                                              "(apt-get install openssl)\n")
    r = subprocess.run([sys.executable, str(SCRIPTS / "witness.py")], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 1 and r.stderr.startswith("witness.py: ssh-keygen is not on PATH") and \
        "apt-get install openssh-client" in r.stderr


@pytest.mark.signals
def test_witness_killed_outright_takes_its_children_along(tmp_path: Path, children: Children) -> None:
    """SIGKILL gives the script no chance to stop them: they were started to get SIGTERM when it ends."""
    home = tmp_path / "home"
    proc = children.start([sys.executable, str(SCRIPTS / "witness.py"), "--home", str(home), "--print-env"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(home), text=True)
    try:
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(timeout=START_WITHIN), "witness.py printed nothing"
        assert proc.stdout.readline().startswith("export G6_WITNESS_URL=")
        kids = _children(proc.pid)
        assert len(kids) == 3
    finally:
        proc.kill()
        proc.wait(30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert _gone(kids), [p for p in kids if _alive(p)]
