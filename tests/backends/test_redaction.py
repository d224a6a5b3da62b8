"""Redaction, legal hold and retention, once per backend pair (SQLite + folder, PostgreSQL + SeaweedFS S3).

A redacted body is gone from the store and the log says so in a signed entry: every check passes and names it
redacted. A body gone without such an entry is still damage. Every refusal appends nothing and removes nothing;
no forged, moved, copied or hidden entry can make a deleted blob pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from g6.errors import BlobAlreadyRedacted, BlobNotHeld, BlobOnHold, BlobUnreferenced, InputError, RedactionRefused
from g6.home import EvidenceHome
from g6.ledger import Receipt, SigningKey, stored_tree
from g6.ledger.chain import entry_hash, stored_leaf_hash
from g6.ledger.receipts import log_position
from g6.ledger.redactions import BlobNamed, redaction_entry
from g6.ledger.takedown import blobs_named, expire, expiring, finish, hold, plan, redact
from g6.store import BlobRef
from tests.backends.raw_sql import raw_sql


def read(home: EvidenceHome, i: int, body: bytes | None = None, at: str | None = None,
         url: str | None = None) -> tuple[Receipt, BlobRef]:
    ref = home.store.put(body if body is not None else f"body {i} of a page".encode())
    extra = {"fetched_at": at} if at else {}
    r = home.record(Receipt(kind="fetch", source="web", request={"url": url or f"https://example.org/{i}"},
                            outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size,
                            content=ref.to_json(), **extra))
    return r, ref


def converted(home: EvidenceHome, src: BlobRef, text: bytes) -> tuple[Receipt, BlobRef]:
    """A `g6 convert` receipt: text made from ``src`` (links.from), kept as a blob of its own."""
    ref = home.store.put(text)
    r = home.record(Receipt(kind="convert", source="pypdf", request={"digest": src.blake3}, outcome="ok",
                            outcome_code="G6_E_KNOWLEDGE_CONVERTED", content=ref.to_json(), byte_count=ref.size,
                            links={"from": src.to_json()}))
    return r, ref


def roots(home: EvidenceHome) -> dict:
    return home.trust().roots()


def do_redact(home: EvidenceHome, reason: str = "court-order", **asked: list[str]):
    return redact(home.ledger, home.store, home.signing_key(), roots(home), plan(home.ledger, **asked), reason,
                  "order 2024-117")


def failures(home: EvidenceHome) -> list[str]:
    return [f"{c.check}:{c.seq}:{c.detail}" for c in home.verify().failures()]


def test_a_redacted_body_reads_redacted_and_every_check_passes(pair_home: EvidenceHome) -> None:
    reads = [read(pair_home, i) for i in range(5)]
    out = do_redact(pair_home, digests=[reads[2][1].sha256])  # by sha256: the same body
    assert [e.kind for e in out.entries] == ["redaction"] and out.removed == (reads[2][1].blake3,)
    entry = out.entries[0]
    assert entry.request["reason"] == "court-order" and entry.request["note"] == "order 2024-117"
    assert entry.request["receipts"] == [reads[2][0].receipt_id]
    assert entry.request["blobs"] == [{**reads[2][1].to_json(), "role": "body"}]
    assert not pair_home.store.has(reads[2][1].blake3)
    assert all(pair_home.store.has(ref.blake3) for _, ref in reads if ref != reads[2][1])
    report = pair_home.verify()
    assert report.ok, report.failures()
    assert report.to_json()["redactions"] == {"entries": 1, "redacted": 1, "held": 0, "pending": 0}
    blob = [c for c in report.checks if c.check == "blob" and c.seq == 3]
    assert blob and blob[0].ok and "redacted at seq 6 (court-order)" in blob[0].detail
    assert pair_home.store.verify().ok  # nothing left behind: no meta, no index entry
    assert pair_home.ledger.get(reads[2][0].receipt_id) == reads[2][0]  # the receipt stays as it is


def test_a_body_gone_without_an_entry_is_still_damage(pair_home: EvidenceHome) -> None:
    reads = [read(pair_home, i) for i in range(4)]
    do_redact(pair_home, digests=[reads[0][1].blake3])
    pair_home.store.remove(reads[1][1])  # the store's removal, but no entry: what an operator must not do
    assert failures(pair_home) == [f"blob:2:{reads[1][1].blake3}: missing"]


def test_by_receipt_and_by_url_with_derived_copies(pair_home: EvidenceHome) -> None:
    r1, pdf = read(pair_home, 1, b"%PDF-1.4 pretend", url="https://example.org/paper.pdf")
    r2, _ = read(pair_home, 2, b"%PDF-1.4 pretend", url="https://mirror.example.org/paper.pdf")  # the same bytes
    c, text = converted(pair_home, pdf, b"the text of the paper")
    other, ref = read(pair_home, 3)
    out = do_redact(pair_home, urls=[("https://mirror.example.org/paper.pdf",)])
    blobs = out.entries[0].request["blobs"]
    assert blobs == [{**pdf.to_json(), "role": "body"},
                     {**text.to_json(), "role": "derived", "from": pdf.blake3, "via": c.receipt_id}]
    assert out.entries[0].request["receipts"] == sorted([r1.receipt_id, r2.receipt_id, c.receipt_id])
    assert not pair_home.store.has(pdf.blake3) and not pair_home.store.has(text.blake3)
    assert pair_home.store.has(ref.blake3)
    report = pair_home.verify()
    assert report.ok and report.to_json()["redactions"]["redacted"] == 2
    with pytest.raises(BlobAlreadyRedacted):
        do_redact(pair_home, receipt_ids=[c.receipt_id])  # the copy went with its body
    assert do_redact(pair_home, receipt_ids=[other.receipt_id]).removed == (ref.blake3,)


@pytest.mark.parametrize("asked", ["digest", "receipt", "url", "nothing kept"])
def test_what_no_read_names_is_refused_and_nothing_changes(pair_home: EvidenceHome, asked: str) -> None:
    r, ref = read(pair_home, 1)
    failed = pair_home.record(Receipt(kind="fetch", source="web", request={"url": "https://example.org/gone"},
                                      outcome="not_found", outcome_code="G6_E_KNOWLEDGE_NOT_FOUND"))
    stray = pair_home.store.put(b"bytes no receipt names")
    before = len(pair_home.ledger)
    kw = {"digest": {"digests": [stray.blake3]}, "receipt": {"receipt_ids": ["rcpt_01J0000000000000000000000"]},
          "url": {"urls": [("https://example.org/never",)]},
          "nothing kept": {"receipt_ids": [failed.receipt_id]}}[asked]
    with pytest.raises(BlobUnreferenced):
        do_redact(pair_home, **kw)
    assert len(pair_home.ledger) == before and pair_home.store.has(stray.blake3) and pair_home.store.has(ref.blake3)


def test_bad_input_is_refused(pair_home: EvidenceHome) -> None:
    _, ref = read(pair_home, 1)
    with pytest.raises(InputError, match="unknown digest algorithm"):
        plan(pair_home.ledger, digests=["md5:abc"])
    with pytest.raises(InputError, match="not a digest"):
        plan(pair_home.ledger, digests=["abc"])
    with pytest.raises(InputError, match="a reason is required"):
        do_redact(pair_home, reason="  ", digests=[ref.blake3])
    with pytest.raises(InputError, match="one line"):
        do_redact(pair_home, reason="a\nb", digests=[ref.blake3])
    assert pair_home.store.has(ref.blake3) and len(pair_home.ledger) == 1


def test_hold_refuses_redact_and_gc_until_released(pair_home: EvidenceHome) -> None:
    (r, ref), (_, other) = read(pair_home, 1), read(pair_home, 2)
    key, rs = pair_home.signing_key(), roots(pair_home)
    held = hold(pair_home.ledger, key, rs, plan(pair_home.ledger, digests=[ref.blake3]), "hold", "litigation")
    assert held.entries[0].kind == "hold" and held.entries[0].request["action"] == "hold"
    before = len(pair_home.ledger)
    with pytest.raises(BlobOnHold, match="legal hold") as e:
        do_redact(pair_home, digests=[ref.blake3, other.blake3])  # one held: the whole redaction is refused
    assert e.value.seq == 3
    assert len(pair_home.ledger) == before and pair_home.store.has(ref.blake3) and pair_home.store.has(other.blake3)
    with pytest.raises(RedactionRefused, match="already held"):
        hold(pair_home.ledger, key, rs, plan(pair_home.ledger, digests=[ref.blake3]), "hold", "again")
    found = expiring(pair_home.ledger, rs, "2999-01-01")
    assert ref.blake3 in found.skipped and "held since seq 3" in found.skipped[ref.blake3]
    assert list(found.bodies) == [other.blake3]
    state = pair_home.redactions()
    assert state.hold_of(ref.blake3) is not None and state.hold_of(ref.sha256) is not None
    hold(pair_home.ledger, key, rs, plan(pair_home.ledger, receipt_ids=[r.receipt_id]), "release", "settled")
    with pytest.raises(BlobNotHeld):
        hold(pair_home.ledger, key, rs, plan(pair_home.ledger, digests=[ref.blake3]), "release", "twice")
    assert do_redact(pair_home, digests=[ref.blake3]).removed == (ref.blake3,)
    with pytest.raises(BlobAlreadyRedacted):  # a hold of what is gone: nothing left to hold
        hold(pair_home.ledger, key, rs, plan(pair_home.ledger, digests=[ref.blake3]), "hold", "late")
    report = pair_home.verify()
    assert report.ok and report.to_json()["redactions"] == {"entries": 1, "redacted": 1, "held": 0, "pending": 0}


def test_expire_redacts_old_uncited_bodies_with_reason_retention(pair_home: EvidenceHome) -> None:
    old, old_ref = read(pair_home, 1, at="2020-03-01T00:00:00Z")
    cited, cited_ref = read(pair_home, 2, at="2020-03-02T00:00:00Z")
    read(pair_home, 3, body=b"read twice", at="2020-03-03T00:00:00Z")
    again, again_ref = read(pair_home, 4, body=b"read twice")  # read again since: within retention
    new, new_ref = read(pair_home, 5)
    rs = roots(pair_home)
    found = expiring(pair_home.ledger, rs, "2021-01-01", cited=[cited.receipt_id])
    assert list(found.bodies) == [old_ref.blake3]
    assert found.skipped == {cited_ref.blake3: "cited (--include-cited redacts it too)"}
    assert len(pair_home.ledger) == 5 and pair_home.store.has(old_ref.blake3)  # looking changes nothing
    out = expire(pair_home.ledger, pair_home.store, pair_home.signing_key(), rs, found)
    assert [e.request["reason"] for e in out.entries] == ["retention"] and out.removed == (old_ref.blake3,)
    assert out.entries[0].request["note"] == "read before 2021-01-01T00:00:00Z"
    assert all(pair_home.store.has(r.blake3) for r in (cited_ref, again_ref, new_ref))
    everything = expiring(pair_home.ledger, rs, "2021-01-01", cited=[cited.receipt_id], include_cited=True)
    assert list(everything.bodies) == [cited_ref.blake3]
    expire(pair_home.ledger, pair_home.store, pair_home.signing_key(), rs, everything)
    report = pair_home.verify()
    assert report.ok and report.to_json()["redactions"]["redacted"] == 2
    with pytest.raises(InputError, match="not a date"):
        expiring(pair_home.ledger, rs, "last year")


def test_finish_takes_out_what_an_interrupted_run_left_and_nothing_else(pair_home: EvidenceHome) -> None:
    (_, a), (_, b) = read(pair_home, 1), read(pair_home, 2)
    entry = redaction_entry([BlobNamed(a.blake3, a.sha256, a.size)], [], "court-order")
    pair_home.ledger.append(entry, pair_home.signing_key())  # the entry, then a kill before any removal
    report = pair_home.verify()
    assert report.ok and report.to_json()["redactions"]["pending"] == 1  # bytes still there: not damage
    assert finish(pair_home.ledger, pair_home.store, roots(pair_home)) == [a.blake3]
    assert not pair_home.store.has(a.blake3) and pair_home.store.has(b.blake3)
    assert finish(pair_home.ledger, pair_home.store, roots(pair_home)) == []
    assert pair_home.verify().to_json()["redactions"]["pending"] == 0


# -- forgeries: none of them makes a deleted blob pass ---------------------------------------------------------
def test_an_entry_signed_by_a_key_not_valid_at_its_seq_fails(pair_home: EvidenceHome) -> None:
    (_, a), _ = read(pair_home, 1), read(pair_home, 2)
    later = SigningKey.generate()
    entry = redaction_entry([BlobNamed(a.blake3, a.sha256, a.size)], [], "court-order")
    pair_home.ledger.append(entry, later)  # seq 3, signed by a key the log adds only after it
    pair_home.add_writer(later.public)  # seq 4: `later` signs from seq 5 on
    pair_home.store.remove(a)
    got = failures(pair_home)
    assert any(f.startswith("redaction:3:") and "before it was added" in f for f in got), got
    assert f"blob:1:{a.blake3}: missing" in got


def test_an_edited_entry_cannot_hide_another_deleted_blob(pair_home: EvidenceHome) -> None:
    (_, a), (_, b) = read(pair_home, 1), read(pair_home, 2)
    do_redact(pair_home, digests=[a.blake3])
    text = raw_sql(pair_home.ledger).execute("SELECT receipt FROM receipts WHERE seq = 3").fetchone()[0]
    forged = text.replace(a.blake3, b.blake3).replace(a.sha256, b.sha256)
    raw_sql(pair_home.ledger).execute("UPDATE receipts SET receipt = ? WHERE seq = 3", (forged,))
    pair_home.store.remove(b)
    got = failures(pair_home)
    assert f"blob:2:{b.blake3}: missing" in got and f"blob:1:{a.blake3}: missing" in got
    assert any(f.startswith("redaction:3:") and "signature" in f for f in got), got


def _plant(home: EvidenceHome, receipt_text: str, *, tree: bool) -> None:
    """Append a row as an attacker with write access to the database would: chained, and (``tree``) with its
    leaf in the stored tree."""
    rows = home.ledger.rows
    with rows.write():
        seq, prev = home.ledger.head()
        data = json.loads(receipt_text)
        h = entry_hash(seq + 1, prev, receipt_text.encode())
        rows.append_rows([(seq + 1, data["receipt_id"], data["kind"], data["outcome"], data["fetched_at"],
                           receipt_text, prev, h)])
        if tree:
            stored_tree.append_leaves(rows, seq, [stored_leaf_hash(receipt_text)])


def test_an_entry_copied_from_another_log_cannot_hide_a_deleted_blob(pair_home: EvidenceHome, tmp_path: Path) -> None:
    _, (_, b) = read(pair_home, 1), read(pair_home, 2)
    other = EvidenceHome(tmp_path / "other", fsync=False)
    other.keys.init(key=pair_home.signing_key())  # the same key: its signature verifies here too
    read(other, 1)
    read(other, 2)
    do_redact(other, digests=[b.blake3])
    _plant(pair_home, other.ledger.rows.row_at(3)[5], tree=True)  # chained, in the tree, validly signed
    pair_home.store.remove(b)
    got = failures(pair_home)
    assert f"blob:2:{b.blake3}: missing" in got
    assert any(f.startswith("redaction:3:") and "another log" in f for f in got), got
    other.close()


def test_an_entry_outside_the_stored_tree_does_not_count(pair_home: EvidenceHome) -> None:
    (_, a), _ = read(pair_home, 1), read(pair_home, 2)
    seq = pair_home.ledger.head()[0] + 1
    entry = redaction_entry([BlobNamed(a.blake3, a.sha256, a.size)], [], "court-order")
    from dataclasses import replace

    _, body = replace(entry, log=log_position(pair_home.ledger.origin, seq)).sign_canonical(pair_home.signing_key())
    _plant(pair_home, body.decode(), tree=False)
    pair_home.store.remove(a)
    got = failures(pair_home)
    assert f"blob:1:{a.blake3}: missing" in got
    assert any(f.startswith(f"redaction:{seq}:") and "tree covers 2" in f for f in got), got


def test_a_kind_column_edited_to_hide_an_entry_fails(pair_home: EvidenceHome) -> None:
    (_, a), _ = read(pair_home, 1), read(pair_home, 2)
    do_redact(pair_home, digests=[a.blake3])
    raw_sql(pair_home.ledger).execute("UPDATE receipts SET kind = 'fetch' WHERE seq = 3")
    got = failures(pair_home)
    assert f"blob:1:{a.blake3}: missing" in got
    assert any(f.startswith("redaction:3:") and "kind column" in f for f in got), got


def test_a_redaction_of_a_held_blob_breaks_the_hold_and_fails(pair_home: EvidenceHome) -> None:
    (_, a), _ = read(pair_home, 1), read(pair_home, 2)
    hold(pair_home.ledger, pair_home.signing_key(), roots(pair_home), plan(pair_home.ledger, digests=[a.blake3]),
         "hold", "litigation")
    # a key holder who goes around the refusal: the log shows the hold was broken
    pair_home.ledger.append(redaction_entry([BlobNamed(a.blake3, a.sha256, a.size)], [], "x"),
                            pair_home.signing_key())
    pair_home.store.remove(a)
    got = failures(pair_home)
    assert f"blob:1:{a.blake3}: missing" in got
    assert any(f.startswith("redaction:4:") and "under a legal hold since seq 3" in f for f in got), got


def test_the_blobs_a_receipt_names_include_a_captures() -> None:
    """A rendered capture (branch `browser`) names its DOM, text and screenshot under ``capture``: redacting any
    of them takes the others as derived copies. Checked on the receipt's JSON, as the capture receipt holds it."""
    ref = {"blake3": "blake3:" + "a" * 64, "sha256": "sha256:" + "b" * 64, "size": 3}
    shot = {"blake3": "blake3:" + "c" * 64, "sha256": "sha256:" + "d" * 64, "size": 9}
    named = blobs_named({"content": ref, "capture": {"dom": ref, "screenshot": shot, "viewport": {"width": 3},
                                                      "text": "not a blob"}})
    assert named == [("content", BlobRef(**ref)), ("capture.dom", BlobRef(**ref)), ("capture.screenshot",
                                                                                     BlobRef(**shot))]


