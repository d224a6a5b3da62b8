"""The signed result: what it says, that any change breaks its signature, and that verify fails closed on what a
signer could get wrong (figures, manifest), on a missing signature and on an unknown key."""

from __future__ import annotations

import json
from collections.abc import Callable

import jsonschema
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from g6.adapters import CheckedClient
from g6.cite.manifest import Manifest
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.ledger.keys import SigningKey
from g6.report.result import (
    ResultInputs,
    build_result,
    canonical,
    exit_code,
    found_manifest,
    sign_result,
    verify_result,
)
from g6.schemas import load
from tests.report.check_helpers import QUOTE, article, check, cite, report_of

Site = Callable[..., LocalSite]


@pytest.fixture
def signed(home: EvidenceHome, client: CheckedClient, site: Site) -> dict:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    huge = "A claim that goes on. " * 50_000
    run = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), "Not there.", claim=huge),
                                uncited=["One uncited claim."]), client)
    key = home.signing_key()
    m = found_manifest(run)
    assert m is not None
    inputs = ResultInputs("r.json", "sha256:" + "0" * 64, 10, {"source": "home", "receipts_only": False})
    return sign_result(build_result(run, inputs, m.signed(key)), key)


def test_the_result_is_its_schema_bounded_and_verifies(signed: dict, home: EvidenceHome) -> None:
    jsonschema.Draft202012Validator(load("report-check.v1")).validate(signed)
    long_claim = signed["citations"][1]
    assert long_claim["claim_chars"] == len("A claim that goes on. " * 50_000) and len(long_claim["claim"]) == 2000
    assert long_claim["claim_sha256"].startswith("sha256:") and len(json.dumps(signed)) < 40_000
    assert signed["figures"]["claims_without_citations"] == 1 and signed["exit_code"] == 1
    checks = verify_result(signed, home.trusted(), "the home's")
    assert [(c.check, c.ok) for c in checks] == [("shape", True), ("signature", True), ("figures", True),
                                                 ("manifest", True), ("evidence", True)]


@pytest.mark.parametrize("change", [
    lambda d: d["citations"][1].update(verdict="quote_found"),
    lambda d: d["citations"][0]["found"].update(start=0),
    lambda d: d["figures"].update(quote_found_share=1.0),
    lambda d: d["report"].update(sha256="sha256:" + "1" * 64),
    lambda d: d.update(created_at="2000-01-01T00:00:00Z"),
    lambda d: d["manifest"]["citations"].clear(),
])
def test_any_change_breaks_the_signature(signed: dict, home: EvidenceHome, change: Callable[[dict], None]) -> None:
    d = json.loads(json.dumps(signed))
    change(d)
    sig = next(c for c in verify_result(d, home.trusted(), "the home's") if c.check == "signature")
    assert not sig.ok


def test_verify_fails_closed_on_what_a_signer_could_get_wrong(signed: dict, home: EvidenceHome) -> None:
    key = home.signing_key()
    wrong = json.loads(json.dumps(signed))
    wrong["figures"]["quote_found"] = 2  # signed by the right key, and still not what the citations add up to
    checks = {c.check: c for c in verify_result(sign_result(wrong, key), home.trusted(), "x")}
    assert checks["signature"].ok and not checks["figures"].ok
    other = json.loads(json.dumps(signed))
    other["manifest"] = Manifest.new().signed(key).to_json()  # a manifest that is not the found citations'
    checks = {c.check: c for c in verify_result(sign_result(other, key), home.trusted(), "x")}
    assert not checks["manifest"].ok
    unsigned = {k: v for k, v in signed.items() if k != "signature"}
    assert not next(c for c in verify_result(unsigned, home.trusted(), "x") if c.check == "signature").ok
    stranger = SigningKey.generate()
    forged = sign_result(signed, stranger)
    sig = next(c for c in verify_result(forged, home.trusted(), "x") if c.check == "signature")
    assert not sig.ok and "unknown key" in sig.detail
    nothing = next(c for c in verify_result(signed, {}, "no key given") if c.check == "signature")
    assert not nothing.ok and "no key" in nothing.detail
    assert [c.check for c in verify_result({"citations": "x"}, home.trusted(), "x")] == ["shape"]


@pytest.mark.parametrize(("counts", "code"), [
    ({"citations": 2, "quote_found": 2}, 0), ({"citations": 0}, 1),
    ({"citations": 2, "quote_found": 1, "quote_not_found": 1}, 1), ({"citations": 2, "quote_found": 1,
                                                                     "redirected_elsewhere": 1}, 1),
    ({"citations": 2, "quote_found": 1, "source_failed": 1}, 1), ({"citations": 1, "no_quote": 1}, 1),
])
def test_exit_codes(counts: dict, code: int) -> None:
    assert exit_code(counts) == code


_json = st.recursive(st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8)
                     | st.floats(allow_nan=False, allow_infinity=False),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=10)


@given(st.dictionaries(st.text(alphabet="abcdefghij_", min_size=1, max_size=6), _json, max_size=5),
       st.lists(st.dictionaries(st.text(max_size=5), _json, max_size=4), max_size=4))
def test_the_result_is_signed_over_its_rfc8785_canonical_json(top: dict, citations: list) -> None:
    """``canonical`` (a citation at a time, so a float costs only where it is) is RFC 8785 of the whole."""
    d = {**top, "citations": citations, "signature": {"x": 1}}
    assert canonical(d) == rfc8785.dumps({k: v for k, v in d.items() if k != "signature"})
