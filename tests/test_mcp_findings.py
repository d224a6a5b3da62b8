"""What a new user wiring `g6 mcp` into an agent found: a failed check answered as a success, unknown arguments
dropped in silence, ids never checked for shape (a 60 MB id echoed twice, the home's path in the message), a
manifest's missing folders made, replies without what mcp.md promises, descriptions promising passages the
fetch reply has not. The tools are called in-process through the SDK's own client (``mcp.Client`` over the
server ``build_server`` makes), the transport the SDK tests servers with; the wire and the signals are
tested over stdio in tests/test_mcp_findings_wire.py."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from g6.config import load_settings
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.mcp.server import TOOLS, build_server
from tests.report.check_helpers import QUOTE, article, cite, report_of, write_report

Site = Callable[..., LocalSite]
PAGE = b"<html><body><p>Agents cite this sentence with a receipt.</p><p>A second paragraph here.</p></body></html>"
BLOCKED = "blocked-escalated"


def env_of(home: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_MCP_SENSITIVE": "all",
              **extra})
    return e


def call(home: Path, calls: list[tuple[str, dict[str, Any]]], **extra: str) -> list[Any]:
    """Each call's CallToolResult, in one session with a server built as `g6 mcp` builds it."""
    app = build_server(load_settings(env_of(home, **extra)))

    async def main() -> list[Any]:
        async with Client(app) as c:
            return [await c.call_tool(name, args) for name, args in calls]
    return anyio.run(main)


def body(res: Any) -> dict[str, Any]:
    assert res.structured_content is not None, res.content
    return res.structured_content


def changing_site(site: Site) -> tuple[LocalSite, list[bytes]]:
    """A page whose body is ``served[0]``: the test changes it between the fetch and the re-check."""
    served = [PAGE]

    def page(req: SeenRequest) -> Reply:
        return Reply(200, served[0])
    return site({"/p": page, "/robots.txt": Reply(404, b"")}), served


# -- 1. a failed check is an error result ------------------------------------------------------------------

def test_a_recheck_that_finds_a_changed_page_is_an_error_result_with_its_verdicts(tmp_path: Path,
                                                                                  site: Site) -> None:
    s, served = changing_site(site)
    manifest = str(tmp_path / "m.json")
    (fetched,) = call(tmp_path / "home", [("fetch", {"url": s.url("/p")})])
    rid = body(fetched)["receipt_id"]
    cited, held = call(tmp_path / "home", [("cite", {"receipt_id": rid, "quote": "cite this sentence",
                                                      "manifest": manifest}),
                                            ("recheck", {"manifest": manifest})])
    assert not cited.is_error and not held.is_error and body(held)["exit_code"] == 0
    served[0] = b"<html><body><p>Rewritten since.</p></body></html>"
    typed, invoked = call(tmp_path / "home", [
        ("recheck", {"manifest": manifest}),
        ("g6_invoke", {"skill": "knowledge_manifest", "op": "recheck", "args": {"manifest": manifest}})])
    for res in (typed, invoked):
        got = body(res)
        assert res.is_error is True, got
        assert got["exit_code"] == 1 and got["status"] == BLOCKED and got["code"] == "G6_E_KNOWLEDGE_MANIFEST_RECHECKED"
        assert got["counts"] and got["verdicts"] and "exit code 1" in got["message"]  # the whole result is there


