"""C2SP signed notes and tlog checkpoints (https://c2sp.org/signed-note, https://c2sp.org/tlog-checkpoint).

A signed note is UTF-8 text ending in a newline, a blank line, then signature lines
``— <key name> <base64(key id || signature)>``. The Ed25519 signature covers the text including
its final newline. The key id is the first 4 bytes of SHA-256(key name || 0x0A || 0x01 || public
key). A verifier key is written ``<name>+<hex key id>+<base64(0x01 || public key)>``.

A checkpoint is a note whose text is ``<origin>\\n<tree size>\\n<base64 root hash>\\n`` (optional
extension lines may follow); g6 signs it with the origin as the key name.

Notes (and the proof files that carry them, ``g6.ledger.proofs``) come from files, bundles and tools
that g6 does not control, so they are read as the hostile input they may be: as bytes, by one reader
(``note_text``, ``read_note_file``) that decodes strictly as UTF-8 and refuses a CR (a CRLF copy, a
lone CR), a byte order mark and a NUL with the same message whichever command read it; and every
number in them is ASCII decimal (``decimal``), never what ``str.isdigit`` or ``int`` would also take.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass

from g6.ledger.keys import SigningKey, VerifyKey

DASH = "\u2014 "
ED25519 = b"\x01"
MAX_NOTE = 1 << 20
# signature lines on one note: Go's note.Open refuses a note with more, so g6 neither reads nor writes one
MAX_SIGNATURES = 100
MAX_NUMBER = (1 << 63) - 1  # a tree size or an index fits a signed 64-bit integer, as in every tlog
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")  # [0-9] in a str pattern is ASCII only (\d is not)
_KEY_ID_HEX = re.compile(r"[0-9a-fA-F]{8}")

# the one wording of each refusal, whichever command read the note or proof
CR = "it holds a carriage return (CR); C2SP notes and proofs end every line with LF alone " \
     "(a copy saved with CRLF line endings?)"
BOM = "it holds a byte order mark (U+FEFF); C2SP notes and proofs are UTF-8 text without one"
NUL = "it holds a NUL character"
NOT_UTF8 = "it is not UTF-8 text"


class NoteError(ValueError):
    """A note or checkpoint that is malformed or whose signature does not hold."""


def decimal(text: str) -> int | None:
    """``text`` as a number when it is ASCII decimal with no sign, space or leading zero (``0|[1-9][0-9]*``)
    and at most ``MAX_NUMBER``; else None. ``str.isdigit`` takes '²' and '١٢', and ``int`` takes '١٢',
    ' 12', '+12' and '1_2': no number g6 reads from a note or a proof goes through either alone."""
    if _DECIMAL.fullmatch(text) is None:
        return None
    n = int(text)
    return n if n <= MAX_NUMBER else None


def note_text(data: bytes | str, limit: int = MAX_NOTE) -> str:
    """The text of a note or a proof, as every reader must take it: at most ``limit`` bytes of UTF-8
    (decoded strictly), with no CR, byte order mark or NUL anywhere; ``NoteError`` otherwise, worded
    the same for every command. A str is checked alike (it must encode to UTF-8: no lone surrogate)."""
    if isinstance(data, str):
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError:
            raise NoteError(NOT_UTF8) from None
        if size > limit:
            raise NoteError(f"it is larger than {limit} bytes")
        text = data
    else:
        if len(data) > limit:
            raise NoteError(f"it is larger than {limit} bytes")
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise NoteError(NOT_UTF8) from None
    if "\r" in text:
        raise NoteError(CR)
    if "\ufeff" in text:
        raise NoteError(BOM)
    if "\x00" in text:
        raise NoteError(NUL)
    return text


def read_note_file(path: str | os.PathLike[str], limit: int = MAX_NOTE) -> str:
    """A note (or proof) file read as bytes, at most ``limit`` of them, through ``note_text``: ``NoteError``
    for what it holds, ``OSError`` when it cannot be read."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    return note_text(data, limit)


