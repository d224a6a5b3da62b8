"""cosignature/v1 (c2sp.org/tlog-cosignature): witness keys (type 0x04), the signed bytes, the timestamp rules,
unknown lines ignored and a known line that fails failing. Failures first."""

from __future__ import annotations

import base64
import struct

import pytest

from g6.ledger.keys import SigningKey
from g6.ledger.note import Checkpoint, NoteError, note_key_id, parse_note, sign_checkpoint, verifier_key
from g6.ledger.transparency.cosignature import (
    CosignatureError,
    CosignerKey,
    check_cosignatures,
    cosigned_message,
    cosigner_key_id,
    parse_cosigner_key,
    sign_cosignature,
    verify_cosignature,
    with_cosignatures,
)

# A cosignature litewitness v0.6.1 (filippo.io/torchwood) returned on loopback for a 1-entry log
# (/work/notes research run): a known answer from a third-party witness, checked byte for byte.
LW_VKEY = "example.com/g6-demo-witness+0950e283+BJ3WE6gxKXY2VmCg22nH2Wxs2znaDf+E+Te4x/yY2zYA"
LW_TEXT = "example.com/g6-demo-log\n1\ndziFphNIniTOLPdhmdakI/BC5LvxLX7s7pEu8nbGVwE=\n"
LW_LOG_LINE = ("— example.com/g6-demo-log fq+778LsLcB/oikaZaEdSM6syb0So9ypeLFBn3uHbazqh8IXrExmqwtkyXl7IXd0veJ12+zfZ287R"
               "QGec/25oiwhSAM=")
LW_LINE = ("— example.com/g6-demo-witness CVDigwAAAABrEmoybdRhUNUB26eZFkozXm9uLbsSQfPxFscMj/AfWILzf7hQA9WS+EYSa3ifgcnz"
           "VwxDYSy29uyZDj5/riVGI8hcCQ==")
LW_NOTE = LW_TEXT + "\n" + LW_LOG_LINE + "\n"
NOW = 1_800_000_000


def _cp_note(key: SigningKey | None = None) -> tuple[str, str]:
    cp = Checkpoint("example.com/log", 5, bytes(range(32)))
    return cp.text(), sign_checkpoint(cp, key or SigningKey.generate())


def _sig(line: str) -> object:
    return parse_note("x\n\n" + line + "\n")[1][0]


# -- failures ---------------------------------------------------------------------------------
@pytest.mark.parametrize("vkey, why", [
    ("nope", r"reads <name>\+<hex key id>\+<base64 key>"),
    ("w+zzzzzzzz+BAAA", "8 hex digits"),
    ("w+01234567+!!!", "bad key encoding"),
    ("w+01234567+" + base64.b64encode(b"\x06" + bytes(32)).decode(), "not an Ed25519 cosignature/v1 key"),
    ("w+01234567+" + base64.b64encode(b"\x04" + bytes(31)).decode(), "not an Ed25519 cosignature/v1 key"),
    ("w w+01234567+" + base64.b64encode(b"\x04" + bytes(32)).decode(), "bad key name"),
])
def test_a_malformed_witness_key_is_refused_saying_why(vkey: str, why: str) -> None:
    with pytest.raises(CosignatureError, match=why):
        parse_cosigner_key(vkey)


def test_a_log_key_is_not_a_witness_key_and_the_id_must_match() -> None:
    k = SigningKey.generate()
    with pytest.raises(CosignatureError, match="is a log key"):
        parse_cosigner_key(verifier_key("w.example", k.public))
    good = CosignerKey("w.example", k.public).vkey()
    name, hexid, b64 = good.split("+", 2)
    with pytest.raises(CosignatureError, match="id does not match"):
        parse_cosigner_key(f"other.example+{hexid}+{b64}")


def test_a_cosignature_over_another_checkpoint_or_by_another_key_fails() -> None:
    k = SigningKey.generate()
    w = CosignerKey("w.example", k.public)
    text, _ = _cp_note()
    line = sign_cosignature(text, "w.example", k, NOW)
    with pytest.raises(CosignatureError, match="does not verify"):
        verify_cosignature(_sig(line), text.replace("\n5\n", "\n6\n"), w)
    other = CosignerKey("w.example", SigningKey.generate().public)
    with pytest.raises(CosignatureError, match="not w.example's"):
        verify_cosignature(_sig(line), text, other)


def test_timestamp_rules_zero_too_large_and_future_are_refused() -> None:
    k = SigningKey.generate()
    w = CosignerKey("w.example", k.public)
    text, _ = _cp_note()
    for ts, why in ((0, "not between 1"), (1 << 63, "not between 1")):
        sig = k.sign(cosigned_message(text, ts))
        line = f"— w.example {base64.b64encode(w.key_id + struct.pack('>Q', ts) + sig).decode()}"
        with pytest.raises(CosignatureError, match=why):
            verify_cosignature(_sig(line), text, w)
    future = sign_cosignature(text, "w.example", k, NOW + 3600)
    with pytest.raises(CosignatureError, match="in the future"):
        verify_cosignature(_sig(future), text, w, now=NOW)
    assert verify_cosignature(_sig(future), text, w, now=NOW + 3600) == NOW + 3600  # no clock given: no bound


