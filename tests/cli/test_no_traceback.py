"""No traceback ever reaches a user: bad inputs, run as a user runs them (a real process, real files), each
end in one `g6:` line on stderr and the documented exit code (2 input or usage, 1 a failed check), and leave
no temporary file behind. An internal error (a bug) is one line and exit 70; `--debug` shows the traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from g6 import cli as cli_module
from g6.demo.site import LocalSite, Reply

PAGE = b"<html><head><title>Bad inputs</title></head><body><p>A sentence worth citing here.</p></body></html>"
QUOTE = "A sentence worth citing here."


def g6(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)


@dataclass(frozen=True)
class Made:
    home: Path  # one fetched page, cited in a signed manifest, one checkpoint
    receipt_id: str
    manifest: Path
    bundle: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    base = tmp_path_factory.mktemp("made")
    home = base / "home"
    site = LocalSite({"/": Reply(body=PAGE)}).start()
    try:
        r = g6(home, "fetch", site.url("/"), "--json", cwd=base)
        assert r.returncode == 0, r.stderr
    finally:
        site.stop()
    rid = json.loads(r.stdout)["receipt_id"]
    manifest = base / "report.json"
    assert g6(home, "cite", rid, "--quote", QUOTE, "--manifest", str(manifest), cwd=base).returncode == 0
    assert g6(home, "manifest", "sign", str(manifest), cwd=base).returncode == 0
    assert g6(home, "ledger", "checkpoint", cwd=base).returncode == 0
    bundle = base / "evidence.zip"
    assert g6(home, "bundle", str(manifest), "-o", str(bundle), cwd=base).returncode == 0
    yield Made(home, rid, manifest, bundle)


def _crafted_bundle(path: Path, good: Path, index: object) -> None:
    """The good bundle with its bundle.json replaced by ``index`` (bytes as they are, else JSON)."""
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(path, "w") as dst:
        for info in src.infolist():
            if info.filename != "bundle.json":
                dst.writestr(info, src.read(info))
        dst.writestr("bundle.json", index if isinstance(index, bytes) else json.dumps(index))


def _home_binary_env(w: Path, m: Made) -> Path:
    (w / "h").mkdir()
    (w / "h" / ".env").write_bytes(b"\x00\xff\xfe\x80G6_MAX_BYTES=\xc3")
    return w / "h"


def _home_env_folder(w: Path, m: Made) -> Path:
    (w / "h" / ".env").mkdir(parents=True)
    return w / "h"


def _home_env_device(w: Path, m: Made) -> Path:
    (w / "h").mkdir()
    (w / "h" / ".env").symlink_to("/dev/zero")  # read whole, it would never end
    return w / "h"


def _home_env_fifo(w: Path, m: Made) -> Path:
    (w / "h").mkdir()
    os.mkfifo(w / "h" / ".env")  # opened for reading, it would wait for a writer forever
    return w / "h"


def _home_env_huge(w: Path, m: Made) -> Path:
    (w / "h").mkdir()
    (w / "h" / ".env").write_text("# padding\n" * 200_000)
    return w / "h"


def _home_is_file(w: Path, m: Made) -> Path:
    (w / "h").write_text("not a folder\n")
    return w / "h"


def _home_meta(kind: str) -> Callable[[Path, Made], Path]:
    """A copy of the made home whose blob metas (meta/xx/<blake3>.json) are each replaced by a folder or a FIFO."""
    def make(w: Path, m: Made) -> Path:
        shutil.copytree(m.home, w / "h")
        for meta in sorted((w / "h" / "knowledge" / "fetched" / "meta").rglob("*.json")):
            meta.unlink()
            meta.mkdir() if kind == "folder" else os.mkfifo(meta)
        return w / "h"
    return make


def _a_blob(w: Path) -> str:
    meta = next((w / "h" / "knowledge" / "fetched" / "meta").rglob("*.json"))
    return "blake3:" + meta.name.removesuffix(".json")


def _home_env(line: str) -> Callable[[Path, Made], Path]:
    def make(w: Path, m: Made) -> Path:
        (w / "h").mkdir()
        (w / "h" / ".env").write_text(line + "\n")
        return w / "h"
    return make


def _binary(w: Path) -> str:
    (w / "bin").write_bytes(b"\xff\xfe\x00\x80")
    return str(w / "bin")


def _folder(w: Path) -> str:
    (w / "out").mkdir(exist_ok=True)
    return str(w / "out")


Case = tuple[str, Callable[[Path, Made], Path] | None, Callable[[Path, Made], list[str]], int]

CASES: list[Case] = [
    # (name, make a home (None: the made one), the arguments, exit code)
    ("binary .env", _home_binary_env, lambda w, m: ["ledger", "list"], 2),
    ("binary .env, writing", _home_binary_env, lambda w, m: ["keys", "init"], 2),
    (".env is a folder", _home_env_folder, lambda w, m: ["ledger", "verify"], 2),
    ("ledger URL with a bad IPv6 host", _home_env("G6_LEDGER_URL=postgresql://u:pw@[::1/db"),
     lambda w, m: ["ledger", "list"], 2),
    ("blob URL with a bad IPv6 host", _home_env("G6_BLOB_URL=s3://[bucket/p"), lambda w, m: ["keys", "init"], 2),
    ("ledger URL port out of range", _home_env("G6_LEDGER_URL=postgresql://h:99999999/db"),
     lambda w, m: ["ledger", "verify"], 2),
    ("elastic URL with a bad IPv6 host", _home_env("G6_ELASTIC_URL=http://[::1"), lambda w, m: ["es", "get", "i", "1"],
     2),
    ("home is a file", _home_is_file, lambda w, m: ["ledger", "list"], 2),
    ("home is a file, writing", _home_is_file, lambda w, m: ["keys", "init"], 2),
    ("--home is a file", _home_is_file, lambda w, m: ["--home", str(w / "h"), "receipt", "show", m.receipt_id], 2),
    ("checkpoint --out folder", None, lambda w, m: ["ledger", "checkpoint", "--out", _folder(w)], 2),
    ("prove -o folder", None, lambda w, m: ["ledger", "prove", m.receipt_id, "-o", _folder(w)], 2),
    ("prove -o missing folder", None, lambda w, m: ["ledger", "prove", m.receipt_id, "-o", str(w / "no/p.txt")], 2),
    ("consistency -o folder", None, lambda w, m: ["ledger", "consistency", "1", "1", "-o", _folder(w)], 2),
    ("consistency -o missing", None, lambda w, m: ["ledger", "consistency", "1", "1", "-o", str(w / "no/c")], 2),
    ("bundle -o folder", None, lambda w, m: ["bundle", str(m.manifest), "-o", _folder(w)], 2),
    ("bundle -o missing folder", None, lambda w, m: ["bundle", str(m.manifest), "-o", str(w / "no/b.zip")], 2),
    ("export warc -o folder", None, lambda w, m: ["export", "warc", "-o", _folder(w)], 2),
    ("export warc -o missing", None, lambda w, m: ["export", "warc", "-o", str(w / "missing/x.warc")], 2),
    ("export wacz -o folder", None, lambda w, m: ["export", "wacz", "-o", _folder(w)], 2),
    ("export wacz -o missing", None, lambda w, m: ["export", "wacz", "-o", str(w / "missing/x.wacz")], 2),
    ("bundle verify --html folder", None,
     lambda w, m: ["bundle", "verify", str(m.bundle), "--trust-bundle-keys", "--html", _folder(w)], 2),
    ("recheck --html missing", None, lambda w, m: ["recheck", str(m.manifest), "--html", str(w / "no/r.html")], 2),
    ("manifest sign, binary file", None,
     lambda w, m: ["manifest", "sign", str((w / "m.json", (w / "m.json").write_bytes(b"\xff\xfe{"))[0])], 2),
    ("manifest verify, a list", None,
     lambda w, m: ["manifest", "verify", str((w / "m.json", (w / "m.json").write_text("[1]"))[0])], 2),
    ("receipt show, unknown id", None, lambda w, m: ["receipt", "show", "rcpt_01M8WVAF30SH7D20VBDX9K87BB"], 1),
    ("receipt show, not an id", None, lambda w, m: ["receipt", "show", "../../etc/passwd"], 1),
    ("ledger prove, unknown id", None, lambda w, m: ["ledger", "prove", "rcpt_01M8WVAF30SH7D20VBDX9K87BB"], 1),
    ("verify-proof, binary proof", None,
     lambda w, m: ["verify-proof", str((w / "p", (w / "p").write_bytes(b"\x00\xff" * 40))[0]), "--key", "x"], 2),
    ("keys trust, binary file", None,
     lambda w, m: ["keys", "trust", str((w / "k", (w / "k").write_bytes(b"\xff\xfe\x00"))[0])], 2),
    ("fetch --input binary", None, lambda w, m: ["fetch", "--input", _binary(w)], 2),
    ("verify-proof --key binary file", None,
     lambda w, m: ["verify-proof", str((w / "p", (w / "p").write_text("x"))[0]), "--key", _binary(w)], 2),
    ("bundle verify --key binary file", None, lambda w, m: ["bundle", "verify", str(m.bundle), "--key", _binary(w)],
     2),
    ("ledger verify --key binary file", None, lambda w, m: ["ledger", "verify", "--key", _binary(w)], 2),
    ("ledger copy --to not a ledger URL", None, lambda w, m: ["ledger", "copy", "--to", "ftp://h/x"], 2),
    ("ledger copy --to a folder", None, lambda w, m: ["ledger", "copy", "--to", f"sqlite:///{_folder(w)}"], 2),
    ("blob copy --to not a store URL", None, lambda w, m: ["blob", "copy", "--to", "garbage"], 2),
    ("ledger publish to a file", None,
     lambda w, m: ["ledger", "publish", str((w / "f", (w / "f").write_text("x"))[0])], 2),
    ("ledger publish under a file", None,
     lambda w, m: ["ledger", "publish", str((w / "f", (w / "f").write_text("x"))[0] / "tiles")], 2),
    ("ledger publish to an ftp URL", None, lambda w, m: ["ledger", "publish", "ftp://h/x"], 2),
    ("corrupt .env line", _home_env("this is not a setting"), lambda w, m: ["ledger", "list"], 2),
    (".env is a link to /dev/zero", _home_env_device, lambda w, m: ["ledger", "list"], 2),
    (".env is a named pipe", _home_env_fifo, lambda w, m: ["keys", "init"], 2),
    (".env over 1 MiB", _home_env_huge, lambda w, m: ["ledger", "list"], 2),
    ("corrupt .env number", _home_env("G6_MAX_BYTES=lots"), lambda w, m: ["keys", "init"], 2),
    ("checkpoint --out missing folder", None, lambda w, m: ["ledger", "checkpoint", "--out", str(w / "missing/x")],
     2),
    ("checkpoint --out under a file", None,
     lambda w, m: ["ledger", "checkpoint", "--out", str((w / "f", (w / "f").write_text("x"))[0] / "x")], 2),
    ("recheck --html under a file", None,
     lambda w, m: ["recheck", str(m.manifest), "--html", str((w / "f", (w / "f").write_text("x"))[0] / "r.html")],
     2),
    ("cite --manifest folder", None,
     lambda w, m: ["cite", m.receipt_id, "--quote", QUOTE, "--manifest", _folder(w)], 2),
    ("cite --manifest missing folder", None,
     lambda w, m: ["cite", m.receipt_id, "--quote", QUOTE, "--manifest", str(w / "no/m.json")], 2),
    ("recheck --html folder", None, lambda w, m: ["recheck", str(m.manifest), "--html", _folder(w)], 2),
    ("bundle verify --html missing", None,
     lambda w, m: ["bundle", "verify", str(m.bundle), "--trust-bundle-keys", "--html", str(w / "no/r.html")], 2),
    ("chunk, unknown id", None, lambda w, m: ["chunk", "rcpt_01M8WVAF30SH7D20VBDX9K87BB"], 1),
    ("cite, unknown id", None,
     lambda w, m: ["cite", "rcpt_01M8WVAF30SH7D20VBDX9K87BB", "--quote", QUOTE, "--manifest", str(w / "m.json")], 1),
    ("convert, unknown digest", None, lambda w, m: ["convert", "blake3:" + "0" * 64], 1),
    ("convert, not a digest", None, lambda w, m: ["convert", "../../etc/passwd"], 2),
    ("blob cat, unknown digest", None, lambda w, m: ["blob", "cat", "sha256:" + "0" * 64], 1),
    ("blob cat, its meta a folder", _home_meta("folder"), lambda w, m: ["blob", "cat", _a_blob(w)], 1),
    ("blob cat, its meta a FIFO", _home_meta("fifo"), lambda w, m: ["blob", "cat", _a_blob(w)], 1),
    ("recheck, binary manifest", None, lambda w, m: ["recheck", _binary(w)], 2),
    ("export warc --manifest binary", None,
     lambda w, m: ["export", "warc", "-o", str(w / "x.warc"), "--manifest", _binary(w)], 2),
    ("ledger verify --since binary", None, lambda w, m: ["ledger", "verify", "--since", _binary(w)], 2),
    ("unknown option", None, lambda w, m: ["ledger", "list", "--no-such-option"], 2),
    ("unknown command", None, lambda w, m: ["ledger", "show"], 2),
]


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp") or ".tmp." in p.name or p.name.startswith(".tmp")]


@pytest.mark.parametrize(("name", "make_home", "make_args", "code"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line(made: Made, tmp_path: Path, name: str, make_home: Callable[[Path, Made], Path] | None,
                               make_args: Callable[[Path, Made], list[str]], code: int) -> None:
    work = tmp_path / "work"
    work.mkdir()
    home = make_home(work, made) if make_home else made.home
    r = g6(home, *make_args(work, made), cwd=work)
    assert "Traceback" not in r.stderr + r.stdout
    lines = r.stderr.splitlines()
    assert [x for x in lines if x.startswith("g6:")] and len(lines) == 1, r.stderr
    assert r.returncode == code, r.stderr
    assert _temp_files(work) == [] and _temp_files(made.home) == []
    assert not (work / "no").exists() and not (work / "missing").exists()  # no folder made for an output path


@pytest.mark.parametrize("index", [b"\xff\xfe\x00", b"[]", b'{"files": 5, "manifest_id": ["x"]}',
                                   b'{"files": [{"path": "../../x", "sha256": 7}]}', b"{" * 5000],
                         ids=["binary", "a list", "wrong types", "path escape", "deep nesting"])
def test_crafted_bundle_json_is_a_failed_check(made: Made, tmp_path: Path, index: bytes) -> None:
    """A crafted bundle.json is a failed check of the bundle (exit 1, a verdict on stdout), not a crash."""
    crafted = tmp_path / "crafted.zip"
    _crafted_bundle(crafted, made.bundle, index)
    r = g6(made.home, "bundle", "verify", str(crafted), "--trust-bundle-keys", cwd=tmp_path)
    assert "Traceback" not in r.stderr + r.stdout
    assert r.returncode == 1, r.stderr
    assert "bundle FAILED" in r.stdout
    assert all(x.startswith("g6:") for x in r.stderr.splitlines())
    assert _temp_files(tmp_path) == []


def test_the_good_bundle_holds(made: Made, tmp_path: Path) -> None:
    """The baseline the crafted cases start from does verify, so their failures are the crafting's."""
    r = g6(made.home, "bundle", "verify", str(made.bundle), "--trust-bundle-keys", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


# -- an internal error: one line and exit 70; the traceback only under --debug ------------------------------------
@pytest.fixture
def broken_keys_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """`g6 keys show` made to hit a bug: its callback raises what no g6 code raises on purpose."""

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug\nspread over two lines")

    cmd = cli_module.keys.keys_group.commands["show"]
    monkeypatch.setattr(cmd, "callback", boom)


def test_internal_error_is_one_line_and_exit_70(broken_keys_show: None, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli_module.cli, ["--home", str(tmp_path), "keys", "show"], prog_name="g6")
    assert r.exit_code == 70
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        "g6: internal error: RuntimeError: a bug spread over two lines; please report it at "
        + cli_module.REPORT_AT]
    assert "Traceback" not in r.stderr


