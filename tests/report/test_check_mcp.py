"""`report_check` over MCP: the SDK's own client against `g6 mcp`, gated like every tool that fetches."""

from __future__ import annotations

import json
import os
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
    out = tmp_path / "home" / "knowledge" / "reports" / "results" / "result.json"
    (tmp_path / "r.md").write_text(f'The Gazette wrote "{QUOTE}" ([Gazette](a)).\n')
    (tmp_path / "empty.md").write_text(" \n")
    _, (got, stored, missing, based, empty, bad_base) = session_calls(
        env_for(tmp_path / "home", G6_MCP_SENSITIVE="report_check"), [
            ("report_check", {"report": report, "output": "result.json"}),
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
    assert got["output_path"] == str(out)
    assert g6(tmp_path / "home", "report", "verify", str(out)).returncode == 0
    assert json.loads(out.read_text())["result_id"] == got["result_id"]


def test_report_checks_output_over_mcp_is_a_name_in_the_homes_results_folder(tmp_path: Path, site: Site) -> None:
    """``output`` is a file name, written (whole) in ``$G6_HOME/knowledge/reports/results/``: a path (absolute,
    relative, ``..``), a name not ending ``.json``, the ledger's name, or a name there that is a FIFO is
    refused (``rejected``) before anything is read; the home's ledger still verifies, nothing was fetched, and
    nothing is written outside the folder."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = str(write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE))))
    home = tmp_path / "home"
    assert g6(home, "report", "check", report, "--receipts-only").returncode == 1  # the home exists, nothing read
    results = home / "knowledge" / "reports" / "results"
    results.mkdir(parents=True)
    os.mkfifo(results / "fifo.json")
    names = [str(tmp_path / "out.json"), "../ledger.sqlite", "../../knowledge/ledger.sqlite", "sub/out.json",
             "ledger.sqlite", ".hidden.json", "out.txt", "", "fifo.json"]
    _, replies = session_calls(env_for(home, G6_MCP_SENSITIVE="report_check"),
                               [("report_check", {"report": report, "output": n}) for n in names])
    assert [r.get("outcome") for r in replies] == ["rejected"] * len(names), replies
    assert "file name" in replies[0]["message"] and "FIFO" in replies[-1]["message"]
    assert s.requests == [] and not (tmp_path / "out.json").exists()
    assert sorted(p.name for p in results.iterdir()) == ["fifo.json"]
    assert json.loads(g6(home, "ledger", "verify", "--json").stdout)["ok"]
