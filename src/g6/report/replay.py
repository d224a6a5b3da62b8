"""A check again on the evidence an earlier check rested on (``g6 report check REPORT --replay RESULT``).

Without it, a citation rests on the newest ok read of its URL, so a page read again since the first check (any
``g6 fetch`` of it, a re-check, a render) changes what a second check rests on. A grader who wants the first
check's answer again, on the same home, gives its signed result: each citation then rests on the receipt that
result names for it, exactly as if the report had pinned it (``ReportCitation.receipt_id``; the pin's rules
apply: in the evidence, verified, a read of the cited URL or paper page). The result must verify (its signature
with a key the home trusts or one pinned, its figures, its manifest) and be a check of these very report bytes;
anything else is refused before a citation is decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from g6.errors import ReplayRefused, ReplayUnverified
from g6.report.model import Report
from g6.report.result import verify_result


def pinned_as_in(report: Report, report_sha256: str, result: Mapping[str, Any], keys: Mapping[str, Any],
                 said: str) -> tuple[Report, int]:
    """``report`` with each citation pinned to the receipt ``result`` (loaded by ``load_result``) rested it on,
    and how many were pinned. A citation the report pins already keeps its own pin (the earlier check used it
    too); one the earlier check rested on no receipt (no read, a source g6 cannot read) is decided as before."""
    failed = [ch for ch in verify_result(result, keys, said) if not ch.ok]
    if failed:
        ch = failed[0]
        raise ReplayUnverified(f"--replay: the result does not verify ({ch.check}: {ch.detail[:200]}); nothing was "
                               "checked")
    said_report = result.get("report")
    if not isinstance(said_report, dict) or said_report.get("sha256") != report_sha256:
        said_report = said_report if isinstance(said_report, dict) else {}
        raise ReplayRefused(f"--replay: the result is a check of other report bytes "
                            f"({str(said_report.get('sha256'))[:80]}; this report is {report_sha256}): give the "
                            "report that result was made from")
    by_n = _pins(result["citations"])
    if sorted(by_n) != [c.n for c in report.citations]:
        raise ReplayRefused(f"--replay: the result names {len(by_n):,} citations, the report has "
                            f"{len(report.citations):,}: it was read another way (--format, --base, --document)")
    pinned = 0
    citations = []
    for c in report.citations:
        rid = by_n[c.n]
        if not c.receipt_id and isinstance(rid, str) and rid:
            c = replace(c, receipt_id=rid)
            pinned += 1
        citations.append(c)
    return replace(report, citations=tuple(citations)), pinned



def pinned_by_home(home: Any, report: Report, report_sha256: str, result: Mapping[str, Any],
                   extra_keys: Mapping[str, Any] | None = None) -> tuple[Report, int]:
    """:func:`pinned_as_in` with the result verified as ``g6 report verify`` verifies it by default: the keys in
    ``home``'s trusted folder (the home that checked signed it), and ``extra_keys`` (pinned with ``--key``)."""
    trusted = {**home.keys.trusted(), **(extra_keys or {})}
    return pinned_as_in(report, report_sha256, result, trusted, "a key this home trusts")


def _pins(citations: list[dict[str, Any]]) -> dict[int, str | None]:
    """Each citation's ``n`` and the receipt the result rested it on. A signed result is still data: an ``n`` that
    is not a whole number, or one named twice (which receipt would it rest on?), or a ``receipt_id`` that is not a
    string or null, is refused (``ReplayRefused``), never a crash and never a silent choice."""
    by_n: dict[int, str | None] = {}
    for i, cj in enumerate(citations):
        n, rid = cj.get("n"), cj.get("receipt_id")
        if type(n) is not int:
            raise ReplayRefused(f"--replay: the result's citation {i} has no number n ({str(n)[:40]!r}): not a "
                                "result g6 wrote")
        if n in by_n:
            raise ReplayRefused(f"--replay: the result names citation {n} twice: which receipt it rested on is "
                                "not one answer")
        if not isinstance(rid, str | None):
            raise ReplayRefused(f"--replay: the result's citation {n} names a receipt_id that is not a string")
        by_n[n] = rid
    return by_n