def test_internal_error_with_debug_shows_the_traceback(broken_keys_show: None, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli_module.cli, ["--debug", "--home", str(tmp_path), "keys", "show"], prog_name="g6")
    assert r.exit_code == 70
    assert "Traceback (most recent call last)" in r.stderr and "RuntimeError: a bug" in r.stderr
    assert "internal error" not in r.stderr


def test_internal_error_line_keeps_secrets_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The line is for pasting into a bug report: a URL password and a secret setting's value are not in it."""
    secret = "s3cr3t-api-key-value-123"

    def leaky(c: object, *a: object, **k: object) -> None:
        _ = c.settings  # type: ignore[attr-defined]  # the settings (and their secrets) are loaded
        raise RuntimeError(f"connect to https://user:hunter2pass@127.0.0.1/x failed; key {secret}")

    monkeypatch.setattr(cli_module.keys.keys_group.commands["show"], "callback", click.pass_obj(leaky))
    r = CliRunner().invoke(cli_module.cli, ["--home", str(tmp_path), "keys", "show"], prog_name="g6",
                           env={"G6_ELASTIC_API_KEY": secret})
    assert r.exit_code == 70 and r.stderr.startswith("g6: internal error: RuntimeError: connect to https://")
    assert "hunter2pass" not in r.stderr and secret not in r.stderr


