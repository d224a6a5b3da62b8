"""Witnessing checkpoints: submit them to tlog witnesses (https://c2sp.org/tlog-witness) and check
cosignature quorums (https://c2sp.org/tlog-policy) for ``g6 ledger checkpoint --witness/--policy``,
``ledger verify --policy`` and ``verify-proof --policy``.

A submission is ``POST <witness url>/add-checkpoint`` with the body::

    old <size the witness last cosigned for this log>
    <base64 hash>            (the RFC 6962 consistency proof from that size; none when it is 0)

    <signed checkpoint note>

The size to start from is the largest checkpoint of ours that witness's cosignature is kept beside (0 when
none). A witness that recorded another size answers 409 with that size (``text/x.tlog.size``); the proof is
then made from it and sent once more. Any other refusal is a typed ``WitnessError`` naming the witness, its
URL and the status: 404 (or litewitness v0.6.1's 403 "unknown log") the log is unknown to it, 403 the log's
signature is not one it trusts, 422 the checkpoint does not extend what it cosigned (a fork), 400 a bad
request. The cosignature lines a witness returns are checked with its key before anything is kept; it is
kept beside the checkpoint (kind ``cosignature``, the witness's name), so ``ledger copy`` carries it and
``ledger prove`` appends it to the proof's checkpoint.

A witness asked again about the same checkpoint cosigns it again, with a new timestamp: of one key's
cosignatures of one checkpoint that hold, only the newest stays kept (``keep_newest``), and every note made
from what is kept shows one line per key (``cosigned``), so a quiet log checkpointed by a cron job never
grows a note past what ``note.Open`` accepts. A run whose submission to any witness failed is not ``ok``,
whatever cosignatures kept before say (``WitnessReport.ok``).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx

from g6.errors import (
    WitnessBadRequest,
    WitnessConflict,
    WitnessError,
    WitnessInconsistent,
    WitnessRefusedSignature,
    WitnessUnknownLog,
    WitnessUnreachable,
)
from g6.home import EvidenceHome
from g6.ledger.chain import Check, LedgerVerifyReport
from g6.ledger.log import Ledger
from g6.ledger.note import Checkpoint, NoteError, decimal, parse_note, parse_signature_line
from g6.ledger.proofs import (
    CONSISTENCY_HEADER,
    ProofCheck,
    ProofFormatError,
    ProofReport,
    parse_consistency,
    parse_inclusion,
)
from g6.ledger.transparency.cosignature import (
    CosignatureError,
    CosignerKey,
    check_cosignatures,
    verify_cosignature,
    with_cosignatures,
)
from g6.ledger.transparency.policy import Policy, PolicyWitness, Verdict, policy_from

MAX_REPLY = 64 << 10  # a witness answers a few signature lines; anything past this is not an answer
MAX_PROOF_LINES = 63  # tlog-witness: a client MUST NOT send more
TIMEOUT = 15.0
SIZE_TYPE = "text/x.tlog.size"
COSIGNATURE = "cosignature"  # the kind kept beside a checkpoint


@dataclass(frozen=True, slots=True)
class Submission:
    """What one witness did with a checkpoint: ``line`` its cosignature (kept), or ``error``."""

    witness: str  # the policy's (or --witness's) name
    url: str
    old: int = 0  # the size the proof was made from, as last sent
    retried: bool = False  # after a 409
    line: str = ""
    timestamp: int = 0
    error: WitnessError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        e = self.error
        return {"witness": self.witness, "url": self.url, "ok": self.ok, "old": self.old, "retried": self.retried,
                "cosignature": self.line or None, "timestamp": self.timestamp or None,
                "status": e.status if e is not None else 200, "code": e.code if e is not None else None,
                "error": str(e) if e is not None else None}


@dataclass(slots=True)
class Sent:
    """How far a submission got: the size its last request started from, and whether it was sent again
    after a 409 (what ``Submission`` reports when it fails too)."""

    old: int = 0
    retried: bool = False


@dataclass(frozen=True, slots=True)
class WitnessReport:
    submissions: tuple[Submission, ...]
    verdict: Verdict
    cosigned_note: str

    @property
    def failed(self) -> tuple[Submission, ...]:
        return tuple(s for s in self.submissions if not s.ok)

    @property
    def ok(self) -> bool:
        """The quorum is met and every submission of this run got its witness's cosignature: a witness that
        refused, or could not be asked, fails the run even when cosignatures kept before meet the quorum."""
        return self.verdict.ok and not self.failed

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "submissions": [s.to_json() for s in self.submissions],
                "quorum": self.verdict.to_json()}


def add_checkpoint_body(old: int, proof: Sequence[bytes], note: str) -> bytes:
    return (f"old {old}\n" + "".join(base64.b64encode(h).decode() + "\n" for h in proof) + "\n" + note).encode()


def last_cosigned(ledger: Ledger, witness: PolicyWitness) -> int:
    """The largest checkpoint size ``witness``'s cosignature is kept beside here (0: none)."""
    name = witness.cosigner.name
    return max((size for size, _, n, _ in ledger.all_kept_beside(COSIGNATURE) if n == name), default=0)


