"""Witness policies in the C2SP tlog-policy form (https://c2sp.org/tlog-policy): which logs, which witnesses,
and how many of them must have cosigned a checkpoint for it to count.

A policy file is lines of items separated by spaces or tabs; a blank line or one starting with ``#`` is
ignored::

    log <vkey> [<url>]                   a log key (type 0x01); its name is the log's origin
    witness <name> <vkey> [<url>]        a witness's cosigning key (type 0x04); the url is its submission prefix
    group <name> all|any|<k> <member>... k of the n members (witnesses or groups defined above) must have witnessed
    quorum <name>|none                   exactly one: the witness or group that must have witnessed

Witnesses and groups share one namespace; ``none`` is predefined and is no group's member. A group or the
quorum names only what earlier lines defined, each member at most once per group; two log or two witness
lines with the same public key are refused. The file is octets: only tab, newline, 0x20-0x7E and 0x80-0xFF
may appear. Every refusal is a ``PolicyError`` naming the line.

``Policy.satisfied(note)`` is the verdict on a checkpoint note carrying cosignature lines: signed by a
listed log (when the policy lists any), and its valid cosignatures meet the quorum. A line of an unknown
key is ignored; a line with a listed witness's name and key id that does not verify fails the verdict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from g6.errors import InputError
from g6.ledger.keys import VerifyKey
from g6.ledger.note import Checkpoint, NoteError, decimal, open_note, parse_note, parse_verifier_key
from g6.ledger.transparency.cosignature import CosignatureError, CosignerKey, check_cosignatures, parse_cosigner_key

NONE = "none"
MAX_POLICY = 1 << 20
MAX_ITEMS = 256  # logs, witnesses or groups: far above the spec's 32 of each, far below a hostile file's
_ALLOWED = frozenset({0x09, 0x0A, *range(0x20, 0x7F), *range(0x80, 0x100)})


class PolicyError(InputError):
    """A policy file that is not a valid tlog-policy: says which line and why."""

    code = "G6_E_POLICY"


@dataclass(frozen=True, slots=True)
class PolicyLog:
    origin: str
    key: VerifyKey
    url: str | None = None


@dataclass(frozen=True, slots=True)
class PolicyWitness:
    name: str  # the policy's name for it (groups and the quorum use it)
    cosigner: CosignerKey  # the name its signature lines carry, and its key
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    k: int
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a checkpoint meets the policy: ``ok``; ``signed``, the witnesses (policy names) whose
    cosignatures hold; ``failed``, witness -> why its line does not hold; ``detail``, one line."""

    ok: bool
    signed: tuple[str, ...]
    failed: Mapping[str, str]
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "signed": list(self.signed), "failed": dict(self.failed), "detail": self.detail}


@dataclass(frozen=True)
class Policy:
    logs: tuple[PolicyLog, ...]
    witnesses: Mapping[str, PolicyWitness]
    groups: Mapping[str, Group]
    quorum: str
    source: str = "the policy"

    def witnessed(self, name: str, signed: set[str]) -> bool:
        """Whether witness or group ``name`` has witnessed, given the witnesses whose cosignatures hold."""
        if name == NONE:
            return True
        if name in self.witnesses:
            return name in signed
        g = self.groups[name]
        return sum(self.witnessed(m, signed) for m in g.members) >= g.k

    def describe(self, name: str | None = None) -> str:
        """The rule in words: ``2 of (a, b, c)``."""
        name = self.quorum if name is None else name
        if name == NONE or name in self.witnesses:
            return name
        g = self.groups[name]
        return f"{g.k} of ({', '.join(self.describe(m) for m in g.members)})"

    def satisfied(self, note: str | bytes, now: float | None = None, *, check_log: bool = True) -> Verdict:
        """The verdict on checkpoint ``note`` with its cosignature lines (see the module's text).
        ``check_log=False`` when the caller has checked the log's signature with keys of its own."""
        try:
            text, _ = parse_note(note)
            cp = Checkpoint.parse(text)
        except NoteError as e:
            return Verdict(False, (), {}, f"not a checkpoint note: {e}")
        if check_log and self.logs:
            mine = [log for log in self.logs if log.origin == cp.origin]
            if not mine:
                return Verdict(False, (), {}, f"{self.source} lists no log with origin {cp.origin}")
            if not any(_opens(note, log) for log in mine):
                return Verdict(False, (), {}, f"the checkpoint is not signed by a log key {self.source} lists "
                                              f"for {cp.origin}")
        found = check_cosignatures(note, (w.cosigner for w in self.witnesses.values()), now)
        failed = {_shown(w.name): found.failed[w.cosigner] for w in self.witnesses.values()
                  if w.cosigner in found.failed}
        signed = {w.name for w in self.witnesses.values() if w.cosigner in found.valid}
        ok = self.witnessed(self.quorum, signed)
        names = tuple(_shown(n) for n in self.witnesses if n in signed)  # in the file's order
        rule = _shown(self.describe())
        if failed:
            return Verdict(False, names, failed, "; ".join(failed.values()))
        who = ", ".join(names) if names else "no listed witness"
        return Verdict(ok, names, {}, f"{'quorum met' if ok else 'no quorum'}: cosigned by {who}; the quorum is "
                                      f"{rule}")

    def with_urls(self) -> list[PolicyWitness]:
        return [w for w in self.witnesses.values() if w.url]