def test_main_is_the_same_path(broken_keys_show: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    """`g6` (the console script, main()) goes through the same handling as the group."""
    monkeypatch.setattr(sys, "argv", ["g6", "--home", str(tmp_path), "keys", "show"])
    with pytest.raises(SystemExit) as e:
        cli_module.main()
    assert e.value.code == 70
    err = capsys.readouterr().err
    assert err.startswith("g6: internal error: RuntimeError:") and err.count("\n") == 1


def test_typed_errors_keep_their_codes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A G6Error escaping a command is still a user-facing error (1; InputError 2), not an internal one."""
    from g6.errors import InputError, LedgerError

    cmd = cli_module.keys.keys_group.commands["show"]
    for exc, code in ((LedgerError("the ledger is damaged"), 1), (InputError("that is not an id"), 2),
                      (click.BadParameter("no such thing"), 2)):
        def raise_it(*a: object, _e: Exception = exc, **k: object) -> None:
            raise _e

        monkeypatch.setattr(cmd, "callback", raise_it)
        r = CliRunner().invoke(cli_module.cli, ["--home", str(tmp_path), "keys", "show"], prog_name="g6")
        assert r.exit_code == code, r.output
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("g6: ")


def test_a_closed_pipe_is_not_an_internal_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`g6 ledger list | head -1`: the reader went away; that is click's quiet exit 1, not a bug report."""
    def closed(*a: object, **k: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli_module.keys.keys_group.commands["show"], "callback", closed)
    r = CliRunner().invoke(cli_module.cli, ["--home", str(tmp_path), "keys", "show"], prog_name="g6")
    assert r.exit_code == 1 and "internal error" not in r.stderr


def test_leftovers_helper_sees_a_temp_file(tmp_path: Path) -> None:
    """The no-leftover check above can fail: it sees the names our atomic writers use."""
    (tmp_path / ".out.txt.abc123.tmp").write_text("x")
    assert _temp_files(tmp_path)
    shutil.rmtree(tmp_path)


def test_an_output_path_under_a_file_says_so(made: Made, tmp_path: Path) -> None:
    """`-o file/x`: the message names the file in the way, not a folder that "does not exist"."""
    (tmp_path / "f").write_text("x")
    r = g6(made.home, "export", "warc", "-o", str(tmp_path / "f" / "x.warc"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr == f"g6: -o {tmp_path / 'f' / 'x.warc'}: {tmp_path / 'f'} is a file, not a " \
                                             "folder\n"
    r = g6(made.home, "export", "warc", "-o", str(tmp_path / "no" / "x.warc"), cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.endswith(f"folder {tmp_path / 'no'} does not exist\n")
