"""Witness cosignatures of checkpoints (https://c2sp.org/tlog-cosignature@v1.0.1, cosignature/v1, Ed25519).

A witness cosigns a checkpoint note with a note signature line ``— <witness name> <base64>`` whose
decoded bytes are ``key id (4) || timestamp (u64, big-endian) || Ed25519 signature (64)``: 76 bytes.

* The key id is ``SHA-256(name || 0x0A || 0x04 || public key)[:4]``: signature type 0x04, so the same raw
  key gives another id than as a log key (type 0x01, ``g6.ledger.note``).
* The witness's verifier key reads ``<name>+<hex key id>+<base64(0x04 || public key)>``.
* The signed message is ``"cosignature/v1\\n" + "time <decimal timestamp>\\n" + <checkpoint text>``, the
  text with its final newline and without the signature lines.
* The timestamp is POSIX seconds, non-zero and at most 2^63 - 1; a cosignature dated further in the future
  than ``MAX_FUTURE`` seconds past the verifier's clock is refused (the spec lets verifiers reject it).

As for every signed note (https://c2sp.org/signed-note), a line whose name and key id are not a known
cosigner's is ignored; a line whose name and key id are a known cosigner's must verify, or the cosignature
fails (``check_cosignatures`` names it).
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.note import (
    DASH,
    MAX_SIGNATURES,
    NoteError,
    NoteSignature,
    _check_name,
    parse_note,
    parse_signature_line,
)

COSIGNATURE_V1 = b"\x04"
MAX_TIMESTAMP = (1 << 63) - 1
MAX_FUTURE = 600  # seconds a cosignature may be dated past the verifier's clock (clocks drift)
SIGNATURE_SIZE = 4 + 8 + 64
_KEY_ID_HEX = re.compile(r"[0-9a-f]{8}")


class CosignatureError(NoteError):
    """A cosigner verifier key that is malformed, or a cosignature that does not hold."""


def cosigner_key_id(name: str, public: VerifyKey) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + COSIGNATURE_V1 + public.raw).digest()[:4]


@dataclass(frozen=True, slots=True)
class CosignerKey:
    """A witness's cosigning key: the name its signature lines carry, and its Ed25519 public key."""

    name: str
    key: VerifyKey
    key_id: bytes = field(init=False)

    def __post_init__(self) -> None:
        _check_name(self.name)
        object.__setattr__(self, "key_id", cosigner_key_id(self.name, self.key))

    def vkey(self) -> str:
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(COSIGNATURE_V1 + self.key.raw).decode()}"


def parse_cosigner_key(vkey: str) -> CosignerKey:
    """A cosigner verifier key ``<name>+<hex id>+<base64(0x04 || key)>``; ``CosignatureError`` otherwise
    (a log key, type 0x01, is refused by name: it is not a witness's)."""
    parts = vkey.strip().split("+", 2)
    if len(parts) != 3:
        raise CosignatureError("a witness verifier key reads <name>+<hex key id>+<base64 key>")
    name, hexid, b64 = parts
    try:
        _check_name(name)
    except NoteError as e:
        raise CosignatureError(str(e)) from None
    if _KEY_ID_HEX.fullmatch(hexid.lower()) is None:
        raise CosignatureError("a witness verifier key's key id is 8 hex digits")
    try:
        raw = base64.b64decode(b64, validate=True)
    except ValueError:
        raise CosignatureError("a witness verifier key has a bad key encoding") from None
    if raw[:1] == b"\x01":
        raise CosignatureError(f"{name}'s key is a log key (type 0x01), not a witness cosigning key (type 0x04)")
    if len(raw) != 33 or raw[:1] != COSIGNATURE_V1:
        raise CosignatureError(f"{name}'s key is not an Ed25519 cosignature/v1 key (type 0x04, 32 bytes)")
    key = CosignerKey(name, VerifyKey(raw[1:]))
    if key.key_id != bytes.fromhex(hexid):
        raise CosignatureError(f"{name}'s verifier key id does not match its name and key")
    return key


def cosigned_message(text: str, timestamp: int) -> bytes:
    """The exact bytes a cosignature/v1 Ed25519 signature covers."""
    return b"cosignature/v1\ntime " + str(timestamp).encode() + b"\n" + text.encode()


def sign_cosignature(text: str, name: str, key: SigningKey, timestamp: int) -> str:
    """A cosignature line over checkpoint ``text`` (what a witness answers; g6 uses it in tests)."""
    cosigner = CosignerKey(name, key.public)
    sig = key.sign(cosigned_message(text, timestamp))
    return f"{DASH}{name} {base64.b64encode(cosigner.key_id + struct.pack('>Q', timestamp) + sig).decode()}"


