"""A ledger others are writing to: verify never reports a false failure, and first writers never collide.

Both run real processes against one SQLite file (the shared PostgreSQL engine has its own eight-writer
test in tests/backends). Nothing here depends on timing: each writer appends a fixed number of
receipts, the verifier loops a fixed number of times while they run, and every verdict must hold
whatever interleaving the scheduler chose.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from g6.home import EvidenceHome
from g6.ledger import Receipt

WRITERS, APPENDS, VERIFIES = 4, 150, 50


def _receipt(i: int) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{os.getpid()}/{i}"},
                   outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)


def _writer(root: str, n: int, started: multiprocessing.synchronize.Event) -> None:
    home = EvidenceHome(root, fsync=False)
    started.set()
    key = home.signing_key()
    for i in range(n):
        home.ledger.append_many([_receipt(2 * i), _receipt(2 * i + 1)], key)
        if i % 10 == 0:
            home.ledger.checkpoint(key)
    home.close()


def test_verify_while_four_writers_append_never_fails(tmp_path: Path) -> None:
    root = tmp_path / "home"
    with EvidenceHome(root, fsync=False) as home:
        home.keys.init()
        home.record(_receipt(-1))
    ctx = multiprocessing.get_context("spawn")
    events = [ctx.Event() for _ in range(WRITERS)]
    procs = [ctx.Process(target=_writer, args=(str(root), APPENDS, e)) for e in events]
    for p in procs:
        p.start()
    for e in events:
        assert e.wait(120)
    seen: list[int] = []
    try:
        for _ in range(VERIFIES):
            with EvidenceHome(root, readonly=True) as reader:  # what `g6 ledger verify` opens
                report = reader.verify()
            assert report.ok, [c.to_json() for c in report.failures()][:5]
            seen.append(report.rows)
    finally:
        for p in procs:
            p.join(300)
    assert all(p.exitcode == 0 for p in procs)
    assert seen == sorted(seen)  # each verify saw one state, never older than the one before
    with EvidenceHome(root, readonly=True) as reader:
        final = reader.verify()
    assert final.ok and final.rows == 1 + WRITERS * APPENDS * 2


def _first_append(root: str, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue) -> None:
    try:
        barrier.wait(60)
        home = EvidenceHome(root, fsync=False)
        home.keys.ensure()
        home.record(_receipt(0))
        home.close()
        out.put("ok")
    except BaseException as e:  # noqa: BLE001 - reported to the test, which names it
        out.put(f"{type(e).__name__}: {e}")


def test_first_appends_to_a_fresh_home_never_collide(tmp_path: Path) -> None:
    """Four processes make their first append to one fresh home at once, fifty times: creating the schema
    waits its turn like any other write, so none fails with "database is locked"."""
    ctx = multiprocessing.get_context("fork")
    failures: list[str] = []
    for trial in range(50):
        root = tmp_path / f"h{trial}"
        barrier = ctx.Barrier(4)
        out: multiprocessing.Queue = ctx.Queue()
        procs = [ctx.Process(target=_first_append, args=(str(root), barrier, out)) for _ in range(4)]
        for p in procs:
            p.start()
        results = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(60)
        failures += [f"trial {trial}: {r}" for r in results if r != "ok"]
        if not failures:
            with EvidenceHome(root, readonly=True) as home:
                report = home.verify()
                assert report.ok and report.rows == 4, (trial, [c.to_json() for c in report.failures()])
    assert not failures, failures[:5]
