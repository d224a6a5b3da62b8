"""Verifying a ledger in row ranges: every core, flat memory, one row checked fast or checked fully.

A full verify cuts the rows into ranges of a power of two receipts (``CHUNK``, smaller for a small ledger so that
every core gets several ranges). Each range is checked on its own, in a worker process (forked when that is safe,
see ``_pool_context``) with its own read-only rows (the backend's ``worker_opener``; a backend without one is
checked range by range in this process): signatures, chain links inside the range, referenced blobs, and the stored
Merkle hashes of the complete subtrees inside the range (recomputed from the receipts and compared one by one). The
parent then checks what spans ranges: each range's first ``prev_hash`` against the previous range's last entry hash,
and the stored hashes above one range (folded from the ranges' roots). Rows are streamed, and a large ledger keeps
only failures and counts, so memory stays flat.

What a range is checked against (the checkpoint of ``--since``, the ledger's own checkpoints, the
kept ones) is ``g6.ledger.verification.verify``'s.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import multiprocessing
import multiprocessing.context
import os
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from g6.errors import InputError
from g6.ledger import stored_tree
from g6.ledger.backends.rows import LedgerRows
from g6.ledger.chain import GENESIS, Check, chain_check, entry_hash, entry_hash_prefix, stored_bytes
from g6.ledger.keyring import FOREVER, KeyTimeline
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import leaf_hash
from g6.ledger.receipts import (
    Signature,
    check_signature,
    cut_plain_signature,
    named_blobs,
    plain_signature_member,
    signed_message_fast,
    unsigned_bytes_of_stored,
)
from g6.ledger.redactions import ENTRY_KINDS, Redactions
from g6.ledger.row_rules import RowRules, join_rules
from g6.ledger.verification.verify_blobs import blob_check
from g6.store import BlobBackend

CHUNK = 1 << 14  # rows per range; a power of two, so each range is whole subtrees of the Merkle tree
PROGRESS_EVERY = 1 << 10  # rows between two progress calls inside a range
MAX_TREE_FAILURES = 5  # per range: one wrong hash is enough to fail; the rest would only be noise


class _LoadedKey:
    """A trusted key parsed once, not once per receipt (VerifyKey.verify re-reads the raw key), with the rows it may
    sign (its window in the log's key timeline; every row by default)."""

    def __init__(self, key: VerifyKey, valid_from: int = 0, valid_to: int = FOREVER) -> None:
        self.public_key = Ed25519PublicKey.from_public_bytes(key.raw)
        self.valid_from, self.valid_to = valid_from, valid_to

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
    rules: RowRules | None = None  # the range's binding and clock verdicts (``g6.ledger.row_rules``)

    def add(self, check: Check, compact: bool) -> None:
        if compact and check.ok:
            self.passed[check.check] += 1
        else:
            self.checks.append(check)


def verify_range(rows: LedgerRows, keys: KeyTimeline | Mapping[str, VerifyKey], store: BlobBackend | None,
                 lo_seq: int, hi_seq: int, *, prev: tuple[int, str] | None,
                 frontier: stored_tree.Frontier | None = None, tree_ids: tuple[int, int] | None = None,
                 compact: bool = False, progress: Callable[[int, int], None] | None = None,
                 rules: RowRules | None = None, redactions: Redactions | None = None) -> RangeResult:
    """Check rows with lo_seq <= seq <= hi_seq. ``prev`` is (seq, entry_hash) of the row before, or None to take it on
    trust from the first row (the caller then checks that boundary). ``tree_ids`` is the id range [start, end) of
    the stored hashes these rows' leaves produce on top of ``frontier``; None skips the tree check (no stored tree).
    ``progress(rows checked, rows in the range)`` is called every PROGRESS_EVERY rows; ``redactions``: see
    ``blob_check``.

    A row is first tried on the fast path (``_row_passes``), which only ever says "every check holds"; a row it does
    not pass is checked again from scratch by the checked path (``_RangeCheck``), which alone words failures, so
    every verdict is the checked path's. The common row stays in this loop: one row costs a few microseconds besides
    its Ed25519 verification, and a call or an object more per row is a visible part of that."""
    timeline = keys if isinstance(keys, KeyTimeline) else KeyTimeline.of_roots(
        {k: (v, "given") for k, v in keys.items()})
    rc = _RangeCheck(rows, timeline, store, tree_ids, compact, frontier, redactions)
    out = rc.out
    out.rules = rules
    row_rule = rules.row if rules is not None else None
    passes = _row_passes(rc.loaded, json.loads if store is not None else read_json)
    add = out.checks.append
    append_leaf = out.frontier.append
    stored, start, end = rc.stored, rc.start, rc.end
    n_fast = 0  # rows of a compact range the fast path passed: a chain and a signature check each
    n = 0
    span = hi_seq - lo_seq + 1
    for seq, rid_col, kind, outcome, fetched_at, text, stored_prev, stored_hash in rows.rows_between(lo_seq, hi_seq):
        n += 1
        if progress is not None and n % PROGRESS_EVERY == 0:
            progress(n, span)
        rid = rid_col if isinstance(rid_col, str) else repr(rid_col)  # verdicts name the row as stored
        if out.first is None:
            out.first = (seq, rid, stored_prev)
            if prev is None:
                prev = (seq - 1, stored_prev)
        fast = passes(seq, rid_col, kind, outcome, fetched_at, text, stored_prev, stored_hash, prev)
        if fast is not None:
            raw, data = fast
            if compact:
                n_fast += 1
            else:
                add(Check("chain", True, seq, rid, ""))
        else:
            raw, data = rc.chain(seq, rid, (rid_col, kind, outcome, fetched_at), text, stored_prev, stored_hash, prev)
        prev = (seq, stored_hash)
        closed = append_leaf(leaf_hash(raw))
        if tree_ids is not None:
            k = rc.next_id - start
            if rc.next_id + len(closed) <= end and stored[k:k + len(closed)] == closed:
                rc.next_id += len(closed)  # the common row: every hash it closes is stored as recomputed
            else:
                rc.tree_mismatch(closed, seq, rid)
        if fast is not None:
            if not compact:
                add(Check("signature", True, seq, rid, ""))
        elif not rc.signature(seq, rid, text, data):
            continue  # the receipt cannot be read: its verdict is given, and it names no blob
        if row_rule is not None:
            row_rule(seq, rid, data)
        if data.get("kind") == "key" and seq not in timeline.entries:
            add(Check("keys", False, seq, rid, "a key entry the key pass did not read (its kind column says "
                                               "otherwise?): its key's window is unknown"))
        if data.get("kind") in ENTRY_KINDS and redactions is not None and seq not in redactions.entries:
            add(Check("redaction", False, seq, rid, "an entry the redaction pass did not read (kind column?)"))
        if store is not None:
            for what, ref in named_blobs(data):  # the body, a capture's blobs, the certificates of hops over TLS
                rc.blob(store, seq, rid, ref, what)
    return rc.finish(n, prev, lo_seq, hi_seq, n_fast)


class _RangeCheck:
    """One range's checked path and what it keeps between rows: the loaded keys, the stored
    hashes of the range, the blobs already checked, and the passing checks counted."""

    def __init__(self, rows: LedgerRows, timeline: KeyTimeline, store: BlobBackend | None,
                 tree_ids: tuple[int, int] | None, compact: bool, frontier: stored_tree.Frontier | None,
                 redactions: Redactions | None = None) -> None:
        self.out, self.redactions = RangeResult(frontier=frontier or stored_tree.Frontier()), redactions
        self.timeline = timeline
        self.loaded: Mapping[str, Any] = {k: _LoadedKey(life.key, life.valid_from, life.valid_to)
                                          for k, life in timeline.lives.items()}
        self.compact = compact
        self.tree = tree_ids is not None
        self.blob_cache: dict[tuple[str, str, int], tuple[bool, str]] = {}
        self.start, self.end = tree_ids if tree_ids is not None else (0, 0)
        # the stored hashes of this range by id - start (None: missing), read in one query
        self.stored: list[bytes | None] = [None] * max(0, self.end - self.start)
        if self.end > self.start:
            for i, h in rows.hashes_between(self.start, self.end):
                self.stored[int(i) - self.start] = bytes(h)
        self.next_id = self.start
        self.tree_bad = 0
        # passing checks of a compact range are counted, not made into Check objects
        self.n_chain = self.n_sig = self.n_blob = 0

    def chain(self, seq: int, rid: str, columns: tuple[Any, Any, Any, Any], text: Any, stored_prev: Any,
              stored_hash: Any, prev: tuple[int, str]) -> tuple[bytes, Any]:
        """The chain check of a row the fast path did not pass; its stored bytes and JSON (or None)."""
        data = None
        is_text = isinstance(text, str)
        if is_text:
            with contextlib.suppress(ValueError):
                data = json.loads(text)
        raw = text.encode() if is_text else stored_bytes(text)
        rid_col, kind, outcome, fetched_at = columns
        # the common row, checked inline: in sequence, linked, hashing to its entry hash, its
        # columns those of the receipt; anything else gets the full check and its wording
        if (self.compact and is_text and seq == prev[0] + 1 and stored_prev == prev[1] and type(data) is dict
                and entry_hash(seq, stored_prev, raw) == stored_hash and data.get("receipt_id") == rid_col
                and data.get("kind") == kind and data.get("outcome") == outcome
                and data.get("fetched_at") == fetched_at):
            self.n_chain += 1
        else:
            named = {"receipt_id": rid_col, "kind": kind, "outcome": outcome, "fetched_at": fetched_at}
            self.out.add(chain_check(seq, rid, text, data, stored_prev, stored_hash, prev[0], prev[1], named),
                         self.compact)
        return raw, data

    def tree_mismatch(self, closed: list[bytes], seq: int, rid: str) -> None:
        """The hashes a row closes, compared one by one with the stored ones (some differ or lack)."""
        for level, h in enumerate(closed):
            if self.next_id >= self.end:
                break
            got = self.stored[self.next_id - self.start]
            if got != h:
                self.tree_bad += 1
                if self.tree_bad <= MAX_TREE_FAILURES:
                    what = "is missing" if got is None else "differs from the hash of the receipts"
                    self.out.checks.append(Check("tree", False, seq, rid,
                                                 f"stored tree hash {self.next_id} (level {level}) {what}"))
            self.next_id += 1

    def signature(self, seq: int, rid: str, text: Any, data: Any) -> bool:
        """The signature check of a row the fast path did not pass; False when the receipt cannot
        be read at all (a malformed row is a verdict on that row, never a traceback)."""
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
                ok, why = check_signature(sig, self.loaded, message, "receipt")
                if not ok and quick is not None:
                    # the fast cut is only ever trusted when it verifies: otherwise the checked
                    # derivation decides, so a failing row gets exactly the verdict it always had
                    slow = _checked_message(text, data)
                    if slow is not None and slow != quick:
                        ok, why = check_signature(sig, self.loaded, slow, "receipt")
            if ok and sig is not None:
                late = self.timeline.why_not(sig.key_id, seq)  # a genuine signature, by a key not valid here
                if late is not None:
                    ok, why = False, late
        except (InputError, KeyError, TypeError, ValueError, AttributeError) as e:
            self.out.checks.append(Check("signature", False, seq, rid, f"receipt unreadable: {e}"))
            return False
        if ok and self.compact:
            self.n_sig += 1
        else:
            self.out.checks.append(Check("signature", ok, seq, rid, "" if ok else why))
        return True

    def blob(self, store: BlobBackend, seq: int, rid: str, content: Mapping[str, Any], what: str = "content") -> None:
        c = blob_check(store, seq, rid, content, self.blob_cache, what, self.redactions)
        if c.ok and self.compact:
            self.n_blob += 1
        else:
            self.out.checks.append(c)

    def finish(self, rows: int, prev: tuple[int, str] | None, lo_seq: int, hi_seq: int, n_fast: int) -> RangeResult:
        out = self.out
        out.rows = rows
        if out.first is not None:
            out.last = prev
        for name, n in (("chain", n_fast + self.n_chain), ("signature", n_fast + self.n_sig), ("blob", self.n_blob)):
            if n:
                out.passed[name] += n
        if self.tree:
            if self.tree_bad > MAX_TREE_FAILURES:
                out.checks.append(Check("tree", False, None, None, f"{self.tree_bad - MAX_TREE_FAILURES} more "
                                                                  f"wrong stored hashes in rows {lo_seq}..{hi_seq}"))
            elif not self.tree_bad:
                out.add(Check("tree", True, None, None, f"stored hashes of rows {lo_seq}..{hi_seq}"), self.compact)
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
    ``signed_message_fast``'s, by a key valid at that row (its window in the key timeline). Each condition
    is one the checked path requires for a pass."""
    # a key id the signature member writes as is; the member is prefix + value + '"}'
    fast_keys = {k: (v.public_key, '"signature":{"alg":"ed25519","key_id":"' + k + '","value":"', v.valid_from,
                     v.valid_to)
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
        if key is None or not key[2] <= seq <= key[3]:
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


def _worker(opener: Callable[[], LedgerRows], timeline: KeyTimeline,
            store_opener: Callable[[], BlobBackend] | None, lo_seq: int, hi_seq: int, tree_end: int | None,
            compact: bool, rules: RowRules, redactions: Redactions | None = None) -> RangeResult:
    """One range in a worker process: its own read-only rows and store, nothing written."""
    rows = opener()
    try:
        store = store_opener() if store_opener is not None else None
        return verify_range(rows, timeline, store, lo_seq, hi_seq, prev=None, compact=compact, rules=rules,
                            tree_ids=_range_tree_ids(lo_seq, hi_seq, tree_end), redactions=redactions)
    finally:
        rows.close()


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


MIN_CHUNK = 256  # below this a range's own costs (a task, a connection, a result) start to show
RANGES_PER_WORKER = 16  # so a slow range (a busy core, a range of large blobs) does not leave a core idle, and
# the last ranges, which one worker may finish while the others have nothing left, are short


def range_size(last_seq: int, workers: int) -> int:
    """Rows per range: CHUNK, halved (staying a power of two, so ranges stay whole subtrees) until every worker gets
    RANGES_PER_WORKER ranges, but not below MIN_CHUNK. A 100,000-row ledger is then 49 ranges of 2,048 on 2 cores,
    and a 2,000-row ledger 8 ranges of 256, not one range on one core."""
    chunk = CHUNK
    while workers > 1 and chunk > MIN_CHUNK and -(-last_seq // chunk) < workers * RANGES_PER_WORKER:
        chunk //= 2
    return chunk


def _no_other_python_thread() -> bool:
    """Whether this process runs no Python thread but this one."""
    return threading.active_count() == 1


def _pool_context() -> multiprocessing.context.BaseContext:
    """fork where it is safe, else spawn.

    fork starts a worker in milliseconds; spawn starts a fresh interpreter that imports g6 again (about a second on
    a busy machine, per worker, and a process pool of a script without a ``__main__`` guard even re-runs that
    script). fork is used when no other Python thread exists, so none can hold a lock (logging's, an import lock, a
    half-done write) that the child would inherit held. Native threads idle in a library are not counted: numpy,
    which sqlite_utils imports when installed, starts an OpenBLAS thread pool at import, and OpenBLAS shuts it down
    across fork itself (pthread_atfork); a worker never calls into it. SQLite: the parent has no statement open
    while the pool starts, and a worker never touches the parent's connection; it opens its own, read-only, and
    exits without closing the inherited one."""
    if "fork" in multiprocessing.get_all_start_methods() and _no_other_python_thread():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class RuleSettings:
    """What the row rules of a full verify need: the log's origin, the verifier's clock, strictness."""

    origin: str
    now: float
    strict_time: bool = False

    def for_range(self, compact: bool, bound_before: bool = False) -> RowRules:
        return RowRules(self.origin, self.now, bound_before=bound_before, compact=compact)


def verify_ranges(rows: LedgerRows, keys: KeyTimeline, store: BlobBackend | None, last_seq: int,
                  tree_size: int | None, workers: int | None,
                  progress: Callable[[int, int], None] | None = None,
                  rule_settings: RuleSettings | None = None,
                  redactions: Redactions | None = None) -> tuple[list[Check], Counter[str], int, dict[str, int]]:
    """Every row from seq 1 to ``last_seq`` in ranges of ``range_size`` rows, then what spans ranges. ``tree_size``:
    the leaves the stored tree covers (checked up to there), or None to skip it. ``workers``: processes (default:
    every core; 1, or a backend without a ``worker_opener``: this one). ``progress(rows_done, total_rows)`` is
    called in this process within each range checked here and as each worker's range result arrives.
    ``rule_settings``: check each row's binding and clock (``g6.ledger.row_rules``). Returns (checks, passed counts,
    rows, {"bound", "unbound", "warnings"})."""
    compact = last_seq > CHUNK
    tree_end = stored_tree.stored_hash_count(min(tree_size, last_seq)) if tree_size is not None else None
    opener = rows.worker_opener()
    if store is not None and store.worker_opener() is None:
        opener = None  # the blobs can only be read here, so every range is checked here
    workers = 1 if opener is None else default_workers() if workers is None else max(1, workers)
    chunk = range_size(last_seq, workers)
    bounds = [(lo, min(lo + chunk - 1, last_seq)) for lo in range(1, last_seq + 1, chunk)]
    job = _Job(keys, store, tree_end, compact, last_seq, progress, rule_settings, redactions)
    if opener is None or workers == 1 or len(bounds) <= 1:
        results = _ranges_here(rows, bounds, job)
    else:
        try:
            results = _ranges_in_workers(opener, bounds, job, workers)
        except BrokenProcessPool:
            # no worker could start (e.g. spawn, for a script without a ``__main__`` guard): the
            # same ranges, in this process
            return verify_ranges(rows, keys, store, last_seq, tree_size, 1, progress, rule_settings, redactions)
    checks, passed, n = _join_ranges(results)
    stats: dict[str, int] = {}
    if rule_settings is not None:
        more, counted, stats = join_rules([r.rules for r in results if r.rules is not None],
                                          rule_settings.strict_time)
        checks.extend(more)
        passed.update(counted)
    if tree_end is not None and tree_size is not None:
        checks.extend(stored_tree.upper_tree_checks(rows, [r.frontier for r in results], min(tree_size, last_seq),
                                                    chunk, MAX_TREE_FAILURES))
    return checks, passed, n, stats


@dataclass(frozen=True)
class _Job:
    """What every range of one verify shares."""

    timeline: KeyTimeline
    store: BlobBackend | None
    tree_end: int | None
    compact: bool
    last_seq: int
    progress: Callable[[int, int], None] | None
    rule_settings: RuleSettings | None
    redactions: Redactions | None = None

    def rules(self) -> RowRules | None:
        return self.rule_settings.for_range(self.compact) if self.rule_settings is not None else None


def _ranges_here(rows: LedgerRows, bounds: Sequence[tuple[int, int]], job: _Job) -> list[RangeResult]:
    results = []
    done = 0
    progress = job.progress
    for lo, hi in bounds:
        step = None if progress is None else (lambda n, _, base=done: progress(base + n, job.last_seq))
        results.append(verify_range(rows, job.timeline, job.store, lo, hi, prev=None,
                                    tree_ids=_range_tree_ids(lo, hi, job.tree_end), compact=job.compact,
                                    progress=step, rules=job.rules(), redactions=job.redactions))
        done += hi - lo + 1
        if progress is not None:
            progress(done, job.last_seq)
    return results


WAKE = 0.5  # seconds between the checks for a Ctrl-C while the ranges are verified (as g6.fetch.host_pool.WAKE)


def _ranges_in_workers(opener: Callable[[], LedgerRows], bounds: Sequence[tuple[int, int]], job: _Job,
                       workers: int) -> list[RangeResult]:
    results: list[RangeResult | None] = [None] * len(bounds)
    store_opener = job.store.worker_opener() if job.store is not None else None
    with ProcessPoolExecutor(max_workers=min(workers, len(bounds)), mp_context=_pool_context()) as pool:
        with warnings.catch_warnings():  # the workers are forked at the first submit
            # Python 3.12+ warns on a fork of a process with any native thread (see _pool_context)
            warnings.filterwarnings("ignore", "This process .* is multi-threaded", DeprecationWarning)
            futures = {pool.submit(_worker, opener, job.timeline, store_opener, lo, hi, job.tree_end, job.compact,
                                   job.rules(), job.redactions): j
                       for j, (lo, hi) in enumerate(bounds)}
        try:
            _collect(futures, bounds, job, results)
        except BaseException:
            _end_workers(pool)  # before the pool's own exit, which would wait for every range to end
            raise
    out = [r for r in results if r is not None]
    assert len(out) == len(bounds)  # every range has its result, or the pool raised
    return out


def _collect(futures: dict[Any, int], bounds: Sequence[tuple[int, int]], job: _Job,
             results: list[RangeResult | None]) -> None:
    """Each range's result in its place, as the ranges end, with the progress after each."""
    done = 0
    pending = set(futures)
    # only the main thread runs signal handlers: it wakes every WAKE s, so a Ctrl-C another thread noted is raised
    step = WAKE if threading.current_thread() is threading.main_thread() else None
    while pending:
        finished, pending = wait(pending, step, return_when=FIRST_COMPLETED)
        for f in sorted(finished, key=futures.__getitem__):
            j = futures[f]
            results[j] = f.result()
            done += bounds[j][1] - bounds[j][0] + 1
            if job.progress is not None:
                job.progress(done, job.last_seq)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Ctrl-C, or a range that raised: the other ranges' workers are killed, not waited for; they only read, so
    nothing is lost. (Without the private ``_processes``, the pool's exit waits for them as before.)"""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.kill()  # not SIGTERM: a handler the worker inherited could turn it into an error it reports


def _join_ranges(results: Sequence[RangeResult]) -> tuple[list[Check], Counter[str], int]:
    """The ranges' checks and counts, and each range's first ``prev_hash`` against the last entry
    hash of the range before (each range took its first row's on trust)."""
    checks: list[Check] = []
    passed: Counter[str] = Counter()
    rows = 0
    prev: tuple[int, str] = (0, GENESIS)
    for r in results:
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
        if r.last is not None:
            prev = r.last
    return checks, passed, rows
