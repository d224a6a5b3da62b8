"""Verifying a ledger in row ranges: every core, flat memory, and only the new rows when asked.

A full verify cuts the rows into ranges of a power of two receipts (``CHUNK``, smaller for a small
ledger so that every core gets several ranges). Each range is checked on its own, in a worker
process (forked when that is safe, see ``_pool_context``) with its own read-only connection: signatures, chain
links inside the range, referenced blobs, and the stored Merkle hashes of the complete subtrees
inside the range (recomputed from the receipts and compared one by one). The parent then checks
what spans ranges: each range's first ``prev_hash`` against the previous range's last entry hash,
and the stored hashes above one range (folded from the ranges' roots). Rows are streamed from
SQLite, and a large ledger keeps only failures and counts, so memory stays flat.

``verify_since`` starts from a signed checkpoint instead: the stored hashes that make up the
checkpoint's tree must fold to its signed root, the checkpoint's last receipt must be included in
it, and from there only the new rows are read and checked, their stored hashes recomputed on top
of the checkpoint's; the new head's root is thus derived from the signed root and the new rows
alone, and an RFC 9162 consistency proof from the stored tree is checked against both roots.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import multiprocessing
import multiprocessing.context
import os
import sqlite3
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from g6.errors import InputError
from g6.ledger import stored_tree
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import ProofError, node_hash, verify_consistency, verify_inclusion
from g6.ledger.note import Checkpoint
from g6.ledger.receipts import (
    Signature,
    check_signature,
    cut_plain_signature,
    plain_signature_member,
    signed_message_fast,
    unsigned_bytes_of_stored,
)

if TYPE_CHECKING:
    from g6.ledger.log import Check
    from g6.store import BlobStore

CHUNK = 1 << 14  # rows per range; a power of two, so each range is whole subtrees of the Merkle tree
PROGRESS_EVERY = 1 << 10  # rows between two progress calls inside a range
MAX_TREE_FAILURES = 5  # per range: one wrong hash is enough to fail; the rest would only be noise


class _LoadedKey:
    """A trusted key parsed once, not once per receipt (VerifyKey.verify re-reads the raw key)."""

    def __init__(self, key: VerifyKey) -> None:
        self.public_key = Ed25519PublicKey.from_public_bytes(key.raw)

    def verify(self, signature: bytes, message: bytes) -> bool:
        try:
            self.public_key.verify(signature, message)
        except InvalidSignature:
            return False
        return True


@dataclass
class RangeResult:
    checks: list[Check] = field(default_factory=list)  # every check, or (compact) the failures only
    passed: Counter[str] = field(default_factory=Counter)  # passing checks not kept as objects
    rows: int = 0
    first: tuple[int, str, str] | None = None  # (seq, receipt_id, stored prev_hash) of the first row
    last: tuple[int, str] | None = None  # (seq, entry_hash) of the last row
    frontier: stored_tree.Frontier = field(default_factory=stored_tree.Frontier)

    def add(self, check: Check, compact: bool) -> None:
        if compact and check.ok:
            self.passed[check.check] += 1
        else:
            self.checks.append(check)


def verify_range(conn: sqlite3.Connection, keys: Mapping[str, VerifyKey], store: BlobStore | None,
                 lo_seq: int, hi_seq: int, *, prev: tuple[int, str] | None,
                 frontier: stored_tree.Frontier | None = None, tree_ids: tuple[int, int] | None = None,
                 compact: bool = False, progress: Callable[[int, int], None] | None = None) -> RangeResult:
    """Check rows with lo_seq <= seq <= hi_seq. ``prev`` is (seq, entry_hash) of the row before, or
    None to take it on trust from the first row (the caller then checks that boundary).
    ``tree_ids`` is the id range [start, end) of the stored hashes these rows' leaves produce on top
    of ``frontier``; None skips the tree check (no stored tree). ``progress(rows checked, rows in the
    range)`` is called every PROGRESS_EVERY rows.

    A row is first tried on the fast path (``_row_passes``), which only ever says "every check
    holds"; a row it does not pass is checked again from scratch by the checked path below, which
    alone words failures, so every verdict is the checked path's."""
    from g6.ledger.log import RECEIPT_COLUMNS, Check, Ledger, entry_hash, stored_bytes
    from g6.ledger.merkle import leaf_hash

    out = RangeResult(frontier=frontier or stored_tree.Frontier())
    loaded: Mapping[str, Any] = {k: _LoadedKey(v) for k, v in keys.items()}
    passes = _row_passes(loaded, json.loads if store is not None else read_json)
    blob_cache: dict[tuple[str, str, int], tuple[bool, str]] = {}
    start, end = tree_ids if tree_ids is not None else (0, 0)
    # the stored hashes of this range by id - start (None: missing), read in one query
    stored: list[bytes | None] = [None] * max(0, end - start)
    if end > start:
        for i, h in conn.execute(f"SELECT id, hash FROM {stored_tree.TABLE} WHERE id >= ? AND id < ? ORDER BY id",
                                 (start, end)):
            stored[int(i) - start] = bytes(h)
    next_id = start
    tree_bad = 0
    # passing checks of a compact range are counted here, not made into Check objects: one row
    # costs a few microseconds besides its Ed25519 verification, and three objects a row were a
    # visible part of that
    n_chain = n_sig = n_blob = 0
    add = out.checks.append
    append_leaf = out.frontier.append
    loads = json.loads
    rows = 0
    span = hi_seq - lo_seq + 1
    cur = conn.execute(f"SELECT {', '.join(RECEIPT_COLUMNS)} FROM receipts WHERE seq >= ? AND seq <= ? ORDER BY seq",
                       (lo_seq, hi_seq))
    for seq, rid_col, kind, outcome, fetched_at, text, stored_prev, stored_hash in cur:
        rows += 1
        if progress is not None and rows % PROGRESS_EVERY == 0:
            progress(rows, span)
        rid = rid_col if isinstance(rid_col, str) else repr(rid_col)  # verdicts name the row as stored
        if out.first is None:
            out.first = (seq, rid, stored_prev)
            if prev is None:
                prev = (seq - 1, stored_prev)
        fast = passes(seq, rid_col, kind, outcome, fetched_at, text, stored_prev, stored_hash, prev)
        if fast is not None:
            raw, data = fast
            if compact:
                n_chain += 1
            else:
                add(Check("chain", True, seq, rid, ""))
        else:
            data = None
            is_text = isinstance(text, str)
            if is_text:
                with contextlib.suppress(ValueError):
                    data = loads(text)
            raw = text.encode() if is_text else stored_bytes(text)
            # the common row, checked inline: in sequence, linked, hashing to its entry hash, its
            # columns those of the receipt; anything else gets the full check and its wording
            if (compact and is_text and seq == prev[0] + 1 and stored_prev == prev[1] and type(data) is dict
                    and entry_hash(seq, stored_prev, raw) == stored_hash and data.get("receipt_id") == rid_col
                    and data.get("kind") == kind and data.get("outcome") == outcome
                    and data.get("fetched_at") == fetched_at):
                n_chain += 1
            else:
                columns = {"receipt_id": rid_col, "kind": kind, "outcome": outcome, "fetched_at": fetched_at}
                out.add(Ledger._chain_check(seq, rid, text, data, stored_prev, stored_hash, prev[0], prev[1],
                                            columns), compact)
        prev = (seq, stored_hash)
        if tree_ids is not None:
            closed = append_leaf(leaf_hash(raw))
            k = next_id - start
            if next_id + len(closed) <= end and stored[k:k + len(closed)] == closed:
                next_id += len(closed)  # the common row: every hash it closes is stored as recomputed
            else:
                for level, h in enumerate(closed):
                    if next_id >= end:
                        break
                    got = stored[next_id - start]
                    if got != h:
                        tree_bad += 1
                        if tree_bad <= MAX_TREE_FAILURES:
                            what = "is missing" if got is None else "differs from the hash of the receipts"
                            add(Check("tree", False, seq, rid, f"stored tree hash {next_id} (level {level}) {what}"))
                    next_id += 1
        else:
            append_leaf(leaf_hash(raw))
        if fast is not None:
            if compact:
                n_sig += 1
            else:
                add(Check("signature", True, seq, rid, ""))
        else:
            try:
                if not isinstance(text, str):
                    raise InputError(f"stored as {type(text).__name__}, not text")
                if not isinstance(data, dict):
                    raise InputError("not a JSON object")
                raw_sig = data.get("signature")
                sig = Signature(raw_sig["alg"], raw_sig["key_id"], raw_sig["value"]) if raw_sig else None
                quick = signed_message_fast(text, data)
                message = quick if quick is not None else _checked_message(text, data)
                if sig is not None and set(raw_sig) != SIGNATURE_MEMBERS:
                    ok, why = False, "the signature object carries members no signature covers"
                elif message is None:
                    ok, why = False, "the stored receipt is not the canonical form of a signed receipt: bytes in " \
                                     "it are covered by no signature"
                else:
                    ok, why = check_signature(sig, loaded, message, "receipt")
                    if not ok and quick is not None:
                        # the fast cut is only ever trusted when it verifies: otherwise the checked
                        # derivation decides, so a failing row gets exactly the verdict it always had
                        slow = _checked_message(text, data)
                        if slow is not None and slow != quick:
                            ok, why = check_signature(sig, loaded, slow, "receipt")
            except (InputError, KeyError, TypeError, ValueError, AttributeError) as e:
                # a malformed row (wrong JSON types, say) is a verdict on that row, never a traceback
                add(Check("signature", False, seq, rid, f"receipt unreadable: {e}"))
                continue
            if ok and compact:
                n_sig += 1
            else:
                add(Check("signature", ok, seq, rid, "" if ok else why))
        content = data.get("content")
        if store is not None and content:
            c = Ledger._blob_check(store, seq, rid, content, blob_cache)
            if c.ok and compact:
                n_blob += 1
            else:
                add(c)
    out.rows = rows
    if out.first is not None:
        out.last = prev
    for name, n in (("chain", n_chain), ("signature", n_sig), ("blob", n_blob)):
        if n:
            out.passed[name] += n
    if tree_ids is not None:
        if tree_bad > MAX_TREE_FAILURES:
            out.checks.append(Check("tree", False, None, None, f"{tree_bad - MAX_TREE_FAILURES} more wrong "
                                                              f"stored hashes in rows {lo_seq}..{hi_seq}"))
        elif not tree_bad:
            out.add(Check("tree", True, None, None, f"stored hashes of rows {lo_seq}..{hi_seq}"), compact)
    return out


