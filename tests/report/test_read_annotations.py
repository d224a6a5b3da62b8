"""W3C Web Annotations (and Hypothesis's own shapes) and g6 manifests, on their fixtures and in their variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from g6.errors import ReportMalformed
from g6.report.model import Report
from g6.report.read import read_report

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reports"
A, B = "http://127.0.0.1:8421", "http://127.0.0.2:8421"


def read(value: object, fmt: str | None = "annotation") -> Report:
    return read_report(json.dumps(value).encode(), format=fmt)


def test_the_collection_fixture() -> None:
    r = read_report((FIXTURES / "annotations.jsonld").read_bytes())
    assert r.format == "annotation"
    assert r.text == ("One in eight households switched energy supplier.\n\nBills rose by a fifth.\n\n"
                      "The survey's own tables are no longer online.")
    got = [(c.source, c.claim, c.claim_start, c.claim_end, c.quote, c.prefix, c.suffix, c.read_at, c.cached, c.where)
           for c in r.citations]
    assert got == [
        (f"{A}/news/energy.html", "One in eight households switched energy supplier.", 0, 49,
         "Of those asked, 12% said they had changed energy supplier in the past year.",
         "Researchers contacted households in four districts. ", " Most of them cited price",
         "2026-12-01T09:30:00Z", f"{B}/news/energy.html", "first.items[0].target[0]"),
        (f"{A}/news/energy.html", "Bills rose by a fifth.", 51, 73, "Household bills rose by 20% over the quarter.",
         None, None, None, None, "first.items[1].target"),
        (f"{A}/missing", "The survey's own tables are no longer online.", 75, 120, None, None, None, None, None,
         "first.items[2].target"),
    ]
    assert r.uncited_claims == ()


def test_one_annotation_an_array_a_page_and_hypothesis_rows() -> None:
    one = {"@context": "http://www.w3.org/ns/anno.jsonld", "type": "Annotation", "bodyValue": "Claim one.",
           "target": {"source": "http://a.example/1", "selector": {"type": "TextQuoteSelector", "exact": "q1"}}}
    two = {"type": "Annotation", "body": [{"type": "TextualBody", "value": "Claim two."}],
           "target": ["http://b.example/2", {"source": "http://c.example/3"}]}
    assert [(c.source, c.claim, c.quote) for c in read(one, None).citations] == [("http://a.example/1", "Claim one.",
                                                                                  "q1")]
    arr = read([one, two], None)
    assert [(c.source, c.claim, c.where) for c in arr.citations] == [
        ("http://a.example/1", "Claim one.", "[0].target"), ("http://b.example/2", "Claim two.", "[1].target[0]"),
        ("http://c.example/3", "Claim two.", "[1].target[1]")]
    page = read({"type": "AnnotationPage", "items": [two]}, None)
    assert [c.where for c in page.citations] == ["items[0].target[0]", "items[0].target[1]"]
    rows = {"total": 1, "rows": [{"id": "x", "uri": "http://d.example/4", "text": "Hypothesis note.",
                                  "document": {"title": ["Page four"]},
                                  "target": [{"source": "http://d.example/4",
                                              "selector": [{"type": "RangeSelector"},
                                                           {"type": "TextQuoteSelector", "exact": "four",
                                                            "prefix": "p", "suffix": "s"}]}]}]}
    got = read(rows, None).citations[0]
    assert (got.source, got.claim, got.quote, got.prefix, got.suffix, got.title) == (
        "http://d.example/4", "Hypothesis note.", "four", "p", "s", "Page four")


@pytest.mark.parametrize(("value", "says"), [
    ({"type": "AnnotationCollection", "first": "https://example.org/page1"}, "not embedded"),
    ({"type": "Annotation", "bodyValue": "x"}, "target"),
    ({"type": "Annotation", "target": []}, "no target"),
    ({"type": "Annotation", "target": {"source": "http://a.example/", "state": {"type": "TimeState",
                                                                               "sourceDate": "yesterday"}}},
     "not an ISO 8601"),
    ({"type": "Annotation", "target": {"source": 7}}, "expected a string"),
])
def test_bad_annotations_are_refused_naming_the_field(value: object, says: str) -> None:
    with pytest.raises(ReportMalformed, match=says) as e:
        read(value)
    assert e.value.code == "G6_E_REPORT_MALFORMED"


def test_a_manifest_pins_its_receipts_and_quotes_its_text() -> None:
    r = read_report((FIXTURES / "g6-manifest.json").read_bytes())
    assert r.format == "g6-manifest" and r.text == ""
    assert [(c.source, c.quote, c.receipt_id, c.claim, c.where) for c in r.citations] == [
        (f"{A}/article", "the answer should be a receipt", "rcpt_01JF6Y2M8Q0000000000000001", "",
         "citations[0] (c_a4353283517a43c5)"),
        (f"{A}/news/energy.html", "Household bills rose by 12% over the quarter.", "rcpt_01JF6Y2M8Q0000000000000002",
         "", "citations[1] (c_46d09558ac2c46b5)")]


def test_a_broken_manifest_is_malformed() -> None:
    d = json.loads((FIXTURES / "g6-manifest.json").read_text())
    d["citations"][1]["receipt_id"] = "../../etc/passwd"
    with pytest.raises(ReportMalformed, match="not a g6 manifest: receipt_id"):
        read(d, None)
