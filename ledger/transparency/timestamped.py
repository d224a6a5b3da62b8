"""``ledger verify --tsa-root``: the RFC 3161 tokens kept beside a ledger's checkpoints, checked offline.

Two verdicts join the report:

``timestamp``  one per kept token: every check of ``g6.ledger.transparency.timestamp.verify_token`` against the
               pinned roots, over the note body of the checkpoint it is kept beside. No token kept at
               all is a failure (roots were pinned to check something). Its detail says what a good
               token proves: "checkpoint N: existed before <genTime> (TSA <name>)".
``fetched_at`` a token that holds proves receipts 1..N existed before its genTime (give or take the
               token's accuracy). A covered receipt whose ``fetched_at`` is later than the earliest
               such genTime plus its accuracy (``TokenReport.margin``: a TSA that gives genTime to
               the second with no accuracy may have cut up to 1 s off) says its writer's clock was
               wrong, or the receipt was dated afterwards: a failure naming it. The receipts that
               hold are counted.

The ledger is read through its public face (``checkpoints``, ``kept_beside``, ``entries``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

from cryptography import x509

from g6.errors import G6Error
from g6.ledger.chain import Check, LedgerEntry, LedgerVerifyReport
from g6.ledger.note import Checkpoint, parse_note
from g6.ledger.transparency.timestamp import KIND, MAX_TOKEN, TokenReport, iso, verify_token


class _Ledger(Protocol):
    def checkpoints(self) -> list[tuple[Checkpoint, str]]: ...

    def kept_beside(self, cp: Checkpoint, kind: str | None = None) -> list[tuple[str, str, str]]: ...

    def entries(self) -> Any: ...


def _decode(value: str) -> bytes | None:
    if not isinstance(value, str) or len(value) > MAX_TOKEN * 2:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def token_reports(ledger: _Ledger, roots: Sequence[x509.Certificate]
                  ) -> list[tuple[Checkpoint, str, TokenReport]]:
    """(checkpoint, TSA name, report) for every token kept beside a checkpoint of ``ledger``."""
    out = []
    seen = set()
    for cp, note in ledger.checkpoints():
        if (cp.size, cp.root) in seen:  # the same tree checkpointed again: its tokens are kept once for both
            continue
        seen.add((cp.size, cp.root))
        body = parse_note(note)[0].encode("utf-8")
        for _kind, name, value in ledger.kept_beside(cp, KIND):
            raw = _decode(value)
            report = verify_token(raw if raw is not None else b"", body, roots)
            out.append((cp, name, replace(report, tsa=name)))  # the name it was kept under; the token's in .signer
    return out


def _fetched(entry: LedgerEntry) -> datetime | None:
    return _utc(entry.receipt.fetched_at)


def _utc(text: Any) -> datetime | None:
    try:
        t = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return t.astimezone(UTC) if t.tzinfo else t.replace(tzinfo=UTC)


def backdated(report: TokenReport, covered: Iterable[tuple[int, str, Any]]) -> str | None:
    """Why a token over a checkpoint would fail ``fetched_at`` once its root is pinned: its genTime plus
    its accuracy (``TokenReport.margin``) is earlier than a receipt the checkpoint covers, given as
    (seq, receipt id, fetched_at); None when it is not. The one rule ``timestamp_checks`` applies, asked
    before a token is kept (a TSA whose clock is behind, or a receipt dated ahead)."""
    if report.gen_time is None:
        return None
    bound = report.gen_time + report.margin
    worst: tuple[datetime, int, str] | None = None
    for seq, rid, fetched_at in covered:
        at = _utc(fetched_at)
        if at is not None and at > bound and (worst is None or at > worst[0]):
            worst = (at, seq, rid)
    if worst is None:
        return None
    at, seq, rid = worst
    margin = f" (+{report.margin.total_seconds():g} s accuracy)" if report.margin else ""
    return (f"genTime {iso(report.gen_time)}{margin} is earlier than fetched_at {iso(at)} of receipt seq={seq} {rid}, "
            "which the checkpoint covers: the TSA's clock is behind, or the receipt is dated ahead")


def timestamp_checks(ledger: _Ledger, roots: Sequence[x509.Certificate]
                     ) -> tuple[list[Check], dict[str, int], list[dict[str, Any]]]:
    """The ``timestamp`` and ``fetched_at`` verdicts (see the module), the ``fetched_at`` passes counted,
    and a JSON record per token."""
    try:
        reports = token_reports(ledger, roots)
    except G6Error as e:
        return [Check("timestamp", False, None, None, f"the checkpoints could not be read: {e}")], {}, []
    checks: list[Check] = []
    records: list[dict[str, Any]] = []
    for cp, name, r in reports:
        where = f"checkpoint {cp.size}"
        checks.append(Check("timestamp", r.ok, None, None, f"{where}: {r.summary()}" if r.ok else
                            f"{where}, TSA {name}: {r.summary()}"))
        records.append({"checkpoint_size": cp.size, "checkpoint_root": cp.root.hex(), **r.to_json()})
    if not reports:
        checks.append(Check("timestamp", False, None, None,
                            "no RFC 3161 token is kept beside any checkpoint (`ledger checkpoint --tsa URL`)"))
    # the earliest genTime that covers each receipt: tokens by size, the minimum from the largest down
    bounds = sorted(((cp.size, r.latest, r.gen_time, name) for cp, name, r in reports if r.ok and r.latest),
                    reverse=True)
    if not bounds:
        return checks, {}, records
    # (size, the earliest bound over tokens of that size or more: genTime + margin, genTime, its TSA)
    cover: list[tuple[int, datetime, datetime, str]] = []
    best: tuple[datetime, datetime, str] | None = None
    for size, latest, gen, name in bounds:
        if best is None or latest < best[0]:
            best = (latest, gen, name)
        cover.append((size, *best))
    cover.reverse()  # ascending size
    late, held = [], 0
    try:
        for e in ledger.entries():
            hit = next(((latest, gen, name, size) for size, latest, gen, name in cover if e.seq <= size), None)
            if hit is None:
                continue
            t, gen, name, size = hit
            at = _fetched(e)
            if at is None:
                late.append(Check("fetched_at", False, e.seq, e.receipt.receipt_id,
                                  f"fetched_at {str(e.receipt.fetched_at)[:40]!r} is not a time"))
            elif at > t:
                late.append(Check("fetched_at", False, e.seq, e.receipt.receipt_id,
                                  f"fetched_at {iso(at)} is later than genTime {iso(gen)}"
                                  + (f" (+{(t - gen).total_seconds():g} s accuracy)" if t != gen else "")
                                  + f" of the token (TSA {name}) over checkpoint {size}, which covers it"))
            else:
                held += 1
    except G6Error as e:
        late.append(Check("fetched_at", False, None, None, f"the receipts could not be read: {e}"))
    return checks + late, {"fetched_at": held}, records


def with_timestamps(report: LedgerVerifyReport, ledger: _Ledger,
                    roots: Sequence[x509.Certificate]) -> LedgerVerifyReport:
    """``report`` with the ``timestamp`` and ``fetched_at`` verdicts added."""
    checks, passed, records = timestamp_checks(ledger, roots)
    merged: Mapping[str, int] = {**report.passed, **passed}
    return replace(report, checks=report.checks + tuple(checks), passed=merged, timestamps=tuple(records))
