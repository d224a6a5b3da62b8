"""RFC 3161 tokens kept beside checkpoints on either backend pair: `g6 ledger checkpoint --tsa` keeps them,
`g6 ledger verify --tsa-root` checks them from a fresh process (the home's ``.env`` names the ledger), and a
token altered in the database fails, as on a SQLite file."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.transparency.timestamp import KIND
from tests.backends.raw_sql import raw_sql
from tests.prove._tsa import Tsa
from tests.prove.conftest import openssl_server  # noqa: F401 - the loopback TSA fixture


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    r = subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), *args], capture_output=True,
                       text=True, timeout=120, env=env)
    assert "Traceback" not in r.stderr, r.stderr
    return r


def test_tokens_kept_and_checked_on_either_backend(pair_home: EvidenceHome, openssl_server: Tsa) -> None:  # noqa: F811
    for i in range(2):
        pair_home.record(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                 outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED"))
    r = g6(pair_home, "ledger", "checkpoint", "--tsa", openssl_server.url("tsa"), "--tsa-name", "openssl")
    assert r.returncode == 0, r.stderr
    (cp, _), = pair_home.ledger.checkpoints()
    ((kind, name, value),) = pair_home.ledger.kept_beside(cp, KIND)
    assert (kind, name) == (KIND, "openssl")
    r = g6(pair_home, "ledger", "verify", "--tsa-root", str(openssl_server.root_pem), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["checks"]["timestamp"]["checked"] == 1 and out["checks"]["fetched_at"]["checked"] == 2
    assert out["timestamps"][0]["ok"] and out["timestamps"][0]["tsa"] == "openssl"

    token = bytearray(base64.b64decode(value))
    token[-5] ^= 1  # inside the signature
    raw_sql(pair_home.ledger).execute("UPDATE checkpoint_extras SET value = ? WHERE kind = ?",
                                      (base64.b64encode(token).decode(), KIND))
    conn = pair_home.ledger._usable().connection
    if hasattr(conn, "commit"):
        conn.commit()
    r = g6(pair_home, "ledger", "verify", "--tsa-root", str(openssl_server.root_pem))
    assert r.returncode == 1 and "timestamp  FAILED checked=1 failed=1" in r.stdout
    assert "checkpoint 2, TSA openssl: cms_signature: the signature does not verify" in r.stdout
