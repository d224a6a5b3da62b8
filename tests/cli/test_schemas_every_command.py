"""Every command that prints a result has `--json`, and every JSON it prints has a schema in `schemas/`.

The walk covers the whole click tree (as the help-text test does): a new command fails here until it is put in
TABLE (its schemas) or in NO_RESULT (why it prints no result). Then each command runs as a user runs it (a real
process, a real home, loopback servers) with `--json`: its stdout is the one JSON document (JSON lines for
`fetch --input`) and is valid against its schema; receipt ids and diagnostics are on stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import click
import jsonschema
import pytest

from g6.cli import cli
from g6.cli.options import json_schemas, schema_file
from g6.demo.site import LocalSite, Reply
from g6.schemas import load

# command -> the schemas of what it prints with --json (one per shape it can print)
TABLE: dict[str, tuple[str, ...]] = {
    "g6 keys init": ("keys-init.v1",),
    "g6 keys show": ("keys-show.v1",),
    "g6 keys trust": ("keys-trust.v1",),
    "g6 keys add": ("keys-entry.v1",),
    "g6 keys retire": ("keys-entry.v1",),
    "g6 keys rotate": ("keys-entry.v1",),
    "g6 keys wacz": ("keys-wacz.v1",),
    "g6 fetch": ("fetch-result.v1", "fetch-result.runx.v1", "fetch-line.v1"),
    "g6 sources": ("sources.v1",),
    "g6 search": ("search-result.v1", "refusal.v1"),
    "g6 es mapping": ("es-mapping.v1",),
    "g6 es search": ("es-search.v1",),
    "g6 es count": ("es-count.v1",),
    "g6 es get": ("es-get.v1",),
    "g6 chunk": ("chunk.v1",),
    "g6 cite": ("cite.v1", "cite-annotation.v1"),
    "g6 manifest sign": ("manifest-sign.v1",),
    "g6 manifest verify": ("manifest-verify.v1",),
    "g6 manifest export": ("manifest-export.v1",),
    "g6 recheck": ("recheck-report.v1",),
    "g6 report check": ("report-check.v1",),
    "g6 report verify": ("report-verify.v1",),
    "g6 report bundle": ("bundle-index.v1",),
    "g6 convert": ("convert.v1",),
    "g6 receipt show": ("receipt.v1",),
    "g6 receipt export": ("receipt-export.v1",),
    "g6 ledger list": ("ledger-list.v1",),
    "g6 ledger verify": ("ledger-verify.v1",),
    "g6 ledger checkpoint": ("ledger-checkpoint.v1",),
    "g6 ledger checkpoints": ("ledger-checkpoints.v1",),
    "g6 ledger prove": ("ledger-prove.v1",),
    "g6 ledger consistency": ("ledger-consistency.v1",),
    "g6 ledger copy": ("ledger-copy.v1",),
    "g6 ledger publish": ("ledger-publish.v1",),
    "g6 verify-proof": ("verify-proof.v1",),
    "g6 monitor": ("monitor.v1",),
    "g6 bundle": ("bundle-index.v1", "bundle-verify.v1"),
    "g6 export warc": ("export-warc.v1",),
    "g6 export wacz": ("export-wacz.v1",),
    "g6 blob verify": ("blob-verify.v1",),
    "g6 blob gc": ("blob-gc.v1",),
    "g6 blob copy": ("blob-copy.v1",),
    "g6 blob redact": ("blob-redact.v1",),
    "g6 blob hold": ("blob-hold.v1",),
    "g6 blob release": ("blob-hold.v1",),
    "g6 blob expire": ("blob-expire.v1",),
    "g6 demo": ("demo.v1",),
}
# commands that print no result a schema could describe
NO_RESULT: dict[str, str] = {
    "g6 blob cat": "writes a blob's raw bytes to stdout",
    "g6 mcp": "an MCP server speaking JSON-RPC over stdio",
    "g6 serve": "an HTTP server; its JSON API's answers have the SERVE_SCHEMAS (tests/serve/test_api.py)",
}
# schemas of files g6 writes rather than of what a command prints
FILE_SCHEMAS: dict[str, str] = {"manifest.v1": "the manifest `g6 cite` writes and `g6 manifest sign` signs",
                                "report-model.v1": "a report as g6 reads it (`g6 report check --format "
                                                   "g6-report-model`)"}
# schemas of what `g6 serve` answers over HTTP (tests/serve/test_api.py validates each answer)
SERVE_SCHEMAS: dict[str, str] = {"serve-home.v1": "/api/home", "serve-captures.v1": "/api/captures",
                                 "serve-capture.v1": "/api/capture/{id}", "serve-manifest.v1": "/api/manifest/{id}",
                                 "serve-verify.v1": "/api/verify", "serve-refusal.v1": "any refusal in JSON",
                                 "serve-timemap.v1": "/web/timemap/json/{url} (tests/serve/test_memento.py)"}


def walk(cmd: click.Command, path: tuple[str, ...] = ("g6",)) -> Iterator[tuple[str, click.Command]]:
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            yield from walk(sub, (*path, name))
    else:
        yield " ".join(path), cmd


LEAVES = dict(walk(cli))


def test_every_command_is_in_the_table() -> None:
    """A command added without a schema (or a reason it prints no result) fails here."""
    assert len(LEAVES) > 30
    assert set(TABLE).isdisjoint(NO_RESULT)
    assert set(LEAVES) - set(TABLE) - set(NO_RESULT) == set(), "commands with no schema and no reason"
    assert set(TABLE) | set(NO_RESULT) == set(LEAVES), "the table names commands that do not exist"


@pytest.mark.parametrize("path", sorted(TABLE))
def test_result_commands_have_json_naming_a_schema(path: str) -> None:
    opts = {o: p for p in LEAVES[path].params if isinstance(p, click.Option) for o in p.opts}
    assert "--json" in opts and opts["--json"].is_flag, f"{path} has no --json"
    for name in TABLE[path]:
        jsonschema.Draft202012Validator.check_schema(load(name))


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_json_option_declares_the_table_s_schemas(path: str) -> None:
    """What a command's `--json` declares (json_option's schemas) is its TABLE entry, in order, and its help names
    each schema file; a command with no result declares none."""
    assert json_schemas(LEAVES[path]) == TABLE.get(path, ())
    if path in TABLE:
        help_text = next(p.help or "" for p in LEAVES[path].params if "--json" in p.opts)
        assert all(schema_file(name) in help_text for name in TABLE[path]), help_text


def test_every_schema_file_is_mapped() -> None:
    """Each schema in schemas/ is what a command prints (TABLE) or a file g6 writes (FILE_SCHEMAS)."""
    on_disk = {p.name.removesuffix(".schema.json") for p in resources.files("g6.schemas").iterdir()
               if p.name.endswith(".schema.json")}
    mapped = {s for names in TABLE.values() for s in names} | set(FILE_SCHEMAS) | set(SERVE_SCHEMAS)
    assert on_disk == mapped


NEW = ["es-mapping.v1", "es-search.v1", "es-count.v1", "es-get.v1", "convert.v1", "demo.v1", "fetch-line.v1",
       "refusal.v1", *SERVE_SCHEMAS]


@pytest.mark.parametrize("name", NEW)
def test_new_schemas_are_strict(name: str) -> None:
    schema = load(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{name}.schema.json")
    shapes = [schema["$defs"]["reply"], schema["$defs"]["refusal"]] if "oneOf" in schema else [schema]
    for shape in shapes:
        assert shape["additionalProperties"] is False and set(shape["required"]) <= set(shape["properties"])
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail
        jsonschema.Draft202012Validator(schema).validate({})


def test_embedded_schemas_stay_identical() -> None:
    """demo.v1 carries ledger-verify.v1 and bundle-verify.v1; the es schemas share one refusal: no drift."""
    def body(d: dict) -> dict:
        return {k: v for k, v in d.items() if k not in ("$schema", "$id", "title", "description", "$defs")}

    demo = load("demo.v1")
    assert body(demo["properties"]["verify"]) == body(load("ledger-verify.v1"))
    assert demo["$defs"] == load("ledger-verify.v1")["$defs"]
    assert body(demo["properties"]["bundle"]) == body(load("bundle-verify.v1"))
    refusals = [load(f"es-{op}.v1")["$defs"]["refusal"] for op in ("mapping", "search", "count", "get")]
    assert all(r == refusals[0] for r in refusals)
    # the failure every command prints under --json (tests/cli/test_json_failures.py) is one of es's shapes too
    failures = [load(f"es-{op}.v1")["$defs"]["failure"] for op in ("mapping", "search", "count", "get")]
    assert all(body(f) == body(load("refusal.v1")) for f in failures)


# -- every command run with --json -----------------------------------------------------------------------------
PAGE = b"<html><head><title>Every shape</title></head><body><p>Each output has a schema we can check.</p></body></html>"
QUOTE = "Each output has a schema we can check."


def _pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` (as in tests/test_convert.py)."""
    stream = f"BT /F1 18 Tf 20 100 Td ({text}) Tj ET".encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, obj in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@dataclass
