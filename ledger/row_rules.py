"""What each row must say beyond its chain and signature: its place in the log, and a believable time.

**Binding.** A receipt appended by this version signs ``log = {"origin", "seq"}``: it must name this
log and the row it stands in, so a genuine receipt replayed as a second row, or copied from another
log, fails (``binding``). Receipts signed before binding existed have no ``log`` and pass under the
old rule, counted apart; once a row is bound, every later row must be (an unbound row after a bound
one is a key holder choosing the old rule to hide a replay).

**Clocks.** ``fetched_at`` must be RFC 3339 in UTC (``YYYY-MM-DDTHH:MM:SS[.fraction]Z``), as the
receipt schema says; a string that is not is a failed ``time`` verdict on that row. Beyond that a
signer's clock cannot be proven wrong, only made to look odd, so these are warnings (``--strict-time``
makes them failures): a row dated more than ``FUTURE`` after the verifier's clock; a row more than
``BACKWARD`` before the previous row of the same writer (signing key); a row whose time is more than
``ID_SKEW`` from the time its receipt id was made at (``rcpt_`` ids begin with their milliseconds).

A range collects its verdicts in a ``RowRules``; ``join_rules`` adds what spans ranges (a bound row in
an earlier range, a writer's previous row in an earlier range).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from g6.ledger.chain import Check
from g6.ledger.receipts import receipt_id_millis

FUTURE = 300.0  # seconds a row may be dated after the verifier's clock (clocks drift)
BACKWARD = 600.0  # seconds a writer's row may be dated before its previous one (fetches end out of order)
ID_SKEW = 600.0  # seconds between a receipt's time and its id's (a slow fetch, a batch's queue)
KEEP = 8  # rows named per kind of problem per range; the rest are counted
_RFC3339_UTC = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z")


_last_second: list[tuple[str, float]] = [("", 0.0)]  # the last whole second parsed (rows mostly share it)


def parse_utc(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 UTC time, or None for anything else (a real date only)."""
    if type(value) is not str or not _RFC3339_UTC.fullmatch(value):
        return None
    head, frac = value[:19], value[20:-1]
    last = _last_second[0]  # one tuple, swapped whole: a thread never sees one second's head with another's time
    if head == last[0]:
        t = last[1]
    else:
        try:
            t = datetime.fromisoformat(head).replace(tzinfo=UTC).timestamp()
        except ValueError:  # 2026-02-30, 25:00:00
            return None
        _last_second[0] = (head, t)
    return t + (int(frac) / 10 ** len(frac) if frac else 0.0)


