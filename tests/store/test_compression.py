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
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.bundle import build_bundle, verify_bundle
from g6.capture import fetch
from g6.citing import cite_web
from g6.cli import cli
from g6.errors import ConfigError, StoreError
from g6.home import EvidenceHome
from g6.localsite import Reply
from g6.manifest import Manifest, save_manifest
from g6.store import BlobStore
from g6.store.compression import parse_setting, worth_compressing
from g6.warc_export import export_warc

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
