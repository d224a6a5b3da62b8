"""A failed read is not evidence of a page's words.

A 403 or 404 page is kept and receipted (a failure is evidence that the read failed), and its body has
words; citing those words as what the page says would be a false "ok". So `g6 cite` refuses a receipt
whose read failed unless asked explicitly (``--allow-failed-read``, recorded in the manifest), `g6 bundle
verify` shows each cited read's outcome and HTTP status and fails a citation of a failed read that the
manifest does not mark as one, and `g6 recheck` never calls such a citation current.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.cite.manifest import Citation, Manifest, load_manifest, save_manifest
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.prove.bundle import build_bundle, verify_bundle
from tests.conftest import validate

Site = Callable[..., LocalSite]
WORDS = "This article is available to subscribers only."
OK_WORDS = "An open page that anyone may read and cite."


def html(text: str) -> bytes:
    return f"<html><body><p>{text}</p></body></html>".encode()


def g6(home: EvidenceHome, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


@pytest.fixture
def reads(home: EvidenceHome, client: CheckedClient, site: Site) -> dict[str, Any]:
    s = site({"/paywall": Reply(403, html(WORDS)), "/missing": Reply(404, html("Sorry, this page was not found.")),
              "/open": Reply(body=html(OK_WORDS)), "/robots.txt": Reply(404, b"")})
    rs = {p: fetch(home, client, s.url(p)) for p in ("/paywall", "/missing", "/open")}
    assert [r.outcome.value for r in rs.values()] == ["blocked", "not_found", "ok"]
    return {"site": s, "ids": {p: r.receipt_id for p, r in rs.items()}}


def unmarked(home: EvidenceHome, receipt_id: str, quote: str) -> Citation:
    """A citation of a failed read as an older g6 (or a hand-edited manifest) would hold it: no mark."""
    try:
        return cite_web(home, receipt_id, quote=quote)
    except InputError:
        return replace(cite_web(home, receipt_id, quote=quote, allow_failed_read=True), failed_read=None)


# -- g6 cite ------------------------------------------------------------------------------------------------
def test_cite_refuses_a_failed_read(home: EvidenceHome, reads: dict[str, Any], tmp_path: Path) -> None:
    ids = reads["ids"]
    with pytest.raises(InputError) as e:
        cite_web(home, ids["/paywall"], quote="available to subscribers")
    assert "blocked" in str(e.value) and "HTTP 403" in str(e.value)
    r = g6(home, "cite", ids["/paywall"], "--quote", "available to subscribers", "--manifest", str(tmp_path / "m.json"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("g6: ") and "blocked" in r.stderr and "HTTP 403" in r.stderr
    assert "--allow-failed-read" in r.stderr and not (tmp_path / "m.json").exists()
    r = g6(home, "cite", ids["/missing"], "--quote", "page was not found", "--manifest", str(tmp_path / "m.json"))
    assert r.returncode == 2 and "not_found" in r.stderr and "HTTP 404" in r.stderr
    ok = g6(home, "cite", ids["/open"], "--quote", "anyone may read", "--manifest", str(tmp_path / "m.json"))
    assert ok.returncode == 0, ok.stderr


def test_cite_allow_failed_read_marks_it(home: EvidenceHome, reads: dict[str, Any], tmp_path: Path) -> None:
    m = tmp_path / "m.json"
    r = g6(home, "cite", reads["ids"]["/paywall"], "--quote", "available to subscribers", "--manifest", str(m),
           "--allow-failed-read", "--json")
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    validate(c, "cite.v1")
    assert c["failed_read"] == {"outcome": "blocked", "http_status": 403}
    data = json.loads(m.read_text())
    validate(data, "manifest.v1")
    assert data["citations"][0]["failed_read"] == {"outcome": "blocked", "http_status": 403}
    text = g6(home, "cite", reads["ids"]["/missing"], "--quote", "page was not found", "--manifest", str(m),
              "--allow-failed-read")
    assert text.returncode == 0 and "FAILED READ (not_found, HTTP 404)" in text.stdout
    # a read that did not fail is not marked, with or without the flag
    ok = g6(home, "cite", reads["ids"]["/open"], "--quote", "anyone may read", "--manifest", str(m),
            "--allow-failed-read", "--json")
    assert ok.returncode == 0 and "failed_read" not in json.loads(ok.stdout)
    # an older manifest (no field) reads and signs as before
    assert load_manifest(m).citations[2].failed_read is None


# -- g6 bundle verify -----------------------------------------------------------------------------------------
def bundle_of(home: EvidenceHome, tmp: Path, *citations: Citation) -> Path:
    m = Manifest.new()
    for c in citations:
        m = m.with_citation(c)
    save_manifest(m.signed(home.signing_key()), tmp / "m.json")
    build_bundle(home, tmp / "m.json", tmp / "b.zip")
    return tmp / "b.zip"


def test_bundle_verify_fails_a_citation_of_a_failed_read(home: EvidenceHome, reads: dict[str, Any],
                                                         tmp_path: Path) -> None:
    ids = reads["ids"]
    bad_one = unmarked(home, ids["/paywall"], "available to subscribers")
    z = bundle_of(home, tmp_path, cite_web(home, ids["/open"], quote="anyone may read"), bad_one)
    key = home.signing_key().public
    report = verify_bundle(z, (key,))
    assert not report.ok
    bad = report.citations[1]
    read = next(c for c in bad.checks if c.check == "read")
    assert not read.ok and "blocked" in read.detail and "HTTP 403" in read.detail
    j = report.to_json()
    validate(j, "bundle-verify.v1")
    assert (j["citations"][0]["outcome"], j["citations"][0]["http_status"]) == ("ok", 200)
    assert (j["citations"][1]["outcome"], j["citations"][1]["http_status"]) == ("blocked", 403)
    assert j["citations"][1]["failed_read"] is True and j["citations"][0]["failed_read"] is False
    out = g6(home, "bundle", "verify", str(z), "--key", key.to_text())
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    holds = next(x for x in lines if " holds " in x)
    assert "read ok, HTTP 200" in holds
    failing = next(x for x in lines if x.startswith(f"citation 2 ({bad_one.citation_id}) FAILED"))
    assert "read blocked, HTTP 403" in failing


def test_a_marked_failed_read_says_so(home: EvidenceHome, reads: dict[str, Any], tmp_path: Path) -> None:
    ids = reads["ids"]
    marked = cite_web(home, ids["/paywall"], quote="available to subscribers", allow_failed_read=True)
    z = bundle_of(home, tmp_path, cite_web(home, ids["/open"], quote="anyone may read"), marked)
    key = home.signing_key().public
    report = verify_bundle(z, (key,))
    assert report.ok, report.to_json()
    read = next(c for c in report.citations[1].checks if c.check == "read")
    assert "FAILED READ" in read.detail and "marked in the manifest" in read.detail
    out = g6(home, "bundle", "verify", str(z), "--key", key.to_text())
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    line = next(x for x in lines if x.startswith(marked.citation_id))
    assert " holds " not in line and "FAILED READ" in line and "read blocked, HTTP 403" in line
    assert "1 of a FAILED READ" in lines[-1]
    # a mark that is not the receipt's read fails
    wrong = replace(marked, failed_read={"outcome": "not_found", "http_status": 404})
    z2 = bundle_of(home, tmp_path, wrong)
    assert not verify_bundle(z2, (key,)).ok
    falsely = replace(cite_web(home, ids["/open"], quote="anyone may read"),
                      failed_read={"outcome": "blocked", "http_status": 403})
    assert not verify_bundle(bundle_of(home, tmp_path, falsely), (key,)).ok


# -- g6 recheck and g6 manifest verify --------------------------------------------------------------------------
@pytest.mark.parametrize("marked", [False, True])
def test_recheck_never_calls_a_failed_read_current(home: EvidenceHome, client: CheckedClient,
                                                    reads: dict[str, Any], marked: bool) -> None:
    """The paywall has since come down: the page now serves the very words with a 200. The citation was
    still of a 403 page, so it is not current (nor unchanged): it is unverified, and nothing is fetched."""
    s = reads["site"]
    c = cite_web(home, reads["ids"]["/paywall"], quote="available to subscribers", allow_failed_read=True) \
        if marked else unmarked(home, reads["ids"]["/paywall"], "available to subscribers")
    s.routes = {**s.routes, "/paywall": Reply(body=html(WORDS + " Now free to read."))}
    m = Manifest.new().with_citation(c).signed(home.signing_key())
    report = recheck(home, client, m, workers=1)
    v = report.verdicts[0]
    assert v.verdict == "unverified", v
    assert "blocked" in v.detail["reason"] and "HTTP 403" in v.detail["reason"]
    assert report.exit_code == 1 and v.receipt_id is None


def test_manifest_verify_fails_a_failed_read(home: EvidenceHome, reads: dict[str, Any], tmp_path: Path) -> None:
    m = Manifest.new().with_citation(unmarked(home, reads["ids"]["/paywall"], "available to subscribers"))
    save_manifest(m.signed(home.signing_key()), tmp_path / "m.json")
    r = g6(home, "manifest", "verify", str(tmp_path / "m.json"))
    assert r.returncode == 1 and "HTTP 403" in r.stdout, r.stdout
