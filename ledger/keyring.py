"""Writer keys have a life, and the log records it: key entries, and the timeline verify reads from them.

A key entry is a receipt of kind ``key`` appended to the log like any other (so it is chained, in the
Merkle tree, and provable offline): ``request`` says ``{"action": "add" | "retire", "key": "ed25519:…",
"key_id": …}``, and it is signed by a key already valid at that place in the log. Which keys are valid
where (``KeyTimeline``):

* a **root** is a key the verifier trusts of its own accord: one pinned with ``--key``, or (without
  pins) one in the home's ``keys/trusted`` or the ledger's trusted-keys table. A root is valid from the
  first row; pinning the log's own key is what lets a grader check every writer's receipts with it alone;
* an **added** key is valid for the rows after the entry that added it;
* a **retired** key is valid up to and including the entry that retired it, never after (a retirement
  is final: the key cannot be added again). Retiring only ever takes trust away: a retire entry of a key
  this verifier never trusted (one in the home's trusted-keys table, when the verifier pins the log's key
  and so never consults that table) has nothing to take away; it is checked like every key entry and
  recorded (the key can never be added after it), and is no failure;
* a **handover** is a retire entry that names a ``successor``: the key that signs it, which the retired
  key added earlier (``g6 keys rotate``: the new key added by the old, then the old retired by the new).
  Both keys signed it, so the successor vouches for the key it retires: a verifier who trusts the
  successor trusts the retired key too, for the rows up to the handover (from the first row, or from
  the entry that added it). Handovers are read from the newest back, so a pinned current key vouches
  for every key before it in a chain of rotations. A plain retire entry vouches for nothing (retiring a
  key someone planted must never make it trusted).

A receipt signed by a key outside its window fails verify, whatever folder still holds its ``.pub``:
removing a file revokes nothing, a retire entry does. Key entries are few, so verify reads them all
first (``g6.ledger.verification.verify``) and hands the timeline to every range.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from g6.errors import InputError, SigningKeyError
from g6.ledger.chain import Check
from g6.ledger.keys import VerifyKey
from g6.ledger.receipts import Receipt, Signature, check_signature, signed_message_fast, unsigned_bytes_of_stored

ADD, RETIRE = "add", "retire"
SUCCESSOR = "successor"  # in a retire entry's request: the key id of the key that signs it (a handover)
KEY_ADDED, KEY_RETIRED = "G6_E_LEDGER_KEY_ADDED", "G6_E_LEDGER_KEY_RETIRED"
FOREVER = 1 << 62  # a window that never closes (seq numbers stay far below it)


def key_entry(action: str, key: VerifyKey, reason: str = "", successor: VerifyKey | None = None) -> Receipt:
    """An unsigned key entry: ``action`` (add or retire) of ``key``, for ``Ledger.append``. ``successor``
    (a retire entry only) makes it a handover: the successor signs it, and vouches for ``key``."""
    if action not in (ADD, RETIRE):
        raise InputError(f"a key entry adds or retires a key, not {action!r}")
    request: dict[str, Any] = {"action": action, "key": key.to_text(), "key_id": key.key_id}
    if successor is not None:
        if action != RETIRE:
            raise InputError("only a retire entry names a successor")
        request[SUCCESSOR] = successor.key_id
    if reason:
        request["reason"] = reason
    return Receipt(kind="key", source="g6", request=request, outcome="ok",
                   outcome_code=KEY_ADDED if action == ADD else KEY_RETIRED)


@dataclass
class KeyLife:
    """One key's window of validity in one log, and why the verifier trusts it."""

    key: VerifyKey
    why: str  # "pinned with --key", "in keys/trusted", "added at seq 12 by ed25519:…"…
    root: bool  # trusted of the verifier's own accord (a key vouched for by a handover is not)
    valid_from: int  # first seq it may sign
    valid_to: int = FOREVER  # last seq it may sign (its retire entry's)
    added_by: str | None = None
    retired_by: str | None = None

    def valid_at(self, seq: int) -> bool:
        return self.valid_from <= seq <= self.valid_to

    def to_json(self) -> dict[str, Any]:
        return {"key_id": self.key.key_id, "why": self.why, "root": self.root, "valid_from": self.valid_from,
                "valid_to": None if self.valid_to == FOREVER else self.valid_to, "added_by": self.added_by,
                "retired_by": self.retired_by}


