"""The declared licence (Apache-2.0) has its text in LICENSE, and the built wheel ships it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_license_file_matches_the_declared_licence() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text and "http://www.apache.org/licenses/LICENSE-2.0" in text


def test_built_wheel_contains_the_license(tmp_path: Path) -> None:
    src = tmp_path / "src-copy"  # build a copy, so the checkout gets no build/ or egg-info
    ignore = shutil.ignore_patterns(".venv", ".tools", ".git", "build", "*.egg-info", "__pycache__", ".ruff_cache",
                                    "tests", "bench", "fixtures")
    shutil.copytree(ROOT, src, ignore=ignore)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    (wheel,) = (tmp_path / "dist").glob("g6_evidence-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        lic = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert len(lic) == 1 and z.read(lic[0]) == (ROOT / "LICENSE").read_bytes()
        meta = Parser().parsestr(z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode())
    assert meta["License-Expression"] == "Apache-2.0" and meta.get_all("License-File") == ["LICENSE"]