def new_client(transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """The client submissions go through: no proxy from the environment, no redirect, no retry."""
    return httpx.Client(transport=transport or httpx.HTTPTransport(trust_env=False, retries=0), timeout=TIMEOUT,
                        follow_redirects=False, trust_env=False)


def _post(client: httpx.Client, w: PolicyWitness, body: bytes) -> tuple[int, str, bytes]:
    url = str(w.url).rstrip("/") + "/add-checkpoint"
    try:
        with client.stream("POST", url, content=body, headers={"Content-Type": "text/plain"}) as r:
            data = b""
            for chunk in r.iter_bytes():
                data += chunk
                if len(data) > MAX_REPLY:
                    raise _error(WitnessUnreachable, w, f"answered {r.status_code} with more than {MAX_REPLY} bytes",
                                 r.status_code)
            return r.status_code, r.headers.get("content-type", ""), data
    except httpx.HTTPError as e:
        raise _error(WitnessUnreachable, w, f"could not be reached: {type(e).__name__}: {e}") from None


def _error(cls: type[WitnessError], w: PolicyWitness, what: str, status: int | None = None) -> WitnessError:
    return cls(f"witness {w.name} ({w.url}) {what}", w.name, str(w.url), status)


def _said(data: bytes) -> str:
    """The start of a witness's error body, printable, for the message."""
    text = data[:120].decode("utf-8", "replace")
    text = "".join(c if c.isprintable() else " " for c in text).strip()
    return f": {text!r}" if text else ""


def _refusal(w: PolicyWitness, status: int, data: bytes) -> WitnessError:
    said = _said(data)
    if status == 404 or (status == 403 and b"unknown log" in data.lower()):
        return _error(WitnessUnknownLog, w, f"does not know this log's origin ({status}{said}); its operator must "
                                            "add the log and its verifier key", status)
    if status == 403:
        return _error(WitnessRefusedSignature, w, f"refused the checkpoint's signature ({status}{said}): it trusts "
                                                  "another key for this origin", status)
    if status == 422:
        return _error(WitnessInconsistent, w, f"refused the checkpoint as inconsistent with what it cosigned before "
                                              f"({status}{said}): a fork, or a bad consistency proof", status)
    return _error(WitnessBadRequest, w, f"refused the request ({status}{said})", status)


def submit(ledger: Ledger, cp: Checkpoint, note: str, w: PolicyWitness, client: httpx.Client, *,
           old: int | None = None, now: float | None = None, sent: Sent | None = None) -> Submission:
    """Submit checkpoint ``cp`` (signed ``note``) to witness ``w``; keep and return its cosignature.
    ``old``: the size to start from (default: the last one it cosigned here). ``WitnessError`` otherwise;
    ``sent`` then says how far it got."""
    if not w.url:
        raise _error(WitnessBadRequest, w, "has no URL to submit to")
    sent = Sent() if sent is None else sent
    start = last_cosigned(ledger, w) if old is None else old
    size = start
    retried = False
    tree = None
    for attempt in (0, 1):
        if size > cp.size:
            said = "answered 409: it has" if retried else "has, by the cosignatures kept here,"
            raise _error(WitnessConflict, w, f"{said} cosigned size {size} of this log, past this checkpoint's "
                                             f"{cp.size}: a newer checkpoint, or rows removed here",
                         409 if retried else None)
        proof: list[bytes] = []
        if 0 < size < cp.size:
            tree = tree or ledger.tree()
            if len(tree) < cp.size or tree.root(cp.size) != cp.root:
                raise _error(WitnessBadRequest, w, "was not sent the checkpoint: the ledger no longer matches it; "
                                                   "run `g6 ledger verify`")
            proof = tree.consistency_proof(size, cp.size)
        if len(proof) > MAX_PROOF_LINES:
            raise _error(WitnessBadRequest, w, f"was not sent a proof of {len(proof)} hashes (at most "
                                               f"{MAX_PROOF_LINES})")
        sent.old, sent.retried = size, retried
        status, ctype, data = _post(client, w, add_checkpoint_body(size, proof, note))
        if status == 200:
            line, ts = _cosignature(w, note, data, now)
            keep_newest(ledger, cp, note, w.cosigner, line, now)
            return Submission(w.name, str(w.url), size, retried, line, ts)
        if status != 409:
            raise _refusal(w, status, data)
        if ctype.split(";")[0].strip().lower() != SIZE_TYPE:
            raise _error(WitnessBadRequest, w, f"answered 409 without its size (Content-Type {ctype[:40]!r}, not "
                                               f"{SIZE_TYPE}){_said(data)}", 409)
        if attempt == 1:
            raise _error(WitnessConflict, w, f"answered 409 again after the retry from size {size}{_said(data)}", 409)
        theirs = decimal(data.decode("ascii", "replace").removesuffix("\n"))
        if theirs is None:
            raise _error(WitnessBadRequest, w, f"answered 409 with a size that is not one{_said(data)}", 409)
        size, retried = theirs, True
    raise AssertionError("unreachable")  # pragma: no cover


def _cosignature(w: PolicyWitness, note: str, data: bytes, now: float | None) -> tuple[str, int]:
    """The witness's own cosignature line in a 200 body, checked with its key (other lines are ignored;
    of two by its key, the newest)."""
    try:
        lines = [x for x in data.decode("utf-8").split("\n") if x]
        sigs = [(x, parse_signature_line(x)) for x in lines]
    except (UnicodeDecodeError, NoteError) as e:
        raise _error(WitnessBadRequest, w, f"answered 200 with no cosignature lines: {e}", 200) from None
    key = w.cosigner
    text = parse_note(note)[0]
    best: tuple[str, int] | None = None
    for line, sig in sigs:
        if sig.name != key.name or sig.key_id != key.key_id:
            continue
        try:
            ts = verify_cosignature(sig, text, key, now)
        except CosignatureError as e:
            raise _error(WitnessRefusedSignature, w, f"returned a cosignature that does not hold: {e}", 200) from None
        if best is None or ts > best[1]:
            best = (line, ts)
    if best is None:
        raise _error(WitnessBadRequest, w, f"answered 200 with no cosignature by its key {key.vkey()}", 200)
    return best


def keep_newest(ledger: Ledger, cp: Checkpoint, note: str, key: CosignerKey, line: str, now: float | None) -> None:
    """Keep cosignature ``line`` (checked) beside ``cp`` as the one of ``key``: of it and those already kept
    by that key that hold, the newest stays and the others go. A kept line that does not hold is left for
    ``ledger verify --policy`` to name (what damaged the home is not this command's to erase)."""
    text = parse_note(note)[0]
    mine: list[tuple[int, str]] = []
    for line_kept in (v for _, n, v in ledger.kept_beside(cp, COSIGNATURE) if n == key.name):
        try:
            sig = parse_signature_line(line_kept)
            if sig.key_id == key.key_id:
                mine.append((verify_cosignature(sig, text, key, now), line_kept))
        except NoteError:  # CosignatureError too: a line that does not hold stays
            continue
    sig = parse_signature_line(line)
    newest = max([*mine, (verify_cosignature(sig, text, key, now), line)], key=lambda t: t[0])[1]
    ledger.keep_beside(cp, COSIGNATURE, key.name, newest, replacing=[v for _, v in mine if v != newest])


def cosigned(ledger: Ledger, cp: Checkpoint, note: str) -> str:
    """``note`` with the cosignatures kept beside ``cp`` appended, one per witness key (its newest: a home
    written before g6 kept one per key may hold many)."""
    return with_cosignatures(note, [v for _, _, v in ledger.kept_beside(cp, COSIGNATURE)])


def witness_checkpoint(home: EvidenceHome, cp: Checkpoint, note: str, policy: Policy | None,
                       extra: Sequence[PolicyWitness] = (), *, transport: httpx.BaseTransport | None = None,
                       now: float | None = None) -> WitnessReport:
    """Submit ``cp`` to every witness of ``policy`` with a URL and to ``extra`` (``--witness``); a failure is
    that witness's, never the others'. The verdict is ``policy``'s quorum; without a policy, every one of
    ``extra`` must have cosigned."""
    now = time.time() if now is None else now
    ledger = home.ledger
    targets = list(policy.with_urls()) if policy is not None else []
    known = {w.cosigner for w in targets}
    targets += [w for w in extra if w.cosigner not in known]
    subs = []
    with new_client(transport) as client:
        for w in targets:
            sent = Sent()
            try:
                subs.append(submit(ledger, cp, note, w, client, now=now, sent=sent))
            except WitnessError as e:
                subs.append(Submission(w.name, str(w.url), sent.old, sent.retried, error=e))
    full = cosigned(ledger, cp, note)
    rule = policy if policy is not None else policy_from(extra)
    return WitnessReport(tuple(subs), rule.satisfied(full, now), full)


# -- checking quorums -------------------------------------------------------------------------------------
def witness_checks(ledger: Ledger, policy: Policy, now: float | None = None) -> list[Check]:
    """``ledger verify --policy``: the latest checkpoint must have a quorum of valid cosignatures (fail closed
    when none are kept), and no cosignature kept beside an older one may fail. The note judged carries one
    cosignature per witness key (``cosigned``), and every line kept under a listed witness's name and key
    id must hold too, shown or not. A tree checkpointed again (nothing appended since) is checked once."""
    now = time.time() if now is None else now
    cps = ledger.checkpoints()
    if not cps:
        return [Check("witnesses", False, None, None, f"no checkpoint to hold to {policy.source}: "
                                                      "run `g6 ledger checkpoint --policy FILE`")]
    kept: dict[tuple[int, str], list[str]] = {}
    for size, root, _name, value in ledger.all_kept_beside(COSIGNATURE):
        kept.setdefault((size, root), []).append(value)
    last = {(cp.size, cp.root.hex()): i for i, (cp, _) in enumerate(cps)}
    out = []
    for i, (cp, note) in enumerate(cps):
        tree = (cp.size, cp.root.hex())
        latest = i == len(cps) - 1
        lines = kept.get(tree, [])
        if last[tree] != i or (not lines and not latest):
            continue
        v = policy.satisfied(with_cosignatures(note, lines), now)
        bad = [why for why in _failing(note, lines, policy, now) if why not in v.failed.values()]
        label = f"checkpoint size {cp.size}{' (the latest)' if latest else ''}"
        ok = (v.ok if latest else not v.failed) and not bad
        out.append(Check("witnesses", ok, None, None, "; ".join([f"{label}: {v.detail}", *bad])))
    return out


def _failing(note: str, lines: Sequence[str], policy: Policy, now: float) -> list[str]:
    """Why each kept cosignature under a listed witness's name and key id does not hold, once each."""
    cosigners = [w.cosigner for w in policy.witnesses.values()]
    out: list[str] = []
    for line in lines:
        try:
            found = check_cosignatures(f"{note}{line}\n", cosigners, now)
        except NoteError:
            continue  # not a signature line: no witness's, and never shown on a note
        out += [why for why in found.failed.values() if why not in out]
    return out


def with_witness_checks(report: LedgerVerifyReport, ledger: Ledger, policy: Policy,
                        now: float | None = None) -> LedgerVerifyReport:
    try:
        checks = witness_checks(ledger, policy, now)
    except Exception as e:  # noqa: BLE001 - a ledger that cannot be read: its verdict says so already
        checks = [Check("witnesses", False, None, None, f"the checkpoints could not be read: {e}")]
    return replace(report, checks=(*report.checks, *checks))


def proof_witness_check(report: ProofReport, data: bytes, policy: Policy, now: float | None = None) -> ProofReport:
    """``verify-proof --policy``: the proof's checkpoint (the new one of a consistency proof), with the
    cosignature lines it carries, must meet the policy's quorum."""
    try:
        if CONSISTENCY_HEADER.encode() in data.split(b"\n", 1)[0]:
            note = parse_consistency(data).new_note
        else:
            note = parse_inclusion(data).checkpoint_note
    except ProofFormatError as e:
        check = ProofCheck("witnesses", False, f"no checkpoint to check: {e}")
    else:
        v = policy.satisfied(note, time.time() if now is None else now)
        check = ProofCheck("witnesses", v.ok, v.detail)
    return ProofReport(report.kind, (*report.checks, check))
