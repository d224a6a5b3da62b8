"""Checkpoints, inclusion and consistency proofs over a real ledger; every tampering caught."""

from __future__ import annotations

import json
import sqlite3

import pytest

from g6.home import EvidenceHome
from g6.ledger import Receipt, SigningKey
from g6.ledger.chain import GENESIS, entry_hash
from g6.ledger.note import parse_verifier_key, sign_checkpoint
from g6.ledger.proofs import (
    parse_consistency,
    parse_inclusion,
    parse_note_text,
    verify_consistency_proof,
    verify_inclusion_proof,
)
from g6.prove.proofs import checkpoint, consistency, note_verifier_key, prove


def add(home: EvidenceHome, n: int) -> list[Receipt]:
    return [home.record(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                                outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)) for i in range(n)]


def failed(report) -> set[str]:
    return {c.check for c in report.checks if not c.ok}


def test_prove_and_verify_offline(home: EvidenceHome) -> None:
    rs = add(home, 13)
    key = home.signing_key().public
    for r in rs:
        proof, _ = prove(home, r.receipt_id)
        report = verify_inclusion_proof(proof.text(), json.dumps(r.to_json()), key)
        assert report.ok, report.to_json()
    text = prove(home, rs[5].receipt_id)[0].text()
    assert text.startswith("c2sp.org/tlog-proof@v1\nextra ") and "\nindex 5\n" in text
    assert parse_inclusion(text).text() == text
    name, vkey = parse_verifier_key(note_verifier_key(home))
    assert name == home.ledger.origin and vkey == key


def test_inclusion_tampering_is_caught(home: EvidenceHome) -> None:
    rs = add(home, 9)
    key = home.signing_key().public
    proof, _ = prove(home, rs[4].receipt_id)
    text = proof.text()
    other = json.dumps(rs[3].to_json())
    assert {"receipt_binding", "inclusion"} <= failed(verify_inclusion_proof(text, other, key))
    no_extra = text.replace(text.split("\n")[1] + "\n", "", 1)
    # wrong leaf; and the receipt signs its own place, which the proof contradicts
    assert failed(verify_inclusion_proof(no_extra, other, key)) == {"inclusion", "receipt_place"}
    assert failed(verify_inclusion_proof(text.replace("\nindex 4\n", "\nindex 5\n"), rs[4].to_json(), key)) == \
        {"inclusion", "receipt_place"}  # wrong index (the receipt signs index 4's place)
    lines = text.split("\n")
    truncated = "\n".join(lines[:3] + lines[4:])  # one path hash removed
    assert failed(verify_inclusion_proof(truncated, rs[4].to_json(), key)) == {"inclusion"}
    edited = dict(rs[4].to_json(), byte_count=999)
    assert {"receipt_signature", "inclusion"} <= failed(verify_inclusion_proof(text, edited, key))
    forged_note = sign_checkpoint(parse_note_text(proof.checkpoint_note), SigningKey.generate())
    forged = text.replace(proof.checkpoint_note, forged_note)
    assert "checkpoint_signature" in failed(verify_inclusion_proof(forged, rs[4].to_json(), key))
    bigger = text.replace(f"\n{9}\n", "\n10\n", 1)  # checkpoint size edited: signature breaks
    assert "checkpoint_signature" in failed(verify_inclusion_proof(bigger, rs[4].to_json(), key))
    assert failed(verify_inclusion_proof("garbage", rs[4].to_json(), key)) == {"format"}
    assert not verify_inclusion_proof(text, rs[4].to_json(), key, origin="g6-evidence/other").ok


def test_consistency_between_checkpoints(home: EvidenceHome) -> None:
    add(home, 5)
    old, _ = checkpoint(home)
    add(home, 6)
    new, _ = checkpoint(home)
    key = home.signing_key().public
    p = consistency(home, old.size, new.size)
    report = verify_consistency_proof(p.text(), key)
    assert report.ok, report.to_json()
    assert parse_consistency(p.text()).text() == p.text()
    same = consistency(home, new.size, new.size)
    assert verify_consistency_proof(same.text(), key).ok


def test_a_tree_that_rewrote_an_old_leaf_fails_consistency(home: EvidenceHome) -> None:
    rs = add(home, 6)
    old_cp, old_note = checkpoint(home)
    add(home, 3)
    # rewrite row 2 (re-signed with the real key: only the Merkle history shows it)
    conn = sqlite3.connect(home.ledger.path, isolation_level=None)
    forged = Receipt.from_json(dict(rs[1].to_json(), byte_count=12345)).signed(home.signing_key())
    body = forged.canonical_bytes(with_signature=True)
    conn.execute("UPDATE receipts SET receipt = ? WHERE seq = 2", (body.decode(),))
    prev = GENESIS
    for seq, text in conn.execute("SELECT seq, receipt FROM receipts ORDER BY seq").fetchall():
        h = entry_hash(seq, prev, text.encode())
        conn.execute("UPDATE receipts SET prev_hash = ?, entry_hash = ? WHERE seq = ?", (prev, h, seq))
        prev = h
    # a thorough forger also drops the stored tree hashes (a cache), so the next write rebuilds
    # them from the rewritten rows; a forger who leaves them is caught by verify's tree check
    conn.execute("DROP TABLE merkle_hashes")
    new_cp, new_note = checkpoint(home)
    p = consistency(home, old_cp.size, new_cp.size)
    report = verify_consistency_proof(p.text(), home.signing_key().public)
    assert failed(report) == {"consistency"}
    assert "rewritten" in next(c.detail for c in report.checks if c.check == "consistency")
    # and the ledger's own verify flags the old checkpoint, though chain and signatures hold
    v = home.verify()
    assert not v.failures("chain") and not v.failures("signature")
    assert [f.detail for f in v.failures("checkpoint")][0].endswith("no longer hash to its root")


def test_rows_removed_from_the_end_are_caught_after_a_checkpoint(home: EvidenceHome) -> None:
    add(home, 7)
    checkpoint(home)
    sqlite3.connect(home.ledger.path, isolation_level=None).execute("DELETE FROM receipts WHERE seq >= 6")
    v = home.verify()
    assert not v.failures("chain")  # the shorter chain is still a valid chain
    assert "rows removed" in v.failures("checkpoint")[0].detail


def test_prove_makes_a_checkpoint_when_none_covers(home: EvidenceHome) -> None:
    rs = add(home, 3)
    _, made = prove(home, rs[2].receipt_id)
    assert made
    _, made_again = prove(home, rs[1].receipt_id)
    assert not made_again
    assert len(home.ledger.checkpoints()) == 1
    with pytest.raises(Exception, match="no checkpoint of size 2"):
        consistency(home, 2, 3)


def test_a_receipt_that_repeats_a_key_is_not_proven(home: EvidenceHome) -> None:
    # json.loads keeps the last of a repeated key, and the leaf was hashed over what it kept: a receipt file whose
    # url reads first as another page was proven included, while a reader keeping the first saw that other page
    rs = add(home, 3)
    key = home.signing_key().public
    text = prove(home, rs[1].receipt_id)[0].text()
    good = json.dumps(rs[1].to_json())
    assert verify_inclusion_proof(text, good, key).ok
    assert good.count('"url": "https://e.org/1"') == 1
    forged = good.replace('"url": "https://e.org/1"', '"url": "https://e.org/other", "url": "https://e.org/1"')
    assert json.loads(forged) == json.loads(good)  # what a reader keeping the last of each key sees
    report = verify_inclusion_proof(text, forged, key)
    assert not report.ok and "receipt" in failed(report)
    assert "repeats the key 'url'" in json.dumps(report.to_json())
