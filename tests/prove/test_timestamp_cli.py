"""``g6 ledger checkpoint --tsa URL`` and ``g6 ledger verify --tsa-root FILE``, run as a user runs them
(a real process) against the two loopback TSAs. Exit codes 0/1/2, one typed line, never a traceback."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.transparency.timestamp import KIND
from g6.prove.timestamp_client import ask_tsa, note_body
from tests.conftest import validate
from tests.prove._tsa import Tsa, backdating_tsa


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home)
    r = subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def fetch(i: int, fetched_at: str | None = None) -> Receipt:
    extra = {"fetched_at": fetched_at} if fetched_at else {}
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", **extra)


# -- failures ----------------------------------------------------------------------------------------------
def test_bad_tsa_options_are_usage_errors_before_anything_is_signed(home: EvidenceHome) -> None:
    for args, words in ((["--tsa", "ftp://tsa.test/"], "bad --tsa 'ftp://tsa.test/'"),
                        (["--tsa", "http://127.0.0.1:9/", "--tsa-name", "a", "--tsa-name", "b"],
                         "2 --tsa-name for 1 --tsa")):
        r = g6(home.root, "ledger", "checkpoint", *args)
        assert r.returncode == 2 and r.stderr.startswith(f"g6: {words}") and r.stderr.count("\n") == 1
    assert home.ledger.checkpoints() == []


def test_a_tsa_that_refuses_exits_1_and_the_checkpoint_is_kept(home: EvidenceHome, openssl_server: Tsa) -> None:
    r = g6(home.root, "ledger", "checkpoint", "--tsa", openssl_server.url("reject"), "--tsa-name", "strict", "--json")
    assert r.returncode == 1
    assert r.stderr.strip() == "g6: TSA strict: no token: status rejection (bad_alg): Message digest algorithm is " \
                               "not supported."
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    assert out["timestamps"] == [{"tsa": "strict", "url": openssl_server.url("reject"), "ok": False,
                                  "gen_time": None, "error": r.stderr.strip()[4:]}]
    (cp, _), = home.ledger.checkpoints()
    assert home.ledger.kept_beside(cp) == []


def test_bad_tsa_roots_are_usage_errors(home: EvidenceHome, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for path, words in ((tmp_path / "missing.pem", "cannot read --tsa-root"), (junk, "bad --tsa-root"),
                        (tmp_path, "Invalid value for '--tsa-root'")):
        r = g6(home.root, "ledger", "verify", "--tsa-root", str(path))
        assert r.returncode == 2 and r.stderr.startswith(f"g6: {words}") and r.stderr.count("\n") == 1, r.stderr


def test_roots_pinned_but_no_token_kept_fails(home: EvidenceHome, openssl_server: Tsa) -> None:
    home.record(fetch(1))
    assert g6(home.root, "ledger", "checkpoint").returncode == 0
    r = g6(home.root, "ledger", "verify", "--tsa-root", str(openssl_server.root_pem))
    assert r.returncode == 1 and "timestamp  FAILED checked=1 failed=1" in r.stdout
    assert "no RFC 3161 token is kept beside any checkpoint" in r.stdout


def test_wrong_root_and_a_late_receipt_fail_verify(home: EvidenceHome, openssl_server: Tsa,
                                                   certomancer_server: Tsa) -> None:
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    home.record(fetch(1))
    late = home.record(fetch(2, later))
    home.record(fetch(3))
    r = g6(home.root, "ledger", "checkpoint", "--tsa", openssl_server.url("tsa"), "--tsa-name", "openssl")
    assert r.returncode == 1 and f"is earlier than fetched_at {later[:19]}" in r.stderr  # refused, not kept
    (cp, note), = home.ledger.checkpoints()
    assert home.ledger.kept_beside(cp) == []
    stamp = ask_tsa(openssl_server.url("tsa"), note_body(note), name="openssl")  # kept anyway, as g6 did before
    home.ledger.keep_beside(cp, KIND, stamp.name, stamp.value)
    r = g6(home.root, "ledger", "verify", "--tsa-root", str(openssl_server.root_pem))
    assert r.returncode == 1
    assert "timestamp  ok checked=1 failed=0" in r.stdout and "fetched_at FAILED checked=3 failed=1" in r.stdout
    assert f"seq=2 {late.receipt_id}: fetched_at {later[:19]}" in r.stdout and "(TSA openssl)" in r.stdout
    r = g6(home.root, "ledger", "verify", "--tsa-root", str(certomancer_server.root_pem), "--json")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    validate(out, "ledger-verify.v1")
    assert out["checks"]["timestamp"]["failed"] == 1 and "fetched_at" not in out["checks"]  # no token held
    (t,) = out["timestamps"]
    assert not t["ok"] and [c["check"] for c in t["checks"] if not c["ok"]] == ["chain"]


def test_a_backdated_token_is_refused_and_not_kept(home: EvidenceHome, certomancer_server: Tsa) -> None:
    """A TSA whose clock is five years behind the receipts the checkpoint covers: its token would fail
    `ledger verify --tsa-root` (fetched_at) for as long as it is kept, so it is refused when stamping: one
    line, exit 1, nothing kept (issue 36)."""
    receipts = [home.record(fetch(i)) for i in range(3)]
    newest = max(receipts, key=lambda r: r.fetched_at)
    with backdating_tsa(certomancer_server.url("tsa"), "2021-06-01T00:00:00+0000") as url:
        r = g6(home.root, "ledger", "checkpoint", "--tsa", url, "--tsa-name", "behind", "--json")
    assert r.returncode == 1
    err = r.stderr.strip()
    assert "\n" not in err and err.startswith("g6: TSA behind: genTime 2021-06-01T00:00:00Z"), err
    assert f"is earlier than fetched_at {newest.fetched_at[:19]}" in err
    assert f"of receipt seq={receipts.index(newest) + 1} {newest.receipt_id}, which the checkpoint covers" in err
    assert err.endswith("the token would fail `ledger verify --tsa-root` (fetched_at), so it is not kept")
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    assert out["timestamps"] == [{"tsa": "behind", "url": url, "ok": False, "gen_time": None, "error": err[4:]}]
    (cp, _), = home.ledger.checkpoints()
    assert home.ledger.kept_beside(cp) == []
    # the same TSA with its clock right: kept, and verify holds
    r = g6(home.root, "ledger", "checkpoint", "--tsa", certomancer_server.url("tsa"), "--tsa-name", "certomancer")
    assert r.returncode == 0, r.stderr
    r = g6(home.root, "ledger", "verify", "--tsa-root", str(certomancer_server.root_pem))
    assert r.returncode == 0 and "fetched_at ok checked=3 failed=0" in r.stdout, r.stdout + r.stderr


# -- what holds -----------------------------------------------------------------------------------------------
def test_checkpoint_with_two_tsas_then_verify_against_their_roots(home: EvidenceHome, openssl_server: Tsa,
                                                                 certomancer_server: Tsa) -> None:
    for i in range(3):
        home.record(fetch(i))
    r = g6(home.root, "ledger", "checkpoint", "--tsa", openssl_server.url("tsa"), "--tsa-name", "openssl",
           "--tsa", certomancer_server.url("tsa"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    validate(out, "ledger-checkpoint.v1")
    assert [(t["tsa"], t["ok"], t["error"]) for t in out["timestamps"]] == [
        ("openssl", True, None), (certomancer_server.url("tsa"), True, None)]
    assert "g6: TSA openssl: token kept beside checkpoint 3, genTime " in r.stderr
    (cp, _), = home.ledger.checkpoints()
    assert [n for _, n, _ in home.ledger.kept_beside(cp, KIND)] == ["openssl", certomancer_server.url("tsa")]

    roots = ["--tsa-root", str(openssl_server.root_pem), "--tsa-root", str(certomancer_server.root_pem)]
    r = g6(home.root, "ledger", "verify", *roots)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "timestamp  ok checked=2 failed=0" in r.stdout and "fetched_at ok checked=3 failed=0" in r.stdout
    lines = [line.strip() for line in r.stdout.splitlines() if "existed before" in line]
    assert len(lines) == 2 and lines[0].startswith("checkpoint 3: existed before ")
    assert lines[0].endswith("(TSA openssl)") and lines[1].endswith(f"(TSA {certomancer_server.url('tsa')})")
    r = g6(home.root, "ledger", "verify", *roots, "--json")
    assert r.returncode == 0
    out = json.loads(r.stdout)
    validate(out, "ledger-verify.v1")
    assert [t["ok"] for t in out["timestamps"]] == [True, True] and out["checks"]["fetched_at"]["checked"] == 3
    r = g6(home.root, "ledger", "verify")  # without --tsa-root the tokens are not looked at
    assert r.returncode == 0 and "timestamp" not in r.stdout


def test_verify_since_checks_the_tokens_too(home: EvidenceHome, openssl_server: Tsa) -> None:
    home.record(fetch(1))
    assert g6(home.root, "ledger", "verify", "--record").returncode == 0
    home.record(fetch(2))
    r = g6(home.root, "ledger", "checkpoint", "--tsa", openssl_server.url("tsa"), "--tsa-name", "openssl")
    assert r.returncode == 0, r.stderr
    r = g6(home.root, "ledger", "verify", "--since", "--tsa-root", str(openssl_server.root_pem))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "timestamp  ok checked=1 failed=0" in r.stdout and "(TSA openssl)" in r.stdout
    assert "fetched_at ok checked=2 failed=0" in r.stdout  # every receipt the token covers, not only the new
