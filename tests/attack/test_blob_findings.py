"""Findings F2, F6 and F7 of the second attack round (perf-blob, perf-batch), closed on branch
fix-store: once strict xfails, now plain regression tests (each failed on the code before its fix),
with the cases added alongside the fixes. See the attack report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from g6.cite.cite import cite_web
from g6.cli import cli
from g6.errors import BlobCorrupt, StoreError
from g6.home import EvidenceHome
from g6.store import BlobStore, digests
from tests.attack.test_blob_attacks import (
    EXPORT_NOT_REFUSED,
    export_bundle,
    export_warc,
    g6,
    refused,
    t_raw_other_content,
    t_zst_other_content,
)


def export_wacz(ev) -> tuple[object, Path]:
    out = ev["tmp"] / "out.wacz"
    return g6(ev["home"], "export", "wacz", "-o", str(out), "--manifest", str(ev["manifest"])), out


@pytest.mark.parametrize("attack", EXPORT_NOT_REFUSED, ids=lambda f: f.__name__)
@pytest.mark.parametrize("export", [export_bundle, export_warc, export_wacz], ids=["bundle", "warc", "wacz"])
def test_export_refuses_bytes_that_do_not_hash_to_the_receipt(ev, attack, export) -> None:
    """Finding F2 (closed): every export serves only bytes verified against the receipt's digest."""
    attack(ev)
    r, out = export(ev)
    refused(r, f"{export.__name__} after {attack.__name__}")
    assert not out.exists(), "an export was written"


def _home_with_text_blob(tmp_path):  # type: ignore[no-untyped-def]
    text = b"<p>hello text body</p>\n" * 100
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        home.keys.init()
        ref = home.store.put(text)
        path, root = home.store.path(ref.blake3), home.store.root
    assert path.name.endswith(".zst")
    h = ref.blake3.split(":", 1)[1]
    return tmp_path / "h", ref, text, path, root / "meta" / h[:2] / f"{h}.json"


@pytest.mark.parametrize("size", [1 << 40, 1 << 70])
def test_a_lying_meta_size_is_a_typed_refusal_on_the_read_path(tmp_path, size: int) -> None:
    g6home, ref, text, path, meta = _home_with_text_blob(tmp_path)
    path.write_bytes(zstandard.ZstdCompressor(write_content_size=False).compress(text))
    m = json.loads(meta.read_text())
    m["size"] = size
    meta.write_text(json.dumps(m))
    r = CliRunner().invoke(cli, ["--home", str(g6home), "convert", ref.blake3])
    refused(r, f"convert with a meta size of {size}")


def _peak_allocated_refusing(read, digest: str) -> int:  # type: ignore[no-untyped-def]
    """Peak bytes allocated while ``read(digest)`` refuses the blob as corrupt. Allocations, not RSS:
    the output buffer is a Python bytes object, so tracemalloc sees all of it whether or not the
    kernel has its pages resident (RSS of a busy machine is not deterministic)."""
    tracemalloc.start()
    try:
        with pytest.raises(BlobCorrupt):
            read(digest)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_read_checked_memory_is_not_set_by_a_lying_meta(tmp_path) -> None:
    _, ref, _, path, meta = _home_with_text_blob(tmp_path)
    co = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    zeros = b"\0" * (1 << 20)
    path.write_bytes(b"".join([co.compress(zeros) for _ in range(256)] + [co.flush()]))
    m = json.loads(meta.read_text())
    m["size"] = 256 << 20
    meta.write_text(json.dumps(m))
    store = BlobStore(meta.parents[2], create=False, fsync=False)
    peak = _peak_allocated_refusing(store.read_checked, ref.blake3)
    assert peak < 64 << 20, f"{peak >> 20} MiB allocated reading a 2 KiB blob"


@pytest.mark.parametrize("bad", [-1, "12", 2.5, True, None, [1], 1 << 40])
def test_a_meta_size_that_is_not_a_sane_int_is_corrupt(tmp_path, bad: object) -> None:
    """F6: a recorded size that is not a non-negative int within the hard limit is a corrupt meta on
    every read path (and a failed verify), never a number to allocate by."""
    _, ref, _, path, meta = _home_with_text_blob(tmp_path)
    m = json.loads(meta.read_text())
    m["size"] = bad
    meta.write_text(json.dumps(m))
    store = BlobStore(meta.parents[2], create=False, fsync=False)
    for read in (store.read, store.read_checked, store.open_verified):
        with pytest.raises(BlobCorrupt):
            read(ref.blake3)
    assert not store.verify().ok