class World:
    base: Path
    home: Path
    env: dict[str, str]
    page_url: str
    rid: str
    pdf_sha256: str
    page_sha256: str  # an HTML body: what `convert` cannot read
    manifest: Path  # signed, citing the page
    bundle: Path
    proof: Path
    receipt_file: Path
    public_key: str
    verifier_key: str
    sizes: tuple[int, int]  # two checkpoint sizes, for `ledger consistency`
    log_url: str = ""  # the ledger published as tlog-tiles and served on loopback, for `monitor`

    def run(self, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
        env.update(self.env, G6_HOME=str(home or self.home))
        return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env,
                              cwd=self.base, timeout=180)

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        r = self.run(*args)
        assert r.returncode == 0, (args, r.stderr)
        return r


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, elastic_url: str) -> Iterator[World]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
    from serve_recorded import routes

    base = tmp_path_factory.mktemp("every")
    site = LocalSite({"/": Reply(body=PAGE), "/paper.pdf": Reply(body=_pdf("Schemas hold in a PDF too"),
                                                                   content_type="application/pdf"),
                      "/robots.txt": Reply(404, b"")}).start()
    papers = LocalSite(routes()).start()
    log: LocalSite | None = None
    try:
        env = {"G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1", "G6_ELASTIC_URL": elastic_url,
               "G6_ARXIV_URL": papers.url("/arxiv/api/query"), "G6_ARXIV_PAUSE": "0"}
        w = World(base, base / "home", env, site.url("/"), "", "", "", base / "report.json", base / "evidence.zip",
                  base / "p.tlog-proof", base / "r.json", "", "", (0, 0))
        w.rid = json.loads(w.ok("fetch", w.page_url, "--json").stdout)["receipt_id"]
        w.page_sha256 = json.loads(w.ok("receipt", "show", w.rid).stdout)["content"]["sha256"]
        w.ok("fetch", site.url("/paper.pdf"))
        pdf_rid = json.loads(w.ok("ledger", "list", "--json", "--limit", "1").stdout)[0]["receipt_id"]
        w.pdf_sha256 = json.loads(w.ok("receipt", "show", pdf_rid).stdout)["content"]["sha256"]
        w.ok("cite", w.rid, "--quote", QUOTE, "--manifest", str(w.manifest))
        w.ok("manifest", "sign", str(w.manifest))
        first = json.loads(w.ok("ledger", "checkpoint", "--json").stdout)
        w.ok("bundle", str(w.manifest), "-o", str(w.bundle))
        w.ok("fetch", w.page_url)
        second = json.loads(w.ok("ledger", "checkpoint", "--json").stdout)
        w.sizes = (first["size"], second["size"])
        w.verifier_key = second["verifier_key"]
        w.ok("ledger", "prove", w.rid, "-o", str(w.proof))
        w.receipt_file.write_text(w.ok("receipt", "show", w.rid).stdout)
        w.public_key = json.loads(w.ok("keys", "show", "--json").stdout)["signing"]["public_key"]
        w.ok("ledger", "publish", str(base / "tiles"))
        published = {"/log/" + p.relative_to(base / "tiles").as_posix(): Reply(body=p.read_bytes(), content_type=None)
                     for p in (base / "tiles").rglob("*") if p.is_file()}
        log = LocalSite(published).start()
        w.log_url = log.url("/log/")
        yield w
    finally:
        site.stop()
        papers.stop()
        if log is not None:
            log.stop()


