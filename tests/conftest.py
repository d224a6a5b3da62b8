"""Shared fixtures. Every receipt a test writes through ``home`` is validated against the schema."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, settings

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.html import text as html_text
from g6.demo.site import LocalSite, Route
from g6.home import EvidenceHome
from g6.schemas import load
from tests.children import (  # noqa: F401 (the fixture for processes a test signals, and the hook it reads)
    children,
    pytest_runtest_makereport,
)

# property tests never depend on time: the shared, busy machine (and a second .ci/run beside this one) makes any
# example slow now and then, and hypothesis's default 200 ms deadline then fails a test whose property holds
settings.register_profile("g6", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("g6")

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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (``tests/headless.py``) for a module's tests: skipped without one, failed without one
    when ``G6_REQUIRE_TOOLS`` is set."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from headless import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def pool() -> Iterator[Any]:
    """One locked-down browser (a ``BrowserPool`` of one) for a module's captures, each in a context of its own;
    started at its first capture. Skipped without Chromium, failed without one under ``G6_REQUIRE_TOOLS``.
    ``tests/attack/conftest.py`` gives its modules one started at once instead."""
    from g6.adapters.browser.pool import BrowserPool
    from tests.browser.world import need_chromium

    need_chromium()
    with BrowserPool(1) as p:
        yield p


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Tallies kept by the reliability suite: how many cases it tried and how many held."""
    import sys as _sys

    for mod in list(_sys.modules.values()):
        tally = getattr(mod, "TALLY", None)
        if isinstance(tally, dict) and getattr(mod, "__name__", "").startswith(("test_", "tests")):
            for name, results in tally.items():
                if results:
                    terminalreporter.write_line(f"{name}: {len(results)} tried, {sum(results)} held")


# -- shared backends: PostgreSQL and SeaweedFS (S3) on loopback ------------------------------------
BACKEND_PAIRS = ("sqlite+file", "postgresql+s3")


@pytest.fixture(scope="session")
def backend_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """PostgreSQL and SeaweedFS on loopback: the ones `.ci/run` started (G6_TEST_PG_URL, G6_TEST_S3_*),
    or started here and stopped by PID. Never skipped: a server that cannot start fails the tests."""
    import os
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import backends_setup

    env = {k: v for k, v in os.environ.items() if k.startswith(("G6_TEST_PG_", "G6_TEST_S3_"))}
    started = []
    try:
        if "G6_TEST_PG_URL" not in env:
            started.append(backends_setup.start_postgres(tmp_path_factory.mktemp("pg")))
            env.update(started[-1].env)
        if "G6_TEST_S3_ENDPOINT" not in env:
            started.append(backends_setup.start_seaweedfs(tmp_path_factory.mktemp("s3")))
            env.update(started[-1].env)
        yield env
    finally:
        for s in started:
            s.stop()


@pytest.fixture
def pg_url(backend_servers: dict[str, str]) -> Iterator[str]:
    """A ledger URL of its own: a fresh schema on the test PostgreSQL (search_path set in the URL)."""
    import uuid

    import psycopg

    admin = backend_servers["G6_TEST_PG_URL"]
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
    yield f"{admin}?options=-csearch_path%3D{schema}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def s3_env(backend_servers: dict[str, str]) -> dict[str, str]:
    """The settings a home needs to reach the test S3 (endpoint and credentials)."""
    return {"G6_S3_ENDPOINT": backend_servers["G6_TEST_S3_ENDPOINT"],
            "AWS_ACCESS_KEY_ID": backend_servers["G6_TEST_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": backend_servers["G6_TEST_S3_SECRET_KEY"]}


@pytest.fixture
def s3_url(backend_servers: dict[str, str]) -> str:
    """A blob store URL of its own: a fresh prefix in the test bucket."""
    import uuid

    return f"s3://{backend_servers['G6_TEST_S3_BUCKET']}/t-{uuid.uuid4().hex[:16]}"


@pytest.fixture
def make_pair_home(request: pytest.FixtureRequest) -> Callable[[str, Path], EvidenceHome]:
    """Build an evidence home on one backend pair. The shared pair gets its own schema and prefix, and
    its settings go in ``root/.env`` too, so ``g6 --home root`` in a subprocess reaches the same backends."""

    def make(pair: str, root: Path) -> EvidenceHome:
        if pair == "sqlite+file":
            return EvidenceHome(root, fsync=False)
        env = {**request.getfixturevalue("s3_env"), "G6_LEDGER_URL": request.getfixturevalue("pg_url"),
               "G6_BLOB_URL": request.getfixturevalue("s3_url")}
        root.mkdir(parents=True, exist_ok=True)
        (root / ".env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        return EvidenceHome(root, fsync=False, ledger_url=env["G6_LEDGER_URL"], blob_url=env["G6_BLOB_URL"], env=env)

    return make


def _checked_home(ev: EvidenceHome) -> Iterator[EvidenceHome]:
    ev.keys.init()
    yield ev
    for entry in ev.ledger.entries():
        validate(json.loads(json.dumps(entry.receipt.to_json())), "receipt.v1")
    ev.close()


@pytest.fixture
def shared_home(tmp_path: Path, make_pair_home: Callable[[str, Path], EvidenceHome]) -> Iterator[EvidenceHome]:
    """The ``home`` fixture on PostgreSQL + SeaweedFS."""
    yield from _checked_home(make_pair_home("postgresql+s3", tmp_path / "g6home"))


@pytest.fixture(params=BACKEND_PAIRS)
def pair_home(request: pytest.FixtureRequest, tmp_path: Path,
              make_pair_home: Callable[[str, Path], EvidenceHome]) -> Iterator[EvidenceHome]:
    """The ``home`` fixture once per backend pair: a behaviour that differs between them fails a test."""
    yield from _checked_home(make_pair_home(request.param, tmp_path / "g6home"))


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every body ``parse_html`` is called with, whichever module calls it."""
    calls: list[int] = []
    original = html_text.parse_html

    def counting(body: bytes, content_type: str | None = None):  # type: ignore[no-untyped-def]
        calls.append(len(body))
        return original(body, content_type)

    for module in list(sys.modules.values()):
        if getattr(module, "parse_html", None) is original:
            monkeypatch.setattr(module, "parse_html", counting)
    return calls