@dataclass
class KeyTimeline:
    """Which key may sign which rows of one log (see the module docstring)."""

    lives: dict[str, KeyLife] = field(default_factory=dict)
    entries: dict[int, str] = field(default_factory=dict)  # seq of each key entry read -> its action
    problems: list[Check] = field(default_factory=list)  # key entries that are not valid, one verdict each
    closed: dict[str, tuple[int, str]] = field(default_factory=dict)  # never valid here, retired: (seq, by)
    notes: list[Check] = field(default_factory=list)  # passing verdicts worth saying (such a retirement)
    adders: dict[str, set[str]] = field(default_factory=dict)  # key id -> who added it, by a valid entry
    origin: str | None = None  # the log's: an entry that signs another place (log, seq) changes nothing

    @classmethod
    def of_roots(cls, roots: Mapping[str, tuple[VerifyKey, str]], origin: str | None = None) -> KeyTimeline:
        """Before any key entry: every root valid from the first row."""
        return cls({kid: KeyLife(k, why, True, 1) for kid, (k, why) in roots.items()}, origin=origin)

    def keys(self) -> dict[str, VerifyKey]:
        return {kid: life.key for kid, life in self.lives.items()}

    def why_not(self, key_id: str, seq: int) -> str | None:
        """None when ``key_id`` may sign row ``seq``; else why not, in words."""
        life = self.lives.get(key_id)
        if life is None:
            closed = self.closed.get(key_id)
            return f"signed by unknown key {key_id}" + (
                f" (never valid here; retired at seq {closed[0]} by {closed[1]})" if closed else "")
        if seq < life.valid_from:
            return f"signed by {key_id} before it was added (at seq {life.valid_from - 1})"
        if seq > life.valid_to:
            return f"signed by {key_id} after it was retired (at seq {life.valid_to} by {life.retired_by})"
        return None

    def read(self, seq: int, receipt_id: str, text: Any) -> None:
        """Take in the key entry stored at ``seq`` (in seq order): checked here, since every later row's
        verdict depends on it; a bad entry changes no window and is a failed ``keys`` verdict."""
        self.entries[seq] = "?"
        try:
            data, signer = self._signed_entry(seq, text)
            action, key = _entry_request(data)
        except (InputError, SigningKeyError, KeyError, TypeError, ValueError, AttributeError) as e:
            self.problems.append(Check("keys", False, seq, receipt_id, f"key entry not valid: {e}"))
            return
        self.entries[seq] = action
        life = self.lives.get(key.key_id)
        if action == ADD:
            self.adders.setdefault(key.key_id, set()).add(signer)
            if key.key_id in self.closed:
                self.problems.append(Check("keys", False, seq, receipt_id,
                                           f"adds {key.key_id} again after it was retired at seq "
                                           f"{self.closed[key.key_id][0]}"))
            elif life is not None and life.valid_to != FOREVER:
                self.problems.append(Check("keys", False, seq, receipt_id,
                                           f"adds {key.key_id} again after it was retired at seq {life.valid_to}"))
            elif life is None:
                self.lives[key.key_id] = KeyLife(key, f"added at seq {seq} by {signer}", False, seq + 1,
                                                 added_by=signer)
            return
        bad_handover = _handover_problem(data, key, signer, self.adders)
        if bad_handover:  # still a retirement: taking trust away is never the unsafe side
            self.problems.append(Check("keys", False, seq, receipt_id, bad_handover))
        if life is None:
            if key.key_id in self.closed:
                self.problems.append(Check("keys", False, seq, receipt_id, f"retires {key.key_id} again (retired "
                                                                           f"at seq {self.closed[key.key_id][0]})"))
            else:  # a key this verifier never trusted: nothing to take away, and it can never be added after this
                self.closed[key.key_id] = (seq, signer)
                self.notes.append(Check("keys", True, seq, receipt_id, f"retires {key.key_id}, a key this verify does "
                                                                       "not trust: nothing to take away"))
        elif life.valid_to != FOREVER:
            self.problems.append(Check("keys", False, seq, receipt_id,
                                       f"retires {key.key_id} again (retired at seq {life.valid_to})"))
        else:
            life.valid_to, life.retired_by = seq, signer

    def _signed_entry(self, seq: int, text: Any) -> tuple[dict[str, Any], str]:
        """The entry's JSON and who signed it, if a key valid at ``seq`` did; else InputError saying why."""
        data, sig, message = parsed_entry(text)
        misplaced = _place_problem(data, seq, self.origin)
        if misplaced:
            raise InputError(misplaced)
        ok, why = check_signature(sig, self.keys(), message, "key entry")
        if not ok:
            raise InputError(why)
        late = self.why_not(sig.key_id, seq)
        if late is not None:
            raise InputError(late)
        return data, sig.key_id

    def described(self) -> list[dict[str, Any]]:
        # in the order the log used them: by first row, then last (a key retired before one that is not)
        return [life.to_json() for life in sorted(self.lives.values(),
                                                  key=lambda x: (x.valid_from, x.valid_to, x.key.key_id))]


