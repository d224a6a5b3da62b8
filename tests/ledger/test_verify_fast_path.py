"""The fast path of a full verify (``verify_ranges._row_passes``) gives the checked path's verdicts.

It may only ever say "every check of this row holds", and only where the checked path says so too:
its signed-message cut equals ``signed_message_fast``, its JSON reader (orjson) reads nothing json
refuses and every string as json does, and over ledgers tampered in every way these tests know,
a range checked with it equals the same range checked with it switched off, row for row.
"""

from __future__ import annotations

import base64
import contextlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.ledger import Ledger, Receipt, SigningKey
from g6.ledger import stored_tree as stt
from g6.ledger.backends.sqlite import SqliteRows
from g6.ledger.chain import GENESIS, entry_hash
from g6.ledger.receipts import cut_plain_signature, plain_signature_member, signed_message_fast
from g6.ledger.verification import verify_ranges
from tests.ledger.test_verify_parallel import _json, _text  # receipt-like JSON, the same strategies

KEY = SigningKey.generate()
OTHER = SigningKey.generate()
KEYS = {KEY.key_id: KEY.public}

# what an edit puts into a stored text: JSON punctuation, escapes, the keys and members the cut looks at
_SNIPPETS = ["", " ", "\n", '"', "\\", "\\u0061", ",", ":", "{", "}", "[", "]", "0", "1e999", "NaN", '"signature"',
             ',"signature":{"alg":"ed25519","key_id":"k","value":"AA=="}', '"schema":"runx.receipt.v1",',
             ',"extra":1', '"sign\\u0061ture"', "\\ud800", "é", "\U0001f600", "99999999999999999999999"]


def _receipt(i: int, **kw: Any) -> Receipt:
    base: dict[str, Any] = {"kind": "fetch", "source": "web", "request": {"url": f"https://e.org/{i}"},
                            "outcome": "ok", "outcome_code": "G6_E_KNOWLEDGE_FETCHED", "byte_count": i}
    return Receipt(**(base | kw))


def _stored(r: Receipt) -> str:
    return r.sign_canonical(KEY)[1].decode()


def _edit(text: str, at: int, cut: int, snippet: str) -> str:
    at = at % (len(text) + 1)
    return text[:at] + snippet + text[at + cut:]


# -- the cut ---------------------------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(request=st.dictionaries(_text, _json, max_size=3), detail=st.dictionaries(_text, _json, max_size=3),
       at=st.integers(0, 2_000), cut=st.integers(0, 3), snippet=st.sampled_from(_SNIPPETS), edit=st.booleans(),
       value=st.sampled_from(["", "QUJD", "AA==", "x+/=", "a b", 'q"', "\\", "é"]))
def test_plain_cut_is_the_fast_cut(request: dict[str, Any], detail: dict[str, Any], at: int, cut: int,
                                   snippet: str, edit: bool, value: str) -> None:
    text = _stored(_receipt(1, request=request, detail=detail))
    if edit:
        text = _edit(text, at, cut, snippet)
    try:
        data = json.loads(text)
    except ValueError:
        return
    sig = data.get("signature") if isinstance(data, dict) else None
    if not isinstance(sig, dict) or set(sig) != {"alg", "key_id", "value"} or not all(
            isinstance(v, str) for v in sig.values()):
        return
    member = plain_signature_member(sig["alg"], sig["key_id"], sig["value"])
    if member is None:
        return
    fast = signed_message_fast(text, data)
    assert cut_plain_signature(text, member) == (fast.decode() if fast is not None else None)
    # the member of another value is never cut out of this text
    other = plain_signature_member(sig["alg"], sig["key_id"], value)
    if other is not None and value != sig["value"]:
        assert cut_plain_signature(text, other) is None


def test_plain_member_is_the_canonical_member() -> None:
    sig = {"alg": "ed25519", "key_id": "ed25519:abc_DEF-1.2", "value": "QUJD+/=="}
    assert plain_signature_member(**sig) == rfc8785.dumps({"signature": sig})[1:-1].decode()
    assert plain_signature_member("ed25519", 'a"b', "QUJD") is None
    assert plain_signature_member("ed25519", "k", "a\\u0062") is None


# -- the JSON reader -------------------------------------------------------------------------------

