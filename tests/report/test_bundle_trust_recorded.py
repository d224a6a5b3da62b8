"""A result checked against a bundle records how the bundle's keys were trusted (pinned with --key, or only the
bundle's own with --trust-bundle-keys), and `g6 report check` and `g6 report verify` say it; a bundle result that
does not record it, or records it against its keys, fails verify (nothing says the evidence was the publisher's).
Real homes, a real bundle, the commands as a grader runs them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.report.result import sign_result
from g6.schemas import load
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report

Site = Callable[..., LocalSite]


@pytest.fixture
def graded(tmp_path: Path, site: Site) -> dict[str, Any]:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "report.json", report_of(cite(s.url("/a"), QUOTE)))
    home = tmp_path / "home"
    assert g6(home, "report", "check", str(report), "-o", "result.json").returncode == 0
    assert g6(home, "report", "bundle", "result.json", "-o", "evidence.zip").returncode == 0
    shown = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]
    grader = tmp_path / "grader"
    out: dict[str, Any] = {"grader": grader, "key_id": shown["key_id"]}
    for name, trust in (("pinned", ["--key", shown["checkpoint_verifier_key"]]), ("shipped", ["--trust-bundle-keys"])):
        r = g6(grader, "report", "check", str(report), "--bundle", "evidence.zip", *trust, "-o", f"{name}.json")
        assert r.returncode == 0, r.stderr
        out[name] = (r.stdout.decode(), json.loads((tmp_path / f"{name}.json").read_text()))
    return out


def test_the_result_records_how_the_bundles_keys_were_trusted(graded: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(load("report-check.v1"))
    (pinned_out, pinned), (shipped_out, shipped) = graded["pinned"], graded["shipped"]
    for result in (pinned, shipped):
        validator.validate(result)
        assert result["evidence"]["bundle"]["checkpoint_key"] == graded["key_id"]
    assert pinned["evidence"]["bundle"]["trust"] == "pinned"
    assert pinned["evidence"]["bundle"]["keys"] == [{"key_id": graded["key_id"], "source": "pinned with --key"}]
    assert shipped["evidence"]["bundle"]["trust"] == "shipped"
    assert shipped["evidence"]["bundle"]["keys"] == [{"key_id": graded["key_id"],
                                                      "source": "shipped inside the bundle, not pinned"}]
    assert "its keys pinned with --key" in pinned_out
    assert "verified only with the keys it ships" in shipped_out and "anyone can make" in shipped_out
    code, checks = _verify(graded["grader"], pinned)
    assert code == 0 and checks["evidence"]["ok"] and "pinned with --key" in checks["evidence"]["detail"]
    code, checks = _verify(graded["grader"], shipped)
    assert code == 0 and checks["evidence"]["ok"]
    assert "verified only with" in checks["evidence"]["detail"] and "anyone can make" in checks["evidence"]["detail"]
    console = g6(graded["grader"], "report", "verify", "-", input=json.dumps(shipped).encode())
    assert b"evidence   ok: a bundle" in console.stdout and b"--trust-bundle-keys" in console.stdout


def _verify(grader: Path, result: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    r = g6(grader, "report", "verify", "-", "--json", input=json.dumps(result).encode())
    got = json.loads(r.stdout)
    jsonschema.validate(got, load("report-verify.v1"))
    return r.returncode, {c["check"]: c for c in got["checks"]}


EDITS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "no_trust": lambda b: b.pop("trust"), "no_keys": lambda b: b.pop("keys"), "empty_keys": lambda b: b.update(keys=[]),
    "pinned_but_shipped_keys": lambda b: b.update(keys=[{**k, "source": "shipped inside the bundle, not pinned"}
                                                        for k in b["keys"]]),
    "unknown_trust": lambda b: b.update(trust="trusted"),
    "bad_key_id": lambda b: b.update(keys=[{"key_id": 5, "source": "pinned with --key"}])}


def test_a_bundle_result_that_does_not_record_its_trust_fails_verify(graded: dict[str, Any]) -> None:
    """The grader's own home re-signs each edit, so only the evidence check can fail: fail closed."""
    for name, edit in EDITS.items():
        result = json.loads(json.dumps(graded["pinned"][1]))
        edit(result["evidence"]["bundle"])
        with EvidenceHome(graded["grader"], fsync=False) as home:
            result = sign_result(result, home.signing_key())
        code, checks = _verify(graded["grader"], result)
        assert code == 1 and [c for c, v in checks.items() if not v["ok"]] == ["evidence"], (name, checks)
