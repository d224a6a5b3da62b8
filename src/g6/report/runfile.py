"""A check's run file (``$G6_HOME/knowledge/reports/<run id>.jsonl``): one line a decided citation, appended once
the receipt its verdict rests on is durable, so ``--run ID`` reads no URL an earlier run read. Its verdicts are never
taken from it: each is decided again from the receipt it names (a run file is not evidence)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from g6.errors import InputError
from g6.home import EvidenceHome
from g6.report.model import ReportCitation
from g6.report.verdicts import Verdict
from g6.runs import RunState

RUN_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def citation_key(c: ReportCitation) -> str:
    """What a run file knows a citation by: its number and a hash of what it says (a different report under
    the same run id shares nothing it should not)."""
    h = hashlib.sha256("\n".join((c.source, c.quote or "", c.claim, c.receipt_id or "")).encode("utf-8",
                                                                                           "surrogatepass"))
    return f"{c.n}:{h.hexdigest()[:16]}"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a run file: a citation's verdict."""

    key: str
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, **self.verdict.run_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Line:
        v = Verdict.from_json(d)
        if v.read is not None and not (isinstance(v.read, Mapping) and isinstance(v.read.get("url"), str)):
            # an edited (or another version's) line: dropped as a torn one is, so its citation is decided anew
            raise ValueError("a run-file line whose read is not an object with a url")
        return cls(str(d["key"]), v)


def run_state(home: EvidenceHome, run_id: str, state_dir: Path | None = None) -> RunState:
    if not run_id or not set(run_id) <= RUN_ID_CHARS or len(run_id) > 80:
        raise InputError(f"a run id is letters, digits, '-' and '_' (at most 80), got {run_id[:80]!r}")
    return RunState((state_dir or home.root / "knowledge" / "reports") / f"{run_id}.jsonl",
                    decode=Line.from_json, key=lambda line: line.key)