@dataclass
class RowRules:
    """One range's binding and clock verdicts (see the module docstring)."""

    origin: str
    now: float
    bound_before: bool = False  # a row before this range is bound (``--since``: the checkpoint's last)
    compact: bool = False
    checks: list[Check] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)  # bound, unbound, time_ok, warnings by kind
    first_bound: int | None = None
    early_unbound: list[tuple[int, str]] = field(default_factory=list)  # unbound rows before any bound one
    early_unbound_count: int = 0
    first_of: dict[str, tuple[int, str, float]] = field(default_factory=dict)  # writer -> its first row here
    last_of: dict[str, tuple[int, str, float]] = field(default_factory=dict)  # writer -> its last row here
    _kept: Counter[str] = field(default_factory=Counter)
    _listed: set[int] = field(default_factory=set)  # rows with a clock warning listed (counted once each)

    def _note(self, check: Check, kind: str) -> None:
        self._kept[kind] += 1
        if self._kept[kind] <= KEEP:
            self.checks.append(check)
            if check.warning and check.seq is not None and check.seq not in self._listed:
                self._listed.add(check.seq)
                self.counts["time_listed"] += 1
        else:
            self.counts["more_" + kind] += 1

    def row(self, seq: int, rid: str, data: dict[str, Any]) -> None:
        self._binding(seq, rid, data.get("log"))
        t = parse_utc(data.get("fetched_at"))
        if t is None:
            self._note(Check("time", False, seq, rid, f"fetched_at {str(data.get('fetched_at'))[:40]!r} is not an "
                                                      "RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SS[.fraction]Z)"), "format")
            return
        self.counts["time_ok"] += 1
        if t > self.now + FUTURE:
            self._warn(seq, rid, "future", f"dated {data['fetched_at']}, {t - self.now:,.0f} s after this verify's "
                                           "clock")
        made = receipt_id_millis(rid)
        if made is not None and abs(made / 1000 - t) > ID_SKEW:
            self._warn(seq, rid, "id_time", f"dated {data['fetched_at']}, {abs(made / 1000 - t):,.0f} s from the time "
                                            "its receipt id was made")
        sig = data.get("signature")
        writer = sig.get("key_id") if type(sig) is dict else None
        if type(writer) is str:
            last = self.last_of.get(writer)
            if last is not None:
                self.backward(last, (seq, rid, t), writer)
            else:
                self.first_of[writer] = (seq, rid, t)
            self.last_of[writer] = (seq, rid, t)

    def _binding(self, seq: int, rid: str, log: Any) -> None:
        if log is None:
            self.counts["unbound"] += 1
            if self.first_bound is not None or self.bound_before:
                self.counts["binding_bad"] += 1
                self._note(Check("binding", False, seq, rid, "an unbound receipt after bound ones (a receipt made "
                                                             "under the old rule, or replayed from before binding)"),
                           "binding")
            else:
                self.early_unbound_count += 1
                if len(self.early_unbound) < KEEP:
                    self.early_unbound.append((seq, rid))
            return
        if type(log) is dict and len(log) == 2 and log.get("origin") == self.origin and type(log.get("seq")) is int \
                and log["seq"] == seq:
            self.counts["bound"] += 1
            if self.first_bound is None:
                self.first_bound = seq
            return
        where = (f"{log.get('origin')} #{log.get('seq')}" if type(log) is dict else repr(log)[:60])
        self.counts["binding_bad"] += 1
        self._note(Check("binding", False, seq, rid, f"signed for {where}, but it stands at {self.origin} #{seq} "
                                                     "(replayed, moved or copied from another log)"), "binding")

    def _warn(self, seq: int, rid: str, kind: str, detail: str) -> None:
        self.counts["warn_" + kind] += 1
        self._note(Check("time", True, seq, rid, detail, warning=True), "warn_" + kind)

    def backward(self, before: tuple[int, str, float], row: tuple[int, str, float], writer: str) -> None:
        if before[2] - row[2] > BACKWARD:
            self._warn(row[0], row[1], "backward", f"dated {before[2] - row[2]:,.0f} s before the previous receipt "
                                                   f"of the same writer ({writer}, seq {before[0]})")


def join_rules(ranges: Sequence[RowRules],
               strict_time: bool = False) -> tuple[list[Check], Counter[str], dict[str, int]]:
    """Every range's verdicts, plus what spans them: (checks, passing checks counted by name (``binding``,
    ``time``), {"bound", "unbound", "warnings"}); with ``strict_time`` a clock warning is a failure."""
    checks: list[Check] = []
    counts: Counter[str] = Counter()
    bound_seen = False
    last_of: dict[str, tuple[int, str, float]] = {}
    for r in ranges:
        if bound_seen and r.early_unbound_count:
            counts["binding_bad"] += r.early_unbound_count
            for seq, rid in r.early_unbound:
                checks.append(Check("binding", False, seq, rid, "an unbound receipt after bound ones (a receipt "
                                                                "made under the old rule, or replayed from before "
                                                                "binding)"))
            if r.early_unbound_count > len(r.early_unbound):
                checks.append(Check("binding", False, None, None, f"{r.early_unbound_count - len(r.early_unbound)} "
                                                                  "more unbound receipts after bound ones"))
        for writer, first in r.first_of.items():
            if writer in last_of:
                r.backward(last_of[writer], first, writer)
        last_of.update(r.last_of)
        bound_seen = bound_seen or r.first_bound is not None or r.bound_before
        checks.extend(r.checks)
        counts.update(r.counts)
    for kind in ("binding", "format"):
        if counts["more_" + kind]:
            checks.append(Check("binding" if kind == "binding" else "time", False, None, None,
                                f"{counts['more_' + kind]} more such rows"))
    warned = sum(v for k, v in counts.items() if k.startswith("warn_"))
    if strict_time:
        checks = [Check(c.check, False, c.seq, c.receipt_id, c.detail + " (--strict-time)") if c.warning else c
                  for c in checks]
    more_warnings = sum(v for k, v in counts.items() if k.startswith("more_warn_"))
    if more_warnings:
        checks.append(Check("time", not strict_time, None, None, f"{more_warnings} more clock warnings",
                            warning=not strict_time))
    passed: Counter[str] = Counter()
    passed["binding"] = counts["bound"] + counts["unbound"] - counts["binding_bad"] - sum(
        1 for c in checks if c.check == "binding" and c.ok)
    passed["time"] = counts["time_ok"] - counts["time_listed"]
    return checks, passed, {"bound": counts["bound"], "unbound": counts["unbound"], "warnings": warned}