def _agree(a: Any, b: Any) -> bool:
    """Same structure, keys, strings, booleans and nulls; numbers may differ (orjson reads an integer
    past 64 bits as a float), which the fast path never compares."""
    num = (int, float)
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_agree(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return type(b) is list and len(a) == len(b) and all(_agree(x, y) for x, y in zip(a, b, strict=True))
    if type(a) in num and type(b) in num:
        return True
    return type(a) is type(b) and a == b


_any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.text(alphabet=st.characters(), max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10)


@settings(max_examples=500, deadline=None)
@given(value=_any_json, ascii_=st.booleans(), at=st.integers(0, 2_000), cut=st.integers(0, 3),
       snippet=st.sampled_from(_SNIPPETS), edit=st.sampled_from(["none", "value", "receipt"]))
def test_orjson_reads_nothing_json_refuses_and_every_string_alike(value: Any, ascii_: bool, at: int, cut: int,
                                                                   snippet: str, edit: str) -> None:
    text = json.dumps(value, ensure_ascii=ascii_)
    if edit == "value":
        text = _edit(text, at, cut, snippet)
    elif edit == "receipt":
        text = _edit(_stored(_receipt(1)), at, cut, snippet)
    _assert_read_alike(text)


def _assert_read_alike(text: str) -> None:
    try:
        fast = verify_ranges.read_json(text)
    except ValueError:
        return  # refused: the fast path hands the row to the checked path
    assert _agree(fast, json.loads(text)), text


@pytest.mark.parametrize("depth", [1, 500, 511, 512, 513, 600, 1_000, 1_023, 1_024, 2_000])
@pytest.mark.parametrize("bracket", ["[]", "{}"])
def test_read_json_leaves_deep_texts_to_json(depth: int, bracket: str) -> None:
    # orjson reads nesting deeper than json can (json raises RecursionError): such a text goes to json
    o, c = bracket
    inner = '{"a":' if o == "{" else "["
    text = (inner * depth + "1" + c * depth) if o == "{" else (o * depth + c * depth)
    try:
        fast = verify_ranges.read_json(text)
    except (ValueError, RecursionError):
        with pytest.raises((ValueError, RecursionError)):
            json.loads(text)
        return
    assert fast == json.loads(text)  # (== here: _agree would recurse past the limit)


@pytest.mark.parametrize("text", ["NaN", "-Infinity", '"\\ud800"', "1" * 400, "1" * 5_000, "1" * 30,
                                  '{"a":1,"a":"x"}', "[1,]", " 1 ", "\ufeff1", "01", '"\\x"', "1" * 400 + ".5"])
def test_read_json_on_what_orjson_and_json_read_differently(text: str) -> None:
    _assert_read_alike(text)


# -- the fast path against the checked path, over tampered ledgers ----------------------------------

ROWS = 14


@pytest.fixture(scope="module")
def base_ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("fast") / "l.sqlite"
    led = Ledger(path)
    odd = [_receipt(90, request={"signature": {"x": 1}, "q": "\u00e9\x01"}, detail={"schema": "runx.receipt.v1"}),
           _receipt(91, request={"u": "\\u0061"}), _receipt(92, detail={"n": 1.5, "big": 2**53 - 1, "t": "é😀"})]
    led.append_many([_receipt(i) for i in range(5)] + odd + [_receipt(i) for i in range(5, ROWS - 3)], KEY)
    led.rows.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    led.close()
    yield path


def _rechain(conn: sqlite3.Connection, from_seq: int) -> None:
    """Entry hashes (and the next rows' prev_hash) recomputed from ``from_seq`` on, as a forger who
    edited a row would, so that only the signature, JSON and column checks are left to catch it."""
    prev = conn.execute("SELECT entry_hash FROM receipts WHERE seq = ?", (from_seq - 1,)).fetchone()
    prev_hash = prev[0] if prev else GENESIS
    for seq, text in conn.execute("SELECT seq, receipt FROM receipts WHERE seq >= ? ORDER BY seq",
                                  (from_seq,)).fetchall():
        raw = text.encode() if isinstance(text, str) else bytes(text) if isinstance(text, bytes) else str(text).encode()
        h = entry_hash(seq, prev_hash, raw)
        conn.execute("UPDATE receipts SET prev_hash = ?, entry_hash = ? WHERE seq = ?", (prev_hash, h, seq))
        prev_hash = h


def _resign_value(text: str, how: str) -> str:
    try:
        value = json.loads(text)["signature"]["value"]
    except (ValueError, KeyError, TypeError):
        return text  # an earlier edit left nothing to re-sign
    if not isinstance(value, str):
        return text
    new = {"unpadded": value.rstrip("="), "newline": value[:10] + "\n" + value[10:], "other_key": base64.b64encode(
        OTHER.sign(b"x")).decode(), "not_base64": "!" + value[1:], "urlsafe": value.replace("+", "-").replace("/", "_"),
           "empty": "", "dotted": value[:8] + "." + value[8:], "colon": value[:20] + ":" + value[20:]}[how]
    return text.replace(json.dumps(value), json.dumps(new), 1)


TAMPERS = ["edit", "edit", "edit", "column", "prev", "entry", "tree", "sig_value", "sig_extra", "sig_alg", "key_id",
           "key_list", "bytes", "swap", "none"]


@st.composite
def _tampers(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    out = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(TAMPERS))
        seq = draw(st.integers(1, ROWS))
        out.append((kind, seq, draw(st.integers(0, 3_000)), draw(st.integers(0, 3)), draw(st.sampled_from(_SNIPPETS)),
                    draw(st.sampled_from(["receipt_id", "kind", "outcome", "fetched_at"])),
                    draw(st.sampled_from(["x", None, 7, b"ok"])),
                    draw(st.sampled_from(["unpadded", "newline", "other_key", "not_base64", "urlsafe", "empty",
                                          "dotted", "colon"])),
                    draw(st.booleans())))
    return out


def _tamper(conn: sqlite3.Connection, kind: str, seq: int, at: int, cut: int, snippet: str, column: str, value: Any,
            how: str, rechain: bool) -> None:
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = ?", (seq,)).fetchone()[0]
    if not isinstance(text, str):
        return
    new: Any = text
    if kind == "edit":
        new = _edit(text, at, cut, snippet)
    elif kind == "column":
        with contextlib.suppress(sqlite3.IntegrityError):  # a NOT NULL or UNIQUE column keeps its value
            conn.execute(f"UPDATE receipts SET {column} = ? WHERE seq = ?", (value, seq))
    elif kind == "prev":
        conn.execute("UPDATE receipts SET prev_hash = prev_hash || 'x' WHERE seq = ?", (seq,))
    elif kind == "entry":
        conn.execute("UPDATE receipts SET entry_hash = ? WHERE seq = ?", (GENESIS, seq))
    elif kind == "tree":
        conn.execute("UPDATE merkle_hashes SET hash = ? WHERE id = ?", (b"\x02" * 32, at % stt.stored_hash_count(ROWS)))
    elif kind == "sig_value":
        new = _resign_value(text, how)
    elif kind == "sig_extra":
        new = text.replace('"signature":{', '"signature":{"a":1,', 1)
    elif kind == "sig_alg":
        new = text.replace('"alg":"ed25519"', '"alg":"Ed25519"', 1)
    elif kind == "key_id":
        new = text.replace(KEY.key_id, OTHER.key_id, 1)
    elif kind == "key_list":
        new = text.replace(f'"{KEY.key_id}"', f'["{KEY.key_id}"]', 1)
    elif kind == "bytes":
        new = text.encode()
    elif kind == "swap" and seq < ROWS:
        other = conn.execute("SELECT receipt FROM receipts WHERE seq = ?", (seq + 1,)).fetchone()[0]
        conn.execute("UPDATE receipts SET receipt = ? WHERE seq = ?", (other, seq + 1))
        new = other
    if new != text:
        conn.execute("UPDATE receipts SET receipt = ? WHERE seq = ?", (new, seq))
    if rechain:
        _rechain(conn, seq)


def _range(path: Path, compact: bool) -> verify_ranges.RangeResult:
    conn = SqliteRows.reader(path)
    try:
        return verify_ranges.verify_range(conn, KEYS, None, 1, ROWS, prev=None, compact=compact,
                                            tree_ids=verify_ranges._range_tree_ids(1, ROWS,
                                                                                     stt.stored_hash_count(ROWS)))
    finally:
        conn.close()


def _fields(r: verify_ranges.RangeResult) -> tuple[Any, ...]:
    return r.checks, dict(r.passed), r.rows, r.first, r.last, r.frontier.size, r.frontier.stack


def _checked_only(keys: Any, parse: Any) -> Any:
    return lambda *row: None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tampers=_tampers(), compact=st.booleans())
