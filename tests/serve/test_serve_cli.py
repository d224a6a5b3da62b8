"""``g6 serve`` itself: loopback by default, other addresses only with --public, a real uvicorn server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from g6.cli.serve import is_loopback_host
from g6.home import EvidenceHome
from tests.serve.server import served


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True),
                                            ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                            ("::", False), ("192.0.2.1", False), ("example.org", False)])
def test_loopback_hosts_are_told_apart(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_a_public_address_needs_the_flag(tmp_path: Path) -> None:
    EvidenceHome(tmp_path / "h", fsync=False).close()
    r = subprocess.run([sys.executable, "-m", "g6", "--home", str(tmp_path / "h"), "serve", "--host", "0.0.0.0",
                        "--port", "0"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert "--public" in r.stderr and "Traceback" not in r.stderr


def test_serves_on_loopback_and_refuses_unknown_paths(tmp_path: Path) -> None:
    EvidenceHome(tmp_path / "h", fsync=False).close()
    with served(tmp_path / "h") as base:
        assert base.startswith("http://127.0.0.1:")
        r = httpx.get(base + "no/such/thing", headers={"accept": "application/json"})
        assert r.status_code == 404
        assert r.json()["code"] == "not_found"
        r = httpx.get(base + "no/such/<script>", headers={"accept": "text/html"})
        assert r.status_code == 404 and "<script>" not in r.text