def test_a_truncated_or_padded_cosignature_is_refused() -> None:
    k = SigningKey.generate()
    w = CosignerKey("w.example", k.public)
    text, _ = _cp_note()
    raw = base64.b64decode(sign_cosignature(text, "w.example", k, NOW).split(" ")[-1])
    for bad in (raw[:-1], raw + b"\0"):
        with pytest.raises(CosignatureError, match="not 76"):
            verify_cosignature(_sig(f"— w.example {base64.b64encode(bad).decode()}"), text, w)


def test_a_known_line_that_fails_fails_that_witness_even_beside_a_good_one() -> None:
    k = SigningKey.generate()
    w = CosignerKey("w.example", k.public)
    text, note = _cp_note()
    good = sign_cosignature(text, "w.example", k, NOW)
    raw = bytearray(base64.b64decode(good.split(" ")[-1]))
    raw[-1] ^= 1
    tampered = f"— w.example {base64.b64encode(bytes(raw)).decode()}"
    found = check_cosignatures(f"{note}{tampered}\n{good}\n", [w])  # a note from elsewhere: both lines read
    assert found.valid == {} and "does not verify" in found.failed[w]


def test_a_malformed_note_is_a_note_error() -> None:
    with pytest.raises(NoteError):
        check_cosignatures("no signatures here\n", [])


# -- what holds ---------------------------------------------------------------------------------
def test_key_id_uses_type_0x04_not_the_log_type() -> None:
    k = SigningKey.generate()
    assert cosigner_key_id("w.example", k.public) != note_key_id("w.example", k.public)
    w = parse_cosigner_key(CosignerKey("w.example", k.public).vkey())
    assert w.key == k.public and w.key_id == cosigner_key_id("w.example", k.public)
    assert base64.b64decode(w.vkey().split("+", 2)[2])[:1] == b"\x04"


def test_litewitness_known_answer_verifies_byte_for_byte() -> None:
    w = parse_cosigner_key(LW_VKEY)
    assert w.key_id.hex() == "0950e283"
    assert verify_cosignature(_sig(LW_LINE), LW_TEXT, w) == 1796368946
    found = check_cosignatures(with_cosignatures(LW_NOTE, [LW_LINE]), [w])
    assert found.names() == {"example.com/g6-demo-witness": 1796368946} and not found.failed
    assert cosigned_message(LW_TEXT, 1796368946).startswith(b"cosignature/v1\ntime 1796368946\nexample.com/")


def test_unknown_signature_lines_are_ignored() -> None:
    k, stranger = SigningKey.generate(), SigningKey.generate()
    w = CosignerKey("w.example", k.public)
    text, note = _cp_note()
    lines = [sign_cosignature(text, "stranger.example", stranger, NOW),
             sign_cosignature(text, "w.example", stranger, NOW),  # the name, another key (id): unknown
             "— w.example AAAAAAAA",
             sign_cosignature(text, "w.example", k, NOW)]
    found = check_cosignatures(with_cosignatures(note, lines), [w], now=NOW)
    assert found.valid == {w: NOW} and not found.failed


def test_with_cosignatures_appends_each_line_once() -> None:
    text, note = _cp_note()
    k = SigningKey.generate()
    line = sign_cosignature(text, "w.example", k, NOW)
    once = with_cosignatures(note, [line])
    assert with_cosignatures(once, [line, line + "\n"]) == once == note + line + "\n"


def test_with_cosignatures_keeps_the_newest_line_per_key_and_the_note_s_own_first() -> None:
    """A witness asked again and again cosigns the same checkpoint with a new timestamp each time: the
    note shows its newest line once, whatever order the lines were kept in (issue 36)."""
    text, note = _cp_note()
    a, b = SigningKey.generate(), SigningKey.generate()
    wa, wb = CosignerKey("a.example", a.public), CosignerKey("b.example", b.public)
    lines = [sign_cosignature(text, name, k, NOW + t) for t in (0, 5, 2, 9, 1) for name, k in
             (("a.example", a), ("b.example", b))]
    lines.insert(3, "not a signature line")
    lines.append(sign_cosignature(text, "a.example", a, NOW + 3))
    full = with_cosignatures(note, lines)
    sigs = parse_note(full)[1]
    assert [s.name for s in sigs] == ["example.com/log", "a.example", "b.example"]
    assert full == note + sign_cosignature(text, "a.example", a, NOW + 9) + "\n" + \
        sign_cosignature(text, "b.example", b, NOW + 9) + "\n"
    assert check_cosignatures(full, [wa, wb], now=NOW + 9).valid == {wa: NOW + 9, wb: NOW + 9}
    again = with_cosignatures(full, [sign_cosignature(text, "b.example", b, NOW + 20)])  # a cosigned note, newer
    assert check_cosignatures(again, [wa, wb], now=NOW + 20).valid == {wa: NOW + 9, wb: NOW + 20}
    assert len(parse_note(again)[1]) == 3


def test_with_cosignatures_never_writes_a_note_past_100_signatures() -> None:
    text, note = _cp_note()
    many = [sign_cosignature(text, f"w{i}.example", SigningKey.generate(), NOW) for i in range(150)]
    full = with_cosignatures(note, many)
    assert len(parse_note(full)[1]) == 100 and full.startswith(note)
    with pytest.raises(NoteError, match="too many signatures \\(151; a note holds at most 100\\)"):
        parse_note(note + "".join(line + "\n" for line in many))
