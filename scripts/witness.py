"""A C2SP tlog-witness on 127.0.0.1 that knows your evidence home's log, for `g6 ledger checkpoint
--policy` and `g6 ledger verify --policy` on your own machine.

    python scripts/witness.py --home DIR [--port N] [--state DIR] [--print-env]

The witness is litewitness (filippo.io/torchwood v0.6.1), built into .tools/go/bin by
tests/peers/go_tools.py when it is not there yet (that needs Go, and takes about a minute once: go's
progress, each package as it is compiled, is shown on stderr). In the state folder (kept and reused:
a fresh temporary one without --state) it makes the witness's Ed25519 key (ssh-keygen), starts an
ssh-agent of its own holding it, registers the home's log (its origin and checkpoint verifier key, from
`g6 keys show --json`; `g6 keys init` first when the home has no key) with witnessctl, starts
litewitness, and writes ``witness.policy``: a C2SP tlog-policy naming the log and this one witness,
quorum 1 of 1. It prints the URL, the witness's verifier key and the policy file; with --print-env,
stdout is one line, ``export G6_WITNESS_URL=… G6_WITNESS_VKEY=… G6_WITNESS_POLICY=…``. Runs until Ctrl-C
(or SIGTERM), then stops litewitness and the ssh-agent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from _servers import (  # noqa: E402
    Refused,
    announce,
    answers,
    die_with_parent,
    fail,
    guarded,
    port_arg,
    port_free,
    stop_on_sigterm,
)

PROG = "witness.py"
NAME = "localhost/g6-witness"  # the witness's name: in its verifier key and on its cosignature lines
START_WITHIN = 30.0  # seconds litewitness may take to listen (a bound for a hung start, not a timing)
START_TRIES = 5
TEMP: list[Path] = []  # removed on exit (the ssh-agent's socket folder)


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Refused(f"{what} failed: {e}") from None


def _tools() -> tuple[Path, Path]:
    for tool, package in (("ssh-keygen", "openssh-client"), ("ssh-agent", "openssh-client"),
                          ("ssh-add", "openssh-client")):
        if shutil.which(tool) is None:
            raise Refused(f"{tool} is not on PATH: litewitness signs through an ssh-agent "
                          f"(apt-get install {package})")
    from tests.peers.go_tools import BIN, ToolUnavailable, go_tool

    def show(line: str) -> None:
        print(f"{PROG}: go: {line}", file=sys.stderr, flush=True)

    try:
        if not (BIN / "litewitness").is_file() or not (BIN / "witnessctl").is_file():
            print(f"{PROG}: building litewitness and witnessctl (filippo.io/torchwood v0.6.1) into {BIN} with Go: "
                  "once, about a minute; each package is named as it is compiled", file=sys.stderr, flush=True)
        return go_tool("litewitness", show), go_tool("witnessctl", show)
    except ToolUnavailable as e:
        raise Refused(f"{e} (install Go from https://go.dev/dl/, or run `python tests/peers/go_tools.py` "
                      "where it is)") from None


def _log_key(home: Path) -> str:
    """The home's checkpoint verifier key (``<origin>+<key id>+<key>``), its signing key made if missing."""
    g6 = [sys.executable, "-m", "g6", "--home", str(home)]
    if not (home / "keys" / "signing.key").is_file():
        r = _run([*g6, "keys", "init"], "g6 keys init")
        if r.returncode != 0:
            raise Refused(f"cannot make the home's signing key: {(r.stderr or r.stdout).strip()}", 2)
        print(f"{PROG}: made a signing key in {home / 'keys'}", file=sys.stderr, flush=True)
    r = _run([*g6, "keys", "show", "--json"], "g6 keys show")
    if r.returncode != 0:
        raise Refused(f"cannot read the home's keys: {(r.stderr or r.stdout).strip()}", 2)
    return json.loads(r.stdout)["signing"]["checkpoint_verifier_key"]


def _register(ctl: Path, db: Path, log_vkey: str) -> None:
    """The log (its origin and verifier key) in litewitness's database; already there is fine."""
    origin = log_vkey.split("+", 1)[0]
    known: dict[str, list[str]] = {}
    if db.exists():  # a state folder used before: add only what is missing (a key twice is ambiguous to it)
        r = _run([str(ctl), "list-logs", "-db", str(db)], "witnessctl list-logs")
        for line in r.stdout.splitlines():
            if line.startswith("{"):
                entry = json.loads(line)
                known[entry["origin"]] = entry.get("keys") or []
    steps = [] if origin in known else [["add-log", "-db", str(db), "-origin", origin]]
    if log_vkey not in known.get(origin, []):
        steps.append(["add-key", "-db", str(db), "-origin", origin, "-key", log_vkey])
    for args in steps:
        r = _run([str(ctl), *args], "witnessctl")
        if r.returncode != 0:
            raise Refused(f"witnessctl {args[0]} failed: {r.stderr.strip()[-400:]}")