def test_verify_on_every_core_and_since_a_checkpoint_say_redacted_too(pair_home: EvidenceHome) -> None:
    """Ranges checked in worker processes get the redactions too (pickled with the job), and so does `--since`."""
    from g6.ledger.receipts import Receipt as R
    from g6.prove.verify_since import record_verified, state_path, verify_since

    refs = [pair_home.store.put(f"row {i}".encode()) for i in range(520)]  # three ranges of 256 on two cores
    pair_home.ledger.append_many([R(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                    outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", content=ref.to_json(),
                                    byte_count=ref.size) for i, ref in enumerate(refs)], pair_home.signing_key())
    record_verified(pair_home, len(pair_home.ledger))
    for i in (3, 350, 510):
        do_redact(pair_home, digests=[refs[i].blake3])
    report = pair_home.ledger.verify(pair_home.trust(), pair_home.store, workers=2)
    assert report.ok, report.failures()
    assert report.to_json()["redactions"]["redacted"] == 3
    assert sorted(c.seq for c in report.checks if c.check == "blob" and "redacted at seq" in c.detail) == [4, 351, 511]
    since = verify_since(pair_home, state_path(pair_home).read_text())  # only the entries are new rows
    assert since.ok, since.failures()
    assert since.to_json()["redactions"]["redacted"] == 3
    pair_home.store.remove(refs[351])
    assert [(c.check, c.seq) for c in pair_home.ledger.verify(pair_home.trust(), pair_home.store,
                                                              workers=2).failures()] == [("blob", 352)]


def test_a_key_planted_in_the_ledger_table_makes_nothing_delete_bytes(pair_home: EvidenceHome) -> None:
    """Whoever can write the database can add a key to the ledger's trusted-keys table, and sign an entry with it.
    Readers trust that table (the worst they do is refuse to serve), but nothing that takes bytes out does."""
    from g6.ledger import trust_key

    (_, a), _ = read(pair_home, 1), read(pair_home, 2)
    planted = SigningKey.generate()
    trust_key(pair_home.ledger, planted.public)
    pair_home.ledger.append(redaction_entry([BlobNamed(a.blake3, a.sha256, a.size)], [], "x"), planted)
    assert pair_home.redactions().of(a.blake3) is not None  # what readers see: they refuse to serve it
    assert finish(pair_home.ledger, pair_home.store, pair_home.removal_roots(), deep=True) == []
    assert pair_home.store.has(a.blake3)
    assert finish(pair_home.ledger, pair_home.store, roots(pair_home), deep=True) == [a.blake3]  # the broad trust
