"""``ledger verify``: every check of a ledger, over any backend, as separate verdicts.

A full verify checks every row in ranges (``g6.ledger.verification.verify_ranges``: signatures, chain links and
the columns beside each receipt, referenced blobs, the stored Merkle hashes), then what no range
sees on its own: rows outside the sequence 1..head, the stored tree's size, every checkpoint the
ledger issued, and the checkpoints kept away from it (``g6.ledger.verification.kept``).

``verify_since`` starts from a signed checkpoint instead: the stored hashes that make up the
checkpoint's tree must fold to its signed root, the checkpoint's last receipt must be included in
it, and from there only the new rows are read and checked, their stored hashes recomputed on top
of the checkpoint's; the new head's root is thus derived from the signed root and the new rows
alone, and an RFC 9162 consistency proof from the stored tree is checked against both roots.

Everything here reads through the ledger's reading face (``g6.ledger.backends.rows.LedgerView``) and its
backend's rows, so it holds for every backend; a database that cannot be read is a failed
``database`` verdict, never a traceback.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from g6.ledger import stored_tree
from g6.ledger.backends.rows import LedgerRows, LedgerView
from g6.ledger.chain import GENESIS, Check, LedgerVerifyReport, entry_hash, stored_bytes, stored_leaf_hash
from g6.ledger.keyring import KeyTimeline, timeline
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import MerkleTree, ProofError, verify_consistency, verify_inclusion
from g6.ledger.note import Checkpoint, NoteError, parse_note, signed_by
from g6.ledger.redactions import Redactions, redactions_of
from g6.ledger.row_rules import join_rules
from g6.ledger.verification import verify_ranges
from g6.ledger.verification.kept import check_kept_checkpoints
from g6.ledger.wacz_keys import KIND as WACZ_KEY_KIND
from g6.ledger.wacz_keys import wacz_key_checks
from g6.store import BlobBackend

Found = tuple[list[Check], Counter[str], int, dict[str, int]]  # (checks, passing counted, rows, rule stats)
DUPLICATES_NAMED = 8  # duplicated receipt ids named in the verdict; the rest are counted


@dataclass(frozen=True)
class Trust:
    """Whom a verify trusts, and why: the roots of the key timeline (``g6.ledger.keyring``), the
    verifier's clock, and whether a clock warning fails."""

    keys: Mapping[str, VerifyKey]
    why: Mapping[str, str] = field(default_factory=dict)  # key id -> "pinned with --key", "in keys/trusted"…
    now: float | None = None
    strict_time: bool = False

    def roots(self) -> dict[str, tuple[VerifyKey, str]]:
        return {kid: (k, self.why.get(kid, "trusted by the caller")) for kid, k in self.keys.items()}


def verify_ledger(ledger: LedgerView, keys: Mapping[str, VerifyKey] | Trust, store: BlobBackend | None = None,
                  kept: Sequence[tuple[str, str]] = (), *, workers: int | None = None,
                  since: Checkpoint | None = None,
                  progress: Callable[[int, int], None] | None = None) -> LedgerVerifyReport:
    """See ``g6.ledger.log.Ledger.verify``."""
    trust = keys if isinstance(keys, Trust) else Trust(keys)
    keys = trust.keys
    rows = ledger.rows
    if rows.broken is not None:
        return LedgerVerifyReport(0, (Check("database", False, None, None, rows.broken),
                                      *check_kept_checkpoints(ledger, kept, keys)))
    checks: list[Check] = []
    passed: dict[str, int] = {}
    n = 0
    try:
        # one read transaction: the head, the stored tree's size, the rows and the checkpoints are read
        # from one state of a ledger others may be appending to (each statement on its own would see
        # a later state than the one before it: a tree "larger than the ledger", a false failure).
        # Worker processes read only rows up to this head and hashes up to this tree's size, which no
        # append ever changes.
        with rows.read_snapshot():
            n, passed, stats, tl, red = _verify_in_snapshot(ledger, trust, store, kept, workers, since, progress,
                                                            checks)
    except rows.unreadable as e:
        checks.append(Check("database", False, None, None, f"ledger database unreadable: {e}"))
        return LedgerVerifyReport(n, tuple(checks), passed)
    return LedgerVerifyReport(n, tuple(checks), passed, stats, tuple(tl.described()) if tl is not None else (),
                              redactions=red)


