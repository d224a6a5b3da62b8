"""`g6 serve` over each backend pair (SQLite + folder, PostgreSQL + S3): the same answers from either, and
nothing written to either. The home's ``.env`` names the shared backends, so the served subprocess reaches
the same PostgreSQL schema and S3 prefix the test filled."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import httpx

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.conftest import validate
from tests.serve.server import served

PAGE = b"<html><body><p>A page kept on whichever backend the home names.</p></body></html>"


def test_serve_answers_alike_on_every_backend_pair(pair_home: EvidenceHome,
                                                   site: Callable[..., LocalSite]) -> None:
    s = site({"/p": Reply(body=PAGE), "/gone": Reply(404, b"no"), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        ok, failed = fetch(pair_home, c, s.url("/p")), fetch(pair_home, c, s.url("/gone"))
    pair_home.ledger.checkpoint(pair_home.signing_key())
    size = len(list(pair_home.ledger.entries()))
    shown = subprocess.run([sys.executable, "-m", "g6", "--home", str(pair_home.root), "receipt", "show",
                            ok.receipt_id, "--json"], capture_output=True, timeout=120)
    assert shown.returncode == 0, shown.stderr

    with served(pair_home.root) as base, httpx.Client(base_url=base) as http:
        home = http.get("/api/home").json()
        validate(home, "serve-home.v1")
        assert home["counts"]["captures"] == 2 and home["counts"]["failed"] == 1
        timemap = http.get(f"/web/timemap/json/{s.url('/p')}")
        assert timemap.status_code == 200
        validate(timemap.json(), "serve-timemap.v1")
        memento = http.get(f"/web/{s.url('/p')}", follow_redirects=True)
        assert memento.status_code == 200 and memento.content == PAGE
        assert "memento-datetime" in memento.headers
        assert http.get(f"/receipt/{ok.receipt_id}").content == shown.stdout
        assert http.get(f"/receipt/{ok.receipt_id}/proof").status_code == 200
        gone = http.get(f"/web/timemap/link/{s.url('/gone')}")
        assert failed.receipt_id in gone.text and 'rel="memento"' not in gone.text
        capture = http.get(f"/api/capture/{ok.receipt_id}").json()
        validate(capture, "serve-capture.v1")
        assert json.dumps(capture).count("A page kept on whichever backend") >= 1
    assert len(list(pair_home.ledger.entries())) == size  # the server appended nothing
