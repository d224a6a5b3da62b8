"""The model itself as JSON (format ``g6-report-model``, ``schemas/report-model.v1.schema.json``): a ``Report``
written out field for field, for reports built by hand or by a program that already found the citations, and
for tests. Read strictly: every field typed, offsets inside the text, nothing unknown."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from g6.errors import InputError
from g6.report.model import Report, ReportCitation, UnusableCitation

FORMAT = "g6-report-model"
SCHEMA = "g6.report-model.v1"
MAX_CITATIONS = 1_000_000

_OPTIONAL_STR = ("quote", "prefix", "suffix", "title", "receipt_id", "read_at", "address", "locator", "cached")


def report_to_json(report: Report) -> dict[str, Any]:
    return {"schema": SCHEMA, "format": report.format, "text": report.text,
            "citations": [{f.name: getattr(c, f.name) for f in fields(ReportCitation)} for c in report.citations],
            "uncited_claims": list(report.uncited_claims),
            "unusable": [{f.name: getattr(u, f.name) for f in fields(UnusableCitation)} for u in report.unusable]}


def _citation(d: Any, i: int, text: str) -> ReportCitation:
    where = f"citations[{i}]"
    if not isinstance(d, Mapping):
        raise InputError(f"{where} is not an object")
    known = {f.name for f in fields(ReportCitation)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise InputError(f"{where} has unknown field(s) {', '.join(repr(k)[:40] for k in unknown[:5])}")
    n = d.get("n", i + 1)
    if type(n) is not int or n < 1:
        raise InputError(f"{where}.n is not a number from 1")
    for k in ("source", "claim"):
        if not isinstance(d.get(k, ""), str):
            raise InputError(f"{where}.{k} is not a string")
    if not d.get("source"):
        raise InputError(f"{where}.source is missing or empty")
    for k in _OPTIONAL_STR:
        if d.get(k) is not None and not isinstance(d[k], str):
            raise InputError(f"{where}.{k} is not a string")
    start, end = d.get("claim_start"), d.get("claim_end")
    for k, v in (("claim_start", start), ("claim_end", end)):
        if v is not None and (type(v) is not int or not 0 <= v <= len(text)):
            raise InputError(f"{where}.{k} is {str(v)[:20]}, outside the text (0 to {len(text)})")
    if start is not None and end is not None and start > end:
        raise InputError(f"{where}: claim_start {start} is after claim_end {end}")
    return ReportCitation(n=n, source=d["source"], claim=d.get("claim", ""), claim_start=start, claim_end=end,
                          **{k: d.get(k) for k in _OPTIONAL_STR}, where=str(d.get("where") or where))


def _unusable(d: Any, i: int, text: str) -> UnusableCitation:
    where = f"unusable[{i}]"
    if not isinstance(d, Mapping):
        raise InputError(f"{where} is not an object")
    unknown = sorted(set(d) - {f.name for f in fields(UnusableCitation)})
    if unknown:
        raise InputError(f"{where} has unknown field(s) {', '.join(repr(k)[:40] for k in unknown[:5])}")
    n = d.get("n")
    if type(n) is not int or n < 1:
        raise InputError(f"{where}.n is not a number from 1")
    for k in ("written", "reason", "claim", "where"):
        if not isinstance(d.get(k, ""), str):
            raise InputError(f"{where}.{k} is not a string")
    if not d.get("reason"):
        raise InputError(f"{where}.reason is missing or empty")
    start, end = d.get("claim_start"), d.get("claim_end")
    for k, v in (("claim_start", start), ("claim_end", end)):
        if v is not None and (type(v) is not int or not 0 <= v <= len(text)):
            raise InputError(f"{where}.{k} is {str(v)[:20]}, outside the text (0 to {len(text)})")
    return UnusableCitation(n, d.get("written", ""), d["reason"], d.get("claim", ""), start, end,
                            str(d.get("where") or where))


def report_from_json(data: bytes) -> Report:
    """A ``Report`` from its JSON; an InputError naming the first thing wrong."""
    try:
        d = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise InputError(f"the report is not JSON: {str(e)[:200]}") from None
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise InputError(f"not a {FORMAT} report (no \"schema\": \"{SCHEMA}\")")
    text = d.get("text", "")
    if not isinstance(text, str):
        raise InputError("text is not a string")
    cites = d.get("citations", [])
    if not isinstance(cites, list):
        raise InputError("citations is not a list")
    if len(cites) > MAX_CITATIONS:
        raise InputError(f"the report has {len(cites):,} citations; at most {MAX_CITATIONS:,} are checked")
    uncited = d.get("uncited_claims", [])
    if not isinstance(uncited, list) or not all(isinstance(u, str) for u in uncited):
        raise InputError("uncited_claims is not a list of strings")
    fmt = d.get("format", FORMAT)
    if not isinstance(fmt, str):
        raise InputError("format is not a string")
    unusable = d.get("unusable", [])
    if not isinstance(unusable, list) or len(unusable) > MAX_CITATIONS:
        raise InputError("unusable is not a list (of at most as many citations as a report holds)")
    return Report(format=fmt, text=text, citations=tuple(_citation(c, i, text) for i, c in enumerate(cites)),
                  uncited_claims=tuple(uncited), unusable=tuple(_unusable(u, i, text) for i, u in enumerate(unusable)))
