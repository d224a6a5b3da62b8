"""`report_check` over MCP: the SDK's own client against `g6 mcp`, gated like every tool that fetches."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from g6.demo.site import LocalSite, Reply
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report
from tests.test_mcp import env_for, session_calls

Site = Callable[..., LocalSite]


def test_report_check_over_mcp_is_gated_then_answers_the_signed_result(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/gone": Reply(404, b"no"), "/robots.txt": Reply(404)})
    report = str(write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE), cite(s.url("/gone"), QUOTE))))
    _, refused = session_calls(env_for(tmp_path / "home"), [("report_check", {"report": report})])
    assert refused[0]["code"] == "G6_E_MCP_OP_NOT_ALLOWED" and "report_check" in refused[0]["message"]
    assert s.requests == []
    out = str(tmp_path / "result.json")
    (tmp_path / "r.md").write_text(f'The Gazette wrote "{QUOTE}" ([Gazette](a)).\n')
    (tmp_path / "empty.md").write_text(" \n")
    _, (got, stored, missing, based, empty, bad_base) = session_calls(
        env_for(tmp_path / "home", G6_MCP_SENSITIVE="report_check"), [
            ("report_check", {"report": report, "output": out}),
            ("report_check", {"report": report, "receipts_only": True}),
            ("report_check", {"report": str(tmp_path / "none.json")}),
            ("report_check", {"report": str(tmp_path / "r.md"), "base": s.url("/")}),
            ("report_check", {"report": str(tmp_path / "empty.md")}),
            ("report_check", {"report": str(tmp_path / "r.md"), "base": "nowhere"})])
    assert [c["verdict"] for c in based["citations"]] == ["quote_found"] and based["exit_code"] == 0
    assert based["citations"][0]["address"] == "a"
    assert empty["outcome"] == "rejected" and "empty.md: empty" in empty["message"]
    assert bad_base["outcome"] == "rejected" and "base" in bad_base["message"]
    assert got["code"] == "G6_E_REPORT_CHECKED" and got["untrusted_content"] is True
    assert [c["verdict"] for c in got["citations"]] == ["quote_found", "source_failed"]
    assert [c["receipt_id"] for c in stored["citations"]] == [c["receipt_id"] for c in got["citations"]]
    assert missing["outcome"] == "rejected" and "cannot read the report" in missing["message"]
    assert g6(tmp_path / "home", "report", "verify", out).returncode == 0
    assert json.loads(Path(out).read_text())["result_id"] == got["result_id"]
