"""Cost that follows new work: checkpoint and proofs from the stored tree vs a full rebuild, verify
--since vs a small ledger, full verify vs raw Ed25519 x cores (with peak RSS).

Ledger sizes: --quick 2,000; default 10,000 and 100,000; --scale adds 1,000,000, built once and
cached under bench/.cache/ (gitignored), so later runs measure against it without rebuilding.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from bench.report import best_time, line
from g6.ledger import Ledger, Receipt, SigningKey
from g6.ledger.merkle import MerkleTree
from g6.ledger.note import Checkpoint, parse_note
from g6.ledger.verification.verify_ranges import default_workers

CACHE = Path(__file__).resolve().parent / ".cache"
SINCE = 1_000  # new rows checked by verify --since
BUILD_BATCH = 5_000


def _receipts(start: int, n: int) -> list[Receipt]:
    return [Receipt(kind="fetch", source="web", request={"url": f"https://example.org/page/{i}", "extract": "text"},
                    final_url=f"https://example.org/page/{i}", http_status=200, byte_count=4000 + i % 997,
                    outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED",
                    content={"blake3": "blake3:" + f"{i:064x}", "sha256": "sha256:" + f"{i:064x}",
                             "size": 4000 + i % 997},
                    detail={"content_type": "text/html; charset=utf-8", "title": f"Page {i}"})
            for i in range(start, start + n)]


def _grow(ledger: Ledger, key: SigningKey, upto: int, note_at: int | None = None) -> str | None:
    """Append receipts until the ledger holds ``upto``; returns the checkpoint note signed at ``note_at``."""
    note = None
    have = len(ledger)
    while have < upto:
        n = min(BUILD_BATCH, upto - have)
        if note_at is not None and have < note_at <= have + n:
            n = note_at - have
        ledger.append_many(_receipts(have, n), key)
        have += n
        if note_at is not None and have == note_at:
            note = ledger.checkpoint(key)[1]
    return note


def _cached_1m(key_path: Path, db: Path, note_path: Path) -> tuple[Ledger, SigningKey, str]:
    """The 1M-receipt ledger (and a checkpoint 1,000 rows before its end), built on first use."""
    n = 1_000_000
    if db.exists() and key_path.exists() and note_path.exists():
        return Ledger(db), SigningKey.from_pem(key_path.read_bytes()), note_path.read_text()
    CACHE.mkdir(exist_ok=True)
    tmp = db.with_suffix(".building")
    for p in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
        p.unlink(missing_ok=True)
    key = SigningKey.generate()
    print(f"# building the {n:,}-receipt ledger once in {CACHE} (minutes) ...", flush=True)
    t = time.perf_counter()
    ledger = Ledger(tmp)
    note = _grow(ledger, key, n, note_at=n - SINCE)
    assert note is not None
    ledger.rows.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ledger.close()
    shutil.move(tmp, db)
    key_path.write_bytes(key.to_pem())
    note_path.write_text(note)
    print(f"# built in {time.perf_counter() - t:,.0f} s", flush=True)
    return Ledger(db), key, note


def _tree_figures(ledger: Ledger, key: SigningKey, size: int) -> None:
    rng = random.Random(size)
    idx = rng.randrange(size)
    old = rng.randrange(1, size)
    kept = ledger.tree()
    ours_cp = best_time(lambda: ledger.checkpoint(key), repeat=5)
    ours_proof = best_time(lambda: (ledger.tree().inclusion_proof(idx), ledger.tree().consistency_proof(old)), repeat=5)
    # today's way before this change: every leaf read and hashed again, then the tree built in memory
    t = time.perf_counter()
    rebuilt = MerkleTree(ledger.leaf_hashes())
    rebuild_root = rebuilt.root()
    ref_cp = time.perf_counter() - t
    t = time.perf_counter()
    rebuilt2 = MerkleTree(ledger.leaf_hashes())
    rebuilt2.inclusion_proof(idx)
    rebuilt2.consistency_proof(old)
    ref_proof = time.perf_counter() - t
    assert rebuild_root == kept.root(size) and rebuilt.inclusion_proof(idx) == kept.inclusion_proof(idx, size)
    line(f"checkpoint at {size:,} receipts", ours_cp * 1e3, ref_cp * 1e3, "ms", higher_is_better=False)
    line(f"inclusion + consistency proof at {size:,}", ours_proof * 1e3, ref_proof * 1e3, "ms",
         higher_is_better=False)


VERIFY_SCRIPT = r"""
import json, resource, sys, time
from pathlib import Path
from g6.ledger import Ledger, VerifyKey

def peak_kib():
    # VmHWM starts afresh at exec; ru_maxrss would carry the forking parent's high-water mark
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

