"""The g6 command, run as a user runs it: a real process, real files, a real loopback site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.demo.site import LocalSite, Reply

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conftest import validate  # noqa: E402

Site = Callable[..., LocalSite]
PAGE = b"<html><head><title>CLI page</title></head><body><p>Text for the command line test.</p></body></html>"


def g6(home: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0"})
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=e, input=input,
                          timeout=120)


@pytest.fixture
def local(site: Site) -> LocalSite:
    return site({"/": Reply(body=PAGE), "/robots.txt": Reply(body=b"User-agent: *\nDisallow: /no/\n",
                                                                content_type="text/plain"),
                 "/forbidden": Reply(403, b"no"), "/no/x": Reply(body=PAGE)})


LOOP = {"G6_ALLOW_LOOPBACK": "1"}


def test_keys_init_show_and_mode(tmp_path: Path) -> None:
    r = g6(tmp_path, "keys", "init")
    assert r.returncode == 0
    key_id = r.stdout.decode().split()[0]
    assert key_id.startswith("ed25519:")
    assert (tmp_path / "keys" / "signing.key").stat().st_mode & 0o777 == 0o600
    again = g6(tmp_path, "keys", "init")
    assert again.returncode == 1 and b"exists already" in again.stderr
    shown = json.loads(g6(tmp_path, "keys", "show", "--json").stdout)
    assert shown["signing"]["key_id"] == key_id


def test_fetch_json_matches_schema_and_receipt_verifies(tmp_path: Path, local: LocalSite) -> None:
    r = g6(tmp_path, "fetch", local.url("/"), "--json", env=LOOP)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    validate(out, "fetch-result.v1")
    assert out["outcome"] == "ok" and out["documents"][0]["text"] == "Text for the command line test."
    assert b"created signing key" in r.stderr  # diagnostics on stderr, results on stdout
    shown = json.loads(g6(tmp_path, "receipt", "show", out["receipt_id"]).stdout)
    validate(shown, "receipt.v1")
    assert shown["content"] == out["content"]
    cat = g6(tmp_path, "blob", "cat", out["content"]["sha256"])
    assert cat.returncode == 0 and cat.stdout == PAGE
    v = g6(tmp_path, "ledger", "verify", "--json")
    assert v.returncode == 0
    validate(json.loads(v.stdout), "ledger-verify.v1")


def test_fetch_exit_codes(tmp_path: Path, local: LocalSite) -> None:
    assert g6(tmp_path, "fetch", local.url("/forbidden"), env=LOOP).returncode == 1
    robots = g6(tmp_path, "fetch", local.url("/no/x"), "--json", env=LOOP)
    assert robots.returncode == 1 and json.loads(robots.stdout)["code"] == "G6_E_KNOWLEDGE_FETCH_ROBOTS_DISALLOWED"
    before = len(local.requests)
    refused = g6(tmp_path, "fetch", local.url("/"), "--json")  # no operator setting: loopback refused
    assert refused.returncode == 1 and json.loads(refused.stdout)["outcome"] == "refused"
    assert len(local.requests) == before
    bad = g6(tmp_path, "fetch", "http://exa mple.org/", "--json", env=LOOP)
    assert bad.returncode == 2 and json.loads(bad.stdout)["outcome"] == "rejected"
    usage = g6(tmp_path, "fetch", local.url("/"), "--max-bytes", "-5")
    assert usage.returncode == 2


def test_fetch_allow_and_extract_links(tmp_path: Path, site: Site) -> None:
    s = site({"/": Reply(body=b"<html><body><p>links page</p><a href='/a'>a</a></body></html>"),
              "/robots.txt": Reply(404, b"")})
    denied = g6(tmp_path, "fetch", s.url("/"), "--allow", "example.org", "--json", env=LOOP)
    assert denied.returncode == 1 and json.loads(denied.stdout)["outcome"] == "policy_denied"
    ok = g6(tmp_path, "fetch", s.url("/"), "--allow", "127.0.0.1", "--extract", "links", "--json", env=LOOP)
    assert json.loads(ok.stdout)["documents"][0]["links"] == [s.url("/a")]
    human = g6(tmp_path, "fetch", s.url("/"), env=LOOP)
    assert human.returncode == 0 and b"G6_E_KNOWLEDGE_FETCHED" in human.stdout and b"receipt=rcpt_" in human.stdout


def test_ledger_list_verify_failure_and_blob_commands(tmp_path: Path, local: LocalSite) -> None:
    out = json.loads(g6(tmp_path, "fetch", local.url("/"), "--json", env=LOOP).stdout)
    listed = json.loads(g6(tmp_path, "ledger", "list", "--json").stdout)
    assert listed[0]["receipt_id"] == out["receipt_id"]
    blob = g6(tmp_path, "blob", "verify", "--json")
    assert blob.returncode == 0 and json.loads(blob.stdout) == {"ok": True, "checked": 1, "index_checked": 1,
                                                          "bad": [], "dangling": [], "redacted": 0, "pending": []}
    hexd = out["content"]["blake3"].split(":")[1]
    path = tmp_path / "knowledge" / "fetched" / "blake3" / hexd[:2] / hexd[2:4] / hexd
    path.write_bytes(path.read_bytes().replace(b"Text", b"Test"))
    v = g6(tmp_path, "ledger", "verify", "--json")
    assert v.returncode == 1
    report = json.loads(v.stdout)
    assert report["checks"]["blob"]["failed"] == 1 and report["checks"]["signature"]["ok"]
    assert g6(tmp_path, "blob", "verify").returncode == 1
    gc = json.loads(g6(tmp_path, "blob", "gc", "--dry-run", "--grace", "0", "--json").stdout)
    assert gc["removed"] == [] and gc["kept"] == 1
    assert g6(tmp_path, "blob", "cat", "blake3:nothex").returncode == 2
    assert g6(tmp_path, "blob", "cat", "blake3:" + "0" * 64).returncode == 1
    assert g6(tmp_path, "receipt", "show", "rcpt_nope").returncode == 1


def test_demo_runs_and_verifies(tmp_path: Path) -> None:
    r = g6(tmp_path / "demo-home", "--home", str(tmp_path / "demo-home"), "demo", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] and out["verify"]["ok"]
    assert [x["outcome"] for x in out["results"]] == [x["expected"] for x in out["results"]]
    assert (tmp_path / "demo-home" / "knowledge" / "ledger.sqlite").exists()


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    r = g6(tmp_path, "ledger", "list", env={"G6_ALLOW_LOOPBACK": "maybe"})
    assert r.returncode == 2 and b"G6_ALLOW_LOOPBACK" in r.stderr


def test_dotenv_is_read(tmp_path: Path) -> None:
    from g6.config import load_settings

    (tmp_path / ".env").write_text("# keys\nG6_OPENALEX_API_KEY='k-123'\nexport G6_HOST_PAUSE=2.5\n")
    s = load_settings({"G6_HOME": str(tmp_path)})
    assert s.host_pause == 2.5 and s.secret("G6_OPENALEX_API_KEY") == "k-123"
    assert "k-123" not in repr(s)
    s2 = load_settings({"G6_HOME": str(tmp_path), "G6_HOST_PAUSE": "0"})
    assert s2.host_pause == 0


def test_sources_lists_without_fetching(tmp_path: Path) -> None:
    r = g6(tmp_path, "sources", "--json", env={"G6_OPENALEX_API_KEY": "k-SECRET"})
    assert r.returncode == 0
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    assert set(rows) == {"arxiv", "oai_pmh", "openalex", "semantic_scholar"}
    assert rows["arxiv"]["pause_seconds"] == 3.0 and rows["openalex"]["key_set"] is True
    assert b"k-SECRET" not in r.stdout and b"k-SECRET" not in r.stderr


def test_search_cli_against_recorded_replies(tmp_path: Path, site: Site) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "fixtures"))
    from serve_recorded import routes

    s = site(routes())
    env = {**LOOP, "G6_ARXIV_URL": s.url("/arxiv/api/query"), "G6_ARXIV_PAUSE": "0",
           "G6_OPENALEX_URL": s.url("/openalex/works"), "G6_SEMANTIC_SCHOLAR_URL": s.url("/s2/graph/v1"),
           "G6_SEMANTIC_SCHOLAR_PAUSE": "0", "G6_OAI_PMH_PAUSE": "0", "G6_OPENALEX_PAUSE": "0"}
    arxiv = g6(tmp_path, "search", "arxiv", "citation grounding", "--category", "cs.CL", "--max-results", "5",
               "--json", env=env)
    assert arxiv.returncode == 0, arxiv.stderr
    out = json.loads(arxiv.stdout)
    validate(out, "search-result.v1")
    assert out["total"] == 214881 and out["returned"] == 5 and out["complete"] is False
    oa = json.loads(g6(tmp_path, "search", "openalex", "climate", "--max-results", "100", "--json", env=env).stdout)
    assert oa["total"] == 49 and oa["complete"] is True
    s2 = json.loads(g6(tmp_path, "search", "semantic_scholar", "ulam", "--max-results", "100", "--json",
                       env=env).stdout)
    assert s2["total"] == 89 and s2["complete"] is True
    oai = g6(tmp_path, "search", "oai_pmh", "--endpoint", s.url("/oai"), "--json", env=env)
    oai_out = json.loads(oai.stdout)  # the list ended, but completeListSize (8) says matches are missing
    assert oai_out["complete"] is False and oai_out["returned"] < oai_out["total"]
    bad = g6(tmp_path, "search", "arxiv", "x", "--category", "cs.XX", env=env)
    assert bad.returncode == 2 and b"unknown arXiv category" in bad.stderr
    assert g6(tmp_path, "search", "nope", "x", env=env).returncode == 2
    assert g6(tmp_path, "ledger", "verify").returncode == 0


def test_es_commands(tmp_path: Path, elastic_url: str) -> None:
    env = {"G6_ELASTIC_URL": elastic_url}
    m = g6(tmp_path, "es", "mapping", "hb", "--json", env=env)
    assert m.returncode == 0 and json.loads(m.stdout)["concrete_index"] == "handbook"
    s = json.loads(g6(tmp_path, "es", "search", "hb", "retention", "--filter", "tag=hr", "--json", env=env).stdout)
    assert s["total"] == 1 and s["passages"][0]["id"] == "3" and len(s["receipt_ids"]) == 2
    refused = g6(tmp_path, "es", "search", "hb", "x", "--filter", "title=Onboarding", "--json", env=env)
    assert refused.returncode == 2
    assert json.loads(refused.stdout)["code"] == "G6_E_KNOWLEDGE_FILTER_ON_TEXT"
    assert g6(tmp_path, "es", "search", "hand*", "x", env=env).returncode == 2
    assert json.loads(g6(tmp_path, "es", "count", "hb", "retention", "--json", env=env).stdout)["count"] == 2
    assert g6(tmp_path, "es", "get", "hb", "99", env=env).returncode == 1
    down = g6(tmp_path, "es", "count", "hb", "x", env={"G6_ELASTIC_URL": "http://127.0.0.1:9"})
    assert down.returncode == 1 and b"noida-db start" in down.stderr and down.stdout == b""
    assert g6(tmp_path, "es", "count", "hb", "x", env={"G6_ELASTIC_URL": "http://10.1.1.1:9200"}).returncode == 2
    assert g6(tmp_path, "ledger", "verify").returncode == 0


def test_chunk_cite_recheck_cli(tmp_path: Path, site: Site) -> None:
    p1 = "Every read leaves a receipt that anyone can verify offline."
    p2 = "Citations are re-checked months later against the live page."
    s = site({"/doc": Reply(body=f"<html><body><p>{p1}</p><p>{p2}</p></body></html>".encode()),
              "/robots.txt": Reply(404, b"")})
    rid = json.loads(g6(tmp_path, "fetch", s.url("/doc"), "--json", env=LOOP).stdout)["receipt_id"]
    chunks = json.loads(g6(tmp_path, "chunk", rid, "--json").stdout)["passages"]
    assert [c["text"] for c in chunks] == [p1, p2]
    man = tmp_path / "report.json"
    c1 = g6(tmp_path, "cite", rid, "--passage", chunks[0]["passage_id"], "--manifest", str(man), "--json")
    assert c1.returncode == 0, c1.stderr
    c2 = g6(tmp_path, "cite", rid, "--quote", "re-checked months later", "--manifest", str(man))
    assert c2.returncode == 0
    missing = g6(tmp_path, "cite", rid, "--quote", "never written", "--manifest", str(man))
    assert missing.returncode == 2 and b"not in the document" in missing.stderr
    validate(json.loads(man.read_text()), "manifest.v1")
    assert g6(tmp_path, "manifest", "verify", str(man)).returncode == 1  # unsigned
    assert g6(tmp_path, "manifest", "sign", str(man)).returncode == 0
    assert g6(tmp_path, "manifest", "verify", str(man)).returncode == 0
    ok = g6(tmp_path, "recheck", str(man), "--json", env=LOOP)
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    validate(report, "recheck-report.v1")
    assert report["counts"] == {"unchanged": 2}
    s.routes = {**s.routes, "/doc": Reply(body=f"<html><body><p>{p2}</p></body></html>".encode())}
    gone = g6(tmp_path, "recheck", str(man), env=LOOP)
    assert gone.returncode == 1 and b"gone" in gone.stdout and b"current" in gone.stdout
    s.routes = {**s.routes, "/doc": Reply(503, b"down")}
    down = g6(tmp_path, "recheck", str(man), env=LOOP)
    assert down.returncode == 3 and b"server_error" in down.stdout
    assert g6(tmp_path, "ledger", "verify").returncode == 0


def test_transparency_cli(tmp_path: Path, local: LocalSite) -> None:
    for _ in range(3):
        g6(tmp_path, "fetch", local.url("/"), env=LOOP)
    cp1 = json.loads(g6(tmp_path, "ledger", "checkpoint", "--json").stdout)
    assert cp1["size"] == 3 and cp1["note"].startswith(cp1["origin"] + "\n3\n")
    rid = json.loads(g6(tmp_path, "fetch", local.url("/"), "--json", env=LOOP).stdout)["receipt_id"]
    proof = tmp_path / "r.tlog-proof"
    made = g6(tmp_path, "ledger", "prove", rid, "-o", str(proof))
    assert made.returncode == 0 and b"signed a new one" in made.stderr
    receipt = tmp_path / "r.json"
    receipt.write_bytes(g6(tmp_path, "receipt", "show", rid).stdout)
    vkey = cp1["verifier_key"]
    ok = g6(tmp_path, "verify-proof", str(proof), "--receipt", str(receipt), "--key", vkey, "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"]
    pub = json.loads(g6(tmp_path, "keys", "show", "--json").stdout)["signing"]["public_key"]
    assert g6(tmp_path, "verify-proof", str(proof), "--receipt", str(receipt), "--key", pub).returncode == 0
    receipt.write_text(receipt.read_text().replace('"byte_count": ', '"byte_count": 1'))
    bad = g6(tmp_path, "verify-proof", str(proof), "--receipt", str(receipt), "--key", vkey)
    assert bad.returncode == 1 and b"FAILED" in bad.stdout
    cons = tmp_path / "c.proof"
    assert g6(tmp_path, "ledger", "consistency", "3", "4", "-o", str(cons)).returncode == 0
    assert g6(tmp_path, "verify-proof", str(cons), "--key", vkey).returncode == 0
    assert g6(tmp_path, "ledger", "consistency", "2", "4").returncode == 2
    listed = json.loads(g6(tmp_path, "ledger", "checkpoints", "--json").stdout)
    assert [c["size"] for c in listed] == [3, 4]
    warc = tmp_path / "out.warc.gz"
    w = g6(tmp_path, "export", "warc", "-o", str(warc), "--json")
    # the same bytes four times: one response, then revisits (identical-payload-digest)
    assert w.returncode == 0 and (json.loads(w.stdout)["responses"], json.loads(w.stdout)["revisits"]) == (1, 3)
