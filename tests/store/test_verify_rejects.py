"""What an attacker could plant in a folder store to get a false "ok" from ``blob verify`` (round 3 probes):
each is now a failed verdict, while the reads keep serving only bytes that hash to what was asked for."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from g6.cli import cli
from g6.store import BlobStore

TEXT = b"<p>a text body, kept compressed</p>\n" * 40
SMALL = b"\x00 a small binary body, kept raw"


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "s", fsync=False)


def bad(store: BlobStore) -> dict[str, str]:
    report = store.verify()
    assert report.ok == (not report.bad)
    return {c.digest: c.detail for c in report.bad}


def test_a_compressed_copy_beside_the_raw_file_must_hold_the_same_bytes(store: BlobStore) -> None:
    """Two writers (one with compression off) can leave a blob both raw and compressed; reads serve the raw
    file, so a tampered compressed copy beside it was never looked at: `verify` said ok."""
    ref = store.put(SMALL)
    raw = store.path(ref.blake3)
    twin = raw.with_name(raw.name + ".zst")
    twin.write_bytes(zstandard.ZstdCompressor().compress(SMALL))  # the same bytes: still one blob, ok
    assert store.verify().ok and list(store.iter_digests()) == [ref.blake3]
    twin.write_bytes(zstandard.ZstdCompressor().compress(SMALL.replace(b"small", b"smell")))
    assert "the compressed copy beside the raw file holds other bytes" in bad(store)[ref.blake3]
    twin.write_bytes(zstandard.ZstdCompressor().compress(SMALL) + b"\x00")  # the right bytes, one byte after
    assert "follow its zstd frame" in bad(store)[ref.blake3]
    assert store.read_checked(ref.sha256)[1] == SMALL  # what is served is the raw file, checked


def test_a_meta_that_is_not_json_fails_verify(store: BlobStore) -> None:
    """A meta is written whole (temp file, fsync, rename), so one that does not parse is damage; it used
    to pass as a lost meta."""
    ref = store.put(TEXT)
    h = ref.blake3.split(":", 1)[1]
    meta = store.root / "meta" / h[:2] / f"{h}.json"
    good = meta.read_bytes()
    for damaged in (b"{not json", b"\xff\xfe", good + b" " * 5000):
        meta.write_bytes(damaged)
        assert bad(store) == {ref.blake3: "meta is not JSON (or is past 4096 bytes)"}
        assert store.read_checked(ref.sha256)[1] == TEXT  # the bytes themselves are still served, checked
    meta.unlink()  # a lost meta (never written by a put that was cut) stays tolerated: the bytes are the truth
    assert store.verify().ok


@pytest.mark.parametrize("where", ["blake3/zz", "blake3/ab/cd"])
def test_a_file_where_the_store_keeps_folders_fails_verify(store: BlobStore, where: str) -> None:
    """A file at blake3/ab/cd crashed `verify` (NotADirectoryError, exit 70); one at blake3/zz was passed
    over. Neither is a blob: both are named as bad, and the blobs beside them still check."""
    ref = store.put(TEXT)
    (store.root / where).parent.mkdir(parents=True, exist_ok=True)
    (store.root / where).write_bytes(TEXT)
    assert bad(store) == {where: "not a blob: a file where the store keeps only folders"}
    assert list(store.iter_digests()) == [ref.blake3]
    assert store.gc([ref.blake3], grace_seconds=0).removed == ()
    r = CliRunner().invoke(cli, ["blob", "verify"], env={"G6_HOME": str(store.root.parent / "h"),
                                                         "G6_BLOB_URL": store.root.as_uri()})
    assert r.exit_code == 1 and f"BAD {where}: not a blob" in r.output, r.output


def test_the_report_names_every_kind_in_json(store: BlobStore) -> None:
    ref = store.put(TEXT)
    h = ref.blake3.split(":", 1)[1]
    (store.root / "meta" / h[:2] / f"{h}.json").write_text("[")
    r = CliRunner().invoke(cli, ["blob", "verify", "--json"], env={"G6_HOME": str(store.root.parent / "h"),
                                                                   "G6_BLOB_URL": store.root.as_uri()})
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and not out["ok"] and [b["digest"] for b in out["bad"]] == [ref.blake3]


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_fifo_at_the_meta_path_of_no_blob_fails_verify_and_gc_leaves_it(store: BlobStore,
                                                                                   kind: str) -> None:
    """`blob gc` crashed (IsADirectoryError) sweeping a folder planted where the meta of an unfinished put
    would be, and `verify` listed it as the harmless leftover of a put; a put never makes one."""
    ref = store.put(SMALL)
    meta = store.root / "meta" / "ab" / ("ab" * 32 + ".json")
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.mkdir() if kind == "folder" else os.mkfifo(meta)
    assert bad(store) == {f"meta/ab/{meta.name}": "not a regular file where a meta belongs"}
    assert store.verify().dangling == ()
    report = store.gc([ref.blake3], grace_seconds=0)
    assert report.index_entries_removed == 0 and os.path.lexists(meta) and store.has(ref.sha256)
