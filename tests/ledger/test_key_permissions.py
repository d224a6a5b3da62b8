"""A signing key others can read is refused, as OpenSSH refuses such a private key (issue 27).

``keys/signing.key`` with any permission for group or others is unusable: every command that signs, and
``keys show``, fails with the existing ``SigningKeyError`` (``G6_E_LEDGER_KEY``, exit 1) and one line that
says how to fix it (``chmod 600 …``), unless ``G6_ALLOW_OPEN_KEY=1`` (the library takes it as
``KeyDir(allow_open_key=True)``; the CLI and the MCP server pass it from the settings). A signing key that
is a symbolic link, or not a regular file at all, is refused whatever the setting. ``keys init`` keeps
making the key 0600, whatever the umask.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.cli import cli
from g6.config import load_settings
from g6.errors import SigningKeyError
from g6.home import EvidenceHome
from g6.ledger import KeyDir


def g6(home: Path, *args: str, env: dict[str, str | None] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["--home", str(home), *args], env={"G6_ALLOW_OPEN_KEY": None, **(env or {})})


@pytest.fixture
def keyed(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    assert g6(home, "keys", "init").exit_code == 0
    return home


def signing(home: Path) -> Path:
    return home / "keys" / "signing.key"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606, 0o620, 0o602, 0o610, 0o601, 0o666])
def test_a_key_open_to_group_or_others_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    kd = KeyDir(tmp_path / "keys")
    kd.init()
    kd.signing_path.chmod(mode)
    with pytest.raises(SigningKeyError) as e:
        kd.load_signing()
    msg = str(e.value)
    assert f"permissions {mode:04o} for {kd.signing_path} are too open" in msg, msg
    assert f"chmod 600 {kd.signing_path}" in msg and "\n" not in msg, msg
    assert KeyDir(tmp_path / "keys", allow_open_key=True).load_signing().key_id == kd.trusted().popitem()[0]


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_a_key_only_its_owner_may_read_is_used(tmp_path: Path, mode: int) -> None:
    kd = KeyDir(tmp_path / "keys")
    key = kd.init()
    kd.signing_path.chmod(mode)
    assert kd.load_signing().key_id == key.key_id


def test_ensure_never_replaces_an_open_key(tmp_path: Path) -> None:
    kd = KeyDir(tmp_path / "keys")
    kd.init()
    kd.signing_path.chmod(0o644)
    before = kd.signing_path.read_bytes()
    with pytest.raises(SigningKeyError, match="too open"):
        kd.ensure()
    assert kd.signing_path.read_bytes() == before


@pytest.mark.parametrize("args", [("ledger", "checkpoint"), ("keys", "show"), ("manifest", "sign", "MANIFEST")])
def test_commands_that_need_the_key_fail_with_one_line(keyed: Path, args: tuple[str, ...]) -> None:
    from dataclasses import replace

    from g6.cite.manifest import Citation, Manifest, save_manifest

    manifest = keyed.parent / "m.json"  # one citation (an empty manifest is refused before the key is read)
    cited = Citation("c_0123456789abcdef", "web", "rcpt_01M980000000000000000000000", "http://example.org/",
                     "http://example.org/", {"blake3": "blake3:" + "0" * 64, "sha256": "sha256:" + "0" * 64,
                                             "size": 1}, None, "sha256:" + "0" * 64, "a quoted text", 0, 13,
                     "a quoted text")
    save_manifest(replace(Manifest.new(), citations=(cited,)), manifest)
    signing(keyed).chmod(0o644)
    r = g6(keyed, *(str(manifest) if a == "MANIFEST" else a for a in args))
    assert r.exit_code == 1, (r.exit_code, r.output)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("g6: permissions 0644 for "), r.stderr
    assert f"chmod 600 {signing(keyed)}" in lines[0] and "Traceback" not in r.output


def test_g6_allow_open_key_accepts_it(keyed: Path) -> None:
    signing(keyed).chmod(0o644)
    r = g6(keyed, "ledger", "checkpoint", env={"G6_ALLOW_OPEN_KEY": "1"})
    assert r.exit_code == 0, r.output
    (keyed / ".env").write_text("G6_ALLOW_OPEN_KEY=1\n")
    assert g6(keyed, "keys", "show").exit_code == 0
    (keyed / ".env").write_text("G6_ALLOW_OPEN_KEY=maybe\n")
    r = g6(keyed, "keys", "show")
    assert r.exit_code == 2 and "G6_ALLOW_OPEN_KEY" in r.stderr, r.output


def test_the_settings_carry_it_to_the_library(tmp_path: Path) -> None:
    """The library never reads the environment: ``Settings`` hands the choice to the home's ``KeyDir``."""
    home = tmp_path / "h"
    KeyDir(home / "keys").init()
    (home / "keys" / "signing.key").chmod(0o640)
    for env, ok in (({}, False), ({"G6_ALLOW_OPEN_KEY": "1"}, True), ({"G6_ALLOW_OPEN_KEY": "0"}, False)):
        settings = load_settings({"G6_HOME": str(home), **env})
        assert settings.allow_open_key is ok
        with settings.open_home() as ev:
            if ok:
                assert ev.signing_key()
            else:
                with pytest.raises(SigningKeyError, match="too open"):
                    ev.signing_key()
    os.environ["G6_ALLOW_OPEN_KEY"] = "1"
    try:
        with EvidenceHome(home) as ev, pytest.raises(SigningKeyError, match="too open"):
            ev.signing_key()  # the library itself does not look at the environment
    finally:
        del os.environ["G6_ALLOW_OPEN_KEY"]


