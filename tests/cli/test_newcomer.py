"""What a newcomer meets first: the demo's `try:` line works when pasted, the key it pins is the one every
output names, messages end their sentences, and a file that is no bundle is a usage error."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = str(Path(sys.executable).parent)  # where this venv's `g6` is, for the pasted line


def g6(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("G6_HOME", None)
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=cwd)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("demo") / "home"
    r = g6("demo", "--home", str(home))
    assert r.returncode == 0, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.startswith("try: ")]
    return home, line.removeprefix("try: ")


def test_the_try_line_works_when_pasted(demo: tuple[Path, str], tmp_path: Path) -> None:
    assert shutil.which("jq"), "jq is needed (scripts/run_tests.py installs it)"
    home, line = demo
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("G6_HOME", None)
    r = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "bundle holds: 1 citation, manifest signed by a pinned key" in r.stdout
    assert "the origin is pinned by the verifier key" in r.stdout  # the key pinned names the log as well


def _path_without_g6() -> str:
    """The PATH of a shell where no venv is activated: no folder on it holds a `g6`."""
    return os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and not (Path(p) / "g6").exists())


@pytest.mark.parametrize("started", ["venv-script", "python -m g6"])
def test_the_try_line_works_in_a_shell_without_g6_on_its_path(started: str, tmp_path: Path) -> None:
    """The README's first line runs `.venv/bin/g6 demo` with no venv activated: its `try:` line said a bare
    `g6`, "command not found" when pasted into that shell. It names the g6 that ran."""
    env = {k: v for k, v in os.environ.items() if k != "G6_HOME"} | {"PATH": _path_without_g6()}
    first = [str(Path(BIN) / "g6")] if started == "venv-script" else [sys.executable, "-m", "g6"]
    r = subprocess.run([*first, "demo", "--home", str(tmp_path / "home")], capture_output=True, text=True,
                       timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [line] = [x.removeprefix("try: ") for x in r.stderr.splitlines() if x.startswith("try: ")]
    assert not line.startswith("g6 ")
    pasted = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert "bundle holds: 1 citation, manifest signed by a pinned key" in pasted.stdout


def test_the_try_line_says_g6_where_the_path_finds_it(tmp_path: Path) -> None:
    """In a shell with the venv activated (its bin first on the PATH), the line is the short one the docs show."""
    env = {k: v for k, v in os.environ.items() if k != "G6_HOME"} | {"PATH": f"{BIN}{os.pathsep}{_path_without_g6()}"}
    r = subprocess.run(["g6", "demo", "--home", str(tmp_path / "home")], capture_output=True, text=True,
                       timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.startswith("try: ")]
    assert line.startswith("try: g6 --home ") and "; g6 --home " in line and "$(g6 --home " in line


def test_one_name_for_the_key_a_grader_pins(demo: tuple[Path, str]) -> None:
    """The try line, the README and `keys show` name the same field; `ledger verify --key` takes it too."""
    from g6.cli.demo import PINNED_FIELD

    home, line = demo
    assert f"jq -r {PINNED_FIELD})" in line
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"jq -r {PINNED_FIELD}" in readme and ".signing.public_key" not in readme
    shown = json.loads(g6("--home", str(home), "keys", "show", "--json").stdout)
    vkey = shown["signing"][PINNED_FIELD.rsplit(".", 1)[1]]
    assert vkey.startswith("g6-evidence/")
    assert g6("--home", str(home), "ledger", "verify", "--key", vkey).returncode == 0


def test_the_unpinned_message_ends_its_sentence(demo: tuple[Path, str]) -> None:
    home, _ = demo
    r = g6("bundle", "verify", str(home / "demo-evidence.zip"), "--json")
    assert r.returncode == 1
    detail = next(c["detail"] for c in json.loads(r.stdout)["bundle_checks"] if c["check"] == "key_pinned")
    assert detail.endswith("pin the publisher's checkpoint verifier key with --key"), detail


def test_a_file_that_is_no_zip_is_a_usage_error_with_a_hint(tmp_path: Path) -> None:
    (tmp_path / "empty.zip").write_bytes(b"")
    for path in (ROOT / "README.md", tmp_path / "empty.zip"):
        r = g6("bundle", "verify", str(path), "--trust-bundle-keys")
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stdout == "" and len(r.stderr.splitlines()) == 1
        assert re.match(rf"g6: {re.escape(str(path))} is not an evidence bundle \(a zip made by `g6 bundle", r.stderr)


def test_a_zip_that_fails_its_checks_is_still_a_failed_check(demo: tuple[Path, str], tmp_path: Path) -> None:
    """Cut short or with a byte changed, a real bundle is a failed check (exit 1), with its verdict."""
    home, _ = demo
    data = (home / "demo-evidence.zip").read_bytes()
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    for name, body in (("cut.zip", data[: len(data) // 2]), ("flipped.zip", bytes(flipped))):
        (tmp_path / name).write_bytes(body)
        r = g6("bundle", "verify", str(tmp_path / name), "--trust-bundle-keys")
        assert r.returncode == 1, (name, r.stderr)
        assert "bundle FAILED" in r.stdout and "FAILED" in r.stdout.splitlines()[0] + r.stdout


def test_keys_trust_and_add_take_the_verifier_key_too(demo: tuple[Path, str], tmp_path: Path) -> None:
    """The name a grader pins is also what `keys trust` and `keys add` take: one name wherever a key is given."""
    other = tmp_path / "other"
    assert g6("--home", str(other), "ledger", "checkpoint").returncode == 0  # a key and a log
    shown = json.loads(g6("--home", str(other), "keys", "show", "--json").stdout)["signing"]
    home, _ = demo
    r = g6("--home", str(home), "keys", "trust", shown["checkpoint_verifier_key"], "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"key_id": shown["key_id"], "public_key": shown["public_key"]}
    bad = g6("--home", str(home), "keys", "trust", "g6-evidence/x+00000000+AAAA")
    assert bad.returncode == 2 and bad.stderr.startswith("g6: ") and len(bad.stderr.splitlines()) == 1


def test_bundle_counts_the_files_it_wrote(demo: tuple[Path, str], tmp_path: Path) -> None:
    """The line said "8 files" of a zip of 9 entries: the index (bundle.json) is a file of the zip too."""
    import zipfile

    home, _ = demo
    out = tmp_path / "evidence.zip"
    r = g6("--home", str(home), "bundle", str(home / "demo-manifest.json"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    with zipfile.ZipFile(out) as z:
        entries = len(z.namelist())
    assert entries > 1 and "bundle.json" in z.namelist()
    assert re.fullmatch(rf"wrote {re.escape(str(out))}: {entries} files for manifest mfst_\w+\n", r.stdout), r.stdout


def test_cite_counts_the_citations_in_english(demo: tuple[Path, str], tmp_path: Path) -> None:
    """"manifest: report.json (1 citations)" read wrong: one citation, then two."""
    home, _ = demo
    rows = json.loads(g6("--home", str(home), "ledger", "list", "--json").stdout)
    rid = next(r["receipt_id"] for r in rows if (r["final_url"] or "").endswith("/article"))
    said = []
    for quote in ("the answer should be a receipt", "Content-addressed storage keeps the bytes"):
        r = g6("--home", str(home), "cite", rid, "--quote", quote, "--manifest", "m.json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        said += [x for x in r.stderr.splitlines() if x.startswith("manifest: ")]
    assert said == ["manifest: m.json (1 citation)", "manifest: m.json (2 citations)"]
