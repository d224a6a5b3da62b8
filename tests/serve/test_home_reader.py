"""HomeReader: the handlers' threads and their handles on the home, in process (the served tests check the
same through a real server's shutdown).

Each home is a real read-only EvidenceHome over SQLite, which refuses a connection closed on another thread
than the one that opened it; the test records where each was opened and closed."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from g6.home import EvidenceHome
from g6.serve import HomeReader


def test_at_most_threads_homes_each_closed_on_its_own_thread(tmp_path: Path) -> None:
    EvidenceHome(tmp_path / "h", fsync=False).close()
    opened: list[int] = []
    closed: list[tuple[int, BaseException | None]] = []

    def opener() -> EvidenceHome:
        ev = EvidenceHome(tmp_path / "h", readonly=True)
        opened.append(threading.get_ident())
        close = ev.close

        def closing() -> None:
            try:
                close()
            except BaseException as e:  # noqa: BLE001 - recorded: the assertion below names it
                closed.append((threading.get_ident(), e))
                raise
            closed.append((threading.get_ident(), None))

        ev.close = closing  # type: ignore[method-assign]
        return ev

    reader = HomeReader(opener=opener, threads=3)

    def work(i: int) -> tuple[int, int]:
        return threading.get_ident(), reader.home().ledger.head()[0] + i

    async def many() -> list[tuple[int, int]]:
        return await asyncio.gather(*(reader.run(work, i) for i in range(300)))

    answers = asyncio.run(many())
    assert [n for _, n in answers] == list(range(300))
    assert 1 <= len(opened) <= 3 and len(set(opened)) == len(opened)  # one home a thread, at most 3 threads
    assert {t for t, _ in answers} <= set(opened)
    assert closed == []  # nothing closed while serving
    reader.close()
    assert sorted(closed, key=lambda c: c[0]) == sorted(((t, None) for t in opened), key=lambda c: c[0])


def test_an_error_reaches_the_request_and_the_thread_goes_on(tmp_path: Path) -> None:
    EvidenceHome(tmp_path / "h", fsync=False).close()
    reader = HomeReader(opener=lambda: EvidenceHome(tmp_path / "h", readonly=True), threads=1)

    def fail() -> None:
        raise ValueError("a handler's bug")

    async def both() -> int:
        with pytest.raises(ValueError, match="a handler's bug"):
            await reader.run(fail)
        return await reader.run(lambda: reader.home().ledger.head()[0])

    assert asyncio.run(both()) == 0
    reader.close()


def test_home_is_only_for_its_threads_and_a_closed_reader_takes_no_work(tmp_path: Path) -> None:
    EvidenceHome(tmp_path / "h", fsync=False).close()
    reader = HomeReader(opener=lambda: EvidenceHome(tmp_path / "h", readonly=True))
    with pytest.raises(RuntimeError, match="reader's own threads"):
        reader.home()
    with reader.open() as ev:  # any other thread opens its own, and closes it
        assert ev.readonly
    reader.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(reader.run(lambda: None))