def _verify_in_snapshot(ledger: LedgerView, trust: Trust, store: BlobBackend | None,
                        kept: Sequence[tuple[str, str]], workers: int | None, since: Checkpoint | None,
                        progress: Callable[[int, int], None] | None,
                        checks: list[Check]) -> tuple[int, dict[str, int], dict[str, int], KeyTimeline | None,
                                                      dict[str, int]]:
    """``verify_ledger``'s work, inside its read transaction; appends to ``checks``, returns (rows checked,
    passing checks counted, binding and clock counts, the key timeline, the redactions' counts)."""
    rows = ledger.rows
    problem = rows.layout_problem()
    if problem is not None:
        checks += [Check("database", False, None, None, problem), *check_kept_checkpoints(ledger, kept, trust.keys)]
        return 0, {}, {}, None, {}
    last_seq, _ = ledger.head()
    origin = ledger.origin
    tl = timeline(trust.roots(), ((r[0], r[1], r[5]) for r in rows.select(kind="key")), origin=origin)
    checks.extend(tl.problems)
    if tl.entries and not tl.problems:
        checks.append(Check("keys", True, None, None, f"{len(tl.entries)} key entries, each signed by a key valid "
                                                      "where it stands"))
    checks.extend(tl.notes)  # retirements of keys this verify never trusted: said, not failed
    # the P-384 keys the log binds for signing WACZ exports: each entry well formed (its signature is checked
    # with every row's, by the writer keys above)
    checks.extend(wacz_key_checks((r[0], r[1], r[5]) for r in rows.select(kind=WACZ_KEY_KIND)))
    red = redactions_of(rows, tl, origin)  # what a missing body may be instead of damage (g6.ledger.redactions)
    checks.extend(red.checks())
    stray = _rows_outside_sequence(rows)
    if stray is not None:
        checks.append(stray)
    checks.extend(duplicate_checks(rows))
    rules = verify_ranges.RuleSettings(origin, trust.now if trust.now is not None else time.time(), trust.strict_time)
    if since is not None:
        found, counts, n, stats = verify_since(rows, tl, store, origin, since, last_seq, progress, rules, red)
    else:
        tree_size, found = tree_count_check(rows, last_seq)
        more, counts, n, stats = verify_ranges.verify_ranges(rows, tl, store, last_seq, tree_size, workers, progress,
                                                            rules, red)
        found += more
    checks.extend(found)
    tree_ok = not any(c.check == "tree" and not c.ok for c in checks)
    checks.extend(checkpoint_checks(ledger, tl, trust_stored_tree=tree_ok))
    checks.extend(check_kept_checkpoints(ledger, kept, tl.keys()))
    return n, dict(counts), stats, tl, red.counts(store)


def duplicate_checks(rows: LedgerRows) -> list[Check]:
    """Receipt ids are unique, and the engine keeps them so: a genuine receipt replayed as a second
    row, or two rows with one id, fail here whatever else holds."""
    out = []
    if rows.receipt_ids_unique():  # the engine refuses a second row with an id: nothing to count
        return [Check("duplicates", True, None, None, "every receipt id once, kept unique by the database")]
    dups = rows.duplicate_receipt_ids(DUPLICATES_NAMED + 1)
    for rid, count in dups[:DUPLICATES_NAMED]:
        out.append(Check("duplicates", False, None, rid if isinstance(rid, str) else repr(rid),
                         f"receipt id held by {count} rows (a replayed or copied receipt)"))
    if len(dups) > DUPLICATES_NAMED:
        out.append(Check("duplicates", False, None, None, "more receipt ids held by several rows"))
    out.append(Check("duplicates", False, None, None, "the receipts table has no unique index on receipt_id "
                                                      "(dropped?): the database no longer refuses a replay"))
    return out


def _rows_outside_sequence(rows: LedgerRows) -> Check | None:
    """Verify walks the rows 1..head (a gap in it is a chain failure); a row below 1 (seq 0, a
    negative seq) would be served by ``get`` and ``entries`` without ever being checked."""
    count, low = rows.rows_below_one()
    if not count:
        return None
    rows = "row" if count == 1 else "rows"
    return Check("chain", False, low if isinstance(low, int) else None, None,
                 f"{count} {rows} below seq 1 (lowest {low}): rows outside 1..head are never checked "
                 "(planted or renumbered rows)")