def parsed_entry(text: Any, kinds: tuple[str, ...] = ("key",),
                 what: str = "a key entry") -> tuple[dict[str, Any], Signature, bytes]:
    """A stored log entry's JSON (one of ``kinds``: key entries by default, redaction and hold entries for
    ``g6.ledger.redactions``), its signature block and the bytes that block signs; InputError (or a KeyError,
    TypeError, ValueError for a malformed one) otherwise."""
    if not isinstance(text, str):
        raise InputError(f"stored as {type(text).__name__}, not text")
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("kind") not in kinds:
        raise InputError(f"not {what}")
    raw_sig = data.get("signature")
    if not isinstance(raw_sig, dict):
        raise InputError("unsigned")
    sig = Signature(raw_sig["alg"], raw_sig["key_id"], raw_sig["value"])
    message = signed_message_fast(text, data) or unsigned_bytes_of_stored(text, data)
    if message is None:
        raise InputError("the stored entry is not the canonical form of a signed receipt")
    return data, sig, message


def _entry_request(data: Mapping[str, Any]) -> tuple[str, VerifyKey]:
    request = data["request"]
    action = request["action"]
    if action not in (ADD, RETIRE):
        raise InputError(f"unknown key action {action!r}")
    key = VerifyKey.from_text(request["key"])
    if request.get("key_id") != key.key_id:
        raise InputError("its key_id is not its key's")
    return action, key


def _place_problem(data: Mapping[str, Any], seq: int, origin: str | None, *, bound: bool = False) -> str:
    """Why an entry read at ``seq`` of ``origin`` (None: not known here) signs another place ("" when it
    signs this one). An entry signed before receipts signed their place has none: accepted unless
    ``bound``. A key entry moved or copied (from another log, or another row) must change no window: a
    handover copied further down a forged log would stretch the retired key's."""
    log = data.get("log")
    if log is None:
        return "it signs no place in the log (made before receipts did), so it cannot vouch" if bound else ""
    if type(log) is not dict or type(log.get("seq")) is not int or not isinstance(log.get("origin"), str):
        return "its log place is malformed"
    if log["seq"] != seq or (origin is not None and log["origin"] != origin):
        return (f"signed for {str(log['origin'])[:80]} #{log['seq']}, but it stands at "
                f"{origin or 'this log'} #{seq} (moved, or copied from another log)")
    return ""


