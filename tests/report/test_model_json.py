"""g6's own model JSON (``g6-report-model``) read strictly: a claim's offsets hold the claim, and every string is
Unicode text (findings 15 and 18 of the attack tests are the attacks; these are both sides of each rule)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from g6.errors import InputError, ReportOffsetError
from g6.report.model_json import report_from_json

TEXT = "The drug cures cancer. Bills rose."


def model(**kw: Any) -> bytes:
    return json.dumps({"schema": "g6.report-model.v1", "text": TEXT, **kw}).encode()


def test_a_claim_at_its_offsets_is_read_and_one_elsewhere_is_refused() -> None:
    ok = report_from_json(model(citations=[{"source": "http://a.example/", "claim": "Bills rose.", "claim_start": 23,
                                            "claim_end": 34}, {"source": "http://a.example/", "claim": "Not located."}]))
    assert [c.claim for c in ok.citations] == ["Bills rose.", "Not located."]
    with pytest.raises(ReportOffsetError, match=r"citations\[0\]\.claim is not the text at its offsets 0-22"):
        report_from_json(model(citations=[{"source": "http://a.example/", "claim": "Bills rose 12%.",
                                           "claim_start": 0, "claim_end": 22}]))
    with pytest.raises(ReportOffsetError, match=r"citations\[0\]\.claim is not the text"):  # no claim: not ""
        report_from_json(model(citations=[{"source": "http://a.example/", "claim_start": 0, "claim_end": 22}]))
    with pytest.raises(ReportOffsetError, match=r"unusable\[0\]\.claim is not the text"):
        report_from_json(model(citations=[], unusable=[{"n": 1, "written": "javascript:x", "reason": "not http",
                                                        "claim": "Bills rose.", "claim_start": 0, "claim_end": 11}]))