SIGNATURE_MEMBERS = {"alg", "key_id", "value"}
DEEP = 1 << 9  # brackets past which a text could nest deeper than json reads (its recursion limit)


def read_json(text: str) -> Any:
    """``json.loads`` for what the fast path reads, by orjson (a third of the time) where orjson and
    json agree: orjson refuses what json would read otherwise (NaN, lone surrogates, numbers past a
    double) and reads big integers as floats, so the fast path compares strings only and hands any
    row it does not pass to json; the one text orjson reads that json refuses nests past json's
    recursion limit, so a text with that many brackets is read by json."""
    if len(text) > 2 * DEEP and text.count("[") + text.count("{") > DEEP:
        return json.loads(text)
    return orjson.loads(text)


def _row_passes(keys: Mapping[str, _LoadedKey], parse: Callable[[str], Any]) -> Callable[..., tuple[bytes, Any] | None]:
    """The fast path: (stored bytes, receipt) of a row every check of which holds, else None.

    It takes only the row every writer of this ledger writes: text columns, in sequence, linked,
    hashing to its entry hash, its columns those of the receipt, a signature object of exactly
    alg/key_id/value by a trusted key, with a strictly base64 value (so the member is written as is,
    see ``plain_signature_member``), over the message ``cut_plain_signature`` cuts, which is
    ``signed_message_fast``'s. Each condition is one the checked path requires for a pass."""
    from g6.ledger.log import entry_hash_prefix

    # a key id the signature member writes as is; the member is prefix + value + '"}'
    fast_keys = {k: (v.public_key, '"signature":{"alg":"ed25519","key_id":"' + k + '","value":"')
                 for k, v in keys.items() if plain_signature_member("ed25519", k, "") is not None}
    domain = entry_hash_prefix()
    a2b = binascii.a2b_base64
    str_ = str

    def passes(seq: int, rid: Any, kind: Any, outcome: Any, fetched_at: Any, text: Any, stored_prev: Any,
               stored_hash: Any, prev: tuple[int, str]) -> tuple[bytes, Any] | None:
        if not (type(text) is str_ and type(rid) is str_ and type(kind) is str_ and type(outcome) is str_
                and type(fetched_at) is str_ and seq == prev[0] + 1 and stored_prev == prev[1]):
            return None
        raw = text.encode()
        h = domain.copy()
        h.update(f"{seq}\n{stored_prev}\n".encode())
        h.update(raw)
        if "sha256:" + h.hexdigest() != stored_hash:
            return None
        try:
            data = parse(text)
        except (ValueError, RecursionError):  # the checked path reads it again and words the verdict
            return None
        if not (type(data) is dict and data.get("receipt_id") == rid and data.get("kind") == kind
                and data.get("outcome") == outcome and data.get("fetched_at") == fetched_at):
            return None
        sig = data.get("signature")
        if type(sig) is not dict or len(sig) != 3 or sig.get("alg") != "ed25519":
            return None
        key_id, value = sig.get("key_id"), sig.get("value")
        if type(key_id) is not str_ or type(value) is not str_:  # (a list is no dict key: a TypeError)
            return None
        key = fast_keys.get(key_id)
        if key is None:
            return None
        try:
            signature = a2b(value, strict_mode=True)  # base64.b64decode(value, validate=True), minus a copy
        except ValueError:
            return None
        cut = cut_plain_signature(text, key[1] + value + '"}')
        if cut is None:
            return None
        try:
            key[0].verify(signature, cut.encode())
        except InvalidSignature:
            return None
        return raw, data

    return passes


