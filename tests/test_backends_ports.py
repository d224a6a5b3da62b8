"""The test servers start even when a port free_port() gave them is taken before they bind it (free_port() closes
its socket first, and on a busy machine another process may bind the port meanwhile: a CI run failed so, 141
tests erroring at setup). The first port each server is given here is one this test holds bound."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import backends_setup


@pytest.fixture
def held() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _first_taken(monkeypatch: pytest.MonkeyPatch, port: int) -> list[int]:
    given: list[int] = []
    one, many = backends_setup.free_port, backends_setup.free_ports

    def free_port() -> int:
        given.append(port if not given else one())
        return given[-1]

    def free_ports(n: int) -> list[int]:
        ports = many(n)
        if not given:
            ports[0] = port
        given.extend(ports)
        return ports

    monkeypatch.setattr(backends_setup, "free_port", free_port)
    monkeypatch.setattr(backends_setup, "free_ports", free_ports)
    return given


def test_the_ports_a_server_is_given_are_all_different() -> None:
    for _ in range(50):
        ports = backends_setup.free_ports(9)
        assert len(set(ports)) == 9


def test_postgres_starts_on_fresh_ports_when_its_port_was_taken(tmp_path: Path, held: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    given = _first_taken(monkeypatch, held)
    server = backends_setup.start_postgres(tmp_path / "pg")
    try:
        assert given[0] == held and str(held) not in server.url
        import psycopg

        with psycopg.connect(server.url) as c:
            assert c.execute("select 1").fetchone() == (1,)
    finally:
        server.stop()


def test_seaweedfs_starts_on_fresh_ports_when_one_was_taken(tmp_path: Path, held: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    given = _first_taken(monkeypatch, held)  # the master's port: the server cannot start on it
    server = backends_setup.start_seaweedfs(tmp_path / "s3")
    try:
        assert given[0] == held and len(given) > 9  # a second set of nine ports
    finally:
        server.stop()