@pytest.mark.parametrize("declare", [False, True])
def test_unverified_read_allocates_what_the_frame_holds_not_what_the_meta_claims(tmp_path, declare: bool) -> None:
    """F6: BlobStore.read of a 2 KiB frame whose meta (and, forged, its frame header) says 256 MiB
    allocates about the 2 KiB it inflates to before refusing, not 256 MiB."""
    _, ref, text, path, meta = _home_with_text_blob(tmp_path)
    big = 256 << 20
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(text)
    if declare:  # the header of a frame that declares 256 MiB on the small frame's blocks
        lie = zstandard.ZstdCompressor().compress(b"\0" * big)
        hdr_lie, hdr = zstandard.frame_header_size(lie), zstandard.frame_header_size(frame)
        frame = lie[:hdr_lie] + frame[hdr:]
        assert zstandard.frame_content_size(frame) == big
    path.write_bytes(frame)
    m = json.loads(meta.read_text())
    m["size"] = big
    meta.write_text(json.dumps(m))
    store = BlobStore(meta.parents[2], create=False, fsync=False)
    peak = _peak_allocated_refusing(store.read, ref.blake3)
    assert peak < 8 << 20, f"{peak >> 20} MiB allocated reading a 2 KiB blob"


def test_blob_verify_and_blob_cat_agree_when_the_raw_path_is_a_directory(tmp_path) -> None:
    g6home, ref, text, path, _ = _home_with_text_blob(tmp_path)
    path.with_name(path.name.removesuffix(".zst")).mkdir()
    v = CliRunner().invoke(cli, ["--home", str(g6home), "blob", "verify"])
    c = CliRunner().invoke(cli, ["--home", str(g6home), "blob", "cat", ref.blake3])
    assert (v.exit_code, c.exit_code) in ((0, 0), (1, 1)), (v.output, c.output)
    if c.exit_code == 0:
        assert c.stdout_bytes == text


def test_every_reader_takes_a_folder_at_the_raw_path_for_no_blob(tmp_path) -> None:
    """F7 (closed): a folder where the raw file would be is not the blob, for every reader as for
    ``blob verify``: the compressed blob beside it is served, verified."""
    g6home, ref, text, path, meta = _home_with_text_blob(tmp_path)
    path.with_name(path.name.removesuffix(".zst")).mkdir()
    store = BlobStore(meta.parents[2], create=False, fsync=False)
    assert store.read(ref.blake3) == text and store.read_checked(ref.sha256)[1] == text
    with store.open_verified(ref.sha256) as f:
        assert f.read() == text
    assert store.verify().ok
    r = CliRunner().invoke(cli, ["--home", str(g6home), "convert", ref.blake3, "--json"])
    assert r.exit_code != 70 and "internal error" not in r.output, r.output


def test_a_folder_at_the_compressed_path_is_no_blob_either(tmp_path) -> None:
    g6home, ref, text, path, _ = _home_with_text_blob(tmp_path)
    path.unlink()
    path.mkdir()
    for args in (["blob", "cat", ref.blake3], ["convert", ref.sha256], ["blob", "verify"]):
        refused(CliRunner().invoke(cli, ["--home", str(g6home), *args]), " ".join(args))


def test_a_put_onto_a_folder_at_the_blob_path_is_a_typed_error_and_leaves_no_index(tmp_path) -> None:
    """The write side of F7: a folder where a new blob's file goes is a StoreError (exit 1 in the CLI),
    not an internal error, and leaves no meta or sha256 entry for a blob that is not there."""
    store = BlobStore(tmp_path, fsync=False)
    body = b"\x00 a small binary body, kept raw"
    want = digests(body)
    h = want.blake3.split(":", 1)[1]
    (tmp_path / "blake3" / h[:2] / h[2:4] / h).mkdir(parents=True)
    with pytest.raises(StoreError) as e:
        store.put(body)
    assert "not a blob file" in str(e.value)
    assert not [p for p in (tmp_path / "meta").rglob("*") if p.is_file()]
    assert not [p for p in (tmp_path / "sha256").rglob("*") if p.is_file()]
    assert not list((tmp_path / "tmp").iterdir())


FIFO_READ = """
import sys
from g6.store import BlobStore
store = BlobStore(sys.argv[1], create=False, fsync=False)
sys.stdout.buffer.write(store.read(sys.argv[2]))
with store.open_verified(sys.argv[2]) as f:
    sys.stdout.buffer.write(f.read())
print(store.verify().ok)
"""


def test_a_fifo_at_the_raw_path_is_no_blob_and_hangs_no_reader(tmp_path) -> None:
    """A FIFO planted where the raw file would be: opened without O_NONBLOCK the read would wait for a
    writer forever; it is not a regular file, so not the blob (the 600 s cap only ends a hang)."""
    _, ref, text, path, meta = _home_with_text_blob(tmp_path)
    os.mkfifo(path.with_name(path.name.removesuffix(".zst")))
    out = subprocess.run([sys.executable, "-c", FIFO_READ, str(meta.parents[2]), ref.blake3], capture_output=True,
                         timeout=600, check=True)
    assert out.stdout == text + text + b"True\n"


