"""``report_check``'s ``replay`` over MCP, as ``g6 report check --replay`` (tests/report/test_replay.py): a second
check rests each citation on the receipt an earlier signed result names, so a page read again since changes
nothing; a result of other report bytes is an input error, one that does not verify a failed check, both error
results, and nothing is checked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from g6.demo.site import LocalSite, Reply
from tests.report.check_helpers import QUOTE, article, cite, report_of, write_report
from tests.test_mcp_findings import BLOCKED, body, call

Site = Callable[..., LocalSite]
OTHER = "The harbour authority approved a second ferry berth for the summer timetable."


def _first(tmp_path: Path, site: Site) -> tuple[Path, str, str, LocalSite]:
    """A home, a report citing QUOTE on /a and OTHER on /b, and the path of the first check's signed result."""
    s = site({"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article(OTHER)), "/robots.txt": Reply(404)})
    report = str(write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE), cite(s.url("/b"), OTHER))))
    home = tmp_path / "home"
    (first,) = call(home, [("report_check", {"report": report, "output": "first.json"})])
    assert first.is_error is False and body(first)["exit_code"] == 0, body(first)
    return home, report, body(first)["output_path"], s


def _verdicts(d: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["verdict"], c["receipt_id"]) for c in d["citations"]]


def test_replay_gives_the_first_verdicts_after_the_page_changed(tmp_path: Path, site: Site) -> None:
    home, report, result, s = _first(tmp_path, site)
    first = _verdicts(json.loads(Path(result).read_text()))
    s.routes["/a"] = Reply(body=article("The page was rewritten since and says something else entirely now."))
    fetched, newest, again = call(home, [
        ("fetch", {"url": s.url("/a")}),  # a newer ok read of /a, without the quote
        ("report_check", {"report": report, "receipts_only": True}),
        ("report_check", {"report": report, "receipts_only": True, "replay": result})])
    assert fetched.is_error is False and body(fetched)["outcome"] == "ok"
    assert newest.is_error is True and _verdicts(body(newest))[0][0] == "quote_not_found"  # the newest-read rule
    assert again.is_error is False, body(again)
    assert body(again)["exit_code"] == 0 and _verdicts(body(again)) == first


def test_a_result_of_another_report_is_an_input_error(tmp_path: Path, site: Site) -> None:
    home, _, result, s = _first(tmp_path, site)
    other = str(write_report(tmp_path / "other.json", report_of(cite(s.url("/a"), QUOTE))))
    (res,) = call(home, [("report_check", {"report": other, "receipts_only": True, "replay": result})])
    got = body(res)
    assert res.is_error is True and got["code"] == "G6_E_REPORT_REPLAY" and got["outcome"] == "rejected", got
    assert got["message"].startswith("replay: the result is a check of other report bytes"), got
    assert "exit_code" not in got and "citations" not in got  # nothing was checked


def test_an_edited_result_does_not_verify_a_failed_check_and_nothing_is_checked(tmp_path: Path,
                                                                               site: Site) -> None:
    home, report, result, _ = _first(tmp_path, site)
    d = json.loads(Path(result).read_text())
    d["citations"][0]["receipt_id"], d["citations"][1]["receipt_id"] = (d["citations"][1]["receipt_id"],
                                                                        d["citations"][0]["receipt_id"])
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(d))
    (res,) = call(home, [("report_check", {"report": report, "receipts_only": True, "replay": str(edited)})])
    got = body(res)
    assert res.is_error is True and got["status"] == BLOCKED, got
    assert got["code"] == "G6_E_REPORT_REPLAY_UNVERIFIED" and got["outcome"] == "failed", got
    assert got["message"].startswith("replay: the result does not verify (signature"), got
    assert "citations" not in got


def test_a_replay_that_is_not_a_result_is_an_input_error(tmp_path: Path, site: Site) -> None:
    home, report, _, _ = _first(tmp_path, site)
    (tmp_path / "notjson.json").write_bytes(b"{nope")
    (tmp_path / "manifest.json").write_bytes(b'{"schema": "g6-manifest.v1"}')
    calls = [("report_check", {"report": report, "replay": str(tmp_path / n)})
             for n in ("notjson.json", "manifest.json", "missing.json")]
    for res in call(home, calls):
        got = body(res)
        assert res.is_error is True and got["code"] == "G6_E_INPUT" and got["outcome"] == "rejected", got
        assert got["message"].startswith(f"replay {tmp_path}/") or "cannot read the replay result" in got["message"]
        assert "\n" not in got["message"]
