"""The field's own tools, built from the Go module proxy at pinned versions, as real peers for the tests.

``go_tool("litewitness")`` returns the path of a binary in ``.tools/go/bin`` of the checkout, building it
first (``go install`` of the pinned module version, one build at a time) when it is missing or was built
from another version. Nothing is skipped: without Go, or when the proxy refuses, the test using the tool
fails and says why. ``python tests/peers/go_tools.py`` builds them all (``.ci/run`` does, before the tests).

| tool | from | why |
| --- | --- | --- |
| ``litewitness``, ``witnessctl`` | filippo.io/torchwood v0.6.1 | a C2SP tlog-witness that cosigns our checkpoints |
| ``fsck`` | github.com/transparency-dev/tessera v1.0.4 | audits a published C2SP tlog-tiles log |
| ``tlogcheck`` | this folder's ``tlogcheck`` (golang.org/x/mod v0.43.0) | Go's sumdb/tlog reading our tiles |
| ``cosigcheck`` | this folder's ``cosigcheck`` (torchwood v0.6.1) | torchwood's cosignature/v1 verifier on our notes |
| ``proofcheck`` | this folder's ``proofcheck`` (torchwood v0.10.0, Go 1.27.3) | torchwood's tlog-proof verifier |

A tool whose module needs a newer Go than the machine's names its toolchain (``TOOLCHAINS``); ``go`` fetches
it from the module proxy like any module, once.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections import deque
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".tools" / "go" / "bin"
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")
# tool -> (module, version, package path inside the module; None: this folder's own program)
TOOLS: dict[str, tuple[str, str, str | None]] = {
    "litewitness": ("filippo.io/torchwood", "v0.6.1", "cmd/litewitness"),
    "witnessctl": ("filippo.io/torchwood", "v0.6.1", "cmd/witnessctl"),
    "fsck": ("github.com/transparency-dev/tessera", "v1.0.4", "cmd/fsck"),
    "tlogcheck": ("golang.org/x/mod", "v0.43.0", None),
    "cosigcheck": ("filippo.io/torchwood", "v0.6.1", None),
    "proofcheck": ("filippo.io/torchwood", "v0.10.0", None),
}
TOOLCHAINS = {"proofcheck": "go1.27.3"}  # torchwood v0.10.0 needs Go 1.27 (its go.mod); the rest build locally


class ToolUnavailable(RuntimeError):
    """A pinned tool could not be built here: the message says what failed."""


def go() -> str:
    found = shutil.which("go") or next((g for g in GO_CANDIDATES if Path(g).is_file()), None)
    if found is None:
        raise ToolUnavailable("no Go toolchain (go) on this machine: the witness and tiles tests need it")
    return found


def _built_from(binary: Path, module: str, version: str) -> bool:
    if not binary.is_file():
        return False
    out = subprocess.run([go(), "version", "-m", str(binary)], capture_output=True, text=True)
    return any(line.split()[1:3] == [module, version] for line in out.stdout.splitlines()
               if line.split()[:1] in (["mod"], ["dep"]))


def go_tool(name: str, progress: Callable[[str], None] | None = None) -> Path:
    """The pinned binary ``name``, built if needed (under a lock: test processes may ask at once).

    With ``progress``, a build runs ``go … -v`` and each line go prints (a module fetched, a package
    compiled) is handed to it as it comes: a first build takes about a minute, and a person waiting
    should see it move (scripts/witness.py prints them)."""
    module, version, package = TOOLS[name]
    binary = BIN / name
    BIN.mkdir(parents=True, exist_ok=True)
    with open(BIN.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _built_from(binary, module, version):
            return binary
        env = {**os.environ, "GOBIN": str(BIN), "GOTOOLCHAIN": TOOLCHAINS.get(name, "local"),
               "GOFLAGS": "-buildvcs=false"}
        if package is None:
            cmd = [go(), "build", "-p", "1", "-o", str(binary), "."]
            cwd: Path | None = Path(__file__).resolve().parent / name
        else:
            cmd = [go(), "install", "-p", "1", f"{module}/{package}@{version}"]
            cwd = None
        if progress is None:
            r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
            rc, said = r.returncode, r.stderr or r.stdout
        else:
            rc, said = _run_showing(cmd[:2] + ["-v"] + cmd[2:], cwd, env, progress)
        if rc != 0 or not binary.is_file():
            raise ToolUnavailable(f"building {name} ({module}@{version}) failed: {said[-800:]}")
        return binary


def _run_showing(cmd: list[str], cwd: Path | None, env: dict[str, str],
                 progress: Callable[[str], None]) -> tuple[int, str]:
    """``cmd`` with its output handed line by line to ``progress``; its exit code and its last lines."""
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line)
            progress(line.rstrip("\n"))
        rc = proc.wait()
    return rc, "".join(tail)


if __name__ == "__main__":
    for tool in TOOLS:
        print(f"{tool}: {go_tool(tool)}", flush=True)
    sys.exit(0)