def test_a_symbolic_link_is_refused_whatever_the_setting(keyed: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.key"
    signing(keyed).rename(elsewhere)
    os.symlink(elsewhere, signing(keyed))
    for env in ({}, {"G6_ALLOW_OPEN_KEY": "1"}):
        r = g6(keyed, "ledger", "checkpoint", env=env)
        assert r.exit_code == 1 and "symbolic link" in r.stderr and len(r.stderr.splitlines()) == 1, r.output
    assert elsewhere.exists()  # never replaced, never removed


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_key_that_is_not_a_regular_file_is_refused_and_never_waited_on(keyed: Path, kind: str) -> None:
    signing(keyed).unlink()
    signing(keyed).mkdir() if kind == "folder" else os.mkfifo(signing(keyed))
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(g6(keyed, "ledger", "checkpoint")), daemon=True)
    t.start()
    t.join(30)
    assert done, "the command waited on the FIFO"
    r = done[0]
    assert r.exit_code == 1 and "not a regular file" in r.stderr, r.output  # type: ignore[attr-defined]


def test_keys_init_makes_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        for args in (("keys", "init"), ("keys", "init", "--force")):
            assert g6(tmp_path / "h", *args).exit_code == 0
            assert signing(tmp_path / "h").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


def test_keys_init_force_over_a_folder_is_a_typed_error(keyed: Path) -> None:
    signing(keyed).unlink()
    signing(keyed).mkdir()
    r = g6(keyed, "keys", "init", "--force")
    assert r.exit_code == 1 and r.stderr.startswith("g6: cannot put the new signing key") and \
        len(r.stderr.splitlines()) == 1, r.output


@pytest.mark.parametrize("kind", ["folder", "fifo", "binary"])
def test_a_trusted_key_that_cannot_be_read_is_one_typed_line(keyed: Path, kind: str) -> None:
    """A folder, a FIFO (never waited on) or bytes that are not text named like a trusted public key."""
    odd = keyed / "keys" / "trusted" / "odd.pub"
    odd.mkdir() if kind == "folder" else os.mkfifo(odd) if kind == "fifo" else odd.write_bytes(b"\xff\xfe")
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(g6(keyed, "ledger", "verify")), daemon=True)
    t.start()
    t.join(30)
    assert done, "verify waited on the FIFO"
    r = done[0]
    assert r.exit_code == 1 and r.stderr.startswith("g6: ") and "odd.pub" in r.stderr, r.output  # type: ignore[attr-defined]
    assert "internal error" not in r.stderr  # type: ignore[attr-defined]
