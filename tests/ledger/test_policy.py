"""tlog-policy files (c2sp.org/tlog-policy): every refusal names its line; k-of-n, nested groups, none; the
verdict names who signed, ignores unknown lines and fails on a known line that does not verify."""

from __future__ import annotations

import base64

import pytest

from g6.ledger.keys import SigningKey
from g6.ledger.note import Checkpoint, sign_checkpoint, verifier_key
from g6.ledger.transparency.cosignature import CosignerKey, sign_cosignature, with_cosignatures
from g6.ledger.transparency.policy import PolicyError, parse_policy, policy_from, read_policy

NOW = 1_800_000_000
ORIGIN = "example.com/log"


class World:
    def __init__(self, n: int = 4) -> None:
        self.log = SigningKey.generate()
        self.wkeys = [SigningKey.generate() for _ in range(n)]
        self.cp = Checkpoint(ORIGIN, 9, bytes(range(32)))
        self.note = sign_checkpoint(self.cp, self.log)

    def vkey(self, i: int) -> str:
        return CosignerKey(f"w{i}.example", self.wkeys[i].public).vkey()

    def cosign(self, *which: int) -> str:
        return with_cosignatures(self.note, [sign_cosignature(self.cp.text(), f"w{i}.example", self.wkeys[i], NOW)
                                             for i in which])

    def log_line(self) -> str:
        return f"log {verifier_key(ORIGIN, self.log.public)} https://log.example/\n"


@pytest.fixture
def w() -> World:
    return World()


# -- refusals, each naming its line -------------------------------------------------------------------
@pytest.mark.parametrize("body, line, why", [
    ("quorum a\n", 1, "not a witness or group defined on an earlier line"),
    ("witness a {0}\nquorum a\nquorum a\n", 3, "a second quorum line"),
    ("witness a {0}\n", None, "no quorum line"),
    ("witness a {0}\nwitness a {1}\nquorum a\n", 2, "a is already defined"),
    ("witness none {0}\nquorum none\n", 1, "none is predefined"),
    ("witness a {0}\nwitness b {0}\nquorum a\n", 2, "the same public key as line 1"),
    ("witness a {0}\ngroup g 3 a\nquorum g\n", 2, "not all, any or a number from 1 to 1"),
    ("witness a {0}\ngroup g 0 a\nquorum g\n", 2, "not all, any or a number"),
    ("witness a {0}\ngroup g 01 a\nquorum g\n", 2, "not all, any or a number"),
    ("witness a {0}\ngroup g any a a\nquorum g\n", 2, "lists a member twice"),
    ("witness a {0}\ngroup g any none\nquorum g\n", 2, "none cannot be a group member"),
    ("group g any b\nwitness b {0}\nquorum g\n", 1, "b is not a witness or group defined on an earlier line"),
    ("witness a {0}\ngroup g any\nquorum a\n", 2, "a group line reads"),
    ("witness a\nquorum none\n", 1, "a witness line reads"),
    ("witness a {0} http://x extra\nquorum none\n", 1, "a witness line reads"),
    ("witness a not-a-key\nquorum none\n", 1, "bad witness key for a"),
    ("witness a {log}\nquorum none\n", 1, "is a log key"),
    ("log {0}\nquorum none\n", 1, "bad log key"),
    ("logs x\nquorum none\n", 1, "unknown line 'logs'"),
    ("# ok\n\nwitness a {0}\x01\nquorum none\n", 3, "byte 0x01 is not allowed"),
    ("witness a {0}\r\nquorum none\n", 1, "byte 0x0d is not allowed"),
])
def test_a_bad_policy_is_refused_naming_the_line(w: World, body: str, line: int | None, why: str) -> None:
    text = body.format(w.vkey(0), w.vkey(1), log=verifier_key(ORIGIN, w.log.public))
    with pytest.raises(PolicyError, match=why) as e:
        parse_policy(text, "p.txt")
    assert str(e.value).startswith(f"p.txt line {line}:" if line else "p.txt has no quorum")
    assert e.value.code == "G6_E_POLICY"


def test_an_unreadable_policy_is_a_policy_error(tmp_path: object) -> None:
    with pytest.raises(PolicyError, match="cannot read the policy"):
        read_policy(f"{tmp_path}/missing")


def test_a_quorum_not_met_fails_and_says_who_signed(w: World) -> None:
    p = parse_policy(f"witness a {w.vkey(0)}\nwitness b {w.vkey(1)}\ngroup both all a b\nquorum both\n")
    v = p.satisfied(w.cosign(0), NOW)
    assert not v.ok and v.signed == ("a",) and "no quorum: cosigned by a; the quorum is 2 of (a, b)" in v.detail
    assert not p.satisfied(w.note, NOW).ok  # no cosignature at all: fails closed


def test_a_tampered_cosignature_of_a_listed_witness_fails_even_when_the_quorum_is_met(w: World) -> None:
    p = parse_policy(f"witness a {w.vkey(0)}\nwitness b {w.vkey(1)}\ngroup g any a b\nquorum g\n")
    good = w.cosign(0, 1)
    lines = good.split("\n")
    name, b64 = lines[-2].rsplit(" ", 1)
    raw = bytearray(base64.b64decode(b64))
    raw[20] ^= 0xFF
    tampered = "\n".join([*lines[:-2], f"{name} {base64.b64encode(bytes(raw)).decode()}", ""])
    v = p.satisfied(tampered, NOW)
    assert not v.ok and "b" in v.failed and "does not verify" in v.detail


