"""Re-check trusts nothing it did not verify (issue 13): manifest signature, receipts, ids that become files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, load_manifest, save_manifest
from g6.cite.passages import text_hash
from g6.cite.recheck import recheck, run_file
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger import SigningKey

Site = Callable[..., LocalSite]
P1 = "Receipts make every read provable: the address, the time and the bytes are kept together."
P2 = "A citation names a passage by the hash of its normalised text, so it survives re-flowed whitespace."
PAGE = f"<html><body><p>{P1}</p><p>{P2}</p></body></html>".encode()


@pytest.fixture
def cited(home: EvidenceHome, client: CheckedClient, site: Site) -> tuple[LocalSite, Manifest]:
    s = site({"/a": Reply(body=PAGE), "/b": Reply(body=PAGE), "/robots.txt": Reply(404)})
    ra, rb = fetch(home, client, s.url("/a")), fetch(home, client, s.url("/b"))
    cs = (cite_web(home, ra.receipt_id, quote=P1), cite_web(home, rb.receipt_id, quote=P2))
    return s, Manifest("mfst_trust", "2026-12-03T00:00:00Z", cs)


def _verdicts(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [v.verdict for v in report.verdicts]


def test_an_unsigned_manifest_is_reported_and_its_texts_checked(home: EvidenceHome, client: CheckedClient,
                                                                cited: tuple[LocalSite, Manifest]) -> None:
    _, m = cited
    report = recheck(home, client, m)
    assert report.manifest_signature["status"] == "unsigned" and _verdicts(report) == ["unchanged", "unchanged"]
    assert report.to_json()["manifest_signature"]["status"] == "unsigned"
    signed = recheck(home, client, m.signed(home.signing_key()))
    assert signed.manifest_signature == {"status": "ok", "detail": "ok"} and signed.exit_code == 0


def test_a_forged_quote_on_unchanged_bytes_is_unverified_not_unchanged(home: EvidenceHome, client: CheckedClient,
                                                                      cited: tuple[LocalSite, Manifest]) -> None:
    s, m = cited
    forged_text = "Receipts are optional and nobody checks them."
    forged = replace(m.citations[0], text=forged_text, text_hash=text_hash(forged_text), quote=forged_text)
    before = len(s.requests)
    report = recheck(home, client, replace(m, citations=(forged, m.citations[1])))
    assert _verdicts(report) == ["unverified", "unchanged"]
    assert "not at its offsets in the original page" in report.verdicts[0].detail["reason"]
    assert report.verdicts[0].receipt_id is None and report.exit_code == 1
    assert [q.path for q in s.requests[before:]] == ["/b"]  # the unverified citation is not fetched


def test_a_manifest_edited_after_signing_makes_every_citation_unverified(
        home: EvidenceHome, client: CheckedClient, cited: tuple[LocalSite, Manifest], tmp_path: Path) -> None:
    _, m = cited
    path = tmp_path / "m.json"
    save_manifest(m.signed(home.signing_key()), path)
    data = json.loads(path.read_text())
    data["citations"][0]["requested_url"] = data["citations"][1]["requested_url"]
    path.write_text(json.dumps(data))
    report = recheck(home, client, load_manifest(path))
    assert report.manifest_signature["status"] == "failed"
    assert _verdicts(report) == ["unverified", "unverified"] and report.exit_code == 1
    stranger = SigningKey.generate()
    report = recheck(home, client, m.signed(stranger))
    assert report.manifest_signature["detail"].startswith("signed by unknown key")
    assert _verdicts(report) == ["unverified", "unverified"]


@pytest.mark.parametrize("attack", ["missing_receipt", "other_url", "other_digests", "text_hash", "search_kind"])
def test_a_citation_not_matching_its_receipt_is_unverified(home: EvidenceHome, client: CheckedClient,
                                                           cited: tuple[LocalSite, Manifest], attack: str) -> None:
    s, m = cited
    c = m.citations[0]
    bad = {
        "missing_receipt": replace(c, receipt_id="rcpt_01AAAAAAAAAAAAAAAAAAAAAAAA"),
        "other_url": replace(c, requested_url=s.url("/elsewhere")),
        "other_digests": replace(c, content={**c.content, "size": 1}),
        "text_hash": replace(c, text_hash=text_hash("something else")),
        "search_kind": replace(c, kind="search"),
    }[attack]
    for manifest in (replace(m, citations=(bad,)), replace(m, citations=(bad,)).signed(home.signing_key())):
        report = recheck(home, client, manifest)
        assert _verdicts(report) == ["unverified"], (attack, report.verdicts[0].detail)


def test_a_receipt_tampered_in_the_ledger_is_unverified(home: EvidenceHome, client: CheckedClient,
                                                        cited: tuple[LocalSite, Manifest]) -> None:
    _, m = cited
    rid = m.citations[0].receipt_id
    conn = sqlite3.connect(home.ledger.path)
    (text,) = conn.execute("SELECT receipt FROM receipts WHERE receipt_id = ?", (rid,)).fetchone()
    data = json.loads(text)
    data["fetched_at"] = "2001-01-01T00:00:00Z"
    conn.execute("UPDATE receipts SET receipt = ? WHERE receipt_id = ?", (json.dumps(data), rid))
    conn.commit()
    conn.close()
    report = recheck(home, client, m.signed(home.signing_key()))
    assert _verdicts(report) == ["unverified", "unchanged"]
    assert "signature" in report.verdicts[0].detail["reason"]


@pytest.mark.parametrize("bad", ["mfst_../../x", "mfst_a/b", "../mfst_x", "mfst_", "mfst_a.b", "mfst_\u0131x", 7])
def test_manifest_ids_are_validated_when_loaded(tmp_path: Path, bad: object) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"schema": "g6.manifest.v1", "manifest_id": bad, "created_at": "x",
                                "citations": []}))
    with pytest.raises(InputError, match="manifest_id .* is not a valid id"):
        load_manifest(path)


@pytest.mark.parametrize("run_id", ["../../escape", "run_../x", "run_a/b", "run_", "run_.", "x" * 10, "run_a\nb"])
def test_run_ids_are_validated(home: EvidenceHome, client: CheckedClient, cited: tuple[LocalSite, Manifest],
                               run_id: str) -> None:
    _, m = cited
    with pytest.raises(InputError, match="run id"):
        recheck(home, client, m, run_id=run_id)
    with pytest.raises(InputError, match="manifest_id"):
        recheck(home, client, replace(m, manifest_id="mfst_../../x"))
    assert run_file(home, "mfst_ok", "run_ok").parent == (home.root / "knowledge" / "rechecks").resolve()


def test_cli_recheck_refuses_a_path_run_id_and_writes_nothing_outside_home(home: EvidenceHome,
                                                                          cited: tuple[LocalSite, Manifest],
                                                                          tmp_path: Path) -> None:
    _, m = cited
    path = tmp_path / "report.json"
    save_manifest(m, path)
    outside = tmp_path / "outside"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home.root), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    bad = subprocess.run([sys.executable, "-m", "g6", "recheck", str(path), "--run", f"../../{outside.name}/x"],
                         capture_output=True, env=env, timeout=120, cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.decode().startswith("g6: run id") and b"Traceback" not in bad.stderr
    assert list(outside.iterdir()) == []
    ok = subprocess.run([sys.executable, "-m", "g6", "recheck", str(path)], capture_output=True, env=env,
                        timeout=120, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert b"manifest mfst_trust is UNSIGNED" in ok.stderr and b"signature unsigned" in ok.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g6home", "outside", "report.json"]


def test_manifest_verify_checks_every_cited_text_even_when_signed(home: EvidenceHome,
                                                                 cited: tuple[LocalSite, Manifest],
                                                                 tmp_path: Path) -> None:
    _, m = cited
    forged_text = "Receipts are optional and nobody checks them."
    forged = replace(m.citations[0], text=forged_text, text_hash=text_hash(forged_text), quote=forged_text)
    path = tmp_path / "forged.json"
    save_manifest(replace(m, citations=(forged, m.citations[1])).signed(home.signing_key()), path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home.root)})
    out = subprocess.run([sys.executable, "-m", "g6", "manifest", "verify", str(path), "--json"],
                         capture_output=True, env=env, timeout=120)
    report = json.loads(out.stdout)
    assert out.returncode == 1 and report["signature"]["ok"] is True
    assert [c["ok"] for c in report["citations"]] == [False, True]
    assert "not at its offsets" in report["citations"][0]["problems"][0]


def test_untrusted_text_is_escaped_on_the_terminal(home: EvidenceHome, cited: tuple[LocalSite, Manifest],
                                                   tmp_path: Path) -> None:
    _, m = cited
    evil = replace(m.citations[0], quote="\x1b[2J\x1b[31mall good\u202e", requested_url="http://x/\x1b]0;pwned\x07")
    path = tmp_path / "evil.json"
    save_manifest(replace(m, citations=(evil,)), path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home.root), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"})
    out = subprocess.run([sys.executable, "-m", "g6", "recheck", str(path)], capture_output=True, env=env, timeout=120)
    assert out.returncode == 1 and b"unverified" in out.stdout
    assert b"\x1b" not in out.stdout and b"\x07" not in out.stdout and "\u202e".encode() not in out.stdout
    assert b"\\x1b[2J" in out.stdout
