"""RFC 3161 tokens a bundle carries (``timestamps/<size>-<n>.json``), checked by ``g6 bundle verify
--tsa-root FILE`` against the TSA roots the grader pins.

Each token is over the note body of the log's checkpoint of that size, and that checkpoint must be of
the bundle's history: the bundle's own ``checkpoint.note``, or the checkpoint a consistency proof the
bundle carries ties to it (:class:`g6.prove.bundle_history.History`, its signature verified with the
key that verified the bundle's). A token over anything else proves nothing here.

Two verdicts come of it: ``timestamps`` among the bundle checks (every token carried holds; roots pinned
but no token carried is a failure), and ``trusted_time`` on each citation: a token that holds over a
checkpoint covering the cited receipt (its leaf index below the checkpoint's size) proves the receipt
existed before its genTime, "existed before <genTime> (TSA <name>)"; none is a failure, and so is a
receipt whose ``fetched_at`` is later than that genTime plus the token's accuracy.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509

from g6.ledger.note import NoteError, parse_note
from g6.ledger.transparency.timestamp import MAX_TOKEN, iso, verify_token
from g6.prove.bundle_history import TIMESTAMP, History
from g6.prove.bundle_report import BundleCheck
from g6.prove.bundle_zip import RECORD_ERRORS, quoted, strict_json


@dataclass(frozen=True, slots=True)
class _Held:
    size: int
    gen_time: datetime
    latest: datetime  # genTime plus the token's accuracy
    tsa: str


def _sizes(name: str) -> tuple[int, int]:
    m = TIMESTAMP.fullmatch(name)
    assert m is not None
    return int(m.group(1)), int(m.group(2))


class BundleTimestamps:
    """The tokens among ``names`` (members read with ``read``), checked against ``roots``."""

    def __init__(self, read: Callable[[str], bytes], history: History | None, names: Iterable[str],
                 roots: Sequence[x509.Certificate], not_checked: str) -> None:
        self.held: list[_Held] = []
        self.lines: list[tuple[bool, str]] = []
        self.roots = tuple(roots)
        for name in sorted((n for n in names if TIMESTAMP.fullmatch(n)), key=_sizes):
            ok, why = self._one(name, read, history, not_checked)
            self.lines.append((ok, why))

    def _one(self, name: str, read: Callable[[str], bytes], history: History | None,
             not_checked: str) -> tuple[bool, str]:
        size = _sizes(name)[0]
        try:
            data = strict_json(read(name), name)
            if not isinstance(data, dict) or set(data) != {"tsa", "token"} or not isinstance(data["tsa"], str) \
                    or not isinstance(data["token"], str) or len(data["token"]) > 2 * MAX_TOKEN:
                raise ValueError('not {"tsa": name, "token": base64}')
            token = base64.b64decode(data["token"], validate=True)
            tsa = quoted(data["tsa"], 120)[1:-1]
        except (*RECORD_ERRORS, binascii.Error, ValueError) as e:
            return False, f"{name}: {quoted(e, 160)[1:-1]}"
        if history is None:
            return False, f"{name}: not checked: {not_checked}"
        if size == history.bundle.cp.size:
            note = history.bundle.note
        elif size in history.links:
            note = history.links[size][1].note
        else:
            return False, (f"{name}: no checkpoint of size {size} in the bundle's history (no consistency proof "
                           "ties one to the bundle's checkpoint)")
        try:
            body = parse_note(note)[0].encode("utf-8")
        except NoteError as e:  # verified already; kept typed all the same
            return False, f"{name}: {e}"
        report = verify_token(token, body, self.roots)
        if not report.ok or report.gen_time is None or report.latest is None:
            return False, f"{name} (TSA {tsa}), checkpoint {size}: {quoted(report.summary(), 300)[1:-1]}"
        self.held.append(_Held(size, report.gen_time, report.latest, tsa))
        return True, f"checkpoint {size}: existed before {iso(report.gen_time)} (TSA {tsa})"

    def check(self) -> BundleCheck:
        """The bundle-wide ``timestamps`` verdict."""
        if not self.lines:
            return BundleCheck("timestamps", False, "--tsa-root given, but the bundle carries no RFC 3161 token "
                                                    "(`g6 ledger checkpoint --tsa URL`, then bundle again)")
        bad = [why for ok, why in self.lines if not ok]
        if bad:
            more = f"; and {len(bad) - 8} more" if len(bad) > 8 else ""
            return BundleCheck("timestamps", False, "; ".join(bad[:8]) + more)
        return BundleCheck("timestamps", True, "; ".join(why for _, why in self.lines))

    def citation(self, leaf: int | None, fetched_at: object) -> BundleCheck:
        """``trusted_time`` for a cited receipt at ``leaf`` (its inclusion proof's index, when it held)."""
        if leaf is None:
            return BundleCheck("trusted_time", False, "not checked: the receipt's inclusion does not hold")
        covering = [h for h in self.held if leaf < h.size]
        if not covering:
            return BundleCheck("trusted_time", False, f"no token that holds covers it (leaf {leaf}): the tokens "
                                                      "carried are over checkpoints before it")
        best = min(covering, key=lambda h: h.latest)
        try:
            at = datetime.fromisoformat(str(fetched_at))
            at = at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
        except ValueError:
            return BundleCheck("trusted_time", False, f"fetched_at {quoted(fetched_at, 40)} is not a time")
        if at > best.latest:
            return BundleCheck("trusted_time", False,
                               f"fetched_at {iso(at)} is later than genTime {iso(best.gen_time)} of the token "
                               f"(TSA {best.tsa}) over checkpoint {best.size}, which covers it")
        return BundleCheck("trusted_time", True, f"existed before {iso(best.gen_time)} (TSA {best.tsa})")
