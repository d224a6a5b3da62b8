"""A first `scripts/witness.py` builds litewitness with Go for about a minute: go's lines are shown as they
come (they were captured and dropped, and the reader saw nothing for 65 s).

The `go` here is a stand-in on PATH (a first real build of torchwood takes a minute of two cores): it
prints one line, then waits for the file the progress callback writes on that line, so a build whose
output is held back until it ends fails (the stand-in gives up and exits 1) rather than passing slowly."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from tests.peers import go_tools

STAND_IN = """#!{python}
import os, sys, time
from pathlib import Path
args = sys.argv[1:]
if args[:1] == ["version"]:
    sys.exit(0)                                  # `go version -m BIN`: nothing built yet
Path(os.environ["ARGS_SEEN"]).write_text(" ".join(args))
print("filippo.io/torchwood/internal/one", file=sys.stderr, flush=True)
seen = Path(os.environ["SEEN_FIRST"])
for _ in range(600):                             # a bound for a hung test, not a timing: the file comes
    if seen.exists():                            # as soon as the first line is read
        break
    time.sleep(0.1)
else:
    sys.exit(1)
print("filippo.io/torchwood/cmd/litewitness", file=sys.stderr, flush=True)
Path(os.environ["GOBIN"], "litewitness").write_text("built")
"""


def test_go_tool_hands_on_each_line_as_go_prints_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "go"
    fake.parent.mkdir()
    fake.write_text(STAND_IN.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("SEEN_FIRST", str(tmp_path / "seen"))
    monkeypatch.setenv("ARGS_SEEN", str(tmp_path / "args"))
    monkeypatch.setattr(go_tools, "BIN", tmp_path / "gobin")
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        (tmp_path / "seen").touch()

    assert go_tools.go_tool("litewitness", progress) == tmp_path / "gobin" / "litewitness"
    assert lines == ["filippo.io/torchwood/internal/one", "filippo.io/torchwood/cmd/litewitness"]
    assert (tmp_path / "args").read_text().startswith("install -v -p 1 filippo.io/torchwood/cmd/litewitness@")


def test_a_failed_build_still_says_what_go_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "go"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('go: module lookup disabled', file=sys.stderr)\n"
                    "sys.exit(0 if sys.argv[1:2] == ['version'] else 1)\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(go_tools, "BIN", tmp_path / "gobin")
    lines: list[str] = []
    with pytest.raises(go_tools.ToolUnavailable, match="module lookup disabled"):
        go_tools.go_tool("witnessctl", lines.append)
    assert lines == ["go: module lookup disabled"]