def _report(w: World, t: Path) -> str:
    """A report (the model's own JSON) citing the world's page with a quote that is on it."""
    path = t / "report-model.json"
    path.write_text(json.dumps({"schema": "g6.report-model.v1", "text": "Each output has a schema.", "citations": [
        {"source": w.page_url, "claim": "Each output has a schema.", "quote": QUOTE}]}))
    return str(path)


def _report_result(w: World, t: Path) -> str:
    out = t / "report-result.json"
    w.ok("report", "check", _report(w, t), "-o", str(out))
    return str(out)


def _copy(w: World, src: Path, tmp: Path) -> str:
    shutil.copy(src, tmp / src.name)
    return str(tmp / src.name)


Args = Callable[[World, Path], list[str]]
# (id, command, schema, arguments, exit codes it may end with, JSON lines instead of one document)
RUNS: list[tuple[str, str, str, Args, tuple[int, ...], bool]] = [
    ("keys init", "g6 keys init", "keys-init.v1", lambda w, t: ["--home", str(t / "h"), "keys", "init"], (0,), False),
    ("keys show", "g6 keys show", "keys-show.v1", lambda w, t: ["keys", "show"], (0,), False),
    ("keys trust", "g6 keys trust", "keys-trust.v1", lambda w, t: ["keys", "trust", "self"], (0,), False),
    ("keys add", "g6 keys add", "keys-entry.v1", lambda w, t: ["--home", str(t / "k"), "keys", "add", w.public_key],
     (0,), False),
    ("keys retire", "g6 keys retire", "keys-entry.v1",
     lambda w, t: ["--home", str(t / "k"), "keys", "retire", w.public_key], (0,), False),
    ("keys rotate", "g6 keys rotate", "keys-entry.v1", lambda w, t: ["--home", str(t / "k"), "keys", "rotate"],
     (0,), False),
    ("keys wacz --rotate", "g6 keys wacz", "keys-wacz.v1",
     lambda w, t: ["--home", str(t / "k"), "keys", "wacz", "--rotate"], (0,), False),
    ("fetch", "g6 fetch", "fetch-result.v1", lambda w, t: ["fetch", w.page_url], (0,), False),
    ("fetch, denied by --allow", "g6 fetch", "fetch-result.v1",
     lambda w, t: ["fetch", w.page_url, "--allow", "example.org"], (1,), False),
    ("fetch --as runx", "g6 fetch", "fetch-result.runx.v1", lambda w, t: ["fetch", w.page_url, "--as", "runx"],
     (0,), False),
    ("fetch --input", "g6 fetch", "fetch-line.v1",
     lambda w, t: ["fetch", "--input", str((t / "u", (t / "u").write_text(f"{w.page_url}\n{w.page_url}x\n"))[0])],
     (1,), True),
    ("sources", "g6 sources", "sources.v1", lambda w, t: ["sources"], (0,), False),
    ("search", "g6 search", "search-result.v1", lambda w, t: ["search", "arxiv", "testing", "--max-results", "3"],
     (0,), False),
    ("search, refused", "g6 search", "refusal.v1",
     lambda w, t: ["search", "arxiv", "x", "--category", "cs.XX"], (2,), False),
    ("es mapping", "g6 es mapping", "es-mapping.v1", lambda w, t: ["es", "mapping", "hb"], (0,), False),
    ("es mapping, an alias of two", "g6 es mapping", "es-mapping.v1", lambda w, t: ["es", "mapping", "both"], (0,),
     False),
    ("es mapping, no index", "g6 es mapping", "es-mapping.v1", lambda w, t: ["es", "mapping", "nosuch"], (1,), False),
    ("es search", "g6 es search", "es-search.v1", lambda w, t: ["es", "search", "hb", "retention"], (0,), False),
    ("es search, refused", "g6 es search", "es-search.v1",
     lambda w, t: ["es", "search", "hb", "x", "--filter", "title=Onboarding"], (2,), False),
    ("es search, no index", "g6 es search", "es-search.v1", lambda w, t: ["es", "search", "nosuch", "x"], (1,),
     False),
    ("es count", "g6 es count", "es-count.v1", lambda w, t: ["es", "count", "hb", "retention"], (0,), False),
    ("es get", "g6 es get", "es-get.v1", lambda w, t: ["es", "get", "hb", "1"], (0,), False),
    ("es get, not found", "g6 es get", "es-get.v1", lambda w, t: ["es", "get", "hb", "99"], (1,), False),
    ("chunk", "g6 chunk", "chunk.v1", lambda w, t: ["chunk", w.rid], (0,), False),
    ("cite", "g6 cite", "cite.v1", lambda w, t: ["cite", w.rid, "--quote", QUOTE, "--manifest", str(t / "m.json")],
     (0,), False),
    ("cite --annotation", "g6 cite", "cite-annotation.v1",
     lambda w, t: ["cite", "--annotation", _annotation(w, t), "--manifest", str(t / "m.json")], (0,), False),
    ("manifest sign", "g6 manifest sign", "manifest-sign.v1",
     lambda w, t: ["manifest", "sign", _copy(w, w.manifest, t)], (0,), False),
    ("manifest verify", "g6 manifest verify", "manifest-verify.v1", lambda w, t: ["manifest", "verify",
                                                                                  str(w.manifest)], (0,), False),
    ("manifest export", "g6 manifest export", "manifest-export.v1",
     lambda w, t: ["manifest", "export", str(w.manifest), "--format", "annotation", "-o", str(t / "a.jsonld")], (0,),
     False),
    ("recheck", "g6 recheck", "recheck-report.v1", lambda w, t: ["recheck", str(w.manifest)], (0,), False),
    ("report check", "g6 report check", "report-check.v1", lambda w, t: ["report", "check", _report(w, t)], (0,),
     False),
    ("report verify", "g6 report verify", "report-verify.v1", lambda w, t: ["report", "verify", _report_result(w, t)],
     (0,), False),
    ("report bundle", "g6 report bundle", "bundle-index.v1",
     lambda w, t: ["report", "bundle", _report_result(w, t), "-o", str(t / "report.zip")], (0,), False),
    ("convert", "g6 convert", "convert.v1", lambda w, t: ["convert", w.pdf_sha256], (0,), False),
    ("convert, not a PDF", "g6 convert", "convert.v1", lambda w, t: ["convert", w.page_sha256], (1,), False),
    ("receipt show", "g6 receipt show", "receipt.v1", lambda w, t: ["receipt", "show", w.rid], (0,), False),
    ("receipt export", "g6 receipt export", "receipt-export.v1",
     lambda w, t: ["receipt", "export", w.rid, "--format", "dsse"], (0,), False),
    ("receipt export -o", "g6 receipt export", "receipt-export.v1",
     lambda w, t: ["receipt", "export", w.rid, "--format", "vc", "-o", str(t / "r.vc.json")], (0,), False),
    ("ledger list", "g6 ledger list", "ledger-list.v1", lambda w, t: ["ledger", "list"], (0,), False),
    ("ledger verify", "g6 ledger verify", "ledger-verify.v1", lambda w, t: ["ledger", "verify"], (0,), False),
    ("ledger checkpoint", "g6 ledger checkpoint", "ledger-checkpoint.v1",
     lambda w, t: ["ledger", "checkpoint", "--out", str(t / "cp")], (0,), False),
    ("ledger checkpoints", "g6 ledger checkpoints", "ledger-checkpoints.v1", lambda w, t: ["ledger", "checkpoints"],
     (0,), False),
    ("ledger prove", "g6 ledger prove", "ledger-prove.v1", lambda w, t: ["ledger", "prove", w.rid], (0,), False),
    ("ledger consistency", "g6 ledger consistency", "ledger-consistency.v1",
     lambda w, t: ["ledger", "consistency", str(w.sizes[0]), str(w.sizes[1])], (0,), False),
    ("ledger copy", "g6 ledger copy", "ledger-copy.v1",
     lambda w, t: ["ledger", "copy", "--to", f"sqlite:///{t / 'copy.sqlite'}"], (0,), False),
    ("ledger publish", "g6 ledger publish", "ledger-publish.v1",
     lambda w, t: ["ledger", "publish", str(t / "tiles")], (0,), False),
    ("verify-proof", "g6 verify-proof", "verify-proof.v1",
     lambda w, t: ["verify-proof", str(w.proof), "--receipt", str(w.receipt_file), "--key", w.verifier_key], (0,),
     False),
    ("monitor", "g6 monitor", "monitor.v1",
     lambda w, t: ["monitor", w.log_url, "--key", w.verifier_key, "--state", str(t / "state")], (0,), False),
    ("bundle", "g6 bundle", "bundle-index.v1", lambda w, t: ["bundle", str(w.manifest), "-o", str(t / "b.zip")],
     (0,), False),
    ("bundle verify", "g6 bundle", "bundle-verify.v1",
     lambda w, t: ["bundle", "verify", str(w.bundle), "--key", w.public_key], (0,), False),
    ("export warc", "g6 export warc", "export-warc.v1", lambda w, t: ["export", "warc", "-o", str(t / "x.warc.gz")],
     (0,), False),
    ("export wacz", "g6 export wacz", "export-wacz.v1", lambda w, t: ["export", "wacz", "-o", str(t / "x.wacz")],
     (0,), False),
    ("export wacz --sign", "g6 export wacz", "export-wacz.v1",
     lambda w, t: ["--home", str(t / "k"), "export", "wacz", "--sign", "-o", str(t / "x.wacz")], (0,), False),
    ("blob verify", "g6 blob verify", "blob-verify.v1", lambda w, t: ["blob", "verify"], (0,), False),
    ("blob gc", "g6 blob gc", "blob-gc.v1", lambda w, t: ["blob", "gc", "--dry-run", "--grace", "0"], (0,), False),
    ("blob copy", "g6 blob copy", "blob-copy.v1", lambda w, t: ["blob", "copy", "--to", f"file://{t / 'blobs'}"],
     (0,), False),
    # dry runs: the world's home is shared by every run, so nothing is taken out of it (the real runs:
    # tests/test_redaction_readers.py, tests/cli/test_blob_redact.py)
    ("blob redact", "g6 blob redact", "blob-redact.v1",
     lambda w, t: ["blob", "redact", w.page_sha256, "--reason", "court-order", "--dry-run"], (0,), False),
    ("blob hold", "g6 blob hold", "blob-hold.v1",
     lambda w, t: ["blob", "hold", w.page_sha256, "--reason", "litigation", "--dry-run"], (0,), False),
    ("blob release", "g6 blob release", "blob-hold.v1",
     lambda w, t: ["blob", "release", w.page_sha256, "--reason", "settled", "--dry-run"], (0,), False),
    ("blob expire", "g6 blob expire", "blob-expire.v1",
     lambda w, t: ["blob", "expire", "--older-than", "2999-01-01"], (0,), False),
    ("demo", "g6 demo", "demo.v1", lambda w, t: ["demo", "--home", str(t / "demo")], (0,), False),
]