def main():
    ledger = Ledger(Path(sys.argv[1]))
    key = VerifyKey.from_text(sys.argv[2])
    before = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    report = ledger.verify({key.key_id: key}, workers=int(sys.argv[3]))
    dt = time.perf_counter() - t
    assert report.ok, json.dumps(report.to_json())[:2000]
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime - before.ru_utime - before.ru_stime + kids.ru_utime + kids.ru_stime
    print(json.dumps({"rows": report.rows, "seconds": dt, "rss_kib": peak_kib(), "children_rss_kib": kids.ru_maxrss,
                      "cpu_seconds": cpu}))

if __name__ == "__main__":
    main()
"""
REPEAT = 5  # pairs of (ours, reference), interleaved so that a busy spell on the shared machine hits both
SAMPLE = 20_000  # rows whose signed messages the raw reference verifies, spread over the whole ledger


def _signed_messages(conn: object, seqs: list[int]) -> list[tuple[bytes, bytes]]:
    """(signed message, signature) of these rows, from their stored text by the checked derivation
    (the cut parsed again and compared, ``unsigned_bytes_of_stored``): what verify checks."""
    from g6.ledger.receipts import unsigned_bytes_of_stored

    out = []
    for i in range(0, len(seqs), 500):
        part = seqs[i:i + 500]
        for (text,) in conn.execute(  # type: ignore[attr-defined]
                f"SELECT receipt FROM receipts WHERE seq IN ({','.join('?' * len(part))}) ORDER BY seq", part):
            data = json.loads(text)
            message = unsigned_bytes_of_stored(text, data)
            assert message is not None
            out.append((message, base64.b64decode(data["signature"]["value"], validate=True)))
    return out


def _raw_verify(raw_key: bytes, msgs: list[tuple[bytes, bytes]], total: int) -> tuple[int, float]:
    """Raw ``cryptography`` Ed25519 verification of ``msgs`` round and round, ``total`` in all:
    (verifications, CPU seconds)."""
    pub = Ed25519PublicKey.from_public_bytes(raw_key)
    c = time.process_time()
    done = 0
    while done < total:
        for m, s in msgs[:total - done]:
            pub.verify(s, m)
        done += min(len(msgs), total - done)
    return done, time.process_time() - c


def _raw_rate(raw_key: bytes, msgs: list[tuple[bytes, bytes]], total: int) -> tuple[float, float]:
    """One core: verifications per second of wall time and per CPU-second."""
    t = time.perf_counter()
    done, cpu = _raw_verify(raw_key, msgs, total)
    return done / (time.perf_counter() - t), done / max(cpu, 1e-9)


def _raw_rate_parallel(raw_key: bytes, msgs: list[tuple[bytes, bytes]], total: int, cores: int) -> float:
    """Raw Ed25519 verifications/s of ``cores`` processes verifying at once, ``total`` in all: what
    the machine gives that many processes right now (forked, as verify's workers are)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    t = time.perf_counter()
    with ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("fork")) as pool:
        done = sum(n for n, _ in pool.map(_raw_verify, [raw_key] * cores, [msgs] * cores,
                                          [-(-total // cores)] * cores))
    return done / (time.perf_counter() - t)


def _spread(ratios: list[float]) -> str:
    return f"median {statistics.median(ratios):.2f}, pairs {min(ratios):.2f}..{max(ratios):.2f}"


def _verify_figures(ledger: Ledger, key: SigningKey, note: str) -> None:
    size = len(ledger)
    keys = {key.key_id: key.public}
    pub = key.public
    cores = default_workers()
    repeat = REPEAT if size <= 100_000 else 3
    print(f"# load average before the verify figures: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    # per core: one range checked in this process vs raw verification of the same rows' signatures
    from g6.ledger import stored_tree
    from g6.ledger.verification import verify_ranges

    m = min(size, verify_ranges.CHUNK)
    start = stored_tree.stored_hash_count(0)
    signed = _signed_messages(ledger.rows.connection, list(range(1, m + 1)))
    ones, raw_ones, cpu_ours, cpu_raw = [], [], [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        r = verify_ranges.verify_range(ledger.rows, keys, None, 1, m, prev=None,
                                       tree_ids=(start, start + 2 * m - m.bit_count()), compact=True)
        ones.append(m / (time.perf_counter() - t))
        cpu_ours.append((time.process_time() - c) / m)
        assert not r.checks and r.rows == m
        w, cpu = _raw_rate(pub.raw, signed, m)
        raw_ones.append(w)
        cpu_raw.append(1 / cpu)
    line(f"verify {m:,} rows in one process (per core)", max(ones), max(raw_ones), "rows/s")
    print(f"{'':<44} reference: raw Ed25519 verification of the same {m:,} signatures, one core; best of {repeat}"
          f" each; ratio of each pair: {_spread([a / b for a, b in zip(ones, raw_ones, strict=True)])}")
    print(f"{'':<44} CPU per row: ours {min(cpu_ours) * 1e6:.1f} µs (median {statistics.median(cpu_ours) * 1e6:.1f})"
          f" vs raw {min(cpu_raw) * 1e6:.1f} µs (median {statistics.median(cpu_raw) * 1e6:.1f}): "
          f"{min(cpu_raw) / min(cpu_ours):.2f}")
    # the whole ledger: `verify` in a fresh process on every core, each run between two references
    # that verify, for as long, what one worker verifies: size / cores signatures
    step = max(1, size // SAMPLE)
    msgs = _signed_messages(ledger.rows.connection, list(range(1, size + 1, step)))
    runs, raws, together = [], [], []
    for _ in range(repeat):
        raws.append(_raw_rate(pub.raw, msgs, -(-size // cores)))
        out = subprocess.run([sys.executable, "-c", VERIFY_SCRIPT, str(ledger.path), pub.to_text(), str(cores)],
                             capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout) | {"load": os.getloadavg()[0]})
        together.append(_raw_rate_parallel(pub.raw, msgs, size, cores))
    rates = [v["rows"] / v["seconds"] for v in runs]
    v = runs[rates.index(max(rates))]
    raw_rate = max(w for w, _ in raws)
    line(f"full verify {size:,} rows on {cores} cores", max(rates), raw_rate * cores, "rows/s")
    pair = [r / (w * cores) for r, (w, _) in zip(rates, raws, strict=True)]
    which = "every row" if step == 1 else f"every {step:,}th row"
    print(f"{'':<44} reference: raw Ed25519 verify of {len(msgs):,} of the same signatures ({which}), "
          f"{-(-size // cores):,} in all, one core, {raw_rate:,.0f}/s x {cores} cores; best of {repeat} each; "
          f"ratio of each pair: {_spread(pair)}")
    loads = ", ".join(f"{r['load']:.1f}" for r in runs)
    print(f"{'':<44} peak RSS {v['rss_kib'] / 1024:,.0f} MiB (parent), {v['children_rss_kib'] / 1024:,.0f} MiB "
          f"(largest worker); 1-min load average after each run: {loads}")
    # the "x cores" reference assumes every core is free for the whole run; on a shared machine
    # they are not, so also: raw verification on as many processes at once, as long as ours
    line(f"full verify {size:,} vs raw on {cores} processes", max(rates), max(together), "rows/s")
    print(f"{'':<44} reference: raw Ed25519 verify in {cores} processes at once, {size:,} in all; best of {repeat}"
          f" each; ratio of each pair: {_spread([r / t for r, t in zip(rates, together, strict=True)])}")
    # CPU time is what other jobs on a shared machine disturb least: CPU per row of the whole verify
    # (parent and workers, interpreter start excluded) against CPU per raw verification
    ours_us = [r["cpu_seconds"] / r["rows"] * 1e6 for r in runs]
    raw_us = [1e6 / c for _, c in raws]
    print(f"{'':<44} CPU per row: ours {min(ours_us):.1f} µs (all processes; median {statistics.median(ours_us):.1f})"
          f" vs raw {min(raw_us):.1f} µs (median {statistics.median(raw_us):.1f}): {min(raw_us) / min(ours_us):.2f}")
    # verify --since: the last SINCE rows of this ledger vs a whole ledger of SINCE rows
    cp = Checkpoint.parse(parse_note(note)[0])
    since = best_time(lambda: ledger.verify(keys, since=cp), repeat=3)
    with tempfile.TemporaryDirectory() as d:
        small = Ledger(Path(d) / "small.sqlite")
        _grow(small, key, SINCE)
        whole = best_time(lambda: small.verify(keys, workers=1), repeat=3)
        small.close()
    line(f"verify --since: {SINCE:,} new rows of {size:,}", since * 1e3, whole * 1e3, "ms", higher_is_better=False)
    print(f"{'':<44} reference: full verify of a {SINCE:,}-row ledger (target ratio >= 0.5)")


def run(quick: bool = False, scale: bool = False) -> None:
    sizes = [2_000] if quick else [10_000, 100_000]
    key = SigningKey.generate()
    with tempfile.TemporaryDirectory() as d:
        ledger = Ledger(Path(d) / "bench.sqlite")
        note = None
        for size in sizes:
            got = _grow(ledger, key, size, note_at=size - SINCE if size == sizes[-1] else None)
            note = got or note
            _tree_figures(ledger, key, size)
        if not scale:
            assert note is not None
            _verify_figures(ledger, key, note)
        ledger.close()
    if scale:
        big, bkey, bnote = _cached_1m(CACHE / "ledger-1m.key", CACHE / "ledger-1m.sqlite", CACHE / "ledger-1m.note")
        # checkpoints signed by earlier runs are removed again, so every run measures the same file
        before = big.rows.connection.execute("SELECT max(id) FROM checkpoints").fetchone()[0]
        _tree_figures(big, bkey, len(big))
        big.rows.connection.execute("DELETE FROM checkpoints WHERE id > ?", (before,))
        _verify_figures(big, bkey, bnote)
        big.close()
