"""One ``g6 report check`` from start to signed result, for the command and the MCP tool alike: the evidence
source (the home, or a verified bundle), the check, the judge's opinions, the manifest of the found citations
and the result, both signed with the home's key."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from g6.home import EvidenceHome
from g6.report.check import CheckRun, check_report
from g6.report.evidence import EvidenceSource, HomeEvidence
from g6.report.judge import ask_judge, judge_summary, pairs
from g6.report.model import Report
from g6.report.result import ResultInputs, build_result, found_manifest, sign_result


@dataclass(frozen=True)
class CheckInputs:
    """What a check is asked: the report (and the bytes it was read from), where evidence comes from, the
    judge, and how many hosts and processes fetch."""

    report: Report
    report_name: str
    report_sha256: str
    report_size: int
    receipts_only: bool = False
    bundle: Path | None = None
    keys: Sequence[Any] = ()  # PinnedKey: the bundle's publisher
    trust_bundle_keys: bool = False
    run_id: str | None = None
    documents: Mapping[int, str] = field(default_factory=dict)
    judge_argv: list[str] | None = None
    judge_command: str | None = None
    judge_timeout: float = 60.0
    workers: int = 8
    processes: int = 1


def load_report(data: bytes, fmt: str | None = None, name: str = "REPORT", base: str | None = None) -> Report:
    """The report in ``data``, read by its format (``fmt``, or told from the content: one of the field's formats
    that ``g6.report.read`` reads, or the model's own JSON); a ReportError (an InputError) when it cannot be.
    ``base``: the URL its relative links resolve on (see ``read_report``)."""
    from g6.report.model_json import FORMAT, SCHEMA, report_from_json
    from g6.report.read import read_report

    if fmt == FORMAT or (fmt is None and _is_model_json(data, SCHEMA)):
        return report_from_json(data)
    return read_report(data, format=fmt, name=name, base=base)


def _is_model_json(data: bytes, schema: str) -> bool:
    """Whether ``data`` says it is the model's own JSON (its ``schema`` field), without reading it twice."""
    head = data[:4096].lstrip()
    return head.startswith(b"{") and f'"schema": "{schema}"'.encode() in head.replace(b'":"', b'": "')


def _evidence(home: EvidenceHome, inputs: CheckInputs) -> tuple[EvidenceSource, dict[str, Any]]:
    if inputs.bundle is not None:
        from g6.report.bundled import open_bundle

        ev = open_bundle(inputs.bundle, inputs.keys, inputs.trust_bundle_keys)
        return ev, {"source": "bundle", "receipts_only": True, **ev.describe()}
    origin = home.ledger.origin if home.ledger.present() and len(home.ledger) else None
    return HomeEvidence(home), {"source": "home", "receipts_only": inputs.receipts_only, "origin": origin}


def run_check(home: EvidenceHome, inputs: CheckInputs, *, client: Callable[[], Any] | None, sources: Any,
              progress: Callable[[int, int], None] | None = None) -> tuple[dict[str, Any], CheckRun]:
    """The signed result, and the run it describes. ``client()`` gives the checked client (a context manager);
    it is not called for ``receipts_only`` or a bundle, which fetch nothing."""
    ev, described = _evidence(home, inputs)
    fetch = client is not None and not inputs.receipts_only and inputs.bundle is None
    with contextlib.ExitStack() as stack:
        if hasattr(ev, "close"):
            stack.callback(ev.close)
        c = stack.enter_context(client()) if fetch and client is not None else None
        run = check_report(home, ev, inputs.report, client=c, run_id=inputs.run_id, documents=inputs.documents,
                           sources=sources, workers=inputs.workers, processes=inputs.processes, progress=progress)
    opinions, summary = None, None
    if inputs.judge_argv is not None:
        command = inputs.judge_command or " ".join(inputs.judge_argv)
        got = ask_judge(inputs.judge_argv, pairs(run), inputs.judge_timeout)
        opinions = {i: o.to_json(command) for i, o in got.items()}
        summary = judge_summary(command, inputs.judge_timeout, got)
    key = home.signing_key()
    manifest = found_manifest(run)
    signed = manifest.signed(key) if manifest is not None else None
    result = build_result(run, ResultInputs(inputs.report_name, inputs.report_sha256, inputs.report_size, described,
                                            summary, opinions), signed)
    return sign_result(result, key), run
