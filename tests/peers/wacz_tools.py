"""The field's own WACZ tools at pinned versions, for the signed-WACZ tests (tests/test_wacz_sign_peers.py).

* py-wacz's ``wacz``, with authsign (its ``signing`` extra: the verifier ``--verify-auth`` runs), pinned in
  ``PYWACZ_PINS`` below, in ``.tools/pywacz``: a venv of its own (authsign brings fastapi, acme, rfc3161ng,
  pydantic);
* ReplayWeb.page (``index.html``, ``ui.js``, ``sw.js``: the app with its bundled wabac.js), pinned by
  ``replaywebpage/package.json`` and ``package-lock.json`` here, in ``.tools/replaywebpage`` (``npm ci``).

``python tests/peers/wacz_tools.py`` installs both when missing or installed from other pins (``scripts/run_tests.py``
does, before the tests); it needs ``npm`` (and node) on PATH and fails saying so. The tests find them with
``pywacz_bin()`` and ``replaywebpage_dir()``: a tool that is not there skips the test, or fails it when
``G6_REQUIRE_TOOLS`` is set (CI), naming the command that installs it. Nothing is installed while tests run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TOOLS = ROOT / ".tools"
PYWACZ = TOOLS / "pywacz"
PYWACZ_PINS = ("wacz==0.6.0", "authsign==0.6.1")
RWP = TOOLS / "replaywebpage"
RWP_SPEC = HERE / "replaywebpage"  # package.json and package-lock.json, committed
STAMP = "g6-pins.txt"  # what a tool folder was installed from; another text installs it again
INSTALL = "python3 tests/peers/wacz_tools.py"


def _missing(what: str) -> None:
    import pytest

    message = f"{what} is not installed: run `{INSTALL}` (the README's test command does)"
    if os.environ.get("G6_REQUIRE_TOOLS"):
        pytest.fail(message)
    pytest.skip(message)


def _current(folder: Path, pins: str) -> bool:
    try:
        return (folder / STAMP).read_text() == pins
    except OSError:
        return False


def _rwp_pins() -> str:
    return (RWP_SPEC / "package.json").read_text() + (RWP_SPEC / "package-lock.json").read_text()


def pywacz_bin() -> Path:
    """The folder of py-wacz's ``wacz`` (with authsign beside it), installed from ``PYWACZ_PINS``."""
    if not ((PYWACZ / "bin" / "wacz").is_file() and _current(PYWACZ, "\n".join(PYWACZ_PINS))):
        _missing(f"py-wacz ({', '.join(PYWACZ_PINS)}) in .tools/pywacz")
    return PYWACZ / "bin"


def replaywebpage_dir() -> Path:
    """The folder of ReplayWeb.page's app (``index.html``, ``ui.js``, ``sw.js``), installed from the lock here."""
    app = RWP / "node_modules" / "replaywebpage"
    if not ((app / "sw.js").is_file() and _current(RWP, _rwp_pins())):
        _missing("ReplayWeb.page (tests/peers/replaywebpage) in .tools/replaywebpage")
    return app


def version_of(app: Path) -> str:
    import json

    return str(json.loads((app / "package.json").read_text())["version"])


def install_pywacz() -> None:
    pins = "\n".join(PYWACZ_PINS)
    if (PYWACZ / "bin" / "wacz").is_file() and _current(PYWACZ, pins):
        return
    print(f"wacz_tools: installing {', '.join(PYWACZ_PINS)} in a venv of its own, .tools/pywacz", file=sys.stderr)
    if PYWACZ.exists():
        shutil.rmtree(PYWACZ)
    venv.create(PYWACZ, with_pip=True)
    subprocess.run([str(PYWACZ / "bin" / "python"), "-m", "pip", "install", "-q", *PYWACZ_PINS], check=True)
    (PYWACZ / STAMP).write_text(pins)


def install_replaywebpage() -> None:
    pins = _rwp_pins()
    if (RWP / "node_modules" / "replaywebpage" / "sw.js").is_file() and _current(RWP, pins):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("wacz_tools: npm is not on PATH: the ReplayWeb.page tests install it with npm "
                         "(apt-get install -y npm, or https://nodejs.org)")
    print("wacz_tools: installing ReplayWeb.page from tests/peers/replaywebpage/package-lock.json in "
          ".tools/replaywebpage (npm ci)", file=sys.stderr)
    RWP.mkdir(parents=True, exist_ok=True)
    (RWP / STAMP).unlink(missing_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(RWP_SPEC / name, RWP / name)
    # --ignore-scripts: nothing of the package runs here; the test serves its built files to a browser
    subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], cwd=RWP, check=True)
    (RWP / STAMP).write_text(pins)


def main() -> int:
    try:
        install_pywacz()
        install_replaywebpage()
    except subprocess.CalledProcessError as e:
        print(f"wacz_tools: failed: {' '.join(map(str, e.cmd))}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
