"""From the bundle on another machine: `g6 report bundle` packs the evidence of every citation (not only the found
ones), and `g6 report check REPORT --bundle ZIP --key KEY` in another home gives the same verdicts, fetching
nothing; a bundle that does not verify is refused whole."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.demo.site import LocalSite, Reply
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report

Site = Callable[..., LocalSite]


def verdicts(result: dict) -> list[tuple]:
    return [(c["verdict"], c["receipt_id"], json.dumps(c.get("found"), sort_keys=True), c["reason"],
             json.dumps([(h["text"], h["similarity"]) for h in c["hints"]])) for c in result["citations"]]


@pytest.fixture
def checked(tmp_path: Path, site: Site) -> tuple[Path, Path, dict, str, LocalSite]:
    s = site({"/a": Reply(body=article(QUOTE, "Water prices were flat.")), "/gone": Reply(404, b"no"),
              "/old": Reply(302, headers=(("Location", "/"),)), "/": Reply(body=article("Welcome.")),
              "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "report.json", report_of(
        cite(s.url("/a"), QUOTE), cite(s.url("/a"), "Water prices fell."), cite(s.url("/a"), None, "Water was flat"),
        cite(s.url("/gone"), QUOTE), cite(s.url("/old"), QUOTE)))
    home = tmp_path / "home"
    r = g6(home, "report", "check", str(report), "-o", "result.json")
    assert r.returncode == 1, r.stderr
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["checkpoint_verifier_key"]
    return home, report, json.loads((tmp_path / "result.json").read_text()), key, s


def test_from_the_bundle_in_another_home_the_same_verdicts_and_nothing_fetched(
        tmp_path: Path, checked: tuple[Path, Path, dict, str, LocalSite]) -> None:
    home, report, first, key, s = checked
    made = g6(home, "report", "bundle", "result.json", "-o", "evidence.zip", "--json")
    assert made.returncode == 0, made.stderr
    names = zipfile.ZipFile(tmp_path / "evidence.zip").namelist()
    rested_on = {c["receipt_id"] for c in first["citations"]}
    assert {f"receipts/{r}.json" for r in rested_on} <= set(names)  # every verdict's read, found or not
    assert g6(home, "bundle", "verify", "evidence.zip", "--key", key).returncode == 0
    seen = len(s.requests)
    elsewhere = tmp_path / "grader" / "home"
    elsewhere.parent.mkdir()
    (elsewhere.parent / "evidence.zip").write_bytes((tmp_path / "evidence.zip").read_bytes())
    again = g6(elsewhere, "report", "check", str(report), "--bundle", "evidence.zip", "--key", key, "--json")
    assert again.returncode == 1, again.stderr
    second = json.loads(again.stdout)
    assert verdicts(second) == verdicts(first) and second["figures"] == first["figures"]
    assert second["evidence"]["source"] == "bundle" and len(s.requests) == seen
    assert {c["read"]["how"] for c in second["citations"]} == {"bundle"}
    assert second["signature"]["key_id"] != first["signature"]["key_id"]  # the grader's home signs its result
    assert g6(elsewhere, "report", "verify", "-", input=again.stdout).returncode == 0


def test_a_bundle_that_does_not_verify_is_refused_whole(tmp_path: Path,
                                                       checked: tuple[Path, Path, dict, str, LocalSite]) -> None:
    home, report, first, key, _ = checked
    assert g6(home, "report", "bundle", "result.json", "-o", "evidence.zip").returncode == 0
    unpinned = g6(home, "report", "check", str(report), "--bundle", "evidence.zip")
    assert unpinned.returncode == 1 and b"key_pinned" in unpinned.stderr
    other = json.loads(g6(tmp_path / "stranger", "keys", "init", "--json").stdout)["public_key"]
    wrong = g6(home, "report", "check", str(report), "--bundle", "evidence.zip", "--key", other)
    assert wrong.returncode == 1 and b"does not verify" in wrong.stderr
    # one byte of a body the manifest does not cite (the 404 page) changed: its receipt no longer holds
    gone_rid = first["citations"][3]["receipt_id"]
    with zipfile.ZipFile(tmp_path / "evidence.zip") as z:
        files = {n: z.read(n) for n in z.namelist()}
    blob = next(n for n in files if n.startswith("blobs/") and files[n] == b"no")
    files[blob] = b"NO"
    with zipfile.ZipFile(tmp_path / "tampered.zip", "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    tampered = g6(home, "report", "check", str(report), "--bundle", "tampered.zip", "--key", key)
    assert tampered.returncode == 1 and b"does not verify" in tampered.stderr, tampered.stderr
    assert gone_rid


def test_a_report_with_no_quote_found_still_bundles_its_evidence(tmp_path: Path, site: Site) -> None:
    s = site({"/gone": Reply(404, b"no"), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/gone"), QUOTE)))
    home = tmp_path / "home"
    first = json.loads(g6(home, "report", "check", str(report), "-o", "result.json", "--json").stdout)
    assert first["manifest"] is None and first["exit_code"] == 1
    assert g6(home, "report", "bundle", "result.json", "-o", "ev.zip").returncode == 0
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    again = json.loads(g6(tmp_path / "g", "report", "check", str(report), "--bundle", str(tmp_path / "ev.zip"),
                          "--key", key, "--json").stdout)
    assert verdicts(again) == verdicts(first)


def test_report_bundle_refuses_a_result_this_home_did_not_sign(tmp_path: Path,
                                                              checked: tuple[Path, Path, dict, str, LocalSite]) -> None:
    _, _, first, _, _ = checked
    r = g6(tmp_path / "other", "report", "bundle", str(tmp_path / "result.json"), "-o", "x.zip")
    assert r.returncode == 1 and b"not a result this home can vouch for" in r.stderr
    assert not (tmp_path / "x.zip").exists()