def _check_name(name: str) -> None:
    if not name or "+" in name or any(c.isspace() for c in name):  # C2SP's rule, no more
        raise NoteError(f"bad key name {name[:60]!r}: non-empty, no spaces, no '+'")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a command-line argument that was not UTF-8)
        raise NoteError(f"bad key name {name[:60]!r}: not UTF-8") from None


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
    if _KEY_ID_HEX.fullmatch(hexid) is None:  # bytes.fromhex would also take spaces
        raise NoteError("a verifier key's key id is 8 hex digits")
    kid = bytes.fromhex(hexid)
    raw = _b64(b64)
    if raw is None:
        raise NoteError("a verifier key has a bad key encoding")
    if len(raw) != 33 or raw[:1] != ED25519:
        raise NoteError("only Ed25519 verifier keys are supported")
    key = VerifyKey(raw[1:])
    if note_key_id(name, key) != kid:
        raise NoteError("the verifier key's id does not match its name and key")
    return name, key


def _b64(text: str) -> bytes | None:
    """Strict base64, or None: a non-ASCII str makes ``b64decode`` raise a plain ValueError, not
    ``binascii.Error``, so both are caught."""
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return None


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


def parse_note(note: str | bytes) -> tuple[str, list[NoteSignature]]:
    """The note's text and its signatures (none checked). ``note`` as read (bytes) or as text: either
    goes through ``note_text`` first."""
    note = note_text(note)
    i = note.rfind("\n\n")
    if i < 0 or not note.endswith("\n"):
        raise NoteError("a signed note is text, a blank line, then signature lines")
    text, sig_block = note[: i + 1], note[i + 2 :]
    _check_text(text)
    if not sig_block:
        raise NoteError("the note has no signature")
    lines = sig_block[:-1].split("\n")  # LF alone ends a line (splitlines would also cut at U+2028…)
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"too many signatures ({len(lines)}; a note holds at most {MAX_SIGNATURES})")
    sigs = [parse_signature_line(line) for line in lines]
    if not sigs:
        raise NoteError("the note has no signature")
    return text, sigs


def parse_signature_line(line: str) -> NoteSignature:
    """One signature line ``— <name> <base64(key id || signature)>``, without its newline (not checked)."""
    if not line.startswith(DASH):
        raise NoteError(f"not a signature line: {line[:40]!r}")
    name, _, b64 = line[len(DASH):].rpartition(" ")
    _check_name(name)
    raw = _b64(b64)
    if raw is None:
        raise NoteError("signature is not base64")
    if len(raw) < 5:
        raise NoteError("signature too short")
    return NoteSignature(name, raw[:4], raw[4:])


def open_note(note: str | bytes, name: str, key: VerifyKey) -> str:
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
        size = decimal(size_s)
        if size is None:
            raise NoteError(f"bad tree size {size_s[:40]!r}: ASCII digits, no leading zero, at most {MAX_NUMBER}")
        root = _b64(root_s)
        if root is None:
            raise NoteError("root hash is not base64")
        if len(root) != 32:
            raise NoteError("root hash is not 32 bytes")
        if any(not e for e in ext):
            raise NoteError("empty extension line")
        return cls(origin, size, root, tuple(ext))


def sign_checkpoint(cp: Checkpoint, key: SigningKey) -> str:
    return sign_note(cp.text(), cp.origin, key)


def open_checkpoint(note: str | bytes, key: VerifyKey, origin: str | None = None) -> Checkpoint:
    """Parse, check the origin (when given) and the signature by that origin's key."""
    text, _ = parse_note(note)
    cp = Checkpoint.parse(text)
    if origin is not None and cp.origin != origin:
        raise NoteError(f"checkpoint origin {cp.origin!r} is not the expected {origin!r}")
    open_note(note, cp.origin, key)
    return cp


def signed_by(note: str | bytes, key: VerifyKey, origin: str | None = None) -> bool:
    """Whether ``note`` is a checkpoint (of ``origin``, when given) validly signed with ``key``."""
    try:
        open_checkpoint(note, key, origin)
        return True
    except NoteError:
        return False
