"""What must hold on the shared engines: many writers one chain, flat memory on S3, typed refusals,
nothing half-written, and copying a home to PostgreSQL + S3 with the same checkpoint roots."""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest

from g6.demo.site import LocalSite, Reply
from g6.errors import LedgerBackendError, StoreBackendError
from g6.home import EvidenceHome
from g6.ledger import (
    Ledger,
    PostgresLedger,
    Receipt,
    copy_ledger,
    open_ledger,
    verify_consistency_proof,
    verify_inclusion_proof,
)
from g6.prove.proofs import checkpoint, consistency, prove
from g6.store import S3BlobStore, copy_blobs, open_store
from tests.backends.raw_sql import raw_sql

WRITERS, EACH, BATCH = 8, 500, 10


def _receipt(i: int, who: int) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{who}/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)


def _writer(root: str, url: str, who: int, keys: object, go: object) -> None:
    home = EvidenceHome(root, fsync=False, ledger_url=url)
    key = home.keys.init()
    keys.put((who, key.public.to_text()))  # type: ignore[attr-defined]
    go.wait()  # type: ignore[attr-defined]  # the log's owner has added this writer by now
    for start in range(0, EACH, BATCH):
        home.ledger.append_many([_receipt(i, who) for i in range(start, start + BATCH)], key)
    home.close()


def test_eight_writer_processes_keep_one_chain_and_prove_with_the_log_key_alone(pg_url: str, tmp_path: Path) -> None:
    """Eight writers on one PostgreSQL ledger: writer 0 owns the log and adds the other seven (key entries
    signed by its key); every writer's receipt then verifies, and proves offline, with writer 0's key alone."""
    from g6.ledger import VerifyKey

    ctx = mp.get_context("spawn")
    go, published = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(tmp_path / f"w{i}"), pg_url, i, published, go))
             for i in range(WRITERS)]
    for p in procs:
        p.start()
    keys = dict(published.get(timeout=120) for _ in procs)
    owner = EvidenceHome(tmp_path / "w0", fsync=False, ledger_url=pg_url)
    log_key = owner.signing_key()
    assert log_key.public.to_text() == keys[0]
    for who in range(1, WRITERS):
        owner.add_writer(VerifyKey.from_text(keys[who]))
    go.set()
    for p in procs:
        p.join(600)
    assert [p.exitcode for p in procs] == [0] * WRITERS
    verifier = EvidenceHome(tmp_path / "verifier", fsync=False, ledger_url=pg_url)
    entries = list(verifier.ledger.entries())
    total = WRITERS * EACH + WRITERS - 1  # the receipts and the seven key entries
    assert [e.seq for e in entries] == list(range(1, total + 1))
    assert all(b.prev_hash == a.entry_hash for a, b in zip(entries, entries[1:], strict=False))
    reads = [e for e in entries if e.receipt.kind == "fetch"]
    signers = {e.receipt.signature.key_id for e in reads if e.receipt.signature}
    assert len(signers) == WRITERS
    # every writer's receipts are all there, each writer's in its own order
    for who in range(WRITERS):
        mine = [e.receipt.request["url"] for e in reads if f"/{who}/" in e.receipt.request["url"]]
        assert mine == [f"https://example.org/{who}/{i}" for i in range(EACH)]
    report = verifier.ledger.verify({log_key.key_id: log_key.public})  # the log's key, pinned, alone
    assert report.ok and report.rows == total and len(report.of("signature")) == total
    assert sum(1 for k in report.keys if not k["root"]) == WRITERS - 1
    # checkpoints and proofs: the owner signs them; every writer's receipt proves with the log key alone
    cp1, _ = checkpoint(owner)
    owner.ledger.append(_receipt(EACH, 0), log_key)
    cp2, _ = checkpoint(owner)
    key = log_key.public
    for who in range(WRITERS):
        writer_key = VerifyKey.from_text(keys[who]).key_id
        mine = [e for e in reads if e.receipt.signature.key_id == writer_key]
        for e in (mine[0], mine[-1]):
            proof, made = prove(owner, e.receipt.receipt_id)
            verdict = verify_inclusion_proof(proof.text(), e.receipt, key, cp2.origin)
            assert not made and verdict.ok, (who, [c.to_json() for c in verdict.checks if not c.ok])
            assert who == 0 or "key entries" in next(c.detail for c in verdict.checks if c.check == "inclusion")
    # a proof whose key entries were taken out no longer proves another writer's receipt with the log key
    other = next(e for e in reads if e.receipt.signature.key_id != log_key.key_id)
    bare = prove(owner, other.receipt.receipt_id)[0]
    stripped = replace(bare, extra=other.receipt.receipt_id.encode()).text()
    report = verify_inclusion_proof(stripped, other.receipt, key, cp2.origin)
    assert [c.check for c in report.checks if not c.ok] == ["receipt_signature"]
    assert verify_consistency_proof(consistency(owner, cp1.size, cp2.size).text(), key, cp1.origin).ok
    assert owner.verify().ok and len(owner.verify().of("checkpoint")) == 2
    owner.close()
    verifier.close()


