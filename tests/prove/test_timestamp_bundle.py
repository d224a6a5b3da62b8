"""Bundles carry the RFC 3161 tokens kept beside the log's checkpoints; ``bundle verify --tsa-root`` checks
them and says per citation "existed before <genTime> (TSA <name>)". Failures first."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.errors import TimestampAuthorityError
from g6.fetch.capture import prepare_fetch
from g6.home import EvidenceHome
from g6.ledger.note import parse_note, verifier_key
from g6.ledger.transparency.timestamp import KIND, load_roots
from g6.prove.bundle import BundleReport, build_bundle, verify_bundle
from g6.prove.proofs import checkpoint
from g6.prove.timestamp_client import ask_tsa, note_body, stamp_checkpoint
from tests.prove._tsa import Tsa, openssl_verify, rfc3161_client_verify
from tests.test_bundle_trust import repack

Site = Callable[..., LocalSite]
TEXT = "A page read before the time-stamping authority saw the checkpoint over it."


def read(home: EvidenceHome, url: str, fetched_at: str | None = None) -> str:
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        prepared = prepare_fetch(home.store, c, url)
    receipt = prepared.receipt if fetched_at is None else replace(prepared.receipt, fetched_at=fetched_at)
    return home.ledger.append(receipt, home.signing_key()).receipt_id


def bundle(home: EvidenceHome, rids: list[str], out: Path) -> Path:
    m = Manifest.new()
    for rid in rids:
        m = m.with_citation(cite_web(home, rid, quote="read before the time-stamping authority"))
    save_manifest(m.signed(home.signing_key()), out.with_suffix(".json"))
    build_bundle(home, out.with_suffix(".json"), out)
    return out


def roots(*tsas: Tsa) -> list:
    return [c for t in tsas for c in load_roots(t.root_pem.read_bytes())]


def check(report: BundleReport, name: str) -> str:
    (c,) = [c for c in report.bundle_checks if c.check == name]
    return ("ok: " if c.ok else "FAILED: ") + c.detail


def trusted_time(report: BundleReport) -> list[str]:
    return [("ok: " if c.ok else "FAILED: ") + c.detail for v in report.citations for c in v.checks
            if c.check == "trusted_time"]


@pytest.fixture
def page(site: Site) -> str:
    s = site({"/p": Reply(body=f"<html><body><p>{TEXT}</p></body></html>".encode()), "/robots.txt": Reply(404, b"")})
    return s.url("/p")


# -- failures ---------------------------------------------------------------------------------------------
def test_roots_pinned_but_no_token_carried_fails(home: EvidenceHome, page: str, openssl_server: Tsa,
                                                 tmp_path: Path) -> None:
    rid = read(home, page)
    z = bundle(home, [rid], tmp_path / "b.zip")
    key = home.signing_key().public
    assert verify_bundle(z, [key]).ok  # without --tsa-root the bundle is as before
    report = verify_bundle(z, [key], tsa_roots=roots(openssl_server))
    assert not report.ok and check(report, "timestamps").startswith("FAILED: --tsa-root given, but the bundle "
                                                                    "carries no RFC 3161 token")
    assert trusted_time(report) == ["FAILED: no token that holds covers it (leaf 0): the tokens carried are over "
                                    "checkpoints before it"]


def test_a_receipt_after_the_stamped_checkpoint_is_not_covered(home: EvidenceHome, page: str,
                                                               openssl_server: Tsa, tmp_path: Path) -> None:
    first = read(home, page)
    cp, note = checkpoint(home)
    stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")
    second = read(home, page)
    z = bundle(home, [first, second], tmp_path / "b.zip")  # its checkpoint is of size 2; the token's of size 1
    with zipfile.ZipFile(z) as zf:
        assert "timestamps/1-0.json" in zf.namelist() and "proofs/consistency/1-2.tlog-consistency" in zf.namelist()
    report = verify_bundle(z, [home.signing_key().public], tsa_roots=roots(openssl_server))
    assert check(report, "timestamps").startswith("ok: checkpoint 1: existed before ")
    got = trusted_time(report)
    assert got[0].startswith("ok: existed before ") and got[0].endswith("(TSA openssl)")
    assert got[1] == "FAILED: no token that holds covers it (leaf 1): the tokens carried are over checkpoints " \
                     "before it"
    assert [v.ok for v in report.citations] == [True, False] and not report.ok


def test_wrong_root_a_tampered_or_moved_token_fail(home: EvidenceHome, page: str, openssl_server: Tsa,
                                                  certomancer_server: Tsa, tmp_path: Path) -> None:
    rid = read(home, page)
    read(home, page)
    cp, note = checkpoint(home)
    stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")
    z = bundle(home, [rid], tmp_path / "b.zip")
    key = home.signing_key().public
    report = verify_bundle(z, [key], tsa_roots=roots(certomancer_server))
    assert "chain: no path to a pinned root" in check(report, "timestamps") and not report.ok
    assert trusted_time(report)[0].startswith("FAILED: no token that holds covers it")

    def tamper(files: dict[str, bytes]) -> None:
        token = bytearray(base64.b64decode(json.loads(files["timestamps/2-0.json"])["token"]))
        token[-5] ^= 1  # inside the signature
        files["timestamps/2-0.json"] = json.dumps({"tsa": "openssl", "token": base64.b64encode(token).decode()}
                                                  ).encode()
    report = verify_bundle(repack(z, tmp_path / "t.zip", tamper), [key], tsa_roots=roots(openssl_server))
    assert "FAILED: timestamps/2-0.json (TSA openssl), checkpoint 2: cms_signature" in check(report, "timestamps")

    def move(files: dict[str, bytes]) -> None:  # the token said to be over the checkpoint of size 1
        files["timestamps/1-0.json"] = files.pop("timestamps/2-0.json")
    report = verify_bundle(repack(z, tmp_path / "m.zip", move), [key], tsa_roots=roots(openssl_server))
    assert "no checkpoint of size 1 in the bundle's history" in check(report, "timestamps")

    def garbage(files: dict[str, bytes]) -> None:
        files["timestamps/2-0.json"] = b'{"tsa": "openssl", "token": "not base64!"}'
    report = verify_bundle(repack(z, tmp_path / "g.zip", garbage), [key], tsa_roots=roots(openssl_server))
    assert check(report, "timestamps").startswith("FAILED: timestamps/2-0.json: ") and not report.ok


def test_a_cited_receipt_fetched_after_the_gentime_fails(home: EvidenceHome, page: str, openssl_server: Tsa,
                                                        tmp_path: Path) -> None:
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    rid = read(home, page, fetched_at=later)
    cp, note = checkpoint(home)
    with pytest.raises(TimestampAuthorityError, match="is earlier than fetched_at"):
        stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")  # refused when stamping
    stamp = ask_tsa(openssl_server.url("tsa"), note_body(note), name="openssl")  # kept anyway, as g6 did before
    home.ledger.keep_beside(cp, KIND, stamp.name, stamp.value)
    report = verify_bundle(bundle(home, [rid], tmp_path / "b.zip"), [home.signing_key().public],
                           tsa_roots=roots(openssl_server))
    (got,) = trusted_time(report)
    assert got.startswith(f"FAILED: fetched_at {later[:19]}") and "(TSA openssl) over checkpoint 1" in got
    assert not report.ok


# -- what holds --------------------------------------------------------------------------------------------------
def test_bundle_verify_says_when_each_citation_existed(home: EvidenceHome, page: str, openssl_server: Tsa,
                                                       certomancer_server: Tsa, tmp_path: Path) -> None:
    rids = [read(home, page), read(home, page)]
    cp, note = checkpoint(home)
    a = stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")
    b = stamp_checkpoint(home, cp, note, certomancer_server.url("tsa"), name="certomancer")
    z = bundle(home, rids, tmp_path / "b.zip")
    with zipfile.ZipFile(z) as zf:  # the tokens travel as the ledger keeps them; outside verifiers agree
        carried = [json.loads(zf.read(f"timestamps/2-{n}.json")) for n in (0, 1)]
        body = parse_note(zf.read("checkpoint.note").decode())[0].encode()
    assert carried == [{"tsa": "openssl", "token": a.value}, {"tsa": "certomancer", "token": b.value}]
    for stamp, tsa in ((a, openssl_server), (b, certomancer_server)):
        rfc3161_client_verify(stamp.token, body, tsa.root_pem)
        assert stamp.report.gen_time and openssl_verify(stamp.token, body, tsa.root_pem, stamp.report.gen_time,
                                                        tmp_path)[0]
    report = verify_bundle(z, [home.signing_key().public], tsa_roots=roots(openssl_server, certomancer_server))
    assert report.ok, [c for c in report.bundle_checks if not c.ok]
    assert check(report, "timestamps").count("existed before") == 2
    earliest = min((a, b), key=lambda s: s.report.gen_time + s.report.margin)  # the earliest token covering it
    assert all(t.startswith("ok: existed before ") and t.endswith(f"(TSA {earliest.name})")
               for t in trusted_time(report))

    # the command, as a grader runs it
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    vk = verifier_key(home.ledger.origin, home.signing_key().public)
    r = subprocess.run([sys.executable, "-m", "g6", "bundle", "verify", str(z), "--key", vk,
                        "--tsa-root", str(openssl_server.root_pem), "--tsa-root", str(certomancer_server.root_pem)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert sum(1 for line in lines if line.startswith("  existed before ")) == 2
    assert any(line.startswith("timestamps             ok: checkpoint 2: existed before") for line in lines)
    r = subprocess.run([sys.executable, "-m", "g6", "bundle", "verify", str(z), "--key", vk, "--json",
                        "--tsa-root", str(openssl_server.root_pem)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 1  # the certomancer token does not chain to the one root pinned
    from tests.conftest import validate
    validate(json.loads(r.stdout), "bundle-verify.v1")


def test_a_wacz_export_carries_the_tokens_over_its_checkpoint(home: EvidenceHome, page: str, openssl_server: Tsa,
                                                              tmp_path: Path) -> None:
    from g6.export.wacz import export_wacz

    read(home, page)
    cp, note = checkpoint(home)
    stamp = stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")
    summary = export_wacz(home, tmp_path / "e.wacz", [e.receipt for e in home.ledger.entries()])
    assert summary.timestamps == 1 and summary.to_json()["timestamps"] == 1
    with zipfile.ZipFile(tmp_path / "e.wacz") as z:
        assert json.loads(z.read("timestamps/1-0.json")) == {"tsa": "openssl", "token": stamp.value}
        assert z.read("checkpoint/checkpoint.note").decode() == note
        listed = {r["path"] for r in json.loads(z.read("datapackage.json"))["resources"]}
    assert "timestamps/1-0.json" in listed
    wacz = Path(sys.executable).parent / "wacz"
    assert wacz.exists(), "the wacz package is not installed: pip install 'g6-evidence[test]'"
    ok = subprocess.run([str(wacz), "validate", "-f", str(tmp_path / "e.wacz")], capture_output=True, text=True,
                        timeout=300)
    assert ok.returncode == 0 and "is valid" in ok.stdout, ok.stdout + ok.stderr