def _checked_message(text: str, data: Mapping[str, Any]) -> bytes | None:
    """The signed message by the checked way: the cut parsed again and compared; None when the
    stored text is not in canonical form. Such a text is never rebuilt into what a key signed:
    rebuilding drops members the receipt type does not know (an extra key in a hop, say), so
    unsigned bytes would sit in a row that verifies and in the leaf its proofs cover."""
    return unsigned_bytes_of_stored(text, data)


def _range_tree_ids(lo_seq: int, hi_seq: int, tree_end: int | None) -> tuple[int, int] | None:
    """The id range [start, end) of the stored hashes that rows lo_seq..hi_seq produce (None: no
    stored tree to check), cut at ``tree_end``."""
    if tree_end is None:
        return None
    start = stored_tree.stored_hash_count(lo_seq - 1)
    m = hi_seq - lo_seq + 1  # hashes inside an aligned range of m leaves: 2m - popcount(m)
    return start, min(tree_end, start + 2 * m - m.bit_count())


def _worker(path: str, keys_raw: dict[str, bytes], store_root: str | None, lo_seq: int, hi_seq: int,
            tree_end: int | None, compact: bool) -> RangeResult:
    """One range in a worker process: its own read-only connection, nothing written."""
    from g6.store import BlobStore

    conn = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, timeout=60.0)
    try:
        keys = {k: VerifyKey(v) for k, v in keys_raw.items()}
        store = BlobStore(store_root, fsync=False, create=False) if store_root else None
        return verify_range(conn, keys, store, lo_seq, hi_seq, prev=None, tree_ids=_range_tree_ids(lo_seq, hi_seq,
                                                                                                   tree_end),
                            compact=compact)
    finally:
        conn.close()


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


