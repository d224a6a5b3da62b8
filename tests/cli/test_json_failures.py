"""`--json` means JSON on failure too: when a command given `--json` fails (a bad setting, the ledger's PostgreSQL
down or refusing the password, a missing bucket or a wrong S3 key, a full disk, a bad argument), stdout is ONE
JSON object valid against schemas/refusal.v1 (the `es` commands: against their own schema, which takes it), and
stderr is the one `g6:` line with the code. Every command with `--json` is run for the bad setting (walked from
the click tree, so a new command is covered); a representative set for each backend failure. Real processes,
real PostgreSQL and SeaweedFS (tests/conftest.py), nothing mocked."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import jsonschema
import pytest

from g6.cli import cli
from g6.cli.options import json_schemas
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.schemas import load

Site = Callable[..., LocalSite]
RID = "rcpt_" + "0" * 26


def _leaves(cmd: click.Command, path: tuple[str, ...] = ()) -> dict[str, click.Command]:
    if isinstance(cmd, click.Group):
        return {k: v for n, sub in cmd.commands.items() for k, v in _leaves(sub, (*path, n)).items()}
    return {" ".join(path): cmd}


JSON_COMMANDS = sorted(p for p, c in _leaves(cli).items() if json_schemas(c))


def run(home: Path, *args: str, env: dict[str, str] | None = None, fsize: int | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("G6_", "AWS_"))}
    e.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1", "PYTHONDONTWRITEBYTECODE": "1"})
    e.update(env or {})

    def limit() -> None:  # a "full disk": no file may grow past fsize bytes (EFBIG, a typed error in g6)
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))

    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=e, timeout=180,
                          preexec_fn=limit, cwd=cwd)


def refusal_of(r: subprocess.CompletedProcess[str], cmd: str) -> dict:
    """The one JSON object on stdout, checked against refusal.v1 (and the command's own schema for `es`), and the
    `g6:` line on stderr carrying its code."""
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (1, 2), (cmd, r.returncode, r.stdout, r.stderr)
    doc = json.loads(r.stdout)  # the whole of stdout: one document, nothing else
    assert isinstance(doc, dict), r.stdout
    jsonschema.Draft202012Validator(load("refusal.v1")).validate(doc)
    if cmd.startswith("es "):
        jsonschema.Draft202012Validator(load(f"es-{cmd.split()[1]}.v1")).validate(doc)
    assert doc["outcome"] == ("rejected" if r.returncode == 2 else "failed")
    last = r.stderr.strip().splitlines()[-1]  # after any note (a home or key just created)
    assert last.startswith("g6: ") and doc["code"] in last, r.stderr
    return doc


# -- a bad setting: every command with --json ----------------------------------------------------------------------
def _args(cmd: str, t: Path) -> list[str]:
    """Arguments each command takes well enough that the settings are what it fails on."""
    manifest = t / "m.json"
    manifest.write_text("{}")
    proof = t / "p.proof"
    proof.write_text("x")
    report = t / "r.json"
    report.write_text('{"schema": "g6.report-model.v1", "citations": [{"source": "http://127.0.0.1:9/"}]}')
    return {
        "blob copy": ["--to", f"file://{t / 'b'}"], "bundle": [str(manifest), "-o", str(t / "b.zip")],
        **{f"blob {c}": ["sha256:" + "0" * 64, "--reason", "x"] for c in ("redact", "hold", "release")},
        "blob expire": ["--older-than", "2020-01-01"],
        "chunk": [RID], "cite": [RID, "--quote", "x", "--manifest", str(manifest)], "convert": ["sha256:" + "0" * 64],
        "demo": ["--home", str(manifest)],  # the demo reads no setting of the home: a home that is a file
        "es count": ["hb", "x"], "es get": ["hb", "1"], "es mapping": ["hb"], "es search": ["hb", "x"],
        "export wacz": ["-o", str(t / "x.wacz")], "export warc": ["-o", str(t / "x.warc.gz")],
        "fetch": ["http://127.0.0.1:9/"], "keys add": ["ed25519:" + "A" * 43 + "="], "keys retire": ["ed25519:x"],
        "keys trust": ["self"], "ledger consistency": ["1", "2"], "ledger copy": ["--to", f"sqlite:///{t / 'c.db'}"],
        "ledger prove": [RID], "ledger publish": [str(t / "tiles")], "manifest sign": [str(manifest)],
        "manifest export": [str(manifest), "--format", "annotation", "-o", str(t / "a.jsonld")],
        "manifest verify": [str(manifest)], "monitor": ["http://127.0.0.1:9/log/", "--key", "ed25519:x"],
        "receipt show": [RID], "receipt export": [RID, "--format", "dsse"], "recheck": [str(manifest)],
        "report check": [str(report)],
        "report verify": [str(manifest)], "report bundle": [str(manifest), "-o", str(t / "r.zip")],
        "search": ["arxiv", "x"],
        "verify-proof": [str(proof), "--key", "ed25519:x"],
    }.get(cmd, [])


# commands that check their own input before reading any setting (a file, a key), so they refuse that first
INPUT_FIRST = {"demo", "keys add", "manifest sign", "manifest verify", "manifest export", "recheck", "verify-proof",
               "monitor", "report verify", "report bundle"}


def test_every_json_command_is_covered() -> None:
    assert len(JSON_COMMANDS) > 30 and "es search" in JSON_COMMANDS and "receipt show" in JSON_COMMANDS


@pytest.mark.parametrize("cmd", JSON_COMMANDS)
def test_a_bad_setting_is_one_json_refusal(cmd: str, tmp_path: Path) -> None:
    r = run(tmp_path / "home", *cmd.split(), *_args(cmd, tmp_path), "--json", env={"G6_HOST_PAUSE": "abc"},
            cwd=tmp_path)
    doc = refusal_of(r, cmd)
    if cmd not in INPUT_FIRST:
        assert doc["code"] == "G6_E_CONFIG" and "G6_HOST_PAUSE" in doc["message"], doc
        assert r.returncode == 2 and not (tmp_path / "home").exists()  # said before any work: nothing created


def test_without_json_the_failure_is_the_line_alone(tmp_path: Path) -> None:
    r = run(tmp_path / "home", "ledger", "verify", env={"G6_HOST_PAUSE": "abc"})
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "g6: G6_HOST_PAUSE must be a number, got 'abc'\n"


def test_a_bad_value_or_missing_argument_is_json_too(tmp_path: Path) -> None:
    for args in (["ledger", "list", "--limit", "abc", "--json"], ["receipt", "show", "--json"]):
        doc = refusal_of(run(tmp_path / "home", *args), " ".join(args[:2]))
        assert doc["code"] == "G6_E_INPUT"


def test_a_command_s_own_json_is_not_followed_by_a_second(tmp_path: Path) -> None:
    """A search refused by the source prints its refusal itself: still one object on stdout."""
    r = run(tmp_path / "home", "search", "arxiv", "x", "--category", "cs.XX", "--json")
    doc = refusal_of(r, "search")
    assert doc["code"] == "G6_E_KNOWLEDGE_FETCH_INPUT"


def test_bundle_verify_of_a_file_that_is_no_bundle_is_one_json_refusal(tmp_path: Path) -> None:
    """`bundle verify` reads no home (offline): what it refuses under --json is the refusal object too."""
    (tmp_path / "README.md").write_text("# not a bundle\n")
    doc = refusal_of(run(tmp_path / "home", "bundle", "verify", str(tmp_path / "README.md"), "--json"), "bundle")
    assert doc["code"] == "G6_E_INPUT" and "not an evidence bundle" in doc["message"]


# -- backends down, refusing, missing; a full disk -------------------------------------------------------------------
@pytest.fixture
def page(site: Site) -> str:
    routes = {"/p": Reply(body=b"<html><body><p>A page.</p></body></html>"), "/robots.txt": Reply(404, b"")}
    return site(routes).url("/p")


def _commands(page: str, t: Path) -> dict[str, list[str]]:
    manifest = t / "m.json"
    manifest.write_text(json.dumps({"schema": "g6.manifest.v1", "citations": []}))
    return {"fetch": ["fetch", page], "ledger verify": ["ledger", "verify"], "ledger list": ["ledger", "list"],
            "receipt show": ["receipt", "show", RID], "blob verify": ["blob", "verify"],
            "export warc": ["export", "warc", "-o", str(t / "x.warc.gz")],
            "bundle": ["bundle", str(manifest), "-o", str(t / "b.zip")],
            "es search": ["es", "search", "hb", "retention"]}


PG_CASES = ["fetch", "ledger verify", "ledger list", "receipt show", "export warc", "bundle", "es search"]
S3_CASES = ["fetch", "blob verify", "ledger verify", "export warc"]


@pytest.mark.parametrize("cmd", PG_CASES)
def test_postgres_down_is_one_json_failure(cmd: str, tmp_path: Path, page: str) -> None:
    """No PostgreSQL listens on a unix socket in a folder that does not exist: connecting fails, for sure."""
    url = f"postgresql://g6:secret@/postgres?host={tmp_path / 'no-such-dir'}"
    r = run(tmp_path / "h", *_commands(page, tmp_path)[cmd], "--json", env={"G6_LEDGER_URL": url,
                                                                           "G6_ELASTIC_URL": "http://127.0.0.1:9"})
    doc = refusal_of(r, cmd)
    assert doc["code"] == "G6_E_LEDGER_BACKEND" and r.returncode == 1, doc
    assert "secret" not in r.stdout + r.stderr


@pytest.mark.parametrize("cmd", PG_CASES)
def test_postgres_wrong_password_is_one_json_failure(cmd: str, tmp_path: Path, page: str, pg_url: str) -> None:
    wrong = pg_url.replace("postgresql://g6:", "postgresql://g6:x", 1)
    r = run(tmp_path / "h", *_commands(page, tmp_path)[cmd], "--json", env={"G6_LEDGER_URL": wrong,
                                                                           "G6_ELASTIC_URL": "http://127.0.0.1:9"})
    doc = refusal_of(r, cmd)
    assert doc["code"] == "G6_E_LEDGER_BACKEND" and "password" in doc["message"], doc
    assert pg_url.split(":")[2].split("@")[0] not in r.stdout + r.stderr  # the password never shows


@pytest.mark.parametrize("case", ["no bucket", "wrong key"])
@pytest.mark.parametrize("cmd", S3_CASES)
def test_s3_missing_bucket_or_wrong_key_is_one_json_failure(cmd: str, case: str, tmp_path: Path, page: str,
                                                             s3_env: dict[str, str], s3_url: str) -> None:
    env = {**s3_env, "G6_BLOB_URL": "s3://no-such-bucket/x" if case == "no bucket" else s3_url}
    if case == "wrong key":
        env["AWS_SECRET_ACCESS_KEY"] = "wrong"
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:  # a home with a ledger, so reading it gets to the blobs
        ev.keys.ensure()
    r = run(tmp_path / "h", *_commands(page, tmp_path)[cmd], "--json", env=env)
    doc = refusal_of(r, cmd)
    assert doc["code"] == "G6_E_STORE_BACKEND" and r.returncode == 1, doc
    assert ("does not exist" if case == "no bucket" else "403") in doc["message"]
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in r.stdout + r.stderr


def test_a_full_disk_is_one_json_failure(tmp_path: Path, site: Site) -> None:
    import os as _os

    big = site({"/": Reply(body=b"<html><body><p>" + _os.urandom(600_000).hex().encode() + b"</p></body></html>"),
                "/robots.txt": Reply(404, b"")})
    home = tmp_path / "h"
    assert run(home, "keys", "init").returncode == 0
    r = run(home, "fetch", big.url("/"), "--json", fsize=256 * 1024)
    doc = refusal_of(r, "fetch")
    assert doc["code"] == "G6_E_STORE_DISK_FULL" and r.returncode == 1, doc
    assert run(home, "fetch", big.url("/")).returncode == 0
    r = run(home, "ledger", "checkpoint", "--json", fsize=4096)
    doc = refusal_of(r, "ledger checkpoint")
    assert doc["code"] == "G6_E_LEDGER_DISK_FULL", doc


def test_an_internal_error_under_json_is_one_json_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A bug (exit 70) is the refusal object too, secrets kept out of it as out of the line; with --debug the
    traceback replaces the line, and stdout still gets the object."""
    from click.testing import CliRunner

    import g6.cli as cli_module

    def leaky(c: object, *a: object, **k: object) -> None:
        _ = c.settings  # type: ignore[attr-defined]  # the settings (and their secrets) are loaded
        raise RuntimeError("connect to https://user:hunter2pass@127.0.0.1/x failed")

    monkeypatch.setattr(cli_module.keys.keys_group.commands["show"], "callback", click.pass_obj(leaky))
    for debug in ([], ["--debug"]):
        r = CliRunner().invoke(cli_module.cli, [*debug, "--home", str(tmp_path), "keys", "show", "--json"],
                               prog_name="g6")
        assert r.exit_code == 70
        doc = json.loads(r.stdout)
        jsonschema.Draft202012Validator(load("refusal.v1")).validate(doc)
        assert doc["outcome"] == "failed" and doc["code"] == "G6_E_INTERNAL" and "RuntimeError" in doc["message"]
        assert "hunter2pass" not in r.stdout + ("" if debug else r.stderr)  # --debug's traceback is as Python has it
        assert ("Traceback" in r.stderr) is bool(debug)


@pytest.mark.parametrize("args", [["mapping", "hb"], ["search", "hb", "x"], ["count", "hb", "x"], ["get", "hb", "1"]],
                         ids=lambda a: a[0])
def test_es_with_nothing_answering_is_a_reply_its_schema_takes(args: list[str], tmp_path: Path) -> None:
    """Elasticsearch not answering (a loopback port we hold bound and never listen on: a connection there is
    refused, for sure) is a receipted reply with G6_E_OUTSIDE_PROGRAM_MISSING, exit 1: valid against the
    command's schema (that code was once outside it)."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        r = run(tmp_path / "h", "es", *args, "--json",
                env={"G6_ELASTIC_URL": f"http://127.0.0.1:{held.getsockname()[1]}"})
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load(f"es-{args[0]}.v1")).validate(doc)
    assert doc["outcome"] == "unreachable" and doc["code"] == "G6_E_OUTSIDE_PROGRAM_MISSING" and doc["receipt_ids"]
