"""Blobs kept zstd-compressed at rest: same digests, names and sizes; every reader sees raw bytes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import blake3
import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.cli import cli
from g6.demo.site import Reply
from g6.errors import BlobCorrupt, ConfigError, StoreError
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.prove.bundle import build_bundle, verify_bundle
from g6.store import BlobStore, BlobWriter
from g6.store.compression import (
    STREAM_TRAILER,
    decompress,
    one_frame_length,
    parse_setting,
    require_one_frame,
    worth_compressing,
)

FIX = Path(__file__).resolve().parent.parent.parent / "fixtures" / "http"
HTML = ("<html><head><title>Kept</title></head><body>"
        + "".join(f"<p>Paragraph {i}: the stored bytes are compressed, the digests are not.</p>" for i in range(60))
        + "</body></html>").encode()


def files(store: BlobStore) -> list[Path]:
    return sorted(p for p in (store.root / "blake3").rglob("*") if p.is_file())


def test_text_is_kept_compressed_and_read_back_raw(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put(HTML)
    assert (ref.blake3, ref.sha256, ref.size) == (f"blake3:{blake3.blake3(HTML).hexdigest()}",
                                                   f"sha256:{hashlib.sha256(HTML).hexdigest()}", len(HTML))
    [kept] = files(store)
    assert kept.name == ref.blake3.split(":")[1] + ".zst" and kept.stat().st_size < len(HTML) // 5
    assert zstandard.ZstdDecompressor().decompress(kept.read_bytes(), max_output_size=len(HTML)) == HTML
    assert store.read(ref.sha256) == HTML
    with store.open(ref.blake3) as f:
        assert f.read(100) + f.read() == HTML
    assert store.info(ref.blake3) == ref and store.has(ref.sha256)
    assert store.check(ref.blake3, ref).ok and store.verify().ok
    assert list(store.iter_digests()) == [ref.blake3]
    assert store.put_stream(HTML[i:i + 7] for i in range(0, len(HTML), 7)) == ref  # dedupe, streamed
    assert len(files(store)) == 1


@pytest.mark.parametrize("body", [b"%PDF-1.7\n" + os.urandom(2000), b"\x89PNG\r\n\x1a\n" + os.urandom(2000),
                                  b"\x1f\x8b\x08" + os.urandom(2000), b"PK\x03\x04" + os.urandom(2000),
                                  b"short text"])
def test_compressed_formats_and_tiny_bodies_stay_raw(tmp_path: Path, body: bytes) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put(body)
    [kept] = files(store)
    assert not kept.name.endswith(".zst") and kept.read_bytes() == body and store.read(ref.blake3) == body


def test_content_type_decides_when_given() -> None:
    assert worth_compressing(b"<html>", "text/html; charset=utf-8")
    assert worth_compressing(b"{}", "application/ld+json")
    assert not worth_compressing(b"plain looking bytes", "application/octet-stream")
    assert not worth_compressing(b"%PDF-1.4", "text/plain")  # the magic wins over a lying type
    assert not worth_compressing(b"bin\x00ary")


def test_old_raw_store_works_beside_new_compressed_blobs(tmp_path: Path) -> None:
    old = BlobStore(tmp_path, fsync=False, compression="off")
    a = old.put(HTML)
    store = BlobStore(tmp_path, fsync=False)  # the same folder, compression now on
    b = store.put(HTML.replace(b"Kept", b"New!"))
    assert store.put(HTML) == a  # already there raw: not written again
    names = sorted(p.name for p in files(store))
    assert names == sorted([a.blake3.split(":")[1], b.blake3.split(":")[1] + ".zst"])
    assert store.read(a.blake3) == HTML and store.read(b.sha256) == HTML.replace(b"Kept", b"New!")
    report = store.verify()
    assert report.ok and report.checked == 2
    gc = store.gc([a.blake3], grace_seconds=0)
    assert gc.removed == (b.blake3,) and not store.has(b.blake3) and store.has(a.blake3)
    assert files(store) == [store.path(a.blake3)]


def test_damage_and_bombs_are_caught_not_crashed_on(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put(HTML)
    kept = store.path(ref.blake3)
    data = bytearray(kept.read_bytes())
    data[len(data) // 2] ^= 0xFF
    kept.write_bytes(bytes(data))
    c = store.check(ref.blake3, ref)
    assert not c.ok and ("decompress" in c.detail or "hashes to" in c.detail)
    # a frame that inflates far past the recorded size: refused at the recorded size
    kept.write_bytes(zstandard.ZstdCompressor().compress(b"A" * (50 << 20)))
    c = store.check(ref.blake3, ref)
    assert not c.ok and "past its recorded size" in c.detail
    with pytest.raises(StoreError, match="recorded size"):
        store.read(ref.blake3)
    with pytest.raises(StoreError, match="past its recorded size"), store.open(ref.blake3) as f:
        f.read()


def test_setting_values() -> None:
    assert parse_setting(None) == parse_setting("") == parse_setting("ZSTD") == "zstd"
    assert parse_setting("off") == parse_setting("0") == "off"
    with pytest.raises(ConfigError, match="G6_BLOB_COMPRESSION"):
        parse_setting("lz4")
    r = CliRunner().invoke(cli, ["ledger", "list"], env={"G6_BLOB_COMPRESSION": "lz4", "G6_HOME": "/nonexistent-g6"})
    assert r.exit_code == 2 and r.output.startswith("g6: G6_BLOB_COMPRESSION must be one of")


def test_bundle_warc_cat_and_verify_see_raw_bytes(home: EvidenceHome, site, tmp_path: Path) -> None:
    s = site({"/a": Reply(body=HTML), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/a"))
    assert home.store.path(r.content["blake3"]).name.endswith(".zst")
    assert home.verify().ok
    m = Manifest.new().with_citation(cite_web(home, r.receipt_id, quote="the digests are not")).signed(
        home.signing_key())
    save_manifest(m, tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    with zipfile.ZipFile(tmp_path / "b.zip") as z:
        assert z.read(f"blobs/{r.content['blake3'].split(':')[1]}") == HTML
    assert verify_bundle(tmp_path / "b.zip", (home.signing_key().public,)).ok
    out = tmp_path / "o.warc.gz"
    export_warc(home, out, [e.receipt for e in home.ledger.entries()])
    with out.open("rb") as f:
        bodies = [rec.content_stream().read() for rec in ArchiveIterator(f) if rec.rec_type == "response"]
    assert bodies == [HTML]
    cat = subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), "blob", "cat", r.content["sha256"]],
                         capture_output=True, check=True)
    assert cat.stdout == HTML


def test_recorded_fixtures_shrink_to_under_a_third(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    raw = 0
    for p in sorted(FIX.rglob("*")):
        if p.is_file() and p.suffix in (".html", ".xml", ".json") and p.stat().st_size >= 512:
            raw += p.stat().st_size
            assert store.read(store.put(p.read_bytes()).blake3) == p.read_bytes()
    kept = sum(f.stat().st_size for f in files(store))
    assert raw > 0 and kept / raw < 0.3, json.dumps({"raw": raw, "kept": kept})


def test_a_compressed_blob_whose_meta_is_lost_is_still_checked(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put(HTML)
    hexd = ref.blake3.split(":")[1]
    (tmp_path / "meta" / hexd[:2] / f"{hexd}.json").unlink()
    assert store.info(ref.blake3) == ref  # derived again from the bytes
    assert store.check(ref.blake3, ref).ok and store.verify().ok
    assert store.read(ref.blake3) == HTML  # the size, derived again from the bytes, bounds the read
    with store.open(ref.sha256) as f:
        assert f.read() == HTML


# -- a stored .zst is exactly one frame, nothing before or after it (RFC 8878 3.1) --------------------------
def _skippable(n: int = 0, payload: bytes = b"planted!") -> bytes:
    """A skippable frame (RFC 8878 3.1.2): magic 0x184D2A5n, a 4-byte length, that many bytes."""
    return (0x184D2A50 + n).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


EXTRAS = {
    "skippable-after": lambda f: f + _skippable(0),
    "skippable-f-after": lambda f: f + _skippable(15, b""),
    "skippable-before": lambda f: _skippable(3) + f,
    "empty-frame-after": lambda f: f + zstandard.ZstdCompressor().compress(b""),  # = STREAM_TRAILER
    "trailer-twice": lambda f: f + STREAM_TRAILER * (1 if zstandard.frame_content_size(f) == -1 else 2),
    "second-frame-after": lambda f: f + zstandard.ZstdCompressor().compress(b"more text"),
    "garbage-after": lambda f: f + b"\x00",
    "frame-twice": lambda f: f + f,
}


def _streamed_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BlobStore:
    """A store whose writer streams text past 4 KiB through the zstd stream writer (the path of bodies
    past ``BlobWriter.HOLD``, 16 MiB, without writing 16 MiB)."""
    monkeypatch.setattr(BlobWriter, "HOLD", 4096)
    return BlobStore(tmp_path, fsync=False)


@pytest.mark.parametrize("extra", sorted(EXTRAS))
@pytest.mark.parametrize("how", ["held", "streamed"])
def test_anything_but_exactly_one_frame_is_corrupt_for_every_reader_and_verify(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str, how: str) -> None:
    store = _streamed_store(tmp_path, monkeypatch) if how == "streamed" else BlobStore(tmp_path, fsync=False)
    body = HTML * (8 if how == "streamed" else 1)
    ref = store.put_stream(body[i:i + 1000] for i in range(0, len(body), 1000))
    kept = store.path(ref.blake3)
    frame = kept.read_bytes()
    assert kept.name.endswith(".zst") and (zstandard.frame_content_size(frame) == -1) == (how == "streamed")
    assert frame.endswith(STREAM_TRAILER) == (how == "streamed")  # the writer's two shapes
    assert zstandard.ZstdCompressor().compress(b"") == STREAM_TRAILER
    assert store.verify().ok and store.read_checked(ref.sha256)[1] == body  # as written: whole and ok
    kept.write_bytes(EXTRAS[extra](frame))
    report = store.verify()
    assert not report.ok and [b.digest for b in report.bad] == [ref.blake3], report
    assert not store.check(ref.blake3, ref).ok
    for read in (store.read, store.read_checked, store.open_verified, store.open):
        for d in (ref.blake3, ref.sha256):
            with pytest.raises(BlobCorrupt):
                read(d)
    with pytest.raises(BlobCorrupt):
        store.read_as(ref.to_json())
    r = CliRunner().invoke(cli, ["blob", "verify"], env={"G6_HOME": str(tmp_path / "h"), "G6_BLOB_URL":
                                                         tmp_path.as_uri()})
    assert r.exit_code == 1 and f"BAD {ref.blake3}" in r.output, r.output
    r = CliRunner().invoke(cli, ["blob", "cat", ref.sha256], env={"G6_HOME": str(tmp_path / "h"), "G6_BLOB_URL":
                                                                  tmp_path.as_uri()})
    assert r.exit_code == 1 and r.stdout_bytes == b"" and r.output.startswith("g6: "), r.output


def test_a_lost_meta_does_not_let_an_extra_frame_through(tmp_path: Path) -> None:
    store = BlobStore(tmp_path, fsync=False)
    ref = store.put(HTML)
    hexd = ref.blake3.split(":")[1]
    (tmp_path / "meta" / hexd[:2] / f"{hexd}.json").unlink()
    kept = store.path(ref.blake3)
    kept.write_bytes(kept.read_bytes() + _skippable())
    assert not store.verify().ok
    with pytest.raises(BlobCorrupt):
        store.read(ref.blake3)


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=300_000), level=st.sampled_from([1, 3, 19]), checksum=st.booleans(),
       declare=st.booleans(), rle=st.integers(0, 200_000))
def test_the_frame_walk_ends_where_zstd_ends_the_frame(body: bytes, level: int, checksum: bool, declare: bool,
                                                       rle: int) -> None:
    """``one_frame_length`` finds the end of any frame zstd makes (raw, RLE and compressed blocks, with
    or without a checksum or a declared size): what the walk calls one frame is what the decoder reads."""
    data = body + b"\x00" * rle  # long runs give RLE blocks; random bytes raw ones
    frame = zstandard.ZstdCompressor(level=level, write_checksum=checksum, write_content_size=declare).compress(data)
    assert one_frame_length(lambda o, n: frame[o:o + n], "x") == len(frame)
    require_one_frame(len(frame), lambda o, n: frame[o:o + n], "x")
    trailed = frame + STREAM_TRAILER  # the streamed shape: accepted only after a frame of undeclared size
    if declare:
        with pytest.raises(BlobCorrupt):
            require_one_frame(len(trailed), lambda o, n: trailed[o:o + n], "x")
    else:
        require_one_frame(len(trailed), lambda o, n: trailed[o:o + n], "x")
    with pytest.raises(BlobCorrupt):
        require_one_frame(len(frame) + 1, lambda o, n: (frame + b"\0")[o:o + n], "x")


@settings(max_examples=300, deadline=None)
@given(tail=st.binary(max_size=64), magic=st.booleans(), size=st.integers(0, 4096))
def test_any_bytes_in_a_zst_file_are_served_whole_or_refused_typed(tail: bytes, magic: bool, size: int) -> None:
    """Whatever sits in a ``.zst`` file, the frame walk and the inflate end in ``BlobCorrupt`` (never another
    error: an internal error, exit 70) or in exactly ``size`` bytes."""
    data = (b"\x28\xb5\x2f\xfd" if magic else b"") + tail
    try:
        out = decompress(data, size, "x")
    except BlobCorrupt:
        return
    assert len(out) == size
