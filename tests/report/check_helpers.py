"""What the report-check tests share: reports built from the model directly, pages, and a check run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from g6.adapters import CheckedClient
from g6.home import EvidenceHome
from g6.report.check import CheckRun, check_report
from g6.report.evidence import HomeEvidence
from g6.report.model import Report, ReportCitation
from g6.report.model_json import report_to_json

QUOTE = "Household bills rose by 12% over the quarter."
CLAIM = "Bills went up by twelve percent in the last quarter."
LEAD = ("Energy markets in the region have been volatile since the winter, and households have started to "
        "compare offers more often than before, the council's survey of four districts found this spring.")


def article(*paras: str, extra: str = "") -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return (f"<html><head><title>Bills</title>{extra}</head><body><nav>Home · Business desk</nav>"
            f"<article><h1>Bills</h1><p>{LEAD}</p>{body}<p>{LEAD}</p></article></body></html>").encode()


def cite(source: str, quote: str | None = None, claim: str = CLAIM, n: int = 0, **kw: Any) -> dict[str, Any]:
    return {"source": source, "quote": quote, "claim": claim, "n": n, **kw}


def report_of(*cites: dict[str, Any], text: str = "", uncited: Sequence[str] = ()) -> Report:
    out = []
    for i, c in enumerate(cites, 1):
        c = dict(c)
        c["n"] = c.get("n") or i
        out.append(ReportCitation(**c))
    return Report("g6-report-model", text or " ".join(c.claim for c in out), tuple(out), tuple(uncited))


def check(home: EvidenceHome, report: Report, client: CheckedClient | None = None, **kw: Any) -> CheckRun:
    return check_report(home, HomeEvidence(home), report, client=client, **kw)


def same(run: CheckRun) -> list[tuple[Any, ...]]:
    """What must not change between a check that fetched and one that did not: verdict, receipt, where found,
    the hints (text and similarity), the reason."""
    return [(v.verdict, v.receipt_id, json.dumps(v.found, sort_keys=True),
             json.dumps([{k: h[k] for k in ("text", "similarity")} for h in v.hints]), v.reason)
            for v in run.verdicts]


def write_report(path: Path, report: Report) -> Path:
    path.write_text(json.dumps(report_to_json(report)))
    return path


def g6(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 300,
       **kw: Any) -> subprocess.CompletedProcess[bytes]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1", **(env or {})})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=e, timeout=timeout,
                          cwd=home.parent, **kw)


OTHER = "The harbour authority approved a second ferry berth for the summer timetable."


def first_check(tmp_path: Path, site: Any) -> tuple[Path, Path, Path, Any]:
    """A home, a report citing QUOTE on /a and OTHER on /b of a loopback site, and the first check's signed result
    (both found), as `g6 report check REPORT -o RESULT` writes it: what ``--replay`` tests start from."""
    from g6.demo.site import Reply

    s = site({"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article(OTHER)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE), cite(s.url("/b"), OTHER)))
    home, result = tmp_path / "home", tmp_path / "first.json"
    r = g6(home, "report", "check", str(report), "-o", str(result))
    assert r.returncode == 0, r.stderr
    return home, report, result, s