def test_fast_path_gives_the_checked_paths_verdicts(base_ledger: Path, tampers: list[tuple[Any, ...]],
                                                    compact: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "l.sqlite"
        shutil.copy(base_ledger, path)
        conn = sqlite3.connect(path, isolation_level=None)
        for t in tampers:
            _tamper(conn, *t)
        conn.close()
        fast = _range(path, compact)
        with mock.patch.object(verify_ranges, "_row_passes", _checked_only):
            checked = _range(path, compact)
    assert _fields(fast) == _fields(checked)


def test_fast_path_takes_the_plain_rows(base_ledger: Path) -> None:
    conn = sqlite3.connect(base_ledger)
    loaded = {k: verify_ranges._LoadedKey(v) for k, v in KEYS.items()}
    passes = verify_ranges._row_passes(loaded, verify_ranges.read_json)
    prev = (0, GENESIS)
    taken = []
    for seq, rid, kind, outcome, fetched_at, text, sprev, shash in conn.execute(
            "SELECT seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash FROM receipts "
            "ORDER BY seq"):
        got = passes(seq, rid, kind, outcome, fetched_at, text, sprev, shash, prev)
        if got is not None:
            assert got[0] == text.encode() and got[1] == json.loads(text)
            taken.append(seq)
        prev = (seq, shash)
    conn.close()
    # every row but those the cut refuses: a "signature" member in the request, a \\u in the text
    assert taken == [s for s in range(1, ROWS + 1) if s not in (6, 7)]


@pytest.mark.parametrize("kind,how,check", [
    ("edit_value", "", "signature"), ("reformat", "", "signature"), ("sig_extra", "", "signature"),
    ("sig_value", "unpadded", "signature"), ("sig_value", "newline", "signature"),
    ("sig_value", "other_key", "signature"),
    ("sig_value", "dotted", "signature"), ("key_id", "", "signature"), ("key_list", "", "signature"),
    ("column", "", "chain"),
    ("moved_sig", "", "signature")])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_tampered_row_fails_in_a_compact_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
                                                 how: str, check: str, workers: int) -> None:
    """Ranges large enough to count passing checks (compact) still name the one tampered row, even
    when the forger recomputed the chain after it."""
    monkeypatch.setattr(verify_ranges, "CHUNK", 64)
    monkeypatch.setattr(verify_ranges, "MIN_CHUNK", 16)
    led = Ledger(tmp_path / "l.sqlite")
    led.append_many([_receipt(i) for i in range(200)], KEY)
    assert led.verify(KEYS, workers=workers).ok
    conn = sqlite3.connect(led.path, isolation_level=None)
    seq = 77
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = ?", (seq,)).fetchone()[0]
    data = json.loads(text)
    if kind == "edit_value":
        new = text.replace('"byte_count":76', '"byte_count":77', 1)
    elif kind == "reformat":  # the same receipt, not in canonical form
        new = json.dumps(data, separators=(", ", ": "), sort_keys=True)
    elif kind == "sig_extra":
        new = text.replace('"signature":{', '"signature":{"a":1,', 1)
    elif kind == "sig_value":
        new = _resign_value(text, how)
    elif kind == "key_id":
        new = text.replace(KEY.key_id, OTHER.key_id, 1)
    elif kind == "key_list":  # a key id no dict can be looked up by: a verdict, not a TypeError
        new = text.replace(f'"{KEY.key_id}"', f'["{KEY.key_id}"]', 1)
    elif kind == "moved_sig":  # the signature moved into "detail", the top-level key spelt with an escape
        sig = data.pop("signature")
        data["detail"] = {"schema": "runx.receipt.v1", "signature": sig}
        new = rfc8785.dumps(data).decode()[:-1] + ',"sign\\u0061ture":' + json.dumps(sig) + "}"
    else:
        new = text
        conn.execute("UPDATE receipts SET outcome = 'error' WHERE seq = ?", (seq,))
    assert new != text or kind == "column"
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = ?", (new, seq))
    _rechain(conn, seq)
    conn.close()
    report = led.verify(KEYS, workers=workers)
    assert not report.ok
    assert [f.seq for f in report.failures(check)] == [seq]