def verify_cosignature(sig: NoteSignature, text: str, cosigner: CosignerKey, now: float | None = None) -> int:
    """The timestamp of ``sig`` (a parsed signature line of cosigner's name and key id) if it is a valid
    cosignature/v1 of checkpoint ``text``; ``CosignatureError`` saying why not."""
    who = cosigner.name
    if sig.name != who or sig.key_id != cosigner.key_id:
        raise CosignatureError(f"the signature line is not {who}'s (name or key id differs)")
    if len(sig.signature) != SIGNATURE_SIZE - 4:
        raise CosignatureError(f"{who}'s cosignature is {len(sig.signature) + 4} bytes, not {SIGNATURE_SIZE}")
    (timestamp,) = struct.unpack(">Q", sig.signature[:8])
    if timestamp == 0 or timestamp > MAX_TIMESTAMP:
        raise CosignatureError(f"{who}'s cosignature has timestamp {timestamp}: not between 1 and 2^63-1")
    if not cosigner.key.verify(sig.signature[8:], cosigned_message(text, timestamp)):
        raise CosignatureError(f"{who}'s cosignature does not verify (cosignature/v1, time {timestamp})")
    if now is not None and timestamp > now + MAX_FUTURE:
        raise CosignatureError(f"{who}'s cosignature is dated {timestamp}, {int(timestamp - now)} s in the future")
    return int(timestamp)


@dataclass(frozen=True, slots=True)
class Cosignatures:
    """What a note's signature lines say of the known cosigners: ``valid`` maps a cosigner's key to its
    cosignature's timestamp, ``failed`` to why its line does not hold. Lines of unknown keys are ignored."""

    text: str
    valid: Mapping[CosignerKey, int]
    failed: Mapping[CosignerKey, str]

    def names(self) -> dict[str, int]:
        """The valid ones by the name their lines carry."""
        return {c.name: ts for c, ts in self.valid.items()}


def check_cosignatures(note: str | bytes, cosigners: Iterable[CosignerKey], now: float | None = None) -> Cosignatures:
    """Check every signature line of ``note`` made by one of ``cosigners`` (matched by name and key id).
    ``NoteError`` when the note itself is malformed."""
    text, sigs = parse_note(note)
    by_id = {(c.name, c.key_id): c for c in cosigners}
    valid: dict[CosignerKey, int] = {}
    failed: dict[CosignerKey, str] = {}
    for s in sigs:
        c = by_id.get((s.name, s.key_id))
        if c is None:
            continue  # an unknown key's line: ignored, as the signed-note spec says
        try:
            ts = verify_cosignature(s, text, c, now)
        except CosignatureError as e:
            failed[c] = str(e)
            continue
        valid[c] = max(ts, valid.get(c, 0))
    for c in failed:
        valid.pop(c, None)  # one bad line under a known key fails that cosigner, whatever else it signed
    return Cosignatures(text, valid, failed)


def cosignature_time(sig: NoteSignature) -> int | None:
    """The timestamp a cosignature/v1-shaped signature carries (not checked); None for another shape."""
    if len(sig.signature) != SIGNATURE_SIZE - 4:
        return None
    return int(struct.unpack(">Q", sig.signature[:8])[0])


def one_per_key(lines: Iterable[str]) -> list[str]:
    """Signature ``lines`` with at most one per key (name and key id), each key where it first appears:
    of cosignature/v1 lines the newest (the largest timestamp; of two alike, the later line), of any other
    shape the first. A line that is not a note signature line is left out.

    A witness cosigns the same checkpoint anew each time it is asked (a new timestamp), and the signed-note
    rules make a verifier drop, or refuse, repeated signatures by one key: one per key is what a note shows.
    Which one is unchecked here (no key is at hand); ``g6.prove.witness`` keeps only lines that held."""
    best: dict[tuple[str, bytes], tuple[str, int | None]] = {}
    for line in lines:
        line = line.rstrip("\n")
        try:
            sig = parse_signature_line(line)
        except NoteError:
            continue
        at = cosignature_time(sig)
        k = (sig.name, sig.key_id)
        had = best.get(k)
        if had is None:
            best[k] = (line, at)
        elif at is not None and had[1] is not None and at >= had[1]:
            best[k] = (line, at)
    return [line for line, _ in best.values()]


def with_cosignatures(note: str, lines: Iterable[str]) -> str:
    """``note`` with signature ``lines`` added: the cosigned checkpoint a verifier checks as one note. Its
    signature lines, the note's own first, are ``one_per_key`` of both, and at most ``MAX_SIGNATURES``
    (Go's note.Open refuses more): a note g6 writes always opens."""
    text, _ = parse_note(note)
    own = note[len(text) + 1:].rstrip("\n").split("\n")
    kept = one_per_key([*own, *lines])[:MAX_SIGNATURES]
    return text + "\n" + "".join(line + "\n" for line in kept)
