"""Full verify over row ranges: the fast signed-message cut, range sizes, the pool's start method
and the progress callback."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.ledger import Ledger, Receipt, SigningKey
from g6.ledger import stored_tree as stt
from g6.ledger.receipts import signed_message_fast, unsigned_bytes_of_stored
from g6.ledger.verification import verify_ranges

KEY = SigningKey.generate()
KEYS = {KEY.key_id: KEY.public}


def receipts(start: int, n: int) -> list[Receipt]:
    return [Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i) for i in range(start, start + n)]


def stored_text(r: Receipt) -> tuple[Receipt, str]:
    signed, body = r.sign_canonical(KEY)  # exactly what Ledger.append_many stores
    return signed, body.decode()


# receipt-like JSON values: every JSON type, text with escapes, non-ASCII and astral characters, and
# the keys and values the cut looks for ("schema", "signature", the schema name)
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["schema", "signature", '"signature"', "runx.receipt.v1", "sign\\u0061ture", "\u2028", "\x7f", "\U0001f600"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(request=st.dictionaries(_text, _json, max_size=4), detail=st.dictionaries(_text, _json, max_size=4),
       url=_text)
def test_fast_signed_message_is_rfc8785_of_the_unsigned_receipt(request: dict[str, Any], detail: dict[str, Any],
                                                               url: str) -> None:
    r = Receipt(kind="fetch", source="web", request=request, outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED",
                final_url=url, detail=detail)
    signed, text = stored_text(r)
    data = json.loads(text)
    fast = signed_message_fast(text, data)
    want = rfc8785.dumps(signed.to_json(with_signature=False))
    if fast is not None:
        # the one thing the fast cut must never do: give other bytes than RFC 8785 of the receipt
        assert fast == want
        assert unsigned_bytes_of_stored(text, data) == want
    else:  # only where "signature" is written more than once, or a \u escape could hide a key
        assert text.count('"signature"') != 1 or "\\u" in text
    assert signed.verify_signature(KEYS, message=fast if fast is not None else want)[0]


def test_fast_cut_is_taken_for_plain_receipts_and_refused_where_it_could_be_misread() -> None:
    signed, text = stored_text(receipts(0, 1)[0])
    data = json.loads(text)
    assert signed_message_fast(text, data) == rfc8785.dumps(signed.to_json(with_signature=False))
    # a signature member planted inside another object, next to a "schema" member of its own
    planted = dict(data, detail={"schema": "runx.receipt.v1", "signature": data["signature"]})
    ptext = rfc8785.dumps(planted).decode()
    assert signed_message_fast(ptext, planted) is None
    # the top-level key spelt with an escape, so a plain count would not see it
    moved = dict(data)
    sig = moved.pop("signature")
    moved["detail"] = {"schema": "runx.receipt.v1", "signature": sig}
    escaped = rfc8785.dumps(moved).decode()[:-1] + ',"sign\\u0061ture":' + json.dumps(sig) + "}"
    assert json.loads(escaped)["signature"] == sig
    assert signed_message_fast(escaped, json.loads(escaped)) is None
    # "signature" as a value: the checked path decides
    valued, vtext = stored_text(Receipt(kind="fetch", source="web", request={"field": "signature"}, outcome="ok",
                                        outcome_code="G6_E_KNOWLEDGE_FETCHED"))
    assert signed_message_fast(vtext, json.loads(vtext)) is None


def test_receipts_off_the_fast_path_verify_and_a_forged_one_fails(tmp_path: Path) -> None:
    led = Ledger(tmp_path / "l.sqlite")
    odd = [Receipt(kind="fetch", source="web", request={"signature": {"x": 1}, "q": "\u00e9\x01"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", detail={"schema": "runx.receipt.v1", "n": 1.5})]
    led.append_many(receipts(0, 40) + odd + receipts(40, 300), KEY)
    for workers in (1, 2):
        report = led.verify(KEYS, workers=workers)
        assert report.ok and report.rows == 341
        assert report.to_json()["checks"]["signature"]["checked"] == 341
    # row 5 rewritten with its signature moved into "detail" and the top-level key escaped: the
    # chain flags the edit, and the signature check must too
    conn = sqlite3.connect(led.path, isolation_level=None)
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = 5").fetchone()[0]
    data = json.loads(text)
    sig = data.pop("signature")
    data["detail"] = {"schema": "runx.receipt.v1", "signature": sig}
    forged = rfc8785.dumps(data).decode()[:-1] + ',"sign\\u0061ture":' + json.dumps(sig) + "}"
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 5", (forged,))
    report = led.verify(KEYS, workers=2)
    assert [(f.check, f.seq) for f in report.failures("signature")] == [("signature", 5)]


def test_range_size_gives_every_worker_ranges() -> None:
    assert verify_ranges.range_size(2_000, 1) == verify_ranges.CHUNK
    chunk = verify_ranges.range_size(2_000, 2)
    assert chunk & (chunk - 1) == 0 and chunk >= verify_ranges.MIN_CHUNK
    assert chunk == verify_ranges.MIN_CHUNK and -(-2_000 // chunk) >= 2 * 4  # as many as the floor allows
    chunk = verify_ranges.range_size(100_000, 2)  # short ranges, so the last ones leave no core idle for long
    assert chunk & (chunk - 1) == 0 and -(-100_000 // chunk) >= 2 * verify_ranges.RANGES_PER_WORKER
    assert -(-100_000 // (chunk * 2)) < 2 * verify_ranges.RANGES_PER_WORKER  # and no shorter than that needs
    assert verify_ranges.range_size(10, 2) == verify_ranges.MIN_CHUNK  # never below
    assert verify_ranges.range_size(1_000_000, 2) == verify_ranges.CHUNK  # large ledgers keep full ranges


@pytest.mark.parametrize("workers", [1, 2])
def test_small_ranges_check_what_spans_them_and_report_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                workers: int) -> None:
    monkeypatch.setattr(verify_ranges, "CHUNK", 64)
    monkeypatch.setattr(verify_ranges, "MIN_CHUNK", 8)
    led = Ledger(tmp_path / "l.sqlite")
    led.append_many(receipts(0, 200), KEY)
    seen: list[tuple[int, int]] = []
    report = led.verify(KEYS, workers=workers, progress=lambda done, total: seen.append((done, total)))
    assert report.ok and report.rows == 200
    chunk = verify_ranges.range_size(200, workers)
    assert chunk == (8 if workers == 2 else 64)
    assert len(seen) == -(-200 // chunk) and seen[-1] == (200, 200)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    # a stored hash above the 8-row ranges (level 6: rows 1..64) and a chain break at a range start
    conn = sqlite3.connect(led.path, isolation_level=None)
    idx = stt.stored_hash_index(6, 0)
    conn.execute("UPDATE merkle_hashes SET hash = ? WHERE id = ?", (b"\x02" * 32, idx))
    conn.execute("UPDATE receipts SET prev_hash = prev_hash || 'x' WHERE seq = 33")
    bad = led.verify(KEYS, workers=workers)
    assert (f"stored tree hash {idx} (level 6) differs from the hash of the receipts"
            in [f.detail for f in bad.failures("tree")])
    assert 33 in [f.seq for f in bad.failures("chain")]


def test_pool_forks_only_without_other_threads() -> None:
    alone = threading.active_count() == 1
    assert verify_ranges._pool_context().get_start_method() == ("fork" if alone else "spawn")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert verify_ranges._pool_context().get_start_method() == "spawn"
    finally:
        stop.set()
        t.join()


# A process's SIGINT may be given by the kernel to any of its threads (a ProcessPoolExecutor has one of its own); its
# C handler then only notes it, and Python raises KeyboardInterrupt when the main thread next runs Python code.
# ``_thread.interrupt_main`` from another thread does exactly that: the wait for the ranges must wake on its own.
_INTERRUPTED_RANGES = """
import _thread, multiprocessing, sys, threading
import signal
# Ctrl-C as a terminal gives it: the test command may run with SIGINT ignored (a CI runner), which this
# process inherits, and then interrupt_main would do nothing
signal.signal(signal.SIGINT, signal.default_int_handler)
from g6.ledger.verification import verify_ranges as vr

