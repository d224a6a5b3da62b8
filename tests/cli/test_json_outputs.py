"""`--json` on keys init, keys trust, manifest sign, receipt show, ledger prove and ledger consistency: each run
as a user runs it, its stdout one JSON document valid against its published schema, and its values the real ones
(the proof it describes verifies offline with `g6 verify-proof`)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from g6.demo.site import LocalSite, Reply
from g6.schemas import load

PAGE = b"<html><head><title>JSON</title></head><body><p>Every result can be read by a machine.</p></body></html>"


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=120)


def json_out(home: Path, *args: str, schema: str) -> dict:
    r = g6(home, *args)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)  # the whole of stdout is the one JSON document: diagnostics went to stderr
    jsonschema.Draft202012Validator(load(schema), format_checker=jsonschema.FormatChecker()).validate(out)
    return out


@pytest.fixture
def fetched(tmp_path: Path) -> tuple[Path, list[str]]:
    """A home with three receipts of a loopback page."""
    home = tmp_path / "home"
    site = LocalSite({"/": Reply(body=PAGE)}).start()
    try:
        rids = [json.loads(g6(home, "fetch", site.url("/"), "--json").stdout)["receipt_id"] for _ in range(3)]
    finally:
        site.stop()
    return home, rids


def test_keys_init_and_trust_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    made = json_out(home, "keys", "init", "--json", schema="keys-init.v1")
    assert made["replaced"] is False and Path(made["path"]).stat().st_mode & 0o777 == 0o600
    shown = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]
    assert (shown["key_id"], shown["public_key"]) == (made["key_id"], made["public_key"])
    again = json_out(home, "keys", "init", "--force", "--json", schema="keys-init.v1")
    assert again["replaced"] is True and again["key_id"] != made["key_id"]
    other = tmp_path / "other"
    theirs = json_out(other, "keys", "init", "--json", schema="keys-init.v1")
    trusted = json_out(home, "keys", "trust", theirs["public_key"], "--json", schema="keys-trust.v1")
    assert trusted == {"key_id": theirs["key_id"], "public_key": theirs["public_key"]}
    listed = json.loads(g6(home, "keys", "show", "--json").stdout)["trusted"]
    assert {"key_id": theirs["key_id"], "public_key": theirs["public_key"]} in listed


def test_manifest_sign_json(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    home, rids = fetched
    man = tmp_path / "report.json"
    assert g6(home, "cite", rids[0], "--quote", "Every result can be read", "--manifest", str(man)).returncode == 0
    out = json_out(home, "manifest", "sign", str(man), "--json", schema="manifest-sign.v1")
    kept = json.loads(man.read_text())
    assert out["signature"] == kept["signature"] and out["manifest_id"] == kept["manifest_id"]
    assert out["citations"] == 1 and out["path"] == str(man)
    assert g6(home, "manifest", "verify", str(man)).returncode == 0  # the signature it reports is the good one


def test_receipt_show_json(fetched: tuple[Path, list[str]]) -> None:
    home, rids = fetched
    shown = json_out(home, "receipt", "show", rids[1], "--json", schema="receipt.v1")
    assert shown["receipt_id"] == rids[1]
    assert json.loads(g6(home, "receipt", "show", rids[1]).stdout) == shown  # JSON without the flag too


def test_ledger_prove_json_verifies(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    home, rids = fetched
    out = json_out(home, "ledger", "prove", rids[1], "--json", schema="ledger-prove.v1")
    assert out["index"] == 1 and out["tree_size"] == 3 and out["new_checkpoint"] is True and out["path"] is None
    assert out["proof"].endswith(out["checkpoint"])
    assert [base64.b64encode(bytes.fromhex(h)).decode() for h in out["hashes"]] == \
        out["proof"].split("\n\n")[0].splitlines()[3:]  # header, extra, index, then the hashes
    proof, receipt = tmp_path / "p.tlog-proof", tmp_path / "r.json"
    proof.write_text(out["proof"])
    receipt.write_text(g6(home, "receipt", "show", rids[1]).stdout)
    vkey = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["checkpoint_verifier_key"]
    assert vkey.startswith(out["origin"] + "+")
    ok = g6(home, "verify-proof", str(proof), "--receipt", str(receipt), "--key", vkey, "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"], ok.stdout
    # with -o the text goes to the file and the JSON still to stdout, naming it
    written = tmp_path / "again.tlog-proof"
    again = json_out(home, "ledger", "prove", rids[1], "-o", str(written), "--json", schema="ledger-prove.v1")
    assert again["path"] == str(written) and written.read_text() == again["proof"] and not again["new_checkpoint"]


def test_ledger_consistency_json_verifies(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    home, _ = fetched
    first = json.loads(g6(home, "ledger", "checkpoint", "--json").stdout)
    site = LocalSite({"/": Reply(body=PAGE)}).start()
    try:
        assert g6(home, "fetch", site.url("/")).returncode == 0
    finally:
        site.stop()
    second = json.loads(g6(home, "ledger", "checkpoint", "--json").stdout)
    out = json_out(home, "ledger", "consistency", "3", "4", "--json", schema="ledger-consistency.v1")
    assert (out["old"], out["new"]) == (3, 4)
    assert (out["old_root"], out["new_root"]) == (first["root"], second["root"])
    assert (out["old_checkpoint"], out["new_checkpoint"]) == (first["note"], second["note"])
    proof = tmp_path / "c.proof"
    proof.write_text(out["proof"])
    ok = g6(home, "verify-proof", str(proof), "--key", first["verifier_key"], "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"], ok.stdout


NEW_SCHEMAS = ["keys-init.v1", "keys-trust.v1", "manifest-sign.v1", "ledger-prove.v1", "ledger-consistency.v1",
               "keys-show.v1", "ledger-checkpoint.v1", "ledger-checkpoints.v1", "ledger-list.v1",
               "manifest-verify.v1", "verify-proof.v1", "blob-verify.v1", "chunk.v1", "blob-gc.v1",
               "bundle-index.v1", "bundle-verify.v1", "export-warc.v1", "sources.v1",
               "cite.v1", "ledger-copy.v1", "blob-copy.v1"]


@pytest.mark.parametrize("name", NEW_SCHEMAS)
def test_schemas_are_draft_2020_12_and_strict(name: str) -> None:
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    shape = schema["items"] if schema["type"] == "array" else schema
    assert shape["additionalProperties"] is False and set(shape["required"]) <= set(shape["properties"])
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail: an object missing its fields
        jsonschema.Draft202012Validator(schema).validate({} if schema["type"] == "object" else [{}])


def test_read_outputs_match_their_schemas(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    """keys show, ledger checkpoint|checkpoints|list, manifest verify, verify-proof and blob verify: each
    --json output, on a home that has something in it, is valid against its schema."""
    home, rids = fetched
    keys = json_out(home, "keys", "show", "--json", schema="keys-show.v1")
    assert keys["signing"]["checkpoint_verifier_key"]
    cp = json_out(home, "ledger", "checkpoint", "--json", schema="ledger-checkpoint.v1")
    assert cp["size"] == 3 and cp["verifier_key"] == keys["signing"]["checkpoint_verifier_key"]
    cps = json_out(home, "ledger", "checkpoints", "--json", schema="ledger-checkpoints.v1")
    assert [x["note"] for x in cps] == [cp["note"]]
    listed = json_out(home, "ledger", "list", "--json", schema="ledger-list.v1")
    assert [x["receipt_id"] for x in listed] == rids[::-1]
    man = tmp_path / "report.json"
    assert g6(home, "cite", rids[2], "--quote", "read by a machine", "--manifest", str(man)).returncode == 0
    r = g6(home, "manifest", "verify", str(man), "--json")  # unsigned: a failed check, still a valid shape
    verdict = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("manifest-verify.v1")).validate(verdict)
    assert r.returncode == 1 and verdict["signature"]["ok"] is False and verdict["citations"][0]["ok"] is True
    proof = tmp_path / "p"
    proof.write_text(json.loads(g6(home, "ledger", "prove", rids[0], "--json").stdout)["proof"])
    receipt = tmp_path / "r.json"
    receipt.write_text(g6(home, "receipt", "show", rids[0]).stdout)
    checked = json_out(home, "verify-proof", str(proof), "--receipt", str(receipt), "--key", cp["verifier_key"],
                       "--json", schema="verify-proof.v1")
    assert checked["kind"] == "inclusion" and checked["ok"]
    blobs = json_out(home, "blob", "verify", "--json", schema="blob-verify.v1")
    assert blobs["ok"] and blobs["checked"] == 1
    chunks = json_out(home, "chunk", rids[0], "--json", schema="chunk.v1")
    assert chunks["receipt_id"] == rids[0] and any("read by a machine" in p["text"] for p in chunks["passages"])
    gc = json_out(home, "blob", "gc", "--dry-run", "--grace", "0", "--json", schema="blob-gc.v1")
    assert gc["dry_run"] and gc["removed"] == [] and gc["kept"] == 1


def test_bundle_outputs_match_their_schemas(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    home, rids = fetched
    man = tmp_path / "report.json"
    assert g6(home, "cite", rids[0], "--quote", "read by a machine", "--manifest", str(man)).returncode == 0
    assert g6(home, "manifest", "sign", str(man)).returncode == 0
    zipped = tmp_path / "evidence.zip"
    index = json_out(home, "bundle", str(man), "-o", str(zipped), "--json", schema="bundle-index.v1")
    assert index["manifest_id"] == json.loads(man.read_text())["manifest_id"] and "manifest.json" in index["files"]
    pub = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    held = json_out(home, "bundle", "verify", str(zipped), "--key", pub, "--json", schema="bundle-verify.v1")
    assert held["ok"] and held["manifest_signed"] and held["citations"][0]["receipt_id"] == rids[0]
    other = json.loads(g6(tmp_path / "other", "keys", "init", "--json").stdout)["public_key"]
    r = g6(home, "bundle", "verify", str(zipped), "--key", other, "--json")  # the wrong key: a failed check
    failed = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("bundle-verify.v1")).validate(failed)
    assert r.returncode == 1 and failed["ok"] is False


def test_export_warc_and_sources_match_their_schemas(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    home, rids = fetched
    out = json_out(home, "export", "warc", "-o", str(tmp_path / "x.warc.gz"), "--json", schema="export-warc.v1")
    assert out["receipts"] == 3 and out["metadata"] == 3 and Path(out["path"]).is_file()
    rows = json_out(home, "sources", "--json", schema="sources.v1")
    assert {r["name"] for r in rows} >= {"arxiv", "openalex"}


def test_copies_and_cite_match_their_schemas(fetched: tuple[Path, list[str]], tmp_path: Path) -> None:
    home, rids = fetched
    cited = json_out(home, "cite", rids[0], "--quote", "read by a machine", "--manifest", str(tmp_path / "m.json"),
                     "--json", schema="cite.v1")
    assert cited["receipt_id"] == rids[0] and json.loads((tmp_path / "m.json").read_text())["citations"] == [cited]
    copy = json_out(home, "ledger", "copy", "--to", f"sqlite:///{tmp_path / 'copy.sqlite'}", "--json",
                    schema="ledger-copy.v1")
    assert copy["copied"] == 3 and copy["size"] == 3 and copy["verify"]["ok"]
    blobs = json_out(home, "blob", "copy", "--to", f"file://{tmp_path / 'blobs'}", "--json", schema="blob-copy.v1")
    assert blobs["ok"] and blobs["copied"] == 1


def test_embedded_schemas_stay_identical() -> None:
    """cite.v1 is manifest.v1's citation and ledger-copy.v1's verify is ledger-verify.v1: they cannot drift."""
    def body(d: dict) -> dict:
        return {k: v for k, v in d.items() if k not in ("$schema", "$id", "title", "description")}

    assert body(load("cite.v1")) == body(load("manifest.v1")["properties"]["citations"]["items"])
    copy = load("ledger-copy.v1")
    verify = load("ledger-verify.v1")
    assert body(copy["properties"]["verify"]) == body({k: v for k, v in verify.items() if k != "$defs"})
    assert copy["$defs"] == verify["$defs"]
