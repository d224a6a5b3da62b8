"""The shared engines: PostgreSQL appends (1 and 8 writer processes) vs raw psycopg inserts of the
same signed rows; SeaweedFS puts (8 KiB, 8 MiB) vs a raw boto3 put of the same bytes with the same
client; ``ledger verify`` on PostgreSQL vs SQLite.

Uses the servers ``.ci/run`` started (``G6_TEST_PG_URL``, ``G6_TEST_S3_*``); without them the full
run starts its own on loopback (tests/backends_setup.py) and ``--quick`` skips this benchmark.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import rfc8785

from bench.report import line
from g6.ledger import Ledger, Receipt, SigningKey

BATCH = 50


def _receipts(n: int, who: int) -> list[Receipt]:
    return [Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{who}/{i}"}, outcome="ok",
                    outcome_code="G6_OK_KNOWLEDGE_FETCH", byte_count=i,
                    content={"blake3": "blake3:" + "a" * 64, "sha256": "sha256:" + "b" * 64, "size": i})
            for i in range(n)]


def _schema_url(admin: str) -> str:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f"CREATE SCHEMA {schema}")
    return f"{admin}{'&' if '?' in admin else '?'}options=-csearch_path%3D{schema}"


def _ours_worker(url: str, n: int, who: int, ready: Any, go: Any) -> None:
    from g6.ledger import PostgresLedger

    key, rs = SigningKey.generate(), _receipts(n, who)
    with PostgresLedger(url) as ledger:
        ready.wait()
        go.wait()
        for i in range(0, n, BATCH):
            ledger.append_many(rs[i : i + BATCH], key)


def _raw_worker(url: str, n: int, who: int, ready: Any, go: Any) -> None:
    """The same signed rows, inserted with plain psycopg: sign, one executemany per batch, no chain, no lock."""
    import psycopg

    key, rs = SigningKey.generate(), _receipts(n, who)
    with psycopg.connect(url, autocommit=True) as conn:
        ready.wait()
        go.wait()
        for i in range(0, n, BATCH):
            rows = []
            for r in rs[i : i + BATCH]:
                body = rfc8785.dumps(r.to_json())
                rows.append((r.receipt_id, body.decode(), key.sign(body).hex()))
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany("INSERT INTO raw_receipts (receipt_id, receipt, sig) VALUES (%s, %s, %s)", rows)


def _run_writers(target: Any, url: str, writers: int, each: int) -> float:
    ctx = mp.get_context("spawn")
    ready, go = ctx.Barrier(writers + 1), ctx.Event()
    procs = [ctx.Process(target=target, args=(url, each, w, ready, go)) for w in range(writers)]
    for p in procs:
        p.start()
    ready.wait()
    t = time.perf_counter()
    go.set()
    for p in procs:
        p.join()
    dt = time.perf_counter() - t
    if any(p.exitcode for p in procs):
        raise RuntimeError("a writer process failed")
    return dt


def _appends(admin: str, quick: bool) -> None:
    import psycopg

    from g6.ledger import PostgresLedger

    for writers, each in ((1, 100), (2, 50)) if quick else ((1, 4000), (8, 1000)):
        url = _schema_url(admin)
        PostgresLedger(url).close()
        ours = _run_writers(_ours_worker, url, writers, each)
        with PostgresLedger(url) as ledger:
            assert len(ledger) == writers * each
        raw_url = _schema_url(admin)
        with psycopg.connect(raw_url, autocommit=True) as c:
            c.execute("CREATE TABLE raw_receipts (seq bigserial PRIMARY KEY, receipt_id text UNIQUE, receipt text,"
                      " sig text)")
        ref = _run_writers(_raw_worker, raw_url, writers, each)
        n = writers * each
        line(f"pg append {writers} writer(s), batches of {BATCH} ({n})", n / ours, n / ref, "receipts/s")


def _puts(env: dict[str, str], quick: bool) -> None:
    from g6.store import open_store

    url = f"s3://{env['G6_TEST_S3_BUCKET']}/bench-{uuid.uuid4().hex[:12]}"
    store = open_store(url, "unused", env={"G6_S3_ENDPOINT": env["G6_TEST_S3_ENDPOINT"],
                                           "AWS_ACCESS_KEY_ID": env["G6_TEST_S3_ACCESS_KEY"],
                                           "AWS_SECRET_ACCESS_KEY": env["G6_TEST_S3_SECRET_KEY"]})
    for size, n in ((8 << 10, 20 if quick else 1000), (8 << 20, 2 if quick else 24)):
        bodies = [os.urandom(size) for _ in range(n)]
        t = time.perf_counter()
        for b in bodies:
            store.put(b)
        ours = time.perf_counter() - t
        raw_bodies = [os.urandom(size) for _ in range(n)]
        t = time.perf_counter()
        for i, b in enumerate(raw_bodies):
            store.s3.put_object(Bucket=store.bucket, Key=f"{store.prefix}raw/{i}", Body=b)
        ref = time.perf_counter() - t
        label = f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        line(f"s3 put {label} ({n})", n / ours, n / ref, "puts/s")
        line(f"s3 put {label} ({n})", n * size / ours / 2**20, n * size / ref / 2**20, "MiB/s")
    store.close()


def _verify(admin: str, quick: bool) -> None:
    from g6.ledger import PostgresLedger

    n = 1000 if quick else 100_000
    key = SigningKey.generate()
    rs = _receipts(n, 0)
    keys = {key.key_id: key.public}
    with tempfile.TemporaryDirectory() as d:
        times = []
        for ledger in (PostgresLedger(_schema_url(admin)), Ledger(Path(d) / "l.sqlite")):
            with ledger:
                for i in range(0, n, 1000):
                    ledger.append_many(rs[i : i + 1000], key)
                t = time.perf_counter()
                report = ledger.verify(keys)
                times.append(time.perf_counter() - t)
                assert report.ok and report.rows == n
        line(f"ledger verify PostgreSQL vs SQLite ({n})", n / times[0], n / times[1], "receipts/s")


def run(quick: bool = False) -> None:
    env = {k: v for k, v in os.environ.items() if k.startswith(("G6_TEST_PG_", "G6_TEST_S3_"))}
    with ExitStack() as stack:
        if "G6_TEST_PG_URL" not in env or "G6_TEST_S3_ENDPOINT" not in env:
            if quick:
                print("backends: skipped in --quick without servers (.ci/run starts PostgreSQL and SeaweedFS)")
                return
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
            import backends_setup  # type: ignore[import-not-found]

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            for start in (backends_setup.start_postgres, backends_setup.start_seaweedfs):
                server = start(tmp / start.__name__)
                stack.callback(server.stop)
                env.update(server.env)
        _appends(env["G6_TEST_PG_URL"], quick)
        _puts(env, quick)
        _verify(env["G6_TEST_PG_URL"], quick)