@pytest.mark.parametrize("attack", [t_raw_other_content, t_zst_other_content], ids=lambda f: f.__name__)
def test_citing_refuses_bytes_that_do_not_hash_to_the_receipt(ev, attack) -> None:
    """Part of F2: a citation (and the passages and re-checks built on the same reads) quotes only bytes
    verified against the receipt, never a file swapped in under its name."""
    attack(ev)
    victim = ev["small"] if attack is t_raw_other_content else ev["big"]
    with EvidenceHome(ev["home"], fsync=False) as home:
        rid = next(e.receipt.receipt_id for e in home.ledger.entries()
                   if e.receipt.kind == "fetch" and e.receipt.content == victim)
        with pytest.raises(BlobCorrupt):
            cite_web(home, rid, quote="sways in the stored bytes")


# -- a meta path taken by a folder or a FIFO (the store never makes one) -----------------------------------
def _plant_at_meta(ev, which: str, kind: str) -> dict[str, str]:
    victim = ev[which]
    h = victim["blake3"].split(":", 1)[1]
    meta = ev["big_path"].parents[3] / "meta" / h[:2] / f"{h}.json"
    meta.unlink()
    if kind == "folder":
        meta.mkdir()
    else:
        os.mkfifo(meta)  # opened for a blocking read, it would wait for a writer forever
    return victim


def _g6_process(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """In a process of its own, so that a read hanging on the FIFO fails on the timeout, not the whole run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=env, timeout=120)


@pytest.mark.parametrize("kind", ["folder", "fifo"])
@pytest.mark.parametrize("which", ["big", "small"], ids=["compressed", "raw"])
def test_a_folder_or_fifo_at_the_meta_path_is_a_corrupt_blob_everywhere(ev, which: str, kind: str) -> None:
    """Was exit 70 (IsADirectoryError) on `blob verify` and `ledger verify`, a hang on a FIFO: now every
    verified read refuses the blob (BlobCorrupt, one `g6:` line, exit 1) and `blob verify` fails naming it."""
    victim = _plant_at_meta(ev, which, kind)
    other = ev["small" if which == "big" else "big"]
    home = ev["home"]
    for d in (victim["blake3"], victim["sha256"]):
        r = _g6_process(home, "blob", "cat", d)
        err = r.stderr.decode()
        assert r.returncode == 1 and r.stdout == b"" and "Traceback" not in err, err
        assert len(err.splitlines()) == 1 and err.startswith("g6: ") and "is not a regular file" in err, err
    assert _g6_process(home, "blob", "cat", other["sha256"]).returncode == 0  # the other blob is served
    r = _g6_process(home, "blob", "verify", "--json")
    assert r.returncode == 1 and b"Traceback" not in r.stderr, r.stderr
    report = json.loads(r.stdout)
    assert not report["ok"] and [b["digest"] for b in report["bad"]] == [victim["blake3"]], report
    assert "is not a regular file" in report["bad"][0]["detail"]
    r = _g6_process(home, "ledger", "verify")
    assert r.returncode == 1 and b"Traceback" not in r.stderr + r.stdout and b"internal error" not in r.stderr
    script = ("import sys; from g6.store import BlobStore; from g6.errors import BlobCorrupt\n"
              "s = BlobStore(sys.argv[1], create=False, fsync=False)\n"
              "for read in (s.read_checked, s.open_verified, s.info):\n"
              "    for d in sys.argv[2:]:\n"
              "        try:\n"
              "            read(d)\n"
              "        except BlobCorrupt:\n"
              "            continue\n"
              "        raise SystemExit(f'{read.__name__}({d}) served it')\n"
              "print('refused')\n")
    p = subprocess.run([sys.executable, "-c", script, str(ev["big_path"].parents[3]), victim["blake3"],
                        victim["sha256"]], capture_output=True, timeout=120)
    assert p.stdout == b"refused\n", p.stdout + p.stderr


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_folder_or_fifo_at_an_index_entry_hangs_nothing_and_fails_verify(ev, kind: str) -> None:
    """A FIFO at sha256/xx/<hex> made `blob verify`, `blob cat sha256:…` and `blob gc` wait for a writer
    forever (the entry was read with a blocking open); now it is an entry that holds no blake3 digest."""
    victim = ev["small"]
    h = victim["sha256"].split(":", 1)[1]
    entry = ev["big_path"].parents[3] / "sha256" / h[:2] / h
    entry.unlink()
    entry.mkdir() if kind == "folder" else os.mkfifo(entry)
    r = _g6_process(ev["home"], "blob", "cat", victim["sha256"])
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"" and len(err.splitlines()) == 1 and err.startswith("g6: "), err
    assert _g6_process(ev["home"], "blob", "cat", victim["blake3"]).returncode == 0  # by its name it is whole
    r = _g6_process(ev["home"], "blob", "verify", "--json")
    report = json.loads(r.stdout)
    assert r.returncode == 1 and victim["sha256"] in [b["digest"] for b in report["bad"]], report
    r = _g6_process(ev["home"], "blob", "gc", "--dry-run", "--json")
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