def _annotation(w: World, t: Path) -> str:
    """A W3C Web Annotation of QUOTE on the world's page, as a file."""
    path = t / "annotation.jsonld"
    path.write_text(json.dumps({"@context": "http://www.w3.org/ns/anno.jsonld", "id": "urn:uuid:1",
                                "type": "Annotation", "target": {"source": w.page_url, "selector": {
                                    "type": "TextQuoteSelector", "exact": QUOTE}}}))
    return str(path)


def test_every_schema_in_the_table_is_run() -> None:
    """The table's mapping is backed by a real run of each of its shapes."""
    ran = {(cmd, schema) for _, cmd, schema, *_ in RUNS}
    assert ran == {(cmd, s) for cmd, names in TABLE.items() for s in names}


@pytest.mark.parametrize(("cmd", "schema", "make_args", "codes", "lines"), [r[1:] for r in RUNS],
                         ids=[r[0] for r in RUNS])
def test_json_output_matches_its_schema(world: World, tmp_path: Path, cmd: str, schema: str, make_args: Args,
                                        codes: tuple[int, ...], lines: bool) -> None:
    r = world.run(*make_args(world, tmp_path), "--json")
    assert "Traceback" not in r.stderr
    assert r.returncode in codes, r.stderr
    # the whole of stdout is JSON: every receipt id line, progress line and diagnostic went to stderr
    docs = [json.loads(x) for x in r.stdout.splitlines()] if lines else [json.loads(r.stdout)]
    assert docs
    check = jsonschema.Draft202012Validator(load(schema), format_checker=jsonschema.FormatChecker())
    for doc in docs:
        check.validate(doc)
    assert not any(x.startswith(("receipts:", "g6:", "run:")) for x in r.stdout.splitlines())


