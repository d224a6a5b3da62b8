"""``g6 serve`` itself: loopback by default, other addresses only with --public, a real uvicorn server."""

from __future__ import annotations

import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from g6.cli.serve import is_loopback_host
from g6.home import EvidenceHome
from g6.ledger import Receipt
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


@pytest.mark.signals
@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["sigint-default", "sigint-ignored"])
@pytest.mark.parametrize("requests", [0, 40])
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stops_cleanly_on_sigint_and_sigterm(tmp_path: Path, stop: signal.Signals, requests: int,
                                             sigint_ignored: bool) -> None:
    """SIGINT (Ctrl-C, `kill -INT`) and SIGTERM (`kill`) stop the server with exit 0 and nothing on stderr, also
    after requests answered on many worker threads (each closes its own handle on the home), and also when it
    was started with SIGINT ignored, as a CI runner or a shell's `g6 serve &` starts it. ``served`` checks the
    stop: it reads the server's stderr once the server has ended."""
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:
        ev.keys.init()
        ev.record(Receipt(kind="fetch", source="web", request={"url": "https://example.org/a"}, outcome="ok",
                          outcome_code="G6_E_KNOWLEDGE_FETCHED"))
    with served(tmp_path / "h", stop=stop, sigint_ignored=sigint_ignored) as base:
        paths = ("api/home", "", "receipt/rcpt_00000000000000000000000000", "web/https://example.org/a", "verify")

        def ask(i: int) -> int:
            return httpx.get(base + paths[i % len(paths)], timeout=120).status_code

        with ThreadPoolExecutor(8) as pool:  # at once: the server answers on several threads
            statuses = list(pool.map(ask, range(requests)))
        assert set(statuses) <= {200, 404}, statuses
