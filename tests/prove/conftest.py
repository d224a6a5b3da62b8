"""Two RFC 3161 TSAs on loopback (openssl behind a small HTTP wrapper, and certomancer), started once
per test session on ports the system picks and stopped by PID (see ``_tsa``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.prove._tsa import Tsa, certomancer_tsa, openssl_tsa


@pytest.fixture(scope="session")
def openssl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tsa]:
    with openssl_tsa(tmp_path_factory.mktemp("openssl-tsa")) as tsa:
        yield tsa


@pytest.fixture(scope="session")
def certomancer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tsa]:
    with certomancer_tsa(tmp_path_factory.mktemp("certomancer-tsa")) as tsa:
        yield tsa