# -- text mode: results on stdout, receipt ids on stderr -----------------------------------------------------------
def test_es_get_text_is_only_the_document(world: World) -> None:
    """`g6 es get hb 1 | jq .title` works: stdout is the document, its receipt id on stderr."""
    r = world.run("es", "get", "hb", "1")
    assert r.returncode == 0, r.stderr
    reply = json.loads(world.run("es", "get", "hb", "1", "--json").stdout)
    assert json.loads(r.stdout) == reply["document"] and json.loads(r.stdout)["title"] == "Retention policy"
    assert [x for x in r.stderr.splitlines() if x.startswith("receipts: rcpt_")]


def test_es_get_not_found_text_is_a_diagnostic(world: World) -> None:
    r = world.run("es", "get", "hb", "99")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines()[0].startswith("g6: not_found G6_E_KNOWLEDGE_ELASTIC_NOT_FOUND")
    assert r.stderr.splitlines()[1].startswith("receipts: rcpt_")


@pytest.mark.parametrize("args", [["es", "mapping", "hb"], ["es", "search", "hb", "retention"],
                                  ["es", "count", "hb", "retention"], ["search", "arxiv", "testing",
                                                                       "--max-results", "2"]],
                         ids=["es mapping", "es search", "es count", "search"])
def test_receipt_ids_go_to_stderr_in_text_mode(world: World, args: list[str]) -> None:
    r = world.run(*args)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() and "receipts:" not in r.stdout
    ids = [x for x in r.stderr.splitlines() if x.startswith("receipts: rcpt_")]
    assert len(ids) == 1 and all(x.startswith("rcpt_") for x in ids[0].split()[1:])


def test_es_text_failure_is_a_diagnostic(world: World) -> None:
    """A read that found nothing to show leaves stdout empty: one `g6:` line with the reason, and the receipt."""
    r = world.run("es", "search", "nosuch", "x")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines()[0] == ("g6: not_found G6_E_KNOWLEDGE_ELASTIC_NOT_FOUND reason=index_not_found: "
                                        "no such index [nosuch]")
    assert r.stderr.splitlines()[1].startswith("receipts: rcpt_")


def test_es_mapping_text_of_an_alias_lists_each_index(world: World) -> None:
    r = world.run("es", "mapping", "both")
    assert r.returncode == 0, r.stderr
    assert [x for x in r.stdout.splitlines() if x.startswith("index: ")] == ["index: handbook", "index: handbook2"]
    assert sum(x.split()[:2] == ["title.raw", "keyword"] for x in r.stdout.splitlines()) == 2