def tree_count_check(rows: LedgerRows, rows_size: int) -> tuple[int | None, list[Check]]:
    """How many leaves the stored tree covers (None: no table, nothing to check) and whether its
    highest id is that of a whole tree no larger than the ledger. O(log n): a hole below the
    highest id is found where the hashes are compared one by one."""
    if not rows.tree_table_exists():
        return None, []
    count = rows.hash_count()
    size = stored_tree.size_from_count(count)
    if size is None:
        return stored_tree.size_from_count(stored_tree.stored_hash_count(rows_size)) or 0, [
            Check("tree", False, None, None, f"the stored tree's highest hash id is {count - 1}: not that of a "
                                             "whole tree (hashes removed or added?)")]
    if size > rows_size:
        return rows_size, [Check("tree", False, None, None, f"the stored tree covers {size} receipts but the "
                                                            f"ledger holds {rows_size} (rows removed from the end?)")]
    return size, []


def checkpoint_checks(ledger: LedgerView, keys: Mapping[str, VerifyKey] | KeyTimeline, *,
                      trust_stored_tree: bool = False) -> list[Check]:
    """Every checkpoint issued must be signed and match the tree's root at its size now:
    this is what catches rows removed from the end, or an old row rewritten."""
    found = ledger.rows.checkpoint_notes()
    if not found:
        return []
    # the stored hashes only once verify has recomputed them; else the receipts themselves
    tree = ledger.tree() if trust_stored_tree else MerkleTree(ledger.leaf_hashes())
    origin = ledger.origin
    out = []
    for cid, size, note in found:
        label = f"checkpoint {cid} (size {size})"
        if not isinstance(note, str):
            out.append(Check("checkpoint", False, None, None, f"{label}: stored as {type(note).__name__}"))
            continue
        try:
            cp = Checkpoint.parse(parse_note(note)[0])
            signer = next((k for k in _signers_at(keys, cp.size) if signed_by(note, k, cp.origin)), None)
            if signer is None:
                out.append(Check("checkpoint", False, None, None, f"{label}: not signed by a trusted key"))
                continue
            if cp.origin != origin:
                out.append(Check("checkpoint", False, None, None, f"{label}: origin {cp.origin} is not {origin}"))
            elif cp.size > len(tree):
                out.append(Check("checkpoint", False, None, None,
                                 f"{label}: the ledger now holds only {len(tree)} receipts (rows removed?)"))
            elif tree.root(cp.size) != cp.root:
                out.append(Check("checkpoint", False, None, None,
                                 f"{label}: the first {cp.size} receipts no longer hash to its root"))
            else:
                out.append(Check("checkpoint", True, None, None, label))
        except NoteError as e:
            out.append(Check("checkpoint", False, None, None, f"{label}: {e}"))
    return out


def _signers_at(keys: Mapping[str, VerifyKey] | KeyTimeline, size: int) -> list[VerifyKey]:
    """The keys that may sign a checkpoint of ``size`` receipts: valid at its last receipt."""
    if not isinstance(keys, KeyTimeline):
        return list(keys.values())
    return [life.key for life in keys.lives.values() if life.valid_at(max(size, 1))]


class _Inconsistent(Exception):
    """The ledger does not extend the checkpoint ``--since`` starts from: the one verdict given."""

    def __init__(self, detail: str, seq: int | None = None, receipt_id: str | None = None) -> None:
        super().__init__(detail)
        self.check = Check("consistency", False, seq, receipt_id, detail)


Start = tuple[list[Check], stored_tree.Frontier, tuple[int, str]]  # (checks so far, tree, (seq, entry hash))