def test_a_1gib_body_streams_to_s3_with_flat_memory(backend_servers: dict[str, str], s3_url: str,
                                                  s3_env: dict[str, str]) -> None:
    code = f"""
import resource, sys
from g6.store import open_store
store = open_store({s3_url!r}, "unused", env={s3_env!r})
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
block = bytes(range(256)) * 4096
ref = store.put_stream(block for _ in range(1024))
assert ref.size == 1 << 30, ref
assert store.info(ref.blake3) == ref
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(base, peak)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    base_kib, peak_kib = map(int, out.stdout.split())
    assert peak_kib - base_kib < 120 * 1024, (base_kib, peak_kib)  # a few 8 MiB parts, never the body


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port bound by us and never listened on: connecting to it is refused, for sure."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_postgres_down_or_refusing_is_a_typed_error(pg_url: str, dead_port: int) -> None:
    with pytest.raises(LedgerBackendError, match=r"PostgreSQL at postgresql://g6:\*\*\*@127.0.0.1.*running"):
        open_ledger(f"postgresql://g6:secret@127.0.0.1:{dead_port}/postgres", "unused")
    wrong = pg_url.replace("postgresql://g6:", "postgresql://g6:x", 1)
    with pytest.raises(LedgerBackendError, match="password") as e:
        open_ledger(wrong, "unused")
    assert pg_url.split(":")[2].split("@")[0] not in str(e.value)  # the password never shows


def test_s3_down_missing_bucket_and_403_are_typed_errors(s3_env: dict[str, str], s3_url: str,
                                                          dead_port: int) -> None:
    with pytest.raises(StoreBackendError, match="running"):
        open_store(s3_url, "unused", env={**s3_env, "G6_S3_ENDPOINT": f"http://127.0.0.1:{dead_port}"})
    with pytest.raises(StoreBackendError, match="bucket 'no-such-bucket' does not exist"):
        open_store("s3://no-such-bucket/x", "unused", env=s3_env)
    with pytest.raises(StoreBackendError, match="403"):
        open_store(s3_url, "unused", env={**s3_env, "AWS_SECRET_ACCESS_KEY": "wrong"})


def test_a_dropped_connection_writes_nothing(pg_url: str, backend_servers: dict[str, str], tmp_path: Path) -> None:
    home = EvidenceHome(tmp_path / "h", fsync=False, ledger_url=pg_url)
    key = home.keys.init()
    home.ledger.append(_receipt(1, 1), key)
    with psycopg.connect(backend_servers["G6_TEST_PG_URL"], autocommit=True) as admin:
        pid = home.ledger.rows.connection.info.backend_pid  # type: ignore[attr-defined]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(LedgerBackendError, match="PostgreSQL"):
        home.ledger.append_many([_receipt(2, 1), _receipt(3, 1)], key)
    with PostgresLedger(pg_url) as again:
        assert len(again) == 1  # the batch died with its transaction: none of it was written
    home.ledger.append(_receipt(4, 1), key)  # the next call reconnects
    assert len(home.ledger) == 2 and home.verify().ok


@pytest.fixture
def read_only_url(pg_url: str, backend_servers: dict[str, str]) -> str:
    """The same ledger, through a role that may read but not append."""
    PostgresLedger(pg_url).close()
    schema = pg_url.rsplit("%3D", 1)[1]
    role = f"ro_{schema}"
    with psycopg.connect(backend_servers["G6_TEST_PG_URL"], autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'ro'")
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    return pg_url.replace(pg_url.split("@")[0], f"postgresql://{role}:ro", 1)


def test_a_fetch_whose_receipt_cannot_be_appended_says_so(read_only_url: str, s3_url: str, s3_env: dict[str, str],
                                                           tmp_path: Path) -> None:
    site = LocalSite({"/p": Reply(body=b"<html><body><p>kept bytes</p></body></html>"),
                      "/robots.txt": Reply(404, b"")}).start()
    try:
        env = {**os.environ, **s3_env, "G6_HOME": str(tmp_path / "h"), "G6_LEDGER_URL": read_only_url,
               "G6_BLOB_URL": s3_url, "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}
        r = subprocess.run([sys.executable, "-m", "g6", "fetch", site.url("/p")], env=env, capture_output=True,
                           text=True, timeout=120)
    finally:
        site.stop()
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("g6: ") and "was sent, but no receipt was kept" in r.stderr
    assert "permission denied" in r.stderr and "Traceback" not in r.stderr
    store = open_store(s3_url, "unused", env=s3_env)
    assert len(list(store.iter_digests())) == 1  # the bytes are kept, unreferenced: gc's to collect
    with PostgresLedger(read_only_url) as ledger:
        assert len(ledger) == 0


def _local_home(tmp_path: Path, n: int) -> EvidenceHome:
    home = EvidenceHome(tmp_path / "local", fsync=False)
    key = home.keys.init()
    for i in range(n):
        ref = home.store.put(f"page {i}".encode() * (1 + i))
        home.ledger.append(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                                   outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size,
                                   content=ref.to_json()), key)
        if i in (4, 9):
            checkpoint(home)
    return home


def test_ledger_copy_resumes_and_keeps_the_checkpoint_roots(tmp_path: Path, pg_url: str) -> None:
    home = _local_home(tmp_path, 12)
    keys = home.trusted()
    with PostgresLedger(pg_url) as dst:
        stop_after = [0]

        def interrupt(done: int, total: int) -> None:
            stop_after[0] += 1
            if stop_after[0] == 2:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            copy_ledger(home.ledger, dst, keys, batch=3, progress=interrupt)
        assert len(dst) == 6
        report = copy_ledger(home.ledger, dst, keys, batch=3)
        assert (report.already, report.copied, report.checkpoints) == (6, 6, 2)
        assert dst.origin == home.ledger.origin
        assert [(cp.size, cp.root) for cp, _ in dst.checkpoints()] == \
            [(cp.size, cp.root) for cp, _ in home.ledger.checkpoints()]
        assert dst.verify(keys).ok and len(dst.verify(keys).of("checkpoint")) == 2
        assert dst.tree().root() == home.ledger.tree().root()
        again = copy_ledger(home.ledger, dst, keys)
        assert (again.copied, again.already, again.checkpoints) == (0, 12, 0)
    # a ledger that is not a prefix of the source is refused, nothing written
    other = Ledger(tmp_path / "other.sqlite")
    other.append(_receipt(0, 0), home.signing_key())
    with PostgresLedger(pg_url) as dst, pytest.raises(Exception, match="another ledger|not the first"):
        copy_ledger(other, dst, keys)
    home.close()


def test_blob_copy_rehashes_resumes_and_refuses_bad_bytes(tmp_path: Path, s3_url: str,
                                                          s3_env: dict[str, str]) -> None:
    home = _local_home(tmp_path, 5)
    dst = open_store(s3_url, "unused", env=s3_env)
    assert isinstance(dst, S3BlobStore)
    first = copy_blobs(home.store, dst)
    assert (first.copied, first.already, first.ok) == (5, 0, True)
    assert copy_blobs(home.store, dst).already == 5
    bad = home.store.put(b"will be damaged")
    home.store.path(bad.blake3).write_bytes(b"damaged!")
    r = copy_blobs(home.store, dst)
    assert not r.ok and [b.digest for b in r.bad] == [bad.blake3] and not dst.has(bad.blake3)
    home.close()


def test_cli_moves_a_home_to_postgres_and_s3(tmp_path: Path, pg_url: str, s3_url: str,
                                             s3_env: dict[str, str]) -> None:
    home = _local_home(tmp_path, 6)
    home.close()
    env = {**os.environ, **s3_env, "G6_HOME": str(tmp_path / "local")}

    def g6(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "g6", *args], env={**env, **extra}, capture_output=True,
                              text=True, timeout=300)

    r = g6("ledger", "copy", "--to", pg_url)
    assert r.returncode == 0, r.stderr
    assert "copied 6 receipts" in r.stdout and "copy verify ok" in r.stdout
    r = g6("blob", "copy", "--to", s3_url)
    assert r.returncode == 0 and "6 copied" in r.stdout, r.stdout + r.stderr
    before = g6("ledger", "checkpoints", "--json").stdout
    shared = {"G6_LEDGER_URL": pg_url, "G6_BLOB_URL": s3_url}
    r = g6("ledger", "verify", **shared)
    assert r.returncode == 0 and "blob       ok checked=6" in r.stdout, r.stdout + r.stderr
    assert g6("ledger", "checkpoints", "--json", **shared).stdout == before
    r = g6("ledger", "verify", "--key", "ed25519:" + "A" * 43 + "=", **shared)
    assert r.returncode == 1 and "signature  FAILED" in r.stdout  # pinning a stranger's key fails them all


def test_kill_9_during_a_large_s3_put_leaves_no_blob_and_gc_clears_the_upload(s3_url: str,
                                                                              s3_env: dict[str, str]) -> None:
    code = f"""
