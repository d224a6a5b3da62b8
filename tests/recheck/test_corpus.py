"""The re-check corpus: 39 v1/v2 article page pairs over a real loopback server, every verdict as expected."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema

from g6.home import EvidenceHome
from g6.schemas import load

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import load_cases, run_corpus  # noqa: E402

DONE_WHEN = ("unchanged bytes", "boilerplate-only", "passage moved", "rewrapped", "re-encoded",
             "quotes/Unicode normalised", "one number edited in a short paragraph",
             "one number edited in a long paragraph", "passage deleted", "hidden by inline style",
             "hidden by a <style> class", "hidden by the hidden attribute", "403", "404", "429", "500", "unreachable",
             "empty body", "truncated before", "truncated after", "redirect to a new URL")


def test_the_corpus_covers_the_issue() -> None:
    cases = load_cases()
    assert len(cases) >= 30
    covers = " | ".join(c["covers"] for c in cases)
    assert [x for x in DONE_WHEN if x not in covers] == []
    assert len({c["name"] for c in cases}) == len(cases)


def test_every_pair_gets_its_expected_verdict(home: EvidenceHome) -> None:
    run = run_corpus(home)
    wrong = [(n, e, g) for n, e, g in run.rows() if e != g]
    assert wrong == [], run.table()
    jsonschema.Draft202012Validator(load("recheck-report.v1")).validate(run.report.to_json())
    assert run.report.exit_code == 1 and run.report.manifest_signature["status"] == "ok"
    v = run.by_case
    # a verdict says what the read allows
    assert v["truncated-after-passage"].detail["truncated"] is True
    assert v["truncated-before-passage"].detail["truncated"] is True
    assert v["empty-body"].detail["reason"] == "no_body"
    assert v["scripts-only"].detail["reason"] == "no_text_without_scripts"
    # changed reports the edited span, not the paragraph, and what was removed and added
    long_edit = v["edit-number-long-paragraph"]
    assert long_edit.new_text.startswith("Of those asked, 21% said") and long_edit.new_text.endswith("main reason.")
    assert long_edit.diff == {"removed": ["12%"], "added": ["21%"]}
    assert v["edit-word-long-paragraph"].diff == {"removed": ["price"], "added": ["cost"]}
    # hidden text is gone for the reader, and the verdict says how it was hidden
    assert "inline style" in v["hidden-inline-style"].detail["hidden"]
    assert '".is-collapsed"' in v["hidden-style-class"].detail["hidden"]
    assert "visibility:hidden" in v["hidden-style-id-visibility"].detail["hidden"]
    assert v["hidden-attribute"].detail["hidden"] == "the hidden attribute"
    # where the source is now
    assert v["redirect-new-url"].final_url.endswith("/redirect-new-url-moved")
    assert v["redirect-and-edit"].final_url.endswith("/redirect-and-edit-moved")
    assert v["status-429"].retry_after == "120"
    assert v["sidebar-unchanged"].text_source == "visible"
    assert v["unreachable"].detail["reason"] == "dns"
    # every checked or fetched verdict has its re-check receipt, linked to the original
    for name, verdict in v.items():
        r = home.ledger.get(verdict.receipt_id)
        assert r.kind == "recheck" and r.detail["verdicts"] == {verdict.citation_id: verdict.verdict}, name
    assert home.verify().ok
    # the run file holds the same verdicts
    lines = (home.root / "knowledge" / "rechecks").glob("*.jsonl")
    assert sum(len(p.read_text().splitlines()) for p in lines) == len(run.cases)
    assert json.loads(json.dumps(run.report.to_json()))["counts"]["current"] == 18