def _handover_problem(data: Mapping[str, Any], key: VerifyKey, signer: str, adders: Mapping[str, set[str]]) -> str:
    """Why a retire entry that names a successor is no handover ("" when it is one, or names none): the
    successor must be its signer, added earlier by the very key it retires."""
    successor = data["request"].get(SUCCESSOR)
    if successor is None:
        return ""
    if successor != signer:
        return f"names {str(successor)[:60]} as the successor of {key.key_id}, but {signer} signed it"
    if key.key_id not in adders.get(signer, set()):
        return f"hands {key.key_id} over to {signer}, which {key.key_id} never added"
    return ""


@dataclass(frozen=True, slots=True)
class _Entry:
    """A key entry as the handover pass reads it (its place checked, its signature not yet)."""

    seq: int
    action: str
    key: VerifyKey
    successor: Any
    sig: Signature
    message: bytes

    def signed_by(self, key: VerifyKey) -> bool:
        return self.sig.key_id == key.key_id and check_signature(self.sig, {key.key_id: key}, self.message, "")[0]


def vouched(roots: Mapping[str, VerifyKey], key_rows: Iterable[tuple[int, Any, Any]],
            origin: str | None = None) -> dict[str, tuple[VerifyKey, str]]:
    """The keys the handovers among ``key_rows`` vouch for, back from ``roots`` (key id -> (key, why)):
    read from the newest entry back, a handover signed by a trusted key whose successor the retired key
    added earlier (both signatures checked) makes the retired key trusted, and so on down a chain of
    rotations. Both entries must sign the place they stand at (``origin``, when known, and their seq).
    Only keys no entry adds are returned: one an entry adds gets its window from that entry."""
    entries: list[_Entry] = []
    for seq, _rid, text in key_rows:
        try:
            data, sig, message = parsed_entry(text)
            action, key = _entry_request(data)
            if _place_problem(data, int(seq), origin, bound=True):
                continue  # only an entry that signs the very place it stands at vouches, or pairs with a handover
            entries.append(_Entry(int(seq), action, key, data["request"].get(SUCCESSOR), sig, message))
        except (InputError, SigningKeyError, KeyError, TypeError, ValueError, AttributeError):
            continue  # the forward pass gives it its verdict
    adds: dict[tuple[str, str], list[_Entry]] = {}
    for e in entries:
        if e.action == ADD:
            adds.setdefault((e.key.key_id, e.sig.key_id), []).append(e)
    trusted = dict(roots)
    out: dict[str, tuple[VerifyKey, str]] = {}
    for e in sorted(entries, key=lambda x: x.seq, reverse=True):
        by = e.sig.key_id
        if e.action != RETIRE or e.successor != by or by not in trusted or e.key.key_id in trusted:
            continue
        if not e.signed_by(trusted[by]):
            continue
        if not any(a.seq < e.seq and a.signed_by(e.key) for a in adds.get((by, e.key.key_id), [])):
            continue
        trusted[e.key.key_id] = e.key
        out[e.key.key_id] = (e.key, f"vouched for by {by}, its successor (handover at seq {e.seq})")
    named = {e.key.key_id for e in entries if e.action == ADD}
    return {kid: v for kid, v in out.items() if kid not in named}


def timeline(roots: Mapping[str, tuple[VerifyKey, str]], key_rows: Iterable[tuple[int, Any, Any]], *,
             handovers: Iterable[tuple[int, Any, Any]] | None = None, origin: str | None = None) -> KeyTimeline:
    """The timeline of the log ``origin`` (None: the caller checks the entries' places otherwise): its
    ``roots`` (key id -> (key, why trusted)), the keys their handovers vouch for (read from ``handovers``,
    by default the key entries themselves), and its key entries (seq, receipt id, stored text), in seq
    order."""
    rows = [(int(seq), rid if isinstance(rid, str) else repr(rid), text) for seq, rid, text in key_rows]
    t = KeyTimeline.of_roots(roots, origin)
    for kid, (key, why) in vouched({kid: k for kid, (k, _) in roots.items()},
                                   rows if handovers is None else handovers, origin).items():
        t.lives[kid] = KeyLife(key, why, False, 1)
    for seq, rid, text in rows:
        t.read(seq, rid, text)
    return t
