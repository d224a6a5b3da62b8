"""Shared fixtures. Every receipt a test writes through ``home`` is validated against the schema."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.home import EvidenceHome
from g6.localsite import LocalSite, Route
from g6.schemas import load

RECEIPT_SCHEMA = load("receipt.v1")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def validate(instance: object, schema_name: str) -> None:
    schema = RECEIPT_SCHEMA if schema_name == "receipt.v1" else load(schema_name)
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(instance)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[EvidenceHome]:
    ev = EvidenceHome(tmp_path / "g6home", fsync=False)
    ev.keys.init()
    yield ev
    # Every receipt written in the test must match the published schema.
    for entry in ev.ledger.entries():
        validate(json.loads(json.dumps(entry.receipt.to_json())), "receipt.v1")
    ev.close()


@pytest.fixture
def policy() -> FetchPolicy:
    """Loopback allowed (the operator setting), no pause, short timeouts."""
    return FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=2, read_timeout=2, total_timeout=5)


@pytest.fixture
def client(policy: FetchPolicy) -> Iterator[CheckedClient]:
    with CheckedClient(policy) as c:
        yield c


@pytest.fixture
def site() -> Iterator[Callable[..., LocalSite]]:
    started: list[LocalSite] = []

    def make(routes: Mapping[str, Route], host: str = "127.0.0.1", port: int = 0) -> LocalSite:
        s = LocalSite(dict(routes), host=host, port_wanted=port).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


@pytest.fixture(scope="session")
def elastic_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A loaded ES-compatible server on loopback (noida-db): CI's, or one started here."""
    import os
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import elastic_setup

    url = os.environ.get("G6_TEST_ELASTIC_URL")
    proc = None
    if not url:
        proc, url = elastic_setup.start_noida(tmp_path_factory.mktemp("noida"))
    else:
        elastic_setup.wait_ready(url)
    try:
        elastic_setup.load(url)
        yield url
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except Exception:  # noqa: BLE001
                proc.kill()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Tallies kept by the reliability suite: how many cases it tried and how many held."""
    import sys as _sys

    for mod in list(_sys.modules.values()):
        tally = getattr(mod, "TALLY", None)
        if isinstance(tally, dict) and getattr(mod, "__name__", "").startswith(("test_", "tests")):
            for name, results in tally.items():
                if results:
                    terminalreporter.write_line(f"{name}: {len(results)} tried, {sum(results)} held")
