from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from g6.ledger.keys import SigningKey
from g6.ledger.note import (
    Checkpoint,
    NoteError,
    open_checkpoint,
    open_note,
    parse_verifier_key,
    sign_checkpoint,
    sign_note,
    verifier_key,
)

VEC = json.loads((Path(__file__).resolve().parent.parent.parent / "fixtures" / "merkle" /
                  "signed_note_golang.json").read_text())


def golang_signer() -> SigningKey:
    raw = base64.b64decode(VEC["signer_key"].split("+", 4)[4])
    assert raw[0] == 1
    return SigningKey(Ed25519PrivateKey.from_private_bytes(raw[1:]))


def test_golang_signed_note_vector() -> None:
    key = golang_signer()
    assert sign_note(VEC["text"], "PeterNeumann", key) == VEC["signed_note"]
    assert verifier_key("PeterNeumann", key.public) == VEC["verifier_key"]
    name, pub = parse_verifier_key(VEC["verifier_key"])
    assert open_note(VEC["signed_note"], name, pub) == VEC["text"]


@pytest.mark.parametrize("mutate", [
    lambda n: n.replace("cryptography", "cryptografy"),
    lambda n: n.replace("x08go", "x08gp"),
    lambda n: n.replace("PeterNeumann x08", "PeterNeuman x08"),
    lambda n: n.replace("\n\n", "\n"),
    lambda n: n[:-1],
])
def test_tampered_notes_fail(mutate) -> None:
    name, pub = parse_verifier_key(VEC["verifier_key"])
    with pytest.raises(NoteError):
        open_note(mutate(VEC["signed_note"]), name, pub)


def test_checkpoint_round_trip_and_forgery() -> None:
    key, other = SigningKey.generate(), SigningKey.generate()
    cp = Checkpoint("g6-evidence/abc", 42, b"\x07" * 32)
    note = sign_checkpoint(cp, key)
    assert note.startswith("g6-evidence/abc\n42\nBwcH")
    assert open_checkpoint(note, key.public, "g6-evidence/abc") == cp
    with pytest.raises(NoteError):
        open_checkpoint(sign_checkpoint(cp, other), key.public)
    forged = note.replace("\n42\n", "\n43\n")
    with pytest.raises(NoteError):
        open_checkpoint(forged, key.public)
    with pytest.raises(NoteError):
        open_checkpoint(note, key.public, "g6-evidence/other")
    for bad in ("o\n01\n" + "A" * 44 + "\n", "o\n1\nnotbase64!\n", "o\n1\n" + base64.b64encode(b"x").decode() + "\n",
                "\n1\n" + base64.b64encode(b"x" * 32).decode() + "\n", "o\n1\n"):
        with pytest.raises(NoteError):
            Checkpoint.parse(bad)
