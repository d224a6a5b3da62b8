"""`g6 report verify` and `g6 report bundle` on a result file anyone could hand a grader: whatever it holds, each
check fails closed (exit 1) or the file is refused as input (exit 2), one line, never a traceback (exit 70)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from g6.errors import InputError
from g6.report.result import load_result, verify_result
from g6.schemas import load
from tests.report.check_helpers import g6


def _result(**change: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schema": "g6.report-check.v1", "result_id": "rchk_x", "figures": {}, "exit_code": 1,
                            "manifest": None, "citations": [{"verdict": "quote_found", "citation_id": "c_1"}]}
    return {**base, **change}


DEEP = {"x": 1}
for _ in range(600):  # read by json.loads, past what the canonical JSON's recursion takes
    DEEP = {"x": DEEP}

HOSTILE: dict[str, dict[str, Any]] = {
    "citation_id_list": _result(citations=[{"verdict": "quote_found", "citation_id": ["c_1"]}]),
    "citation_id_object": _result(citations=[{"verdict": "quote_found", "citation_id": {"id": "c_1"}}]),
    "citation_id_number": _result(citations=[{"verdict": "quote_found", "citation_id": 5},
                                             {"verdict": "quote_found", "citation_id": "c_2"}]),
    "verdict_list": _result(citations=[{"verdict": ["quote_found"]}]),
    "citations_not_objects": _result(citations=[5, "x", None]),
    "figures_list": _result(figures=[1, 2]),
    "manifest_list": _result(manifest=[]),
    "manifest_string": _result(manifest="mfst_x"),
    "manifest_hostile": _result(manifest={"schema": "g6.manifest.v1", "manifest_id": [], "created_at": {},
                                          "citations": [{"citation_id": []}], "signature": "x"}),
    "signature_string": _result(signature="ed25519:x"),
    "signature_types": _result(signature={"alg": [], "key_id": {"k": 1}, "value": 5}),
    "big_integer": _result(figures={"citations": 10**30}, signature={"alg": "ed25519", "key_id": "k", "value": "AA=="}),
    "lone_surrogate": _result(result_id="rchk_\ud800", signature={"alg": "ed25519", "key_id": "\udfff", "value": ""}),
    "deep": _result(extra=DEEP, signature={"alg": "ed25519", "key_id": "k", "value": "AA=="}),
    "exit_code_string": _result(exit_code="0"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_verify_result_fails_closed_and_never_raises(name: str) -> None:
    data = json.dumps(HOSTILE[name]).encode()  # as the file holds it: the surrogates as \ud800 escapes
    checks = verify_result(load_result(data), {}, "a key this home trusts")
    assert not all(c.ok for c in checks), [c.to_json() for c in checks]


@pytest.mark.parametrize("text", [b'{"schema": "g6.report-check.v1", "figures": {"citations": NaN}}',
                                  b'{"schema": "g6.report-check.v1", "x": -Infinity}', b"[" * 100_000,
                                  b'["g6.report-check.v1"]', b"\xff\xfe"])
def test_a_result_that_is_not_json_is_input(text: bytes) -> None:
    with pytest.raises(InputError):
        load_result(text)


@pytest.mark.parametrize("name", ["citation_id_list", "citation_id_number", "verdict_list", "manifest_hostile",
                                  "big_integer", "lone_surrogate", "deep"])
def test_report_verify_and_bundle_fail_closed_on_a_hostile_result(tmp_path: Path, name: str) -> None:
    home = tmp_path / "home"
    (tmp_path / "result.json").write_text(json.dumps(HOSTILE[name]))
    for args in (("report", "verify", "result.json"), ("report", "bundle", "result.json", "-o", "e.zip")):
        r = g6(home, *args)
        assert r.returncode == 1 and b"Traceback" not in r.stderr, (args, r.returncode, r.stderr[-300:])
    r = g6(home, "report", "verify", "result.json", "--json")
    got = json.loads(r.stdout)
    assert r.returncode == 1 and got["ok"] is False, got
    jsonschema.validate(got, load("report-verify.v1"))
    assert not (tmp_path / "e.zip").exists()


def test_report_verify_says_a_result_that_is_not_json_is_input(tmp_path: Path) -> None:
    (tmp_path / "result.json").write_bytes(b'{"schema": "g6.report-check.v1", "figures": {"citations": NaN}}')
    r = g6(tmp_path / "home", "report", "verify", "result.json")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and b"not JSON" in r.stderr, r.stderr