def slow(*args):  # a range that takes a long time (the forked worker has this module's names)
    threading.Event().wait({limit})

vr._worker = slow
vr._pool_context = lambda: multiprocessing.get_context("fork")  # this script has threads: the pool would spawn
given_up = threading.Event()

def main_waits():  # the main thread asleep in the wait for the ranges' results (Condition.wait, Event.wait, then
    # concurrent.futures' wait in _collect, or as_completed before), not in a thread's start, which waits too
    frame = sys._current_frames().get(threading.main_thread().ident)
    names = []
    while frame is not None and len(names) < 4:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return names[:2] == ["wait", "wait"] and names[2:] in (["wait", "_collect"], ["as_completed", "_ranges_in_workers"])

def interrupt_once_waiting():
    while not main_waits():
        given_up.wait(0.005)
    _thread.interrupt_main()  # noted by a thread that is not the main one
    if not done.wait({limit}):
        given_up.set()

done = threading.Event()
threading.Thread(target=interrupt_once_waiting, daemon=True).start()
job = vr._Job(None, None, None, False, 2, None, None)
try:
    try:
        vr._ranges_in_workers(str, [(1, 1), (2, 2)], job, 2)
        print("the wait ended without the interrupt")
    except KeyboardInterrupt:
        print("interrupted only once the ranges ended" if given_up.is_set() else "interrupted")
    for _ in range(400):  # killed: reaped within moments (20 s at most here), never after the ranges' own end
        if not multiprocessing.active_children():
            break
        threading.Event().wait(0.05)
    print("workers left:", len(multiprocessing.active_children()))
finally:
    done.set()
"""


def test_ctrl_c_noted_by_another_thread_ends_the_wait_for_the_ranges() -> None:
    import subprocess
    import sys

    limit = 60
    r = subprocess.run([sys.executable, "-c", _INTERRUPTED_RANGES.format(limit=limit)], capture_output=True,
                       text=True, timeout=limit * 4)
    assert r.stdout.strip().splitlines() == ["interrupted", "workers left: 0"], (r.stdout, r.stderr[-2000:])