def test_a_report_check_whose_quote_is_not_found_is_an_error_result_with_its_figures(tmp_path: Path,
                                                                                     site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    good = str(write_report(tmp_path / "good.json", report_of(cite(s.url("/a"), QUOTE))))
    bad = str(write_report(tmp_path / "bad.json", report_of(cite(s.url("/a"), "A quote the page never had."))))
    ok, failed = call(tmp_path / "home", [("report_check", {"report": good}), ("report_check", {"report": bad})])
    assert ok.is_error is False and body(ok)["exit_code"] == 0 and body(ok)["status"] == "qualified-draft"
    got = body(failed)
    assert failed.is_error is True, got
    assert got["exit_code"] == 1 and got["status"] == BLOCKED and got["code"] == "G6_E_REPORT_CHECKED"
    assert got["figures"]["quote_not_found"] == 1 and got["signature"] and got["message"]


def test_a_proof_that_does_not_verify_is_an_error_result(tmp_path: Path) -> None:
    (res,) = call(tmp_path / "home", [("verify_proof", {"proof": "c2sp.org/tlog-proof@v1\nnot a proof\n",
                                                        "key": "ed25519:" + "A" * 43 + "=",
                                                        "receipt": {"receipt_id": "rcpt_X"}})])
    assert res.is_error is True and body(res)["status"] == BLOCKED and body(res)["message"]


# -- 2. unknown arguments are refused --------------------------------------------------------------------

def test_fetch_refuses_allowlist_and_headers_and_fetches_nothing(tmp_path: Path, site: Site) -> None:
    s = site({"/p": Reply(body=PAGE), "/robots.txt": Reply(404, b"")})
    res = call(tmp_path / "home", [
        ("fetch", {"url": s.url("/p"), "allowlist": ["example.org"]}),
        ("fetch", {"url": s.url("/p"), "headers": {"Authorization": "x"}, "allow": ["127.0.0.1"]}),
        ("sources", {"verbose": True}),
        ("g6_invoke", {"skill": "knowledge_fetcher", "op": "sources", "argz": {}})])
    for r in res:
        got = body(r)
        assert r.is_error is True and got["code"] == "G6_E_INPUT" and got["status"] == BLOCKED, got
        assert "\n" not in got["message"]
    assert body(res[0])["message"] == ("fetch takes no argument 'allowlist'; it takes url, allow, max_bytes, extract, "
                                       "render")
    assert "'headers'" in body(res[1])["message"] and "'allow'" not in body(res[1])["message"]
    assert s.requests == []  # nothing was fetched


def test_every_typed_tool_refuses_an_unknown_argument_and_says_so_in_its_schema(tmp_path: Path) -> None:
    app = build_server(load_settings(env_of(tmp_path / "home")))

    async def main() -> tuple[list[Any], list[Any]]:
        async with Client(app) as c:
            tools = (await c.list_tools()).tools
            return tools, [await c.call_tool(t.name, {"no_such_argument": 1}) for t in tools]
    tools, replies = anyio.run(main)
    assert {t.name for t in tools} == {spec.fn.__name__ for spec in TOOLS}
    for t, r in zip(tools, replies, strict=True):
        assert t.input_schema["additionalProperties"] is False, t.name
        assert r.is_error is True and body(r)["message"].startswith(f"{t.name} takes no argument 'no_such_argument'")
    assert not (tmp_path / "home").exists()  # refused before any tool ran


# -- 4. cite's manifest: a missing folder is refused, as the CLI refuses it ------------------------------------

def test_cite_refuses_a_manifest_in_a_missing_folder(tmp_path: Path, site: Site) -> None:
    s = site({"/p": Reply(body=PAGE), "/robots.txt": Reply(404, b"")})
    (fetched,) = call(tmp_path / "home", [("fetch", {"url": s.url("/p")})])
    rid = body(fetched)["receipt_id"]
    (tmp_path / "file").write_text("x")
    manifests = [tmp_path / "nodir" / "deeper" / "m.json", tmp_path / "file" / "m.json", tmp_path]
    res = call(tmp_path / "home", [("cite", {"receipt_id": rid, "quote": "cite this sentence", "manifest": str(m)})
                                   for m in manifests])
    assert [r.is_error for r in res] == [True, True, True]
    assert "folder does not exist" in body(res[0])["message"] and not (tmp_path / "nodir").exists()
    assert "not a folder" in body(res[1])["message"] and "is a folder" in body(res[2])["message"]


# -- 5. ids are checked for shape; nothing long is echoed; the home's path is not told ------------------------

@pytest.mark.parametrize("rid", ["hello", "../../etc/passwd", "rcpt_" + "r" * 6_000_000], ids=["word", "path", "6MB"])
def test_receipt_ids_are_checked_for_shape_and_never_echoed_long(tmp_path: Path, rid: str) -> None:
    res = call(tmp_path / "home", [
        ("receipt_show", {"receipt_id": rid}),
        ("cite", {"receipt_id": rid, "quote": "x", "manifest": str(tmp_path / "m.json")}),
        ("g6_invoke", {"skill": "knowledge_chunker", "op": "chunk", "args": {"receipt_id": rid}})])
    for r in res:
        got = body(r)
        assert r.is_error is True and "is not a valid id" in got["message"], got
        assert len(r.content[0].text) < 600 and len(json.dumps(got)) < 600
    assert not (tmp_path / "m.json").exists()


def test_an_unknown_receipt_does_not_tell_the_homes_path(tmp_path: Path, site: Site) -> None:
    s = site({"/p": Reply(body=PAGE), "/robots.txt": Reply(404, b"")})
    call(tmp_path / "home", [("fetch", {"url": s.url("/p")})])  # a ledger to look in
    (res,) = call(tmp_path / "home", [("receipt_show", {"receipt_id": "rcpt_01M98BCEKNHZSEJEP73G2B21WC"})])
    got = body(res)
    assert res.is_error is True and got["code"] == "G6_E_LEDGER_RECEIPT_NOT_FOUND"
    assert got["message"] == "no receipt 'rcpt_01M98BCEKNHZSEJEP73G2B21WC' in this server's ledger"
    assert str(tmp_path) not in res.content[0].text


# -- 6. every reply carries what mcp.md promises --------------------------------------------------------------

def test_every_reply_carries_status_and_every_failure_a_code_and_a_message(tmp_path: Path, site: Site) -> None:
    s = site({"/p": Reply(body=PAGE), "/gone": Reply(404, b"gone"), "/robots.txt": Reply(404, b"")})
    (fetched,) = call(tmp_path / "home", [("fetch", {"url": s.url("/p")})])
    rid = body(fetched)["receipt_id"]
    res = call(tmp_path / "home", [
        ("sources", {}), ("fetch", {"url": s.url("/gone")}), ("fetch", {"url": "file:///etc/passwd"}),
        ("fetch", {"url": "http://127.0.0.1:9/"}), ("search", {"source": "arxiv", "categories": ["cs.XX"]}),
        ("es_mapping", {"index": "hb"}), ("cite", {"receipt_id": rid, "quote": "nowhere", "manifest": "m.json"}),
        ("recheck", {"manifest": str(tmp_path / "none.json")}), ("report_check", {"report": "/nonexistent"}),
        ("receipt_show", {"receipt_id": rid}), ("ledger_verify", {}),
        ("verify_proof", {"proof": "x", "key": "ed25519:x"}),
        ("g6_invoke", {"skill": "nope", "op": "x"})], G6_ELASTIC_URL="http://127.0.0.1:9")
    for r in res:
        got = body(r)
        assert got["status"] in ("qualified-draft", BLOCKED), got
        assert r.is_error is (got["status"] == BLOCKED), got
        if r.is_error:
            assert isinstance(got.get("code"), str) or "ok" in got, got  # the ledger tools' objects: `ok`
            assert isinstance(got.get("message"), str) and got["message"], got
    assert body(res[1])["message"] and body(res[2])["message"]  # a failed fetch says why at the top


# -- 7. the passages the descriptions promise are there ---------------------------------------------------------

def test_the_passage_ids_cite_takes_come_from_the_chunker_as_its_description_says(tmp_path: Path,
                                                                                  site: Site) -> None:
    s = site({"/p": Reply(body=PAGE), "/robots.txt": Reply(404, b"")})
    app = build_server(load_settings(env_of(tmp_path / "home")))

    async def schemas() -> dict[str, Any]:
        async with Client(app) as c:
            return {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
    props = anyio.run(schemas)
    assert "knowledge_chunker" in props["cite"]["passage_id"]["description"]
    assert "knowledge_chunker" in props["fetch"]["extract"]["description"]
    (fetched,) = call(tmp_path / "home", [("fetch", {"url": s.url("/p")})])
    rid = body(fetched)["receipt_id"]
    assert "passages" not in body(fetched)  # the description does not promise them here
    (chunked,) = call(tmp_path / "home", [("g6_invoke", {"skill": "knowledge_chunker", "op": "chunk",
                                                         "args": {"receipt_id": rid}})])
    pid = body(chunked)["passages"][0]["passage_id"]
    (cited,) = call(tmp_path / "home", [("cite", {"receipt_id": rid, "passage_id": pid,
                                                  "manifest": str(tmp_path / "m.json")})])
    assert cited.is_error is False and body(cited)["citations"] == 1


# -- 5. the wire reads a long line in one pass ----------------------------------------------------------------------

@pytest.mark.parametrize("data", [b"", b"a\n", b"a\nb", b"\n\n", b"x" * 200_000 + b"\n" + b"y" * 70_000 + b"\nz\n",
                                  b"a" * 65_535 + b"\n" + b"b" * 65_536 + b"\n"])
def test_the_wire_splits_lines_as_they_come_whatever_the_chunks(data: bytes) -> None:
    """The lines ``_lines`` gives are the stream's, newline kept, the last one without (the copier passes them
    on as is). Measured: a 60 MB argument took 56 s to pass the wire before (each 64 KiB chunk was added to the
    whole line and the whole split again), 3 s now, most of it the SDK's parse."""
    from io import BytesIO

    from g6.mcp.wire import _lines

    assert list(_lines(BytesIO(data))) == data.splitlines(keepends=True)