def _wait(ok, proc: subprocess.Popen[bytes], log: Path, what: str) -> None:
    end = time.monotonic() + START_WITHIN
    while not ok():
        if proc.poll() is not None:
            text = log.read_text(errors="replace") if log.exists() else ""
            raise Refused(f"{what} ended ({proc.returncode}) before it was ready: {text.strip()[-400:]}")
        if time.monotonic() > end:
            raise Refused(f"{what} was not ready within {START_WITHIN:.0f} s")
        time.sleep(0.02)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):  # the PIDs started here, nothing else
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    for d in TEMP:
        shutil.rmtree(d, ignore_errors=True)


def start(home: Path, state: Path, port: int, procs: list[subprocess.Popen[bytes]]) -> dict[str, str]:
    """Everything up to a litewitness that answers; each process started is appended to ``procs``."""
    lw_bin, ctl = _tools()
    log_vkey = _log_key(home)
    state.mkdir(parents=True, exist_ok=True)
    key = state / "witness"
    if not key.is_file():
        r = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", NAME, "-f", str(key)], "ssh-keygen")
        if r.returncode != 0:
            raise Refused(f"ssh-keygen failed: {r.stderr.strip()}")
    fp = _run(["ssh-keygen", "-lf", f"{key}.pub"], "ssh-keygen -l").stdout.split()[1]
    sock_dir = Path(tempfile.mkdtemp(prefix="g6-w-"))  # short: a unix socket path has ~100 bytes at most
    TEMP.append(sock_dir)
    sock = sock_dir / "agent.sock"
    agent = subprocess.Popen(guarded(["ssh-agent", "-D", "-a", str(sock)]), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
    procs.append(agent)
    _wait(sock.exists, agent, state / "none", "ssh-agent")
    r = _run(["ssh-add", "-q", str(key)], "ssh-add", {**os.environ, "SSH_AUTH_SOCK": str(sock)})
    if r.returncode != 0:
        raise Refused(f"ssh-add failed: {r.stderr.strip()}")
    db = state / "witness.db"
    _register(ctl, db, log_vkey)
    for _attempt in range(START_TRIES if port == 0 else 1):  # a port found free may be taken before the bind
        p = port or _free_port()
        log = state / "litewitness.log"
        with log.open("wb") as out:
            lw = subprocess.Popen([str(lw_bin), "-db", str(db), "-name", NAME, "-key", fp, "-ssh-agent", str(sock),
                                   "-listen", f"127.0.0.1:{p}"], stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        procs.append(lw)
        try:
            _wait(lambda q=p: answers(q), lw, log, "litewitness")
            break
        except Refused:
            if port == 0 and lw.poll() is not None and "address already in use" in log.read_text(errors="replace"):
                continue
            raise
    else:
        raise Refused(f"litewitness did not start in {START_TRIES} tries")
    _wait(lambda: "vkey=" in log.read_text(errors="replace"), lw, log, "litewitness")
    vkey = log.read_text(errors="replace").split("vkey=", 1)[1].split()[0].strip('"')
    url = f"http://127.0.0.1:{p}"
    policy = state / "witness.policy"
    policy.write_text(f"# {home}'s log and one witness on this machine: it must have cosigned\n"
                      f"log {log_vkey}\nwitness local {vkey} {url}\nquorum local\n")
    return {"G6_WITNESS_URL": url, "G6_WITNESS_VKEY": vkey, "G6_WITNESS_POLICY": str(policy)}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=os.environ.get("G6_HOME") or None,
                    help="the evidence home whose log the witness cosigns (default: $G6_HOME)")
    ap.add_argument("--port", default="0", help="the port on 127.0.0.1 (default 0: one the system picks)")
    ap.add_argument("--state", type=Path,
                    help="the folder of the witness's key, database and policy (default: a fresh temporary one)")
    ap.add_argument("--print-env", action="store_true",
                    help="print `export G6_WITNESS_URL=… G6_WITNESS_VKEY=… G6_WITNESS_POLICY=…` on stdout")
    args = ap.parse_args(argv)
    procs: list[subprocess.Popen[bytes]] = []
    stop_on_sigterm()
    try:
        try:
            port = port_arg(args.port)
            if args.home is None:
                raise Refused("--home DIR is needed (or G6_HOME): the home whose log the witness cosigns", 2)
            home = args.home.resolve()
            if home.exists() and not home.is_dir():
                raise Refused(f"--home {home} is not a folder", 2)
            state = args.state.resolve() if args.state else Path(tempfile.mkdtemp(prefix="g6-witness-"))
            if state.exists() and not state.is_dir():
                raise Refused(f"--state {state} is not a folder", 2)
            if port and not port_free(port):
                raise Refused(f"cannot listen on 127.0.0.1:{port}: the port is in use", 2)
            env = start(home, state, port, procs)
        except Refused as e:
            _stop(procs)
            fail(PROG, e)
        announce([("witness", env["G6_WITNESS_URL"]), ("witness key (for --witness-key)", env["G6_WITNESS_VKEY"]),
                  ("policy (1 of 1, for --policy)", env["G6_WITNESS_POLICY"])], env, args.print_env)
        lw = procs[-1]
        while lw.poll() is None:
            try:
                lw.wait(timeout=1)
            except subprocess.TimeoutExpired:
                pass
        print(f"{PROG}: litewitness ended ({lw.returncode}): see {state / 'litewitness.log'}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        _stop(procs)


if __name__ == "__main__":
    sys.exit(main())