def _shown(text: str) -> str:
    """A name as printed: names are opaque octets, and one that is not UTF-8 is shown escaped (``\\xff``)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _opens(note: str | bytes, log: PolicyLog) -> bool:
    try:
        open_note(note, log.origin, log.key)
        return True
    except NoteError:
        return False


def parse_policy(data: bytes | str, source: str = "the policy") -> Policy:
    """A tlog-policy file's content; ``PolicyError`` naming ``source`` and the line otherwise."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_POLICY:
        raise PolicyError(f"{source} is larger than {MAX_POLICY} bytes")
    logs: list[PolicyLog] = []
    witnesses: dict[str, PolicyWitness] = {}
    groups: dict[str, Group] = {}
    quorum: str | None = None
    keys_seen: dict[bytes, int] = {}

    for no, line_b in enumerate(raw.split(b"\n"), 1):
        def bad(why: str, no: int = no) -> PolicyError:
            # names are opaque octets: one that is not UTF-8 is shown escaped, never printed as a lone surrogate
            return PolicyError(_shown(f"{source} line {no}: {why}"))

        odd = next((b for b in line_b if b not in _ALLOWED), None)
        if odd is not None:
            raise bad(f"byte 0x{odd:02x} is not allowed (only tab, newline, 0x20-0x7E and 0x80-0xFF)")
        line = line_b.decode("utf-8", "surrogateescape")
        items = line.replace("\t", " ").split()
        if not items or items[0].startswith("#"):
            continue
        word, args = items[0], items[1:]
        if word == "log":
            if len(args) not in (1, 2):
                raise bad("a log line reads: log <vkey> [<url>]")
            try:
                origin, key = parse_verifier_key(args[0])
            except NoteError as e:
                raise bad(f"bad log key: {e}") from None
            if key.raw in keys_seen:
                raise bad(f"the same public key as line {keys_seen[key.raw]}")
            keys_seen[key.raw] = no
            logs.append(PolicyLog(origin, key, args[1] if len(args) == 2 else None))
            if len(logs) > MAX_ITEMS:
                raise bad(f"more than {MAX_ITEMS} logs")
        elif word == "witness":
            if len(args) not in (2, 3):
                raise bad("a witness line reads: witness <name> <vkey> [<url>]")
            name = args[0]
            taken = _name_taken(name, witnesses, groups)
            if taken:
                raise bad(taken)
            try:
                cosigner = parse_cosigner_key(args[1])
            except (CosignatureError, NoteError) as e:
                raise bad(f"bad witness key for {name}: {e}") from None
            if cosigner.key.raw in keys_seen:
                raise bad(f"the same public key as line {keys_seen[cosigner.key.raw]}")
            keys_seen[cosigner.key.raw] = no
            witnesses[name] = PolicyWitness(name, cosigner, args[2] if len(args) == 3 else None)
            if len(witnesses) > MAX_ITEMS:
                raise bad(f"more than {MAX_ITEMS} witnesses")
        elif word == "group":
            if len(args) < 3:
                raise bad("a group line reads: group <name> all|any|<k> <member>...")
            name, threshold, members = args[0], args[1], tuple(args[2:])
            taken = _name_taken(name, witnesses, groups)
            if taken:
                raise bad(taken)
            for m in members:
                if m == NONE:
                    raise bad("none cannot be a group member")
                if m not in witnesses and m not in groups:
                    raise bad(f"{m} is not a witness or group defined on an earlier line")
            if len(set(members)) != len(members):
                raise bad(f"group {name} lists a member twice")
            n = len(members)
            k = n if threshold == "all" else 1 if threshold == "any" else decimal(threshold)
            if k is None or not 1 <= k <= n:
                raise bad(f"group {name}'s threshold {threshold[:20]!r} is not all, any or a number from 1 to {n}")
            groups[name] = Group(name, k, members)
            if len(groups) > MAX_ITEMS:
                raise bad(f"more than {MAX_ITEMS} groups")
        elif word == "quorum":
            if len(args) != 1:
                raise bad("a quorum line reads: quorum <name>|none")
            if quorum is not None:
                raise bad("a second quorum line (a policy has exactly one)")
            if args[0] != NONE and args[0] not in witnesses and args[0] not in groups:
                raise bad(f"{args[0]} is not a witness or group defined on an earlier line")
            quorum = args[0]
        else:
            raise bad(f"unknown line {word[:30]!r}: log, witness, group, quorum or a # comment")
    if quorum is None:
        raise PolicyError(f"{source} has no quorum line (exactly one is needed; `quorum none` asks for no witness)")
    return Policy(tuple(logs), witnesses, groups, quorum, source)


def _name_taken(name: str, witnesses: Mapping[str, object], groups: Mapping[str, object]) -> str | None:
    if name == NONE:
        return "none is predefined and cannot be redefined"
    if name in witnesses or name in groups:
        return f"{name} is already defined"
    return None


def read_policy(path: str | os.PathLike[str]) -> Policy:
    """A policy file read (bounded) and parsed; ``PolicyError`` also when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_POLICY + 1)
    except OSError as e:
        raise PolicyError(f"cannot read the policy {os.fspath(path)}: {e.strerror or e}") from None
    return parse_policy(data, f"policy {os.fspath(path)}")


def policy_from(witnesses: Sequence[PolicyWitness], k: int | None = None) -> Policy:
    """A policy of these witnesses, k of them (all when None) to be met: what ``--witness`` alone means."""
    names = tuple(w.name for w in witnesses)
    if not names:
        return Policy((), {}, {}, NONE)
    rule = " --witness"  # a name no policy line can hold (names hold no space)
    group = Group(rule, len(names) if k is None else k, names)
    return Policy((), {w.name: w for w in witnesses}, {rule: group}, rule, "the --witness list")
