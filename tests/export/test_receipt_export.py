"""`g6 receipt export ID [--format json|dsse|vc] [-o FILE] [--json]` as a user runs it: the formats, the file, the
summary under --json, and every way it refuses (an id that names nothing: 1; an unknown format or a bad -o: 2; a
receipt whose signature fails is never signed again: 1, nothing written)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from g6.home import EvidenceHome
from g6.schemas import load
from tests.export.conftest import World

NOBODY = "rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAV"


def check(summary: object) -> None:
    jsonschema.Draft202012Validator(load("receipt-export.v1"), format_checker=jsonschema.FormatChecker()
                                    ).validate(summary)


def test_json_is_the_default_and_is_receipt_show(world: World) -> None:
    shown = world.g6("receipt", "show", world.ok.receipt_id)
    assert shown.returncode == 0
    assert world.g6("receipt", "export", world.ok.receipt_id).stdout == shown.stdout
    assert world.exported(world.ok.receipt_id, "json") == shown.stdout


@pytest.mark.parametrize("fmt", ["json", "dsse", "vc"])
def test_output_file_holds_what_stdout_would(world: World, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"r.{fmt}.json"
    r = world.g6("receipt", "export", world.ok.receipt_id, "--format", fmt, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: {world.ok.receipt_id} as ")
    printed = world.exported(world.ok.receipt_id, fmt)
    written = out.read_text(encoding="utf-8")
    if fmt == "vc":  # a new proof each time: its created time and signature differ, the rest does not
        a, b = json.loads(written), json.loads(printed)
        for d in (a, b):
            del d["proof"]["created"], d["proof"]["proofValue"]
        assert a == b
    else:
        assert written == printed  # Ed25519 is deterministic: the same envelope, byte for byte
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left beside it


@pytest.mark.parametrize("fmt", ["json", "dsse", "vc"])
def test_json_summary_matches_its_schema(world: World, tmp_path: Path, fmt: str) -> None:
    key = world.home.signing_key().public
    r = world.g6("receipt", "export", world.ok.receipt_id, "--format", fmt, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    check(summary)
    assert summary["path"] is None and summary["document"] == json.loads(world.exported(world.ok.receipt_id, fmt)) \
        if fmt != "vc" else summary["document"]["issuer"] == key.did_key
    assert summary["key_id"] == (None if fmt == "json" else key.key_id)
    out = tmp_path / "x.json"
    r = world.g6("receipt", "export", world.ok.receipt_id, "--format", fmt, "--json", "-o", str(out))
    summary = json.loads(r.stdout)
    check(summary)
    assert summary["path"] == str(out) and summary["document"] is None and out.is_file()


def test_an_id_that_names_nothing_is_exit_1_and_creates_nothing(world: World, tmp_path: Path) -> None:
    for fmt in ("json", "dsse", "vc"):
        r = world.g6("receipt", "export", NOBODY, "--format", fmt, "-o", str(tmp_path / "x"))
        assert (r.returncode, r.stdout) == (1, "") and r.stderr.startswith(f"g6: no receipt '{NOBODY}'"), r.stderr
        assert len(r.stderr.splitlines()) == 1 and not (tmp_path / "x").exists()
    # a home that does not exist: still one line, exit 1, and no home created
    missing = tmp_path / "nohome"
    r = subprocess.run([sys.executable, "-m", "g6", "--home", str(missing), "receipt", "export", NOBODY, "--format",
                        "dsse"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr and not missing.exists(), r.stderr
    r = world.g6("receipt", "export", NOBODY, "--format", "vc", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["code"] == "G6_E_LEDGER_RECEIPT_NOT_FOUND"


def test_an_unknown_format_or_a_bad_output_is_exit_2(world: World, tmp_path: Path) -> None:
    r = world.g6("receipt", "export", world.ok.receipt_id, "--format", "jws")
    assert r.returncode == 2 and r.stdout == "" and "'jws' is not one of 'json', 'dsse', 'vc'" in r.stderr
    r = world.g6("receipt", "export", world.ok.receipt_id, "--format", "dsse", "-o", str(tmp_path))
    assert r.returncode == 2 and r.stderr == f"g6: -o {tmp_path} is a folder; give a file name\n"
    r = world.g6("receipt", "export", world.ok.receipt_id, "-o", str(tmp_path / "no" / "x.json"))
    assert r.returncode == 2 and "does not exist" in r.stderr


@pytest.mark.parametrize("fmt", ["dsse", "vc"])
def test_a_receipt_whose_signature_fails_is_not_signed_again(tmp_path: Path, fmt: str) -> None:
    """An edited ledger row (the receipt's byte count): g6 will not launder it into a fresh attestation."""
    from g6.ledger import Receipt

    home = EvidenceHome(tmp_path / "home", fsync=False)
    home.keys.init()
    r = home.record(Receipt(kind="fetch", source="web", request={"url": "http://127.0.0.1/x"}, outcome="refused",
                            outcome_code="G6_E_KNOWLEDGE_REFUSED"))
    home.close()
    conn = sqlite3.connect(tmp_path / "home" / "knowledge" / "ledger.sqlite", isolation_level=None)
    d = json.loads(conn.execute("SELECT receipt FROM receipts WHERE seq = 1").fetchone()[0])
    d["byte_count"] = 7
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 1", (json.dumps(d),))
    conn.close()
    out = tmp_path / "out.json"
    g6 = [sys.executable, "-m", "g6", "--home", str(tmp_path / "home"), "receipt", "export", r.receipt_id]
    done = subprocess.run([*g6, "--format", fmt, "-o", str(out)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "") and not out.exists()
    assert done.stderr == (f"g6: receipt {r.receipt_id}: signature does not match the receipt; not exported as {fmt} "
                           "(run `g6 ledger verify`; trust its key with `g6 keys trust` if it is yours)\n")
    done = subprocess.run([*g6, "--format", fmt, "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and json.loads(done.stdout)["code"] == "G6_E_LEDGER_RECEIPT_UNVERIFIED"
    # the receipt as it is stays readable: json signs nothing again (as `receipt show`)
    done = subprocess.run(g6, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["byte_count"] == 7


def test_after_a_key_rotation_the_export_is_signed_by_the_new_key(tmp_path: Path) -> None:
    """The receipt keeps the old key's signature inside; the envelope and the credential carry the home's current
    key, the one that signs its receipts now."""
    from g6.export.receipt import export_receipt
    from g6.ledger import Receipt

    home = EvidenceHome(tmp_path / "home", fsync=False)
    old = home.keys.init()
    r = home.record(Receipt(kind="fetch", source="web", request={"url": "http://127.0.0.1/x"}, outcome="refused",
                            outcome_code="G6_E_KNOWLEDGE_REFUSED"))
    new, _ = home.rotate_key()
    try:
        for fmt in ("dsse", "vc"):
            exported = export_receipt(home, r.receipt_id, fmt)
            assert exported.key_id == new.key_id != old.key_id
        assert json.loads(export_receipt(home, r.receipt_id, "vc").text)["credentialSubject"]["receipt"][
            "signature"]["key_id"] == old.key_id
    finally:
        home.close()
