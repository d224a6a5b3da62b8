"""Signed receipt appends per second vs raw Ed25519 signing + SQLite inserts of the same rows."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from pathlib import Path

import rfc8785

from bench.report import line, line_by_rounds
from g6.ledger import Ledger, Receipt, SigningKey


def _receipts(n: int) -> list[Receipt]:
    return [Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i,
                    content={"blake3": "blake3:" + "a" * 64, "sha256": "sha256:" + "b" * 64, "size": i})
            for i in range(n)]


def _raw(receipts: list[Receipt], key: SigningKey, path: Path, batch: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE r (seq INTEGER PRIMARY KEY, receipt TEXT, sig BLOB)")
    t = time.perf_counter()
    for i in range(0, len(receipts), batch):
        rows = []
        for r in receipts[i : i + batch]:
            body = rfc8785.dumps(r.to_json())
            rows.append((body.decode(), key.sign(body)))
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO r (receipt, sig) VALUES (?, ?)", rows)
        conn.execute("COMMIT")
    dt = time.perf_counter() - t
    conn.close()
    return dt


def _ours(receipts: list[Receipt], key: SigningKey, path: Path, batch: int) -> float:
    ledger = Ledger(path)
    t = time.perf_counter()
    for i in range(0, len(receipts), batch):
        ledger.append_many(receipts[i : i + batch], key)
    dt = time.perf_counter() - t
    ledger.close()
    return dt


def run(quick: bool = False) -> None:
    n_batch, n_single = (2000, 200) if quick else (20000, 2000)
    key = SigningKey.generate()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for label, n, batch in (("batched x1000", n_batch, 1000), ("one per transaction", n_single, 1)):
            rs = _receipts(n)
            ref = _raw(rs, key, root / f"raw-{batch}.db", batch)
            ours = _ours(rs, key, root / f"ours-{batch}.db", batch)
            line(f"ledger append {label} ({n})", n / ours, n / ref, "receipts/s")
        ledger = Ledger(root / "ours-1000.db")
        keys = {key.key_id: key.public}
        import base64

        signed = [(e.receipt.canonical_bytes(), base64.b64decode(e.receipt.signature.value))
                  for e in ledger.entries()]

        def raw_verify() -> float:
            t = time.perf_counter()
            for body, sig in signed:
                key.public.verify(sig, body)
            return time.perf_counter() - t

        def ours_verify(workers: int | None) -> float:
            t = time.perf_counter()
            report = ledger.verify(keys, workers=workers)
            took = time.perf_counter() - t
            assert report.ok and report.rows == len(signed)
            return took

        # interleaved rounds (raw, one process, every core), so a change in the machine's load falls on
        # all three; the best round's figures and the median of the per-round ratios
        cores = os.cpu_count() or 1
        rounds = 1 if quick else 3
        raw, one, every = [], [], []
        for _ in range(rounds):
            raw.append(raw_verify())
            one.append(ours_verify(1))
            every.append(ours_verify(None))
        rows = len(signed)
        line_by_rounds(f"ledger verify ({rows}), 1 process, vs raw Ed25519 verify", rows, one, raw, "receipts/s")
        # the reference for every core is raw verification as if it scaled perfectly over the cores:
        # stricter than any real pool
        line_by_rounds(f"ledger verify ({rows}), {cores} cores, vs raw x {cores}", rows, every,
                       [r / cores for r in raw], "receipts/s")
        # inclusion proofs: build and check one per receipt against a checkpoint, offline
        from g6.ledger.proofs import InclusionProof, verify_inclusion_proof

        cp, note = ledger.checkpoint(key)
        tree = ledger.tree()
        entries = list(ledger.entries())[:500]
        proofs = [(InclusionProof(e.seq - 1, tuple(tree.inclusion_proof(e.seq - 1)), note,
                                  e.receipt.receipt_id.encode()).text(), e.receipt) for e in entries]
        t = time.perf_counter()
        assert all(verify_inclusion_proof(p, r, key.public).ok for p, r in proofs)
        per = (time.perf_counter() - t) / len(proofs)
        print(f"{'inclusion proof verify (tree ' + str(cp.size) + ')':<44} {per * 1e6:,.0f} µs per proof "
              f"(format, receipt signature, checkpoint signature, path)")
        ledger.close()