import sys, time
from g6.store import open_store
store = open_store({s3_url!r}, "unused", env={s3_env!r})
w = store.writer()
block = b"k" * (1 << 20)
for i in range(10):
    w.write(block)  # the 9th MiB sends the first 8 MiB part of a multipart upload to tmp/
print("part sent", flush=True)
time.sleep(600)
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "part sent"
    finally:
        proc.kill()  # SIGKILL: no abort, no cleanup
        proc.wait()
    store = open_store(s3_url, "unused", env=s3_env)
    assert list(store.iter_digests()) == []  # nothing visible under any digest
    ups = store.s3.list_multipart_uploads(Bucket=store.bucket, Prefix=store._key("tmp", "")).get("Uploads", [])
    assert len(ups) == 1
    assert store.gc([], grace_seconds=3600).temp_files_removed == 0  # too young: could still be under way
    assert store.gc([], grace_seconds=0).temp_files_removed == 1
    assert store.s3.list_multipart_uploads(Bucket=store.bucket, Prefix=store._key("tmp", "")).get("Uploads", []) == []


def test_whole_ledger_scans_read_in_pages(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import g6.ledger.backends.postgres as pgmod

    monkeypatch.setattr(pgmod, "_PAGE", 7)
    home = EvidenceHome(tmp_path, fsync=False, ledger_url=pg_url)
    key = home.keys.init()
    home.ledger.append_many([_receipt(i, 0) for i in range(50)], key)
    local = Ledger(tmp_path / "same.sqlite")
    copy_ledger(home.ledger, local, home.trusted())
    report = home.verify()
    assert report.ok and report.rows == 50 and [c.seq for c in report.of("chain")] == list(range(1, 51))
    assert home.ledger.tree().root() == local.tree().root() and len(home.ledger.leaf_hashes()) == 50
    assert [e.seq for e in home.ledger.entries()] == list(range(1, 51))
    raw_sql(home.ledger).execute("DELETE FROM receipts WHERE seq = 29")  # across a page edge
    assert [c.seq for c in home.verify().failures("chain")] == [30]
    home.close()


def test_a_sqlite_ledger_with_s3_blobs_verifies_on_several_cores(tmp_path: Path, s3_url: str,
                                                                 s3_env: dict[str, str]) -> None:
    """Verify's worker processes check blobs with a store they open themselves: a folder store reopens its
    folder, an S3 store (whose client cannot cross a fork) is checked in this process instead. It used to
    hand the workers the s3:// URL as a folder: every blob "missing" on a home of over 256 receipts."""
    home = EvidenceHome(tmp_path / "h", fsync=False, blob_url=s3_url, env=s3_env)
    key = home.keys.init()
    receipts = []
    for i in range(600):
        ref = home.store.put(f"page {i % 7}".encode())
        receipts.append(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                                outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size, content=ref.to_json()))
    home.ledger.append_many(receipts, key)
    for workers in (1, 2):
        report = home.ledger.verify(home.trusted(), home.store, workers=workers)
        assert report.ok, (workers, [str(c) for c in report.failures()][:3])
        assert sum(1 for c in report.of("blob") if c.ok) >= 1
    home.close()
