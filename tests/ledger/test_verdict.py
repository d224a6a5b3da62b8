"""One verdict type for a proof file, an RFC 3161 token and a signed report result (g6.ledger.verdict);
the old names stay as aliases of it, and its JSON is the three keys every ``--json`` of them shows."""

from __future__ import annotations

import dataclasses

import pytest

from g6.ledger.chain import Check as RowCheck
from g6.ledger.proofs import ProofCheck
from g6.ledger.transparency.timestamp import TokenCheck
from g6.ledger.verdict import CheckVerdict
from g6.report.result import Check as ResultCheck


def test_the_three_verdicts_are_one_type() -> None:
    assert ProofCheck is CheckVerdict and TokenCheck is CheckVerdict and ResultCheck is CheckVerdict
    assert RowCheck is not CheckVerdict  # a row's check names its row: another type


def test_a_verdict_as_json_and_frozen() -> None:
    v = CheckVerdict("inclusion", False, "leaf 3 of 2")
    assert list(v.to_json().items()) == [("check", "inclusion"), ("ok", False), ("detail", "leaf 3 of 2")]
    assert CheckVerdict("format", True).to_json() == {"check": "format", "ok": True, "detail": ""}
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.ok = True  # type: ignore[misc]
