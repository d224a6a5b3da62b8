"""Backends chosen by URL: what each setting opens, and a malformed one refused as input (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from g6.errors import ConfigError
from g6.home import EvidenceHome
from g6.ledger import Ledger, PostgresLedger, open_ledger
from g6.ledger.backends.postgres import redact
from g6.store import BlobStore, S3BlobStore, open_store


def test_defaults_and_file_urls(tmp_path: Path) -> None:
    with open_ledger(None, tmp_path / "d.sqlite") as a, open_ledger(f"sqlite://{tmp_path}/u.sqlite", "x") as b:
        assert type(a) is Ledger and a.path == tmp_path / "d.sqlite"
        assert type(b) is Ledger and b.path == tmp_path / "u.sqlite"
    assert open_store(None, tmp_path / "f").root == tmp_path / "f"
    s = open_store(f"file://{tmp_path}/g", "unused")
    assert isinstance(s, BlobStore) and s.root == tmp_path / "g"


@pytest.mark.parametrize("url", ["mysql://h/db", "sqlite://", "sqlite:///", "sqlite://host/x.sqlite", "ledger.sqlite"])
def test_bad_ledger_urls(url: str) -> None:
    with pytest.raises(ConfigError, match="G6_LEDGER_URL"):
        open_ledger(url, "unused")


@pytest.mark.parametrize("url", ["ftp://h/x", "file://host/x", "s3://", "folder/x"])
def test_bad_blob_urls(url: str) -> None:
    with pytest.raises(ConfigError, match="G6_BLOB_URL"):
        open_store(url, "unused")


def test_shared_urls_open_the_shared_backends(tmp_path: Path, pg_url: str, s3_url: str,
                                              s3_env: dict[str, str]) -> None:
    with EvidenceHome(tmp_path, ledger_url=pg_url, blob_url=s3_url, env=s3_env) as ev:
        assert isinstance(ev.ledger, PostgresLedger) and isinstance(ev.store, S3BlobStore)
        assert ":***@" in str(ev.ledger.path) and s3_env["AWS_SECRET_ACCESS_KEY"] not in repr(vars(ev.store))


def test_redact_keeps_everything_but_the_password() -> None:
    assert redact("postgresql://u:pw@h:5/db?x=1") == "postgresql://u:***@h:5/db?x=1"
    assert redact("postgresql://h/db") == "postgresql://h/db"


def test_cli_refuses_a_malformed_url_as_input(tmp_path: Path) -> None:
    env = {**os.environ, "G6_HOME": str(tmp_path), "G6_LEDGER_URL": "mysql://h/db"}
    r = subprocess.run([sys.executable, "-m", "g6", "ledger", "list"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("g6: G6_LEDGER_URL must start") and "Traceback" not in r.stderr


def test_verifying_writes_nothing_to_the_ledger(tmp_path: Path) -> None:
    """Reading the trusted keys kept with a SQLite ledger never creates their table."""
    home = EvidenceHome(tmp_path, fsync=False)
    home.keys.init()
    assert home.verify().ok
    tables = {r[0] for r in home.ledger.rows.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "trusted_keys" not in tables
    home.close()


def test_settings_pick_the_backends(tmp_path: Path, pg_url: str, s3_url: str, s3_env: dict[str, str]) -> None:
    """The wiring the CLI, the MCP server and ElasticIndex share: G6_* from the environment or the home's .env."""
    from g6.config import load_settings

    (tmp_path / ".env").write_text(f"G6_LEDGER_URL={pg_url}\nG6_BLOB_URL={s3_url}\n"
                                   + "".join(f"{k}={v}\n" for k, v in s3_env.items()))
    with EvidenceHome.from_settings(load_settings({"G6_HOME": str(tmp_path)})) as ev:
        assert isinstance(ev.ledger, PostgresLedger) and isinstance(ev.store, S3BlobStore)
    with EvidenceHome.from_settings(load_settings({"G6_HOME": str(tmp_path / "plain")})) as ev:
        assert type(ev.ledger) is Ledger and isinstance(ev.store, BlobStore)
