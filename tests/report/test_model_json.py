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
    ok = report_from_json(model(citations=[
        {"source": "http://a.example/", "claim": "Bills rose.", "claim_start": 23, "claim_end": 34},
        {"source": "http://a.example/", "claim": "Not located."}]))
    assert [c.claim for c in ok.citations] == ["Bills rose.", "Not located."]
    with pytest.raises(ReportOffsetError, match=r"citations\[0\]\.claim is not the text at its offsets 0-22"):
        report_from_json(model(citations=[{"source": "http://a.example/", "claim": "Bills rose 12%.",
                                           "claim_start": 0, "claim_end": 22}]))
    with pytest.raises(ReportOffsetError, match=r"citations\[0\]\.claim is not the text"):  # no claim: not ""
        report_from_json(model(citations=[{"source": "http://a.example/", "claim_start": 0, "claim_end": 22}]))
    with pytest.raises(ReportOffsetError, match=r"unusable\[0\]\.claim is not the text"):
        report_from_json(model(citations=[], unusable=[{"n": 1, "written": "javascript:x", "reason": "not http",
                                                        "claim": "Bills rose.", "claim_start": 0, "claim_end": 11}]))


@pytest.mark.parametrize("where", ["text", "claim", "quote", "source"])
def test_a_lone_surrogate_escape_is_refused_and_a_pair_is_read(where: str) -> None:
    cite = {"source": "http://a.example/", "claim": "Bills.", "quote": "Bills rose."}
    doc = {"schema": "g6.report-model.v1", "text": "Bills.", "citations": [cite]}
    if where == "text":
        doc["text"] = "Bills \ud800."
    else:
        cite[where] += "\udfff"
    data = json.dumps(doc).encode()  # ensure_ascii: the lone surrogate is written as its escape
    with pytest.raises(InputError, match="surrogate") as e:
        report_from_json(data, "r.json")
    assert e.value.code == "G6_E_REPORT_MALFORMED" and str(e.value).startswith("r.json: ")
    pair = report_from_json(data.replace(b"\\ud800", b"\\ud83d\\ude00").replace(b"\\udfff", b"\\ud83d\\ude00"))
    assert "\U0001f600" in pair.text + pair.citations[0].claim + (pair.citations[0].quote or "") + \
        pair.citations[0].source


def test_the_model_json_is_decoded_as_the_other_formats_are() -> None:
    """A UTF-16 file with its byte order mark is read; bytes that are not UTF-8 are an encoding error."""
    doc = json.dumps({"schema": "g6.report-model.v1", "text": "Bills rose."}, ensure_ascii=False)
    assert report_from_json(b"\xff\xfe" + doc.encode("utf-16-le")).text == "Bills rose."
    with pytest.raises(InputError) as e:
        report_from_json(doc.replace("rose", "ros\xe9").encode("latin-1"))
    assert e.value.code == "G6_E_REPORT_ENCODING"
