"""A key given on the command line (``--key``): an empty one (a ``$(g6 keys show …)`` run where there is no key) and
a key file that is not there are each said to be what they are, not "a verifier key reads …"."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.cli import cli
from g6.cli.app import read_key
from g6.errors import InputError


def test_an_empty_key_says_whose_key_to_give() -> None:
    with pytest.raises(InputError, match="the key is empty: give the log's verifier key as its publisher gives it"):
        read_key("  ")


def test_a_key_file_that_is_not_there_is_said_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no key file at .*publisher.vkey"):
        read_key(str(tmp_path / "publisher.vkey"))
    with pytest.raises(InputError, match="no key file at publisher.vkey"):
        read_key("publisher.vkey")
    # a key itself is still read as one (base64 holds "/", a verifier key "+")
    with pytest.raises(ValueError) as e:  # a NoteError, which the commands catch beside G6Error
        read_key("example.org/log+0123abcd+AAAA/bad")
    assert "no key file" not in str(e.value)


def test_the_cli_says_it_too(tmp_path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(tmp_path / "b.zip", "w") as z:
        z.writestr("bundle.json", "{}")
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "bundle", "verify", str(tmp_path / "b.zip"),
                                 "--key", str(tmp_path / "nonexist.vkey")])
    assert r.exit_code == 2 and "no key file at" in r.output, r.output
