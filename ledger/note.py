"""C2SP signed notes and tlog checkpoints (https://c2sp.org/signed-note, https://c2sp.org/tlog-checkpoint).

A signed note is UTF-8 text ending in a newline, a blank line, then signature lines
``— <key name> <base64(key id || signature)>``. The Ed25519 signature covers the text including
its final newline. The key id is the first 4 bytes of SHA-256(key name || 0x0A || 0x01 || public
key). A verifier key is written ``<name>+<hex key id>+<base64(0x01 || public key)>``.

A checkpoint is a note whose text is ``<origin>\\n<tree size>\\n<base64 root hash>\\n`` (optional
extension lines may follow); g6 signs it with the origin as the key name.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from g6.ledger.keys import SigningKey, VerifyKey

DASH = "\u2014 "
ED25519 = b"\x01"
MAX_NOTE = 1 << 20


class NoteError(ValueError):
    """A note or checkpoint that is malformed or whose signature does not hold."""


def _check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name):
        raise NoteError(f"bad key name {name!r}: non-empty, no spaces, no '+'")


def note_key_id(name: str, public: VerifyKey) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + ED25519 + public.raw).digest()[:4]


def verifier_key(name: str, public: VerifyKey) -> str:
    _check_name(name)
    return f"{name}+{note_key_id(name, public).hex()}+{base64.b64encode(ED25519 + public.raw).decode()}"


def parse_verifier_key(vkey: str) -> tuple[str, VerifyKey]:
    parts = vkey.strip().split("+", 2)  # the base64 key may itself hold '+'
    if len(parts) != 3:
        raise NoteError("a verifier key reads <name>+<hex key id>+<base64 key>")
    name, hexid, b64 = parts
    _check_name(name)
    try:
        raw = base64.b64decode(b64, validate=True)
        kid = bytes.fromhex(hexid)
    except (binascii.Error, ValueError):
        raise NoteError("a verifier key has a bad key id or key encoding") from None
    if len(raw) != 33 or raw[:1] != ED25519:
        raise NoteError("only Ed25519 verifier keys are supported")
    key = VerifyKey(raw[1:])
    if note_key_id(name, key) != kid:
        raise NoteError("the verifier key's id does not match its name and key")
    return name, key


def _check_text(text: str) -> None:
    if not text.endswith("\n") or "\n\n" in text:
        raise NoteError("note text must end in one newline and hold no blank line")
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteError("note text holds control characters")


def sign_note(text: str, name: str, key: SigningKey) -> str:
    _check_name(name)
    _check_text(text)
    sig = key.sign(text.encode())
    return f"{text}\n{DASH}{name} {base64.b64encode(note_key_id(name, key.public) + sig).decode()}\n"


@dataclass(frozen=True, slots=True)
class NoteSignature:
    name: str
    key_id: bytes
    signature: bytes


def parse_note(note: str) -> tuple[str, list[NoteSignature]]:
    if len(note.encode()) > MAX_NOTE:
        raise NoteError("note too large")
    i = note.rfind("\n\n")
    if i < 0 or not note.endswith("\n"):
        raise NoteError("a signed note is text, a blank line, then signature lines")
    text, sig_block = note[: i + 1], note[i + 2 :]
    _check_text(text)
    sigs = []
    for line in sig_block.splitlines():
        if not line.startswith(DASH):
            raise NoteError(f"not a signature line: {line[:40]!r}")
        name, _, b64 = line[len(DASH):].rpartition(" ")
        _check_name(name)
        try:
            raw = base64.b64decode(b64, validate=True)
        except binascii.Error:
            raise NoteError("signature is not base64") from None
        if len(raw) < 5:
            raise NoteError("signature too short")
        sigs.append(NoteSignature(name, raw[:4], raw[4:]))
    if not sigs:
        raise NoteError("the note has no signature")
    if len(sigs) > 100:
        raise NoteError("too many signatures")
    return text, sigs


def open_note(note: str, name: str, key: VerifyKey) -> str:
    """The note's text if it carries a valid signature by (name, key); NoteError otherwise."""
    text, sigs = parse_note(note)
    kid = note_key_id(name, key)
    for s in sigs:
        if s.name == name and s.key_id == kid:
            if len(s.signature) == 64 and key.verify(s.signature, text.encode()):
                return text
            raise NoteError(f"the signature by {name} does not verify")
    raise NoteError(f"the note is not signed by {name} with key id {kid.hex()}")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode(), *self.extensions]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.split("\n")
        if len(lines) < 4 or lines[-1] != "":
            raise NoteError("a checkpoint has an origin, a size and a root hash, each on its own line")
        origin, size_s, root_s, *ext = lines[:-1]
        if not origin:
            raise NoteError("empty origin")
        if not size_s.isdigit() or (size_s != "0" and size_s.startswith("0")) or len(size_s) > 19:
            raise NoteError(f"bad tree size {size_s!r}")
        try:
            root = base64.b64decode(root_s, validate=True)
        except binascii.Error:
            raise NoteError("root hash is not base64") from None
        if len(root) != 32:
            raise NoteError("root hash is not 32 bytes")
        if any(not e for e in ext):
            raise NoteError("empty extension line")
        return cls(origin, int(size_s), root, tuple(ext))


def sign_checkpoint(cp: Checkpoint, key: SigningKey) -> str:
    return sign_note(cp.text(), cp.origin, key)


def open_checkpoint(note: str, key: VerifyKey, origin: str | None = None) -> Checkpoint:
    """Parse, check the origin (when given) and the signature by that origin's key."""
    text, _ = parse_note(note)
    cp = Checkpoint.parse(text)
    if origin is not None and cp.origin != origin:
        raise NoteError(f"checkpoint origin {cp.origin!r} is not the expected {origin!r}")
    open_note(note, cp.origin, key)
    return cp


def signed_by(note: str, key: VerifyKey, origin: str | None = None) -> bool:
    """Whether ``note`` is a checkpoint (of ``origin``, when given) validly signed with ``key``."""
    try:
        open_checkpoint(note, key, origin)
        return True
    except NoteError:
        return False