def test_a_listed_log_must_have_signed(w: World) -> None:
    p = parse_policy(f"{w.log_line()}witness a {w.vkey(0)}\nquorum a\n")
    assert p.satisfied(w.cosign(0), NOW).ok
    other = World()
    forged = with_cosignatures(sign_checkpoint(w.cp, other.log), [w.cosign(0).split("\n")[-2]])
    v = p.satisfied(forged, NOW)
    assert not v.ok and "not signed by a log key" in v.detail
    assert p.satisfied(forged, NOW, check_log=False).ok  # the caller checked the log with keys of its own
    elsewhere = Checkpoint("example.com/other", 1, bytes(32))
    assert "lists no log with origin example.com/other" in p.satisfied(sign_checkpoint(elsewhere, w.log)).detail


def test_garbage_is_a_failed_verdict_not_an_exception(w: World) -> None:
    p = parse_policy("quorum none\n")
    v = p.satisfied(b"\xff\xfe", NOW)
    assert not v.ok and "not a checkpoint note" in v.detail


# -- what holds -----------------------------------------------------------------------------------------
def test_the_spec_example_nested_groups(w: World) -> None:
    six = World(6)
    body = f"""# two organisations
{six.log_line()}
witness X1 {six.vkey(0)}
witness X2 {six.vkey(1)}\t
  witness X3 {six.vkey(2)} https://x3.example/
group X-witnesses 2 X1 X2 X3
\t# Y
witness Y1 {six.vkey(3)}
witness Y2 {six.vkey(4)}
witness Y3 {six.vkey(5)}
group Y-witnesses any Y1 Y2 Y3
group X-and-Y all X-witnesses Y-witnesses
quorum X-and-Y
"""
    p = parse_policy(body)
    assert [x.name for x in p.with_urls()] == ["X3"]
    assert p.describe() == "2 of (2 of (X1, X2, X3), 1 of (Y1, Y2, Y3))"
    assert p.satisfied(six.cosign(0, 2, 4), NOW).ok
    assert p.satisfied(six.cosign(0, 2, 4), NOW).signed == ("X1", "X3", "Y2")
    assert not p.satisfied(six.cosign(0, 3, 4, 5), NOW).ok  # one X only
    assert not p.satisfied(six.cosign(0, 1, 2), NOW).ok  # no Y


def test_quorum_none_and_a_single_witness(w: World) -> None:
    assert parse_policy("quorum none\n").satisfied(w.note, NOW).ok
    p = parse_policy(f"witness a {w.vkey(0)} http://127.0.0.1:1/\nquorum a")  # no final newline
    assert p.satisfied(w.cosign(0), NOW).ok and not p.satisfied(w.cosign(1), NOW).ok


def test_unknown_cosignatures_are_ignored(w: World) -> None:
    p = parse_policy(f"witness a {w.vkey(0)}\nquorum a\n")
    noisy = with_cosignatures(w.cosign(1, 2, 0), ["— w0.example AAAAAAAAAAAA", "— x.example AAAAAAAAAAAA"])
    v = p.satisfied(noisy, NOW)
    assert v.ok and v.signed == ("a",) and not v.failed


def test_policy_from_a_witness_list_needs_all_of_them(w: World) -> None:
    p = parse_policy(f"witness a {w.vkey(0)} http://a\nwitness b {w.vkey(1)} http://b\nquorum none\n")
    both = policy_from([p.witnesses["a"], p.witnesses["b"]])
    assert both.satisfied(w.cosign(0, 1), NOW).ok and not both.satisfied(w.cosign(0), NOW).ok
    assert policy_from([]).satisfied(w.note, NOW).ok


def test_two_keys_under_one_witness_name_are_two_witnesses(w: World) -> None:
    """A witness that rotated its key: both listed, told apart by key id, as a note verifier does."""
    new = SigningKey.generate()
    new_vkey = CosignerKey("w0.example", new.public).vkey()
    p = parse_policy(f"witness old {w.vkey(0)}\nwitness new {new_vkey}\ngroup g all old new\nquorum g\n")
    line = sign_cosignature(w.cp.text(), "w0.example", new, NOW)
    v = p.satisfied(with_cosignatures(w.cosign(0), [line]), NOW)
    assert v.ok and v.signed == ("old", "new")
    assert p.satisfied(w.cosign(0), NOW).signed == ("old",)


def test_names_are_octets_and_a_non_utf8_name_is_shown_escaped(w: World) -> None:
    body = f"witness \xe2\x84\xaa {w.vkey(0)}\nwitness K {w.vkey(1)}\ngroup g any K \xff\nquorum g\n".encode("latin-1")
    with pytest.raises(PolicyError) as e:
        parse_policy(body, "p")
    assert str(e.value) == "p line 3: \\xff is not a witness or group defined on an earlier line"
    str(e.value).encode("utf-8")  # printable as it is
    p = parse_policy(body.replace(b" \xff", b""))
    assert set(p.witnesses) == {"\u212a", "K"}  # the Kelvin sign and K are two names
    odd = parse_policy(f"witness \xff {w.vkey(0)}\nquorum \xff\n".encode("latin-1"))
    v = odd.satisfied(w.cosign(0), NOW)
    assert v.ok and v.signed == ("\\xff",) and v.detail == "quorum met: cosigned by \\xff; the quorum is \\xff"
