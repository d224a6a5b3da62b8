"""`g6 ledger publish DEST`: the log as C2SP tlog-tiles in a folder, incrementally.

Failure paths first (a destination that cannot be written is refused before a checkpoint is signed; a
destination holding another history is never overwritten), then what an incremental publish writes: only
the new tiles, full tiles never rewritten, partial tiles of each published size kept, the checkpoint last
and whole. The same log read by real, independent readers is in test_publish_peers.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from g6.errors import PublishConflict, ReceiptTooLarge
from g6.home import EvidenceHome
from g6.ledger.note import parse_note
from g6.ledger.transparency.tiles import MAX_ENTRY, decode_bundle
from g6.prove import publish_dest
from g6.prove.publish import publish
from g6.prove.publish_dest import FolderDestination
from g6.schemas import load
from tests.prove.tiles_peers import fill, g6, one_line_error, receipt


def files(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under ``folder``: its path -> (inode, mtime_ns, bytes)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[p.relative_to(folder).as_posix()] = (st.st_ino, st.st_mtime_ns, p.read_bytes())
    return out


class Counting:
    """A destination that records every call made to the folder it wraps."""

    def __init__(self, inner: FolderDestination) -> None:
        self.inner, self.where, self.calls = inner, inner.where, []  # type: ignore[var-annotated]

    def read(self, path: str) -> bytes | None:
        self.calls.append(("read", path))
        return self.inner.read(path)

    def create(self, path: str, data: bytes) -> bool:
        self.calls.append(("create", path))
        return self.inner.create(path, data)

    def replace_checkpoint(self, data: bytes) -> None:
        self.calls.append(("checkpoint", "checkpoint"))
        self.inner.replace_checkpoint(data)


@pytest.fixture
def home_dir(tmp_path: Path) -> Path:
    with EvidenceHome(tmp_path / "home", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
    return tmp_path / "home"


def checkpoints(home: Path) -> int:
    with EvidenceHome(home, readonly=True) as ev:
        return len(ev.ledger.checkpoints())


# -- failure paths: one typed line, nothing signed or written -------------------------------------------
def test_a_destination_that_is_a_file_is_refused(home_dir: Path, tmp_path: Path) -> None:
    f = tmp_path / "dest"
    f.write_text("mine")
    for dest in (f, f / "sub"):
        r = g6(home_dir, "ledger", "publish", str(dest))
        assert r.returncode == 2 and "is not a folder" in one_line_error(r), r.stderr
    assert f.read_text() == "mine" and checkpoints(home_dir) == 0


def test_a_destination_that_cannot_be_written_is_refused(home_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "ro"
    dest.mkdir()
    dest.chmod(0o555)
    # root writes anywhere; without these two capabilities it obeys the mode bits like anyone
    prefix = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search") if os.geteuid() == 0 else ()
    try:
        for d in (dest, dest / "under"):
            r = g6(home_dir, "ledger", "publish", str(d), prefix=prefix)
            assert r.returncode == 2 and "cannot be written" in one_line_error(r), r.stderr
    finally:
        dest.chmod(0o755)
    assert list(dest.iterdir()) == [] and checkpoints(home_dir) == 0


@pytest.mark.parametrize("dest", ["ftp://example.org/x", "", "file://elsewhere/x", "s3:///no-bucket"])
def test_a_destination_that_is_no_folder_or_bucket_url_is_bad_input(home_dir: Path, dest: str) -> None:
    r = g6(home_dir, "ledger", "publish", dest)
    assert r.returncode == 2 and "publish destination" in one_line_error(r), r.stderr
    assert checkpoints(home_dir) == 0


def test_a_destination_holding_another_history_is_not_overwritten(home_dir: Path, tmp_path: Path) -> None:
    dest = tmp_path / "pub"
    assert g6(home_dir, "ledger", "publish", str(dest)).returncode == 0
    with EvidenceHome(home_dir, fsync=False) as ev:
        fill(ev, 300)
    # someone put another level-0 tile where the next publish writes the full one
    other = b"\x01" * 8192
    (dest / "tile" / "0" / "000").write_bytes(other)
    before = (dest / "checkpoint").read_bytes()
    r = g6(home_dir, "ledger", "publish", str(dest))
    assert r.returncode == 1 and r.stdout == "" and "differs" in one_line_error(r), r.stderr
    assert (dest / "tile" / "0" / "000").read_bytes() == other and (dest / "checkpoint").read_bytes() == before


def test_a_destination_holding_another_log_is_refused(tmp_path: Path, home_dir: Path) -> None:
    dest = tmp_path / "pub"
    assert g6(home_dir, "ledger", "publish", str(dest)).returncode == 0
    with EvidenceHome(tmp_path / "other", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 5)
    before = files(dest)
    r = g6(tmp_path / "other", "ledger", "publish", str(dest))
    assert r.returncode == 1 and "holds another log" in one_line_error(r), r.stderr
    assert files(dest) == before


# -- the receipt size limit --------------------------------------------------------------------------------
def test_a_receipt_over_65535_bytes_is_refused_at_append(tmp_path: Path) -> None:
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 2)
        big = receipt(2, note="x" * MAX_ENTRY)
        with pytest.raises(ReceiptTooLarge, match=r"would be [\d,]+ bytes of canonical JSON; a receipt is at "
                                                   r"most 65,535 \(an entry of a published log"):
            ev.ledger.append_many([receipt(3), big], ev.signing_key())
        assert len(ev.ledger) == 2  # nothing of the batch
        # the largest that fits is appended and published as one entry, whole
        size = len(ev.ledger.append_many([receipt(3, note="y" * 64000)], ev.signing_key())[0].canonical_bytes(
            with_signature=True))
        assert 64000 < size <= MAX_ENTRY
        report = publish(ev, FolderDestination(tmp_path / "pub"))
    entries = decode_bundle((tmp_path / "pub" / "tile" / "entries" / "000.p" / "3").read_bytes(), 3)
    assert len(entries[2]) > 64000 and report.size == 3


# -- what is written, incrementally ------------------------------------------------------------------------
def test_publish_is_incremental_and_never_rewrites_a_full_tile(tmp_path: Path) -> None:
    dest = tmp_path / "pub"
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
        first = publish(ev, FolderDestination(dest))
        at3 = files(dest)
        assert set(at3) == {"checkpoint", "tile/0/000.p/3", "tile/entries/000.p/3"}
        assert first.written[-1] == "checkpoint" and first.previous_size == 0

        fill(ev, 300)  # crosses a full tile (256)
        counting = Counting(FolderDestination(dest))
        second = publish(ev, counting)
        at300 = files(dest)
        created = [p for op, p in counting.calls if op == "create"]
        assert created == ["tile/entries/000", "tile/0/000", "tile/entries/001.p/44", "tile/0/001.p/44",
                           "tile/1/000.p/1"]
        assert counting.calls[-1] == ("checkpoint", "checkpoint")
        assert second.previous_size == 3 and second.left == 0
        # the partial tiles of size 3 are kept as they were (the spec asks a log to keep serving them)
        assert all(at300[p] == at3[p] for p in at3 if p != "checkpoint")

        fill(ev, 600)
        counting = Counting(FolderDestination(dest))
        third = publish(ev, counting)
        at600 = files(dest)
        created = [p for op, p in counting.calls if op == "create"]
        # the full tiles of size 300 are neither written nor read again: same inode, same mtime, same bytes
        full_at_300 = ["tile/0/000", "tile/entries/000"]
        assert not set(full_at_300) & {p for _, p in counting.calls}
        assert all(at600[p] == at300[p] for p in at300 if p != "checkpoint")
        assert created == ["tile/entries/001", "tile/0/001", "tile/entries/002.p/88", "tile/0/002.p/88",
                           "tile/1/000.p/2"]
        assert third.left == len(full_at_300) and third.previous_size == 300

        again = publish(ev, Counting(FolderDestination(dest)))
    assert again.written == [] and files(dest) == at600  # nothing new: nothing written, the checkpoint too


def test_the_checkpoint_goes_last_by_rename_and_is_never_partial(tmp_path: Path, monkeypatch: Any) -> None:
    dest = tmp_path / "pub"
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
        publish(ev, FolderDestination(dest))
        fill(ev, 260)
        old = (dest / "checkpoint").read_bytes()
        seen: list[tuple[Path, Path, bytes, set[str]]] = []
        real_replace = os.replace

        def replace(src: Any, dst: Any) -> None:
            # what readers see just before the swap: the old checkpoint, and every tile already in place
            seen.append((Path(src), Path(dst), Path(dst).read_bytes(),
                         {p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()}))
            real_replace(src, dst)

        monkeypatch.setattr(publish_dest.os, "replace", replace)
        report = publish(ev, FolderDestination(dest))
    (src, dst, before, present), = seen
    assert dst == dest / "checkpoint" and src.parent == dest and src.name.startswith(".checkpoint.")
    assert before == old  # the old checkpoint stayed whole until the rename
    assert set(report.written[:-1]) <= present  # every tile was in place before the checkpoint named them
    assert (dest / "checkpoint").read_text() == report.note
    assert [p.name for p in dest.iterdir()] in (["checkpoint", "tile"], ["tile", "checkpoint"])  # no temp left


def test_a_failed_publish_leaves_the_old_checkpoint(tmp_path: Path) -> None:
    dest = tmp_path / "pub"
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
        publish(ev, FolderDestination(dest))
        old = (dest / "checkpoint").read_bytes()
        fill(ev, 520)
        (dest / "tile" / "entries" / "001").parent.mkdir(parents=True, exist_ok=True)
        (dest / "tile" / "entries" / "001").write_bytes(b"not the bundle")
        with pytest.raises(PublishConflict, match="tile/entries/001 is there already and differs"):
            publish(ev, FolderDestination(dest))
    assert (dest / "checkpoint").read_bytes() == old
    assert (dest / "tile" / "entries" / "001").read_bytes() == b"not the bundle"


# -- the command ---------------------------------------------------------------------------------------------
def test_the_command_signs_a_checkpoint_when_none_covers_and_says_what_it_wrote(home_dir: Path,
                                                                              tmp_path: Path) -> None:
    dest = tmp_path / "pub"
    r = g6(home_dir, "ledger", "publish", str(dest), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("ledger-publish.v1")).validate(doc)
    assert "signed a new one" in r.stderr and doc["checkpoint_signed"] is True
    assert doc["written"] == {"entry_bundles": 1, "tiles": 1, "checkpoint": True} and doc["size"] == 3
    assert (dest / "checkpoint").read_text() == doc["checkpoint"]
    assert checkpoints(home_dir) == 1

    with EvidenceHome(home_dir, fsync=False) as ev:
        fill(ev, 300)
    r = g6(home_dir, "ledger", "publish", str(dest))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].startswith("wrote 3 tiles, 2 entry bundles and the checkpoint; 0 full tiles")
    assert "size 300" in r.stdout.splitlines()[0] and "(it held size 3)" in r.stdout

    # --latest publishes the latest checkpoint issued, signing none, even though receipts came after it
    with EvidenceHome(home_dir, fsync=False) as ev:
        fill(ev, 310)
    doc = json.loads(g6(home_dir, "ledger", "publish", str(tmp_path / "latest"), "--latest", "--json").stdout)
    assert doc["size"] == 300 and doc["checkpoint_signed"] is False and checkpoints(home_dir) == 2


def test_latest_without_any_checkpoint_is_refused(home_dir: Path, tmp_path: Path) -> None:
    r = g6(home_dir, "ledger", "publish", str(tmp_path / "pub"), "--latest")
    assert r.returncode == 1 and "no checkpoint to publish" in one_line_error(r)
    assert not (tmp_path / "pub" / "checkpoint").exists()


def test_check_existing_reads_back_every_tile(tmp_path: Path, home_dir: Path) -> None:
    dest = tmp_path / "pub"
    with EvidenceHome(home_dir, fsync=False) as ev:
        fill(ev, 300)
    assert g6(home_dir, "ledger", "publish", str(dest)).returncode == 0
    doc = json.loads(g6(home_dir, "ledger", "publish", str(dest), "--check-existing", "--json").stdout)
    assert doc["already_there"] == 5 and doc["written"]["tiles"] == 0
    # a full tile changed behind the log's back: found by --check-existing, not by a plain publish
    tile = dest / "tile" / "0" / "000"
    data = bytearray(tile.read_bytes())
    data[100] ^= 1
    tile.write_bytes(bytes(data))
    assert g6(home_dir, "ledger", "publish", str(dest)).returncode == 0
    r = g6(home_dir, "ledger", "publish", str(dest), "--check-existing")
    assert r.returncode == 1 and "tile/0/000 is there already and differs" in one_line_error(r)


def test_kept_cosignatures_are_published_with_the_checkpoint(home_dir: Path, tmp_path: Path) -> None:
    with EvidenceHome(home_dir, fsync=False) as ev:
        cp, note = ev.ledger.checkpoint(ev.signing_key())
        cosig = "— example.com/witness " + "QUJD" * 25 + "QQ=="  # shaped as a note signature line
        ev.ledger.keep_beside(cp, "cosignature", "example.com/witness", cosig)
        ev.ledger.keep_beside(cp, "cosignature", "broken", "not a signature line")
    r = g6(home_dir, "ledger", "publish", str(tmp_path / "pub"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    published = (tmp_path / "pub" / "checkpoint").read_text()
    assert published == note + cosig + "\n" == doc["checkpoint"] and doc["cosignatures"] == 1
    assert len(parse_note(published)[1]) == 2
    assert doc["skipped_cosignatures"] == ["not a signature line"]
    assert "warning: a kept cosignature is not a note signature line" in r.stderr


def test_a_published_folder_can_be_copied_and_published_on(tmp_path: Path) -> None:
    """The destination's own checkpoint says where it is: a copy of it is continued like the original."""
    with EvidenceHome(tmp_path / "h", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 257)
        publish(ev, FolderDestination(tmp_path / "a"))
        shutil.copytree(tmp_path / "a", tmp_path / "b")
        fill(ev, 513)
        ra = publish(ev, FolderDestination(tmp_path / "a"))
        rb = publish(ev, FolderDestination(tmp_path / "b"))
    assert ra.written == rb.written and ra.previous_size == rb.previous_size == 257
    assert {p: d for p, (_, _, d) in files(tmp_path / "a").items()} == \
        {p: d for p, (_, _, d) in files(tmp_path / "b").items()}


def test_a_destination_ahead_of_the_ledger_or_from_a_fork_is_refused(tmp_path: Path) -> None:
    """Two copies of one home (same log, same key) that went apart: neither takes the other's log back."""
    with EvidenceHome(tmp_path / "a", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    dest = tmp_path / "pub"
    with EvidenceHome(tmp_path / "a", fsync=False) as ev:
        fill(ev, 10)
    assert g6(tmp_path / "a", "ledger", "publish", str(dest)).returncode == 0
    before = files(dest)
    r = g6(tmp_path / "b", "ledger", "publish", str(dest))
    assert r.returncode == 1 and "already holds size 10" in one_line_error(r), r.stderr
    with EvidenceHome(tmp_path / "b", fsync=False) as ev:  # b appends other receipts: a fork at size 10
        ev.ledger.append_many([receipt(100 + i) for i in range(7)], ev.signing_key())
    r = g6(tmp_path / "b", "ledger", "publish", str(dest))
    assert r.returncode == 1 and "is not this ledger's tree at that size" in one_line_error(r), r.stderr
    assert files(dest) == before
