"""What a key holder cannot hide: a replayed receipt, a duplicate id, a clock that lies, a key used
outside its life in the log. Each attack is made the way an operator with the signing key and write
access to the database would make it, then ``verify`` must name it."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from g6.errors import SigningKeyError
from g6.home import EvidenceHome
from g6.ledger import Ledger, Receipt, SigningKey
from g6.ledger.chain import GENESIS, entry_hash, stored_leaf_hash
from g6.ledger.receipts import new_receipt_id


def receipt(i: int, **kw: object) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i, **kw)  # type: ignore[arg-type]


def raw(ledger: Ledger) -> sqlite3.Connection:
    return sqlite3.connect(ledger.path, isolation_level=None)


def append_raw(ledger: Ledger, text: str, receipt_id: str, kind: str = "fetch", fetched_at: str = "x") -> None:
    """What an operator with database access does: a row with a correct chain link and stored tree."""
    conn = raw(ledger)
    seq, prev = conn.execute("SELECT seq, entry_hash FROM receipts ORDER BY seq DESC LIMIT 1").fetchone() or (0,
                                                                                                        GENESIS)
    seq += 1
    h = entry_hash(seq, prev, text.encode())
    data = json.loads(text)
    conn.execute("INSERT INTO receipts (seq, receipt_id, kind, outcome, fetched_at, receipt, prev_hash, entry_hash) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (seq, receipt_id, data["kind"], data["outcome"],
                                                    data["fetched_at"], text, prev, h))
    conn.close()
    # the stored tree follows (the next append would catch it up the same way)
    from g6.ledger import stored_tree

    with ledger.rows.write():
        ledger.rows.ensure_tree_table()
        stored_tree.append_leaves(ledger.rows, seq - 1, [stored_leaf_hash(text)])


def stored_text(ledger: Ledger, seq: int) -> str:
    conn = raw(ledger)
    text = conn.execute("SELECT receipt FROM receipts WHERE seq = ?", (seq,)).fetchone()[0]
    conn.close()
    return text


def failures(report: object, check: str) -> list[str]:
    return [c.detail for c in report.failures(check)]  # type: ignore[attr-defined]


@pytest.fixture
def home(tmp_path: Path) -> EvidenceHome:
    h = EvidenceHome(tmp_path / "h", fsync=False)
    h.keys.init()
    yield h
    h.close()


# -- replays and duplicates -----------------------------------------------------------------------
def test_each_receipt_signs_its_place_in_the_log(home: EvidenceHome) -> None:
    rs = [home.record(receipt(i)) for i in range(3)]
    assert [r.log for r in rs] == [{"origin": home.ledger.origin, "seq": i} for i in (1, 2, 3)]
    report = home.verify()
    assert report.ok and report.stats["bound"] == 3 and report.stats["unbound"] == 0
    assert report.to_json()["rules"] == {"bound": 3, "old_rule": 0, "clock_warnings": 0}


def test_a_genuine_receipt_replayed_as_a_second_row_fails_even_with_the_index_dropped(home: EvidenceHome) -> None:
    home.record(receipt(1))
    home.record(receipt(2))
    conn = raw(home.ledger)
    idx = [r[1] for r in conn.execute("PRAGMA index_list(receipts)") if r[2]]
    for name in idx:
        if not name.startswith("sqlite_autoindex"):
            conn.execute(f"DROP INDEX {name}")
    conn.close()
    text = stored_text(home.ledger, 1)
    append_raw(home.ledger, text, json.loads(text)["receipt_id"])
    report = home.verify(keys=home.keys.trusted())
    assert not report.ok
    assert any("stands at" in d and "#3" in d for d in failures(report, "binding"))
    dups = failures(report, "duplicates")
    assert any("held by 2 rows" in d for d in dups) and any("no unique index" in d for d in dups)


def test_a_receipt_from_another_log_is_refused_where_it_lands(home: EvidenceHome, tmp_path: Path) -> None:
    other = EvidenceHome(tmp_path / "other", fsync=False)
    other.keys.init()
    foreign = other.record(receipt(7))
    home.keys.trust(other.signing_key().public)
    home.record(receipt(1))
    append_raw(home.ledger, stored_text(other.ledger, 1), foreign.receipt_id)
    report = home.verify()
    assert [c.seq for c in report.failures("binding")] == [2]
    assert other.ledger.origin in failures(report, "binding")[0]
    other.close()


def test_old_rule_receipts_verify_and_are_counted_but_not_after_a_bound_one(home: EvidenceHome) -> None:
    key = home.signing_key()
    old = receipt(1).signed(key)  # signed before binding existed: no "log"
    assert old.log is None
    append_raw(home.ledger, old.canonical_bytes(with_signature=True).decode(), old.receipt_id)
    home.record(receipt(2))
    report = home.verify()
    assert report.ok and (report.stats["bound"], report.stats["unbound"]) == (1, 1)
    late = receipt(3).signed(key)  # the old rule chosen after binding began: a way to hide a replay
    append_raw(home.ledger, late.canonical_bytes(with_signature=True).decode(), late.receipt_id)
    report = home.verify()
    assert [c.seq for c in report.failures("binding")] == [3]
    assert "unbound receipt after bound ones" in failures(report, "binding")[0]


# -- clocks ------------------------------------------------------------------------------------
def _signed_at(home: EvidenceHome, seq: int, fetched_at: str, receipt_id: str | None = None) -> Receipt:
    r = replace(receipt(seq), fetched_at=fetched_at, receipt_id=receipt_id or new_receipt_id(),
                log={"origin": home.ledger.origin, "seq": seq})
    return r.signed(home.signing_key())


@pytest.mark.parametrize("when", ["yesterday", "2026-13-01T00:00:00Z", "2026-12-04T10:00:00+01:00",
                                  "2026-12-04 10:00:00Z", "1765000000"])
def test_a_time_that_is_not_rfc3339_utc_fails_that_row(home: EvidenceHome, when: str) -> None:
    home.record(receipt(1))
    r = _signed_at(home, 2, when)
    append_raw(home.ledger, r.canonical_bytes(with_signature=True).decode(), r.receipt_id)
    report = home.verify()
    assert [c.seq for c in report.failures("time")] == [2] and "RFC 3339" in failures(report, "time")[0]


def test_future_backward_and_id_skewed_times_warn_and_strict_time_fails(home: EvidenceHome) -> None:
    first = home.record(receipt(1))
    cases = [_signed_at(home, 2, "2099-01-01T00:00:00Z"),  # far in the future (and far from its id's time)
             _signed_at(home, 3, "2016-12-04T00:00:00Z")]  # ten years before the writer's previous row
    for r in cases:
        append_raw(home.ledger, r.canonical_bytes(with_signature=True).decode(), r.receipt_id)
    report = home.verify()
    assert report.ok, [c.to_json() for c in report.failures()]  # warnings, not failures
    warned = [(c.seq, c.detail) for c in report.warnings()]
    assert any(seq == 2 and "after this verify's clock" in d for seq, d in warned)
    assert any(seq == 3 and "before the previous receipt of the same writer" in d for seq, d in warned)
    assert any(seq == 3 and "from the time its receipt id was made" in d for seq, d in warned)
    assert report.stats["warnings"] == len(warned) >= 4  # row 2 is also far from its id's time
    from g6.ledger.verification.verify import Trust

    strict = home.ledger.verify(Trust(home.keys.trusted(), strict_time=True), home.store)
    assert not strict.ok and {c.seq for c in strict.failures("time")} == {2, 3}
    assert first.fetched_at.endswith("Z")


# -- keys have a life -----------------------------------------------------------------------------
def test_a_retired_key_signs_nothing_more(home: EvidenceHome) -> None:
    old = home.signing_key()
    new = SigningKey.generate()
    home.record(receipt(1))
    home.ledger.add_key(new.public, old)
    home.ledger.retire_key(old.public, new)
    home.ledger.append(receipt(2), new)
    with pytest.raises(SigningKeyError, match="was retired"):
        home.ledger.append(receipt(3), old)
    # the operator still holds the retired key and writes a row with it behind the ledger's back
    late = _signed_at(home, 5, "2026-12-04T08:00:00Z")
    late = replace(late, log={"origin": home.ledger.origin, "seq": 5}).signed(old)
    append_raw(home.ledger, late.canonical_bytes(with_signature=True).decode(), late.receipt_id)
    report = home.ledger.verify({old.key_id: old.public}, home.store)  # the log's key pinned
    assert [c.seq for c in report.failures("signature")] == [5]
    assert "after it was retired (at seq 3" in failures(report, "signature")[0]
    lives = {k["key_id"]: k for k in report.keys}
    assert lives[old.key_id]["valid_to"] == 3 and lives[new.key_id]["valid_from"] == 3
    assert "added at seq 2 by " + old.key_id == lives[new.key_id]["why"]


def test_a_key_before_its_add_entry_and_a_planted_key_fail(home: EvidenceHome) -> None:
    log_key = home.signing_key()
    writer = SigningKey.generate()
    home.ledger.append(receipt(1), writer)  # signs before anyone added it
    home.ledger.add_key(writer.public, log_key)
    home.ledger.append(receipt(2), writer)
    planted = SigningKey.generate()
    home.ledger.append(receipt(3), planted)
    from g6.ledger import trust_key

    trust_key(home.ledger, planted.public)  # someone wrote it into the ledger's trusted-keys table
    report = home.ledger.verify({log_key.key_id: log_key.public}, home.store)  # the grader pins the log key
    bad = {c.seq: c.detail for c in report.failures("signature")}
    assert set(bad) == {1, 4}
    assert "before it was added" in bad[1] and "unknown key" in bad[4]


def test_a_key_entry_signed_by_a_key_not_valid_there_changes_nothing(home: EvidenceHome) -> None:
    log_key = home.signing_key()
    stranger, friend = SigningKey.generate(), SigningKey.generate()
    home.record(receipt(1))
    home.ledger.add_key(friend.public, stranger)  # the stranger is no writer: its entry adds nobody
    home.ledger.append(receipt(2), friend)
    report = home.ledger.verify({log_key.key_id: log_key.public}, home.store)
    assert [c.seq for c in report.failures("keys")] == [2]
    assert {c.seq for c in report.failures("signature")} == {2, 3}


def test_copy_with_a_pinned_key_leaves_a_planted_key_behind(home: EvidenceHome, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from g6.cli import cli
    from g6.ledger import trust_key, trusted_keys

    log_key = home.signing_key()
    writer = SigningKey.generate()
    home.record(receipt(1))
    home.ledger.add_key(writer.public, log_key)
    home.ledger.append(receipt(2), writer)
    planted = SigningKey.generate()
    trust_key(home.ledger, planted.public)  # written into the source's table behind the owner's back
    home.close()
    target = tmp_path / "copy.sqlite"
    r = CliRunner().invoke(cli, ["--home", str(home.root), "ledger", "copy", "--to", f"sqlite:///{target}",
                                 "--key", log_key.public.to_text(), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["verify"]["ok"] and out["copied"] == 3
    with Ledger(target) as dst:
        assert set(trusted_keys(dst)) == {log_key.key_id, writer.key_id}  # the pinned key and the signers
    home.ledger = Ledger(home.root / "knowledge" / "ledger.sqlite")  # for the fixture's teardown
