"""``g6 report check REPORT --replay RESULT``: a second check rests each citation on the receipt the first check's
signed result names, so a page read again since (a plain ``g6 fetch``, a re-check) changes nothing; a result
that does not verify, or of other report bytes, is refused before anything is checked."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from g6.demo.site import LocalSite, Reply
from tests.report.check_helpers import QUOTE, article, cite, first_check, g6, report_of, write_report

Site = Callable[..., LocalSite]
def _verdicts(stdout: bytes) -> list[tuple[str, str]]:
    return [(c["verdict"], c["receipt_id"]) for c in json.loads(stdout)["citations"]]


def test_a_page_read_again_since_changes_nothing_with_replay(tmp_path: Path, site: Site) -> None:
    home, report, result, s = first_check(tmp_path, site)
    first = [(c["verdict"], c["receipt_id"]) for c in json.loads(result.read_text())["citations"]]
    s.routes["/a"] = Reply(body=article("The page was rewritten since and says something else entirely now."))
    assert g6(home, "fetch", s.url("/a")).returncode == 0  # a newer ok read of /a, without the quote
    newest = g6(home, "report", "check", str(report), "--receipts-only", "--json")
    assert newest.returncode == 1 and _verdicts(newest.stdout)[0][0] == "quote_not_found"  # the newest-read rule
    again = g6(home, "report", "check", str(report), "--receipts-only", "--replay", str(result), "--json")
    assert again.returncode == 0, again.stderr
    assert _verdicts(again.stdout) == first
    assert b"g6: --replay: 2 citations rest on the receipt" in again.stderr, again.stderr


def test_a_result_of_another_report_is_refused(tmp_path: Path, site: Site) -> None:
    home, report, result, s = first_check(tmp_path, site)
    other = write_report(tmp_path / "other.json", report_of(cite(s.url("/a"), QUOTE)))
    r = g6(home, "report", "check", str(other), "--receipts-only", "--replay", str(result))
    assert r.returncode == 2, r.stderr
    assert b"--replay: the result is a check of other report bytes" in r.stderr and b"Traceback" not in r.stderr
    assert r.stdout == b""


def test_an_edited_result_does_not_verify_and_nothing_is_checked(tmp_path: Path, site: Site) -> None:
    home, report, result, _ = first_check(tmp_path, site)
    d = json.loads(result.read_text())
    d["citations"][0]["receipt_id"], d["citations"][1]["receipt_id"] = (d["citations"][1]["receipt_id"],
                                                                        d["citations"][0]["receipt_id"])
    result.write_text(json.dumps(d))
    r = g6(home, "report", "check", str(report), "--receipts-only", "--replay", str(result))
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(b"g6: --replay: the result does not verify (signature"), r.stderr
    assert r.stdout == b""


def test_a_result_signed_in_another_home_is_not_trusted(tmp_path: Path, site: Site) -> None:
    _, report, result, _ = first_check(tmp_path, site)
    elsewhere = tmp_path / "elsewhere"
    assert g6(elsewhere, "keys", "init").returncode == 0
    r = g6(elsewhere, "report", "check", str(report), "--receipts-only", "--replay", str(result))
    assert r.returncode == 1 and b"--replay: the result does not verify (signature" in r.stderr, r.stderr


def test_a_replay_file_that_is_not_a_result_is_an_input_error(tmp_path: Path, site: Site) -> None:
    home, report, _, _ = first_check(tmp_path, site)
    for name, content in (("notjson.json", b"{nope"), ("manifest.json", b'{"schema": "g6-manifest.v1"}')):
        (tmp_path / name).write_bytes(content)
        r = g6(home, "report", "check", str(report), "--replay", str(tmp_path / name))
        assert r.returncode == 2 and r.stderr.startswith(f"g6: --replay {tmp_path / name}: ".encode()), r.stderr
    r = g6(home, "report", "check", str(report), "--replay", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr
