"""The ledger and the store, once per backend pair (SQLite + folder, PostgreSQL + SeaweedFS S3).

Every test here runs on both pairs through ``pair_home``: the same calls, the same verdicts.
Tampering goes through the ledger's own SQL connection (the same statement works on both
databases) and through each store's own storage for the blobs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from g6.errors import BadDigest, BlobCorrupt, BlobNotFound
from g6.home import EvidenceHome
from g6.ledger import Receipt, SigningKey, trust_key, trusted_keys, verify_consistency_proof, verify_inclusion_proof
from g6.prove.proofs import checkpoint, consistency, prove
from g6.store import BlobStore
from tests.backends.raw_sql import raw_sql


def fill(home: EvidenceHome, n: int = 5) -> list[Receipt]:
    out = []
    for i in range(n):
        ref = home.store.put(f"body {i}".encode())
        out.append(home.record(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                       outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size,
                                       content=ref.to_json())))
    return out


def sql(home: EvidenceHome, stmt: str, params: tuple[object, ...] = ()) -> None:
    """Tamper with the ledger's rows directly (what an attacker with database access could do)."""
    raw_sql(home.ledger).execute(stmt, params)


def replace_blob(home: EvidenceHome, digest: str, data: bytes | None) -> None:
    """Overwrite (or, with ``None``, delete) a stored blob's bytes behind the store's back."""
    store = home.store
    if isinstance(store, BlobStore):
        p = store.path(digest)
        if data is None:
            p.unlink()
        else:
            p.write_bytes(data)
        return
    key = store._key("blake3", digest.split(":", 1)[1])
    if data is None:
        store.s3.delete_object(Bucket=store.bucket, Key=key)
    else:
        meta = store.s3.head_object(Bucket=store.bucket, Key=key)["Metadata"]
        store.s3.put_object(Bucket=store.bucket, Key=key, Body=data, Metadata=meta)


def failures(home: EvidenceHome, check: str) -> list[str]:
    return [f"{c.seq}:{c.detail}" for c in home.verify().failures(check)]


def test_append_chains_rows_and_verifies(pair_home: EvidenceHome) -> None:
    rs = fill(pair_home)
    entries = list(pair_home.ledger.entries())
    assert [e.seq for e in entries] == [1, 2, 3, 4, 5]
    assert [e.receipt.receipt_id for e in entries] == [r.receipt_id for r in rs]
    for a, b in zip(entries, entries[1:], strict=False):
        assert b.prev_hash == a.entry_hash
    report = pair_home.verify()
    assert report.ok and report.rows == 5
    assert len(report.of("blob")) == 5 and len(report.of("signature")) == 5
    assert pair_home.ledger.get(rs[2].receipt_id) == rs[2]
    assert [e.seq for e in pair_home.ledger.entries(limit=2, newest_first=True)] == [5, 4]


def test_edited_row_breaks_signature_and_chain(pair_home: EvidenceHome) -> None:
    rs = fill(pair_home)
    data = rs[1].to_json()
    data["outcome"] = "not_found"
    sql(pair_home, "UPDATE receipts SET receipt = ? WHERE seq = 2", (json.dumps(data),))
    assert failures(pair_home, "signature") and [f.split(":")[0] for f in failures(pair_home, "chain")] == ["2"]


def test_deleted_and_removed_from_the_end_rows_are_detected(pair_home: EvidenceHome) -> None:
    fill(pair_home, 6)
    checkpoint(pair_home)
    sql(pair_home, "DELETE FROM receipts WHERE seq = 3")
    assert any("sequence jumps" in f for f in failures(pair_home, "chain"))
    sql(pair_home, "DELETE FROM receipts WHERE seq >= 4")
    # a valid shorter chain, but the checkpoint remembers six receipts
    assert failures(pair_home, "chain") == []
    assert any("only" in f for f in failures(pair_home, "checkpoint"))


def test_flipped_and_missing_blobs_are_detected(pair_home: EvidenceHome) -> None:
    rs = fill(pair_home, 3)
    replace_blob(pair_home, rs[1].content["blake3"], b"body X")
    replace_blob(pair_home, rs[2].content["blake3"], None)
    bad = failures(pair_home, "blob")
    assert len(bad) == 2 and "hashes to" in bad[0] and "missing" in bad[1]
    assert not pair_home.store.verify().ok


def test_checkpoints_and_proofs_verify_offline(pair_home: EvidenceHome) -> None:
    rs = fill(pair_home, 4)
    cp4, _ = checkpoint(pair_home)
    more = fill(pair_home, 3)
    cp7, _ = checkpoint(pair_home)
    key = pair_home.signing_key().public
    proof, made = prove(pair_home, rs[1].receipt_id)
    assert not made
    assert verify_inclusion_proof(proof.text(), rs[1], key, cp7.origin).ok
    assert not verify_inclusion_proof(proof.text(), more[0], key, cp7.origin).ok
    c = consistency(pair_home, 4, 7)
    assert verify_consistency_proof(c.text(), key, cp4.origin).ok
    assert [cp.size for cp, _ in pair_home.ledger.checkpoints()] == [4, 7]
    assert pair_home.verify().ok and len(pair_home.verify().of("checkpoint")) == 2


def test_store_round_trip_dedupe_and_lookups(pair_home: EvidenceHome) -> None:
    s = pair_home.store
    a = s.put(b"same bytes")
    assert s.put_stream([b"same ", b"bytes"]) == a
    assert s.read(a.blake3) == s.read(a.sha256) == b"same bytes"
    assert s.has(a.blake3) and s.has(a.sha256) and s.info(a.sha256) == a
    assert list(s.iter_digests()) == [a.blake3]
    with pytest.raises(BlobNotFound):
        s.read("blake3:" + "0" * 64)
    with pytest.raises(BadDigest):
        s.read("md5:abc")
    assert not s.has("sha256:" + "1" * 64)


def test_large_body_goes_through_a_temporary_upload_and_dedupes(pair_home: EvidenceHome) -> None:
    s = pair_home.store
    chunk = bytes(range(256)) * 4096  # 1 MiB
    ref = s.put_stream(chunk for _ in range(12))  # past one 8 MiB part
    assert ref.size == 12 << 20 and s.check(ref.blake3, ref).ok
    assert s.put_stream(chunk for _ in range(12)) == ref
    assert list(s.iter_digests()) == [ref.blake3]
    assert s.gc([ref.blake3], grace_seconds=0).temp_files_removed == 0  # nothing temporary left over


def test_writer_abort_and_exception_leave_nothing(pair_home: EvidenceHome) -> None:
    s = pair_home.store
    w = s.writer()
    w.write(b"half")
    w.abort()
    with pytest.raises(RuntimeError), s.writer() as w2:
        w2.write(b"x" * (9 << 20))  # a multipart upload under way on S3
        raise RuntimeError("the fetch failed")
    assert list(s.iter_digests()) == []
    assert s.gc([], grace_seconds=0).removed == ()


def test_gc_removes_only_unreferenced_blobs(pair_home: EvidenceHome) -> None:
    rs = fill(pair_home, 2)
    loose = pair_home.store.put(b"nobody cites me")
    assert pair_home.store.gc(pair_home.ledger.referenced_digests(), grace_seconds=3600).skipped_young == (
        loose.blake3,)
    report = pair_home.store.gc(pair_home.ledger.referenced_digests(), grace_seconds=0)
    assert report.removed == (loose.blake3,) and report.kept == 2
    assert not pair_home.store.has(loose.sha256)
    assert pair_home.verify().ok and pair_home.store.has(rs[0].content["sha256"])


def test_keys_kept_with_the_ledger_and_pinning(pair_home: EvidenceHome, tmp_path: Path) -> None:
    rs = fill(pair_home, 2)
    other = SigningKey.generate()
    pair_home.ledger.append(Receipt(kind="fetch", source="web", request={"url": "https://example.org/o"},
                                    outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED"), other)
    assert len(pair_home.verify().failures("signature")) == 1  # another writer's key, not trusted yet
    trust_key(pair_home.ledger, other.public)
    trust_key(pair_home.ledger, other.public)  # idempotent
    assert set(trusted_keys(pair_home.ledger)) == {other.key_id}
    assert pair_home.verify().ok
    # pinning one key overrides both the key folder and the ledger's table
    pinned = pair_home.verify({other.key_id: other.public})
    assert [c.receipt_id for c in pinned.failures("signature")] == [r.receipt_id for r in rs]
    # a row whose id does not match its key never vouches for anything
    sql(pair_home, "UPDATE trusted_keys SET key_id = ? WHERE key_id = ?",
        (pair_home.signing_key().key_id, other.key_id))
    assert trusted_keys(pair_home.ledger) == {}


@pytest.mark.parametrize("size", [100, 9 << 20], ids=["one-put", "multipart-then-copy"])
def test_a_second_put_never_rewrites_stored_bytes(pair_home: EvidenceHome, size: int) -> None:
    """Put-if-absent: the same digest again writes nothing (on S3, ``If-None-Match: *`` on the put or the copy)."""
    s = pair_home.store
    body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    ref = s.put(body)
    replace_blob(pair_home, ref.blake3, b"planted")  # what is stored under the digest is now other bytes
    assert s.put(body) == ref
    assert s.read(ref.blake3) == b"planted" and not s.check(ref.blake3, ref).ok
    assert s.gc([ref.blake3], grace_seconds=0).temp_files_removed == 0  # the large put's temp object is gone


def test_stored_tree_and_truncation_on_both_pairs(pair_home: EvidenceHome) -> None:
    """The kept Merkle tree (``merkle_hashes``) is kept and checked on either ledger: verify reports a
    ``tree`` verdict, checkpoints come from it, and rows removed from the end fail the tree check."""
    fill(pair_home, 6)
    cp, _ = checkpoint(pair_home)
    report = pair_home.verify()
    assert report.ok and report.to_json()["checks"]["tree"]["ok"]
    assert pair_home.ledger.tree().root(6) == cp.root
    sql(pair_home, "DELETE FROM receipts WHERE seq > 4")
    bad = pair_home.verify()
    assert not bad.ok and any("rows removed from the end" in c.detail for c in bad.failures("tree"))


def test_a_reading_open_of_an_empty_postgres_database_creates_nothing(pg_url: str, tmp_path: Path) -> None:
    """Reading never creates: a read-only home on a PostgreSQL schema with no ledger makes no table and
    no log id, and verify fails with a database verdict that says so."""
    import psycopg

    def tables() -> list[str]:
        with psycopg.connect(pg_url, autocommit=True) as c:
            return [r[0] for r in c.execute("SELECT table_name FROM information_schema.tables"
                                            " WHERE table_schema = current_schema()").fetchall()]
    assert tables() == []
    with EvidenceHome(tmp_path / "h", readonly=True, ledger_url=pg_url) as ev:
        report = ev.verify()
        assert not report.ok and "lacks the table(s)" in report.failures("database")[0].detail
        assert not ev.ledger.present() or ev.ledger.rows.broken
    assert tables() == []
    assert not (tmp_path / "h").exists()


def point_index(home: EvidenceHome, sha256: str, blake3: str) -> None:
    """Rewrite the sha256 index entry ``sha256`` to name the blob ``blake3``, behind the store's back."""
    store, hexd = home.store, sha256.split(":", 1)[1]
    if isinstance(store, BlobStore):
        store._sha_path(hexd).write_text(blake3)
    else:
        store.s3.put_object(Bucket=store.bucket, Key=store._key("sha256", hexd), Body=blake3.encode())


def test_store_verify_checks_every_sha256_index_entry(pair_home: EvidenceHome) -> None:
    """`blob verify` on either pair counts the sha256 index entries and fails one that names another blob
    (on S3 it used to check the blobs only and report 0 index entries)."""
    s = pair_home.store
    a, b = s.put(b"first body"), s.put(b"second body")
    report = s.verify()
    assert report.ok and report.checked == 2 and report.index_checked == 2 and report.dangling == ()
    point_index(pair_home, a.sha256, b.blake3)
    report = s.verify()
    assert not report.ok and report.index_checked == 2
    assert [(c.digest, c.detail) for c in report.bad] == [
        (a.sha256, f"index entry points at {b.blake3}, whose sha256 is {b.sha256}")]
    point_index(pair_home, a.sha256, "blake3:" + "0" * 64)  # turned away from a stored blob to no blob: bad
    report = s.verify()
    assert not report.ok and report.dangling == () and [c.digest for c in report.bad] == [a.sha256]
    point_index(pair_home, a.sha256, a.blake3)
    c = s.put(b"third body")  # a put that never finished: an entry naming no blob, for a sha256 no blob has
    replace_blob(pair_home, c.blake3, None)
    report = s.verify()
    assert report.ok and report.dangling[0] == c.sha256  # (the folder store lists c's meta as dangling too)


def test_read_as_serves_only_the_receipts_bytes_on_both_stores(pair_home: EvidenceHome) -> None:
    """F2 on both backends: what bundles, exports and citations read (``read_as``) must hash to the
    receipt's blake3, sha256 and size; bytes swapped in behind the store's back are refused."""
    rs = fill(pair_home, 2)
    assert pair_home.store.read_as(rs[0].content) == b"body 0"
    replace_blob(pair_home, str(rs[1].content["blake3"]), b"body X")
    with pytest.raises(BlobCorrupt):
        pair_home.store.read_as(rs[1].content)
    lying = {**rs[0].content, "size": rs[0].content["size"] + 1}  # a receipt naming these bytes but another size
    with pytest.raises(BlobCorrupt):
        pair_home.store.read_as(lying)


def stored_bytes(home: EvidenceHome, digest: str) -> bytes:
    """The bytes as kept (on the folder store a text body is a ``.zst`` file), read behind the store's back."""
    store = home.store
    if isinstance(store, BlobStore):
        return store.path(digest).read_bytes()
    return store.s3.get_object(Bucket=store.bucket, Key=store._key("blake3", digest.split(":", 1)[1]))["Body"].read()


SKIPPABLE = (0x184D2A50).to_bytes(4, "little") + (8).to_bytes(4, "little") + b"planted!"  # RFC 8878 3.1.2


@pytest.mark.parametrize("extra", [SKIPPABLE, b"\x28\xb5\x2f\xfd\x20\x00\x01\x00\x00", b"\n"],
                         ids=["skippable-frame", "empty-frame", "one-byte"])
def test_bytes_after_what_the_store_wrote_fail_verify_and_every_read(pair_home: EvidenceHome, extra: bytes) -> None:
    """Anything appended to a stored blob (on the folder store: after its one zstd frame, where a decoder
    would skip it and serve the right bytes) makes ``verify`` fail that blob and every read refuse it."""
    s = pair_home.store
    body = b"<p>a text body, kept compressed on the folder store</p>\n" * 40
    ref, other = s.put(body), s.put(b"<p>another body, left alone</p>\n" * 40)
    assert s.verify().ok
    replace_blob(pair_home, ref.blake3, stored_bytes(pair_home, ref.blake3) + extra)
    report = s.verify()
    assert not report.ok and [b.digest for b in report.bad] == [ref.blake3], report
    assert not s.check(ref.blake3, ref).ok and s.check(other.blake3, other).ok
    for d in (ref.blake3, ref.sha256):
        with pytest.raises(BlobCorrupt):
            s.read_checked(d)
        with pytest.raises(BlobCorrupt):
            s.open_verified(d)
    with pytest.raises(BlobCorrupt):
        s.read_as(ref.to_json())
    if isinstance(s, BlobStore):  # the plain read inflates the frame: refused too (on S3 it is the raw bytes)
        with pytest.raises(BlobCorrupt):
            s.read(ref.blake3)


@pytest.mark.parametrize("held", [b"sha256:" + b"1" * 64, b"not a digest", b"\xff\xfe", b""],
                         ids=["a-sha256-digest", "text", "not-utf8", "empty"])
def test_every_index_verdict_is_the_same_on_both_stores(pair_home: EvidenceHome, held: bytes) -> None:
    """One judge (``g6.store.verifying.judge_index``) on both stores: an entry not holding a blake3 digest is
    bad; an entry naming a blob that fails its own check is that blob's failure only, reported once."""
    s = pair_home.store
    a, b = s.put(b"first body"), s.put(b"second body")
    hexd = a.sha256.split(":", 1)[1]
    if isinstance(s, BlobStore):
        s._sha_path(hexd).write_bytes(held)
    else:
        s.s3.put_object(Bucket=s.bucket, Key=s._key("sha256", hexd), Body=held)
    report = s.verify()
    assert report.index_checked == 2 and report.dangling == ()
    assert [(c.digest, c.detail) for c in report.bad] == [(a.sha256, "index entry does not hold a blake3 digest")]
    for read in (s.read_checked, s.open_verified, s.read):  # the same entry refused by every read, typed
        with pytest.raises(BlobCorrupt, match="does not hold a blake3 digest"):
            read(a.sha256)
    point_index(pair_home, a.sha256, a.blake3)
    replace_blob(pair_home, b.blake3, b"second bodY")
    report = s.verify()
    assert [c.digest for c in report.bad] == [b.blake3] and report.index_checked == 2 and report.dangling == ()


def test_a_blob_without_its_sha256_index_entry_fails_verify(pair_home: EvidenceHome) -> None:
    """A whole blob whose sha256 entry was removed cannot be read by its sha256 (`blob cat sha256:…` says no
    blob), yet `verify` said ok on both stores."""
    s = pair_home.store
    a, b = s.put(b"first body"), s.put(b"second body")
    hexd = a.sha256.split(":", 1)[1]
    if isinstance(s, BlobStore):
        s._sha_path(hexd).unlink()
    else:
        s.s3.delete_object(Bucket=s.bucket, Key=s._key("sha256", hexd))
    with pytest.raises(BlobNotFound):
        s.read_checked(a.sha256)
    report = s.verify()
    assert [(c.digest, c.detail) for c in report.bad] == [
        (a.blake3, f"it has no sha256 index entry: {a.sha256} finds no blob")]
    assert report.index_checked == 1 and s.check(b.blake3).ok


def test_something_under_blake3_that_is_no_blob_fails_verify(pair_home: EvidenceHome) -> None:
    """On S3 a key under blake3/ that is not a blake3 name was passed over (`verify` said ok); on the folder
    store a file at blake3/ab/cd crashed it. Both name it now, and the blob beside it still checks."""
    s = pair_home.store
    ref = s.put(b"first body")
    if isinstance(s, BlobStore):
        (s.root / "blake3" / "ab").mkdir(exist_ok=True)
        (s.root / "blake3" / "ab" / "cd").write_bytes(b"first body")
        where = "blake3/ab/cd"
    else:
        s.s3.put_object(Bucket=s.bucket, Key=s._key("blake3", "not-a-digest"), Body=b"first body")
        where = "not-a-digest"
    report = s.verify()
    assert [c.digest for c in report.bad] == [where] and report.checked == 1 and s.check(ref.blake3).ok


def test_a_batch_appends_its_receipts_to_the_homes_own_ledger(pair_home: EvidenceHome, site, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``fetch --input``'s ledger writer opens its own connection: to the home's ledger, on whichever backend,
    never to a file named after a PostgreSQL URL (its receipts would vanish from the shared ledger)."""
    from g6.adapters import CheckedClient, FetchPolicy
    from g6.demo.site import Reply
    from g6.fetch.batch import batch_fetch

    monkeypatch.chdir(tmp_path)  # a stray SQLite file would be made here
    s = site({f"/{i}": Reply(200, f"page {i}".encode(), (("Content-Type", "text/plain"),)) for i in range(3)})
    pair_home.keys.ensure()
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as client:
        report = batch_fetch(pair_home, client, [s.url(f"/{i}") for i in range(3)])
    assert report.ok and len(report.results) == 3
    assert len(pair_home.ledger) == 3 and pair_home.verify().ok
    assert {e.receipt.receipt_id for e in pair_home.ledger.entries()} == {r.receipt_id for r in report.results}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g6home"]


def test_what_others_vouch_for_a_checkpoint_is_kept_beside_it(pair_home: EvidenceHome, tmp_path: Path) -> None:
    from g6.ledger import Ledger, copy_ledger

    fill(pair_home, 3)
    cp, _ = checkpoint(pair_home)
    assert pair_home.ledger.kept_beside(cp) == []
    pair_home.ledger.keep_beside(cp, "cosignature", "witness.example", "— witness.example AAAA")
    pair_home.ledger.keep_beside(cp, "cosignature", "witness.example", "— witness.example AAAA")  # kept once
    pair_home.ledger.keep_beside(cp, "timestamp", "tsa.example", "MIIB")
    assert pair_home.ledger.kept_beside(cp) == [("cosignature", "witness.example", "— witness.example AAAA"),
                                                ("timestamp", "tsa.example", "MIIB")]
    assert pair_home.ledger.kept_beside(cp, "timestamp") == [("timestamp", "tsa.example", "MIIB")]
    later, _ = checkpoint(pair_home)
    assert later == cp and pair_home.ledger.kept_beside(later)  # the same tree: the same checkpoint
    with Ledger(tmp_path / "copy.sqlite") as dst:
        copy_ledger(pair_home.ledger, dst, pair_home.trusted())
        assert dst.kept_beside(cp) == pair_home.ledger.kept_beside(cp)