MIN_CHUNK = 256  # below this a range's own costs (a task, a connection, a result) start to show
RANGES_PER_WORKER = 16  # so a slow range (a busy core, a range of large blobs) does not leave a core idle, and
# the last ranges, which one worker may finish while the others have nothing left, are short


def range_size(last_seq: int, workers: int) -> int:
    """Rows per range: CHUNK, halved (staying a power of two, so ranges stay whole subtrees) until
    every worker gets RANGES_PER_WORKER ranges, but not below MIN_CHUNK. A 100,000-row ledger is then 49
    ranges of 2,048 on 2 cores, and a 2,000-row ledger 8 ranges of 256, not one range on one core."""
    chunk = CHUNK
    while workers > 1 and chunk > MIN_CHUNK and -(-last_seq // chunk) < workers * RANGES_PER_WORKER:
        chunk //= 2
    return chunk


def _no_other_python_thread() -> bool:
    """Whether this process runs no Python thread but this one."""
    return threading.active_count() == 1


def _pool_context() -> multiprocessing.context.BaseContext:
    """fork where it is safe, else spawn.

    fork starts a worker in milliseconds; spawn starts a fresh interpreter that imports g6 again
    (about a second on a busy machine, per worker, and a process pool of a script without a
    ``__main__`` guard even re-runs that script). fork is used when no other Python thread exists,
    so none can hold a lock (logging's, an import lock, a half-done write) that the child would
    inherit held. Native threads idle in a library are not counted: numpy, which sqlite_utils
    imports when installed, starts an OpenBLAS thread pool at import, and OpenBLAS shuts it down
    across fork itself (pthread_atfork); a worker never calls into it. SQLite: the parent has no
    statement open while the pool starts, and a worker never touches the parent's connection; it
    opens its own, read-only, and exits without closing the inherited one."""
    if "fork" in multiprocessing.get_all_start_methods() and _no_other_python_thread():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def verify_ranges(path: Path, conn: sqlite3.Connection, keys: Mapping[str, VerifyKey], store: BlobStore | None,
                  last_seq: int, tree_size: int | None, workers: int | None,
                  progress: Callable[[int, int], None] | None = None) -> tuple[list[Check], Counter[str], int]:
    """Every row from seq 1 to ``last_seq`` in ranges of ``range_size`` rows, then what spans ranges.
    ``tree_size``: the leaves the stored tree covers (checked up to there), or None to skip it.
    ``progress(rows_done, total_rows)`` is called in this process within each range checked here and as each
    worker's range result arrives.
    Returns (checks, passed counts, rows)."""
    from g6.ledger.log import GENESIS, Check

    compact = last_seq > CHUNK
    tree_end = stored_tree.stored_hash_count(min(tree_size, last_seq)) if tree_size is not None else None
    workers = default_workers() if workers is None else max(1, workers)
    chunk = range_size(last_seq, workers)
    bounds = [(lo, min(lo + chunk - 1, last_seq)) for lo in range(1, last_seq + 1, chunk)]
    results: list[RangeResult | None] = [None] * len(bounds)
    done = 0
    if workers == 1 or len(bounds) <= 1:
        keys_map = dict(keys)
        for j, (lo, hi) in enumerate(bounds):
            step = None if progress is None else (lambda n, _, base=done: progress(base + n, last_seq))
            results[j] = verify_range(conn, keys_map, store, lo, hi, prev=None,
                                      tree_ids=_range_tree_ids(lo, hi, tree_end), compact=compact, progress=step)
            done += hi - lo + 1
            if progress is not None:
                progress(done, last_seq)
    else:
        keys_raw = {k: v.raw for k, v in keys.items()}
        root = str(store.root) if store is not None else None
        ctx = _pool_context()
        try:
            with ProcessPoolExecutor(max_workers=min(workers, len(bounds)), mp_context=ctx) as pool:
                with warnings.catch_warnings():  # the workers are forked at the first submit
                    # Python 3.12+ warns on a fork of a process with any native thread (see _pool_context)
                    warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
                    futures = {pool.submit(_worker, str(path), keys_raw, root, lo, hi, tree_end, compact): j
                               for j, (lo, hi) in enumerate(bounds)}
                for f in as_completed(futures):
                    j = futures[f]
                    results[j] = f.result()
                    done += bounds[j][1] - bounds[j][0] + 1
                    if progress is not None:
                        progress(done, last_seq)
        except BrokenProcessPool:
            # no worker could start (e.g. spawn, for a script without a ``__main__`` guard): the
            # same ranges, in this process
            return verify_ranges(path, conn, keys, store, last_seq, tree_size, 1, progress)
    checks: list[Check] = []
    passed: Counter[str] = Counter()
    rows = 0
    prev: tuple[int, str] = (0, GENESIS)
    for r in results:
        assert r is not None  # every range has its result, or the pool raised
        rows += r.rows
        checks.extend(r.checks)
        passed.update(r.passed)
        if r.first is not None:
            seq, rid, stored_prev = r.first
            problems = []
            if seq != prev[0] + 1:
                problems.append(f"sequence jumps from {prev[0]} to {seq} (row removed?)")
            if stored_prev != prev[1]:
                problems.append("prev_hash does not match the row before (row removed, inserted or moved?)")
            if problems:
                checks.append(Check("chain", False, seq, rid, "; ".join(problems)))
            # the range's own chain check of its first row took prev on trust; that is this check
        if r.last is not None:
            prev = r.last
    if tree_end is not None and tree_size is not None:
        checks.extend(_upper_tree_checks(conn, [r for r in results if r is not None], min(tree_size, last_seq),
                                         chunk))
    return checks, passed, rows


def _upper_tree_checks(conn: sqlite3.Connection, results: list[RangeResult], size: int,
                       chunk: int) -> list[Check]:
    """The stored hashes above one range: fold the ranges' roots as leaves at level log2(chunk)."""
    from g6.ledger.log import Check

    base = chunk.bit_length() - 1
    expect: list[tuple[int, bytes, int]] = []  # (id, hash, level)
    stack: list[tuple[int, bytes]] = []
    for j, r in enumerate(results):
        if (j + 1) * chunk > size:
            break  # a part range closes nothing above itself
        if len(r.frontier.stack) != 1 or r.frontier.size != chunk:
            return [Check("tree", False, None, None, f"rows {j * chunk + 1}..{(j + 1) * chunk} are not "
                                                     f"{chunk} receipts, so the stored tree above them cannot match")]
        h, level = r.frontier.stack[0][1], base
        while stack and stack[-1][0] == level:
            h = node_hash(stack.pop()[1], h)
            level += 1
            expect.append((stored_tree.stored_hash_index(level, j >> (level - base)), h, level))
        stack.append((level, h))
    if not expect:
        return []
    got = stored_tree.read_hashes(conn, [i for i, _, _ in expect])
    bad = [(i, lv) for i, h, lv in expect if got.get(i) != h]
    if bad:
        return [Check("tree", False, None, None, f"stored tree hash {i} (level {lv}) differs from the hash of "
                                                 "the receipts") for i, lv in bad[:MAX_TREE_FAILURES]]
    return [Check("tree", True, None, None, f"{len(expect)} stored hashes above {chunk}-row ranges")]


def _tree_count_check(conn: sqlite3.Connection, rows_size: int) -> tuple[int | None, list[Check]]:
    """How many leaves the stored tree covers (None: no table, nothing to check) and whether its
    highest id is that of a whole tree no larger than the ledger. O(log n): a hole below the
    highest id is found where the hashes are compared one by one."""
    from g6.ledger.log import Check

    if not stored_tree.table_exists(conn):
        return None, []
    count = stored_tree.stored_count(conn)
    size = stored_tree.size_from_count(count)
    if size is None:
        return stored_tree.size_from_count(stored_tree.stored_hash_count(rows_size)) or 0, [
            Check("tree", False, None, None, f"the stored tree's highest hash id is {count - 1}: not that of a "
                                             "whole tree (hashes removed or added?)")]
    if size > rows_size:
        return rows_size, [Check("tree", False, None, None, f"the stored tree covers {size} receipts but the "
                                                            f"ledger holds {rows_size} (rows removed from the end?)")]
    return size, []


def verify_since(conn: sqlite3.Connection, keys: Mapping[str, VerifyKey], store: BlobStore | None,
                 origin: str, cp: Checkpoint, last_seq: int,
                 progress: Callable[[int, int], None] | None = None) -> tuple[list[Check], Counter[str], int]:
    """Consistency from checkpoint ``cp`` (already signature-checked) to the head, then the new rows
    (``progress(new rows checked, new rows)``)."""
    from g6.ledger.log import Check

    checks: list[Check] = []
    s = cp.size
    if cp.origin != origin:
        return [Check("consistency", False, None, None, f"the checkpoint is for {cp.origin}, not {origin}")], \
            Counter(), 0
    if s > last_seq:
        return [Check("consistency", False, None, None, f"the checkpoint covers {s} receipts but the ledger "
                                                        f"holds {last_seq} (rows removed from the end?)")], Counter(), 0
    from g6.ledger.log import GENESIS, entry_hash, stored_bytes, stored_leaf_hash

    size, problems = _tree_count_check(conn, last_seq)
    kept = not problems and size is not None and size >= last_seq
    prev: tuple[int, str] = (0, GENESIS)
    if not kept:
        # no usable stored tree (a ledger not written since it was made, or a damaged table): the
        # checkpoint's tree is hashed from its receipts, streamed; the new rows are still all that
        # is checked one by one
        fr = stored_tree.Frontier()
        for seq, text, stored_prev in conn.execute(
                "SELECT seq, receipt, prev_hash FROM receipts WHERE seq <= ? ORDER BY seq", (s,)):
            fr.append(stored_leaf_hash(text))
            prev = (seq, entry_hash(seq, stored_prev, stored_bytes(text)))
        if fr.size != s or fr.root() != cp.root:
            return [Check("consistency", False, None, None, f"the first {s} receipts do not hash to the "
                                                            "checkpoint's root (history rewritten?)")], Counter(), 0
        checks.extend(problems)
    elif s:
        try:
            fr = stored_tree.load_frontier(conn, s)
        except LookupError as e:
            return [Check("consistency", False, None, None, str(e))], Counter(), 0
        if fr.root() != cp.root:
            return [Check("consistency", False, None, None, f"the first {s} receipts' stored hashes do not hash "
                                                            "to the checkpoint's root (history rewritten?)")], \
                Counter(), 0
        row = conn.execute("SELECT seq, receipt_id, receipt, prev_hash, entry_hash FROM receipts WHERE seq = ?",
                           (s,)).fetchone()
        tree = stored_tree.StoredTree(lambda ids: stored_tree.read_hashes(conn, ids), s)
        try:
            if row is None:
                raise ProofError(f"receipt {s} is gone")
            verify_inclusion(s - 1, s, stored_leaf_hash(row[2]), tree.inclusion_proof(s - 1), cp.root)
        except (ProofError, LookupError) as e:
            return [Check("consistency", False, s, row[1] if row else None,
                          f"the checkpoint's last receipt is not the one in the ledger: {e}")], Counter(), 0
        prev = (s, entry_hash(s, row[3], stored_bytes(row[2])))
        if prev[1] != row[4]:
            checks.append(Check("chain", False, s, row[1], "entry hash does not match the row's content"))
    else:
        fr = stored_tree.Frontier()
    compact = last_seq - s > CHUNK
    r = verify_range(conn, dict(keys), store, s + 1, last_seq, prev=prev, frontier=fr,
                     tree_ids=(stored_tree.stored_hash_count(s), stored_tree.stored_hash_count(last_seq))
                     if kept else None, compact=compact, progress=progress)
    if progress is not None:
        progress(r.rows, last_seq - s)
    checks.extend(r.checks)
    new_root = r.frontier.root()
    if not kept or not s:  # the new root was computed on top of the checkpoint's own tree: nothing to prove
        checks.append(Check("consistency", True, None, None, f"size {s} -> {last_seq} (hashed from the receipts)"))
    else:
        tree = stored_tree.StoredTree(lambda ids: stored_tree.read_hashes(conn, ids), last_seq)
        try:
            verify_consistency(s, last_seq, tree.consistency_proof(s, last_seq) if s != last_seq else [],
                               cp.root, new_root)
            checks.append(Check("consistency", True, None, None, f"size {s} -> {last_seq}"))
        except (ProofError, LookupError) as e:
            checks.append(Check("consistency", False, None, None, f"size {s} -> {last_seq}: {e}"))
    return checks, r.passed, r.rows