def verify_since(rows: LedgerRows, keys: KeyTimeline, store: BlobBackend | None, origin: str,
                 cp: Checkpoint, last_seq: int, progress: Callable[[int, int], None] | None = None,
                 rule_settings: verify_ranges.RuleSettings | None = None,
                 redactions: Redactions | None = None) -> Found:
    """Consistency from checkpoint ``cp`` (already signature-checked) to the head, then the new rows
    (``progress(new rows checked, new rows)``)."""
    s = cp.size
    try:
        if cp.origin != origin:
            raise _Inconsistent(f"the checkpoint is for {cp.origin}, not {origin}")
        if s > last_seq:
            raise _Inconsistent(f"the checkpoint covers {s} receipts but the ledger holds {last_seq} "
                                "(rows removed from the end?)")
        size, problems = tree_count_check(rows, last_seq)
        kept = not problems and size is not None and size >= last_seq
        if not kept:
            checks, fr, prev = _start_from_receipts(rows, cp)
            checks.extend(problems)
        elif s:
            checks, fr, prev = _start_from_stored_tree(rows, cp)
        else:
            checks, fr, prev = [], stored_tree.Frontier(), (0, GENESIS)
    except _Inconsistent as e:
        return [e.check], Counter(), 0, {}
    compact = last_seq - s > verify_ranges.CHUNK
    rules = rule_settings.for_range(compact, bound_before=_bound(rows, s)) if rule_settings is not None else None
    r = verify_ranges.verify_range(rows, keys, store, s + 1, last_seq, prev=prev, frontier=fr,
                                   tree_ids=(stored_tree.stored_hash_count(s), stored_tree.stored_hash_count(last_seq))
                                   if kept else None, compact=compact, progress=progress, rules=rules,
                                   redactions=redactions)
    if progress is not None:
        progress(r.rows, last_seq - s)
    checks.extend(r.checks)
    new_root = r.frontier.root()
    if not kept or not s:  # the new root was computed on top of the checkpoint's own tree: nothing to prove
        checks.append(Check("consistency", True, None, None, f"size {s} -> {last_seq} (hashed from the receipts)"))
    else:
        tree = stored_tree.StoredTree(rows.read_hashes, last_seq)
        try:
            verify_consistency(s, last_seq, tree.consistency_proof(s, last_seq) if s != last_seq else [],
                               cp.root, new_root)
            checks.append(Check("consistency", True, None, None, f"size {s} -> {last_seq}"))
        except (ProofError, LookupError) as e:
            checks.append(Check("consistency", False, None, None, f"size {s} -> {last_seq}: {e}"))
    stats: dict[str, int] = {}
    if rules is not None:
        more, counted, stats = join_rules([rules], rule_settings.strict_time if rule_settings else False)
        checks.extend(more)
        r.passed.update(counted)
    return checks, r.passed, r.rows, stats


def _bound(rows: LedgerRows, seq: int) -> bool:
    """Whether the row at ``seq`` is bound to its place (then every row after it must be)."""
    row = rows.row_at(seq) if seq else None
    try:
        data = json.loads(row[5]) if row is not None and isinstance(row[5], str) else None
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("log") is not None


def _start_from_receipts(rows: LedgerRows, cp: Checkpoint) -> Start:
    """No usable stored tree (a ledger not written since it was made, or a damaged table): the
    checkpoint's tree is hashed from its receipts, streamed; the new rows are still all that is
    checked one by one."""
    s = cp.size
    fr = stored_tree.Frontier()
    prev: tuple[int, str] = (0, GENESIS)
    for seq, _rid, _kind, _outcome, _at, text, stored_prev, _hash in rows.rows_between(None, s):
        fr.append(stored_leaf_hash(text))
        prev = (seq, entry_hash(seq, stored_prev, stored_bytes(text)))
    if fr.size != s or fr.root() != cp.root:
        raise _Inconsistent(f"the first {s} receipts do not hash to the checkpoint's root (history rewritten?)")
    return [], fr, prev


def _start_from_stored_tree(rows: LedgerRows, cp: Checkpoint) -> Start:
    """The checkpoint's tree from the stored hashes (O(log n) rows), and its last receipt included."""
    s = cp.size
    try:
        fr = stored_tree.load_frontier(rows, s)
    except LookupError as e:
        raise _Inconsistent(str(e)) from None
    if fr.root() != cp.root:
        raise _Inconsistent(f"the first {s} receipts' stored hashes do not hash to the checkpoint's root "
                            "(history rewritten?)")
    row = rows.row_at(s)
    tree = stored_tree.StoredTree(rows.read_hashes, s)
    try:
        if row is None:
            raise ProofError(f"receipt {s} is gone")
        verify_inclusion(s - 1, s, stored_leaf_hash(row[5]), tree.inclusion_proof(s - 1), cp.root)
    except (ProofError, LookupError) as e:
        raise _Inconsistent(f"the checkpoint's last receipt is not the one in the ledger: {e}", s,
                            row[1] if row else None) from None
    checks: list[Check] = []
    prev = (s, entry_hash(s, row[6], stored_bytes(row[5])))
    if prev[1] != row[7]:
        checks.append(Check("chain", False, s, row[1], "entry hash does not match the row's content"))
    return checks, fr, prev
