"""Where `g6 report check` (-o, --manifest, --html) and `g6 report bundle -o` write: never inside the evidence home
(compared as real paths), never over what is not a regular file, always whole. Real files, folders, links, FIFOs
and sockets; the commands as a user runs them."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.report.outputs import check_output, home_paths, write_output
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report

Site = Callable[..., LocalSite]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / "knowledge" / "fetched").mkdir(parents=True)
    (h / "keys").mkdir()
    (h / "knowledge" / "ledger.sqlite").write_bytes(b"ledger")
    return h


def refused(path: Path, protected: tuple[Path, ...], words: str) -> None:
    with pytest.raises(InputError, match=words):
        check_output(path, protected, "-o")


def test_a_path_inside_the_home_is_refused_however_it_is_reached(tmp_path: Path, home: Path) -> None:
    (tmp_path / "via").symlink_to(home / "knowledge")
    (tmp_path / "home-link").symlink_to(home)
    (tmp_path / "to-ledger.json").symlink_to(home / "knowledge" / "ledger.sqlite")
    for p in (home / "knowledge" / "ledger.sqlite", home / "keys" / "signing.key", home / "new.json",
              tmp_path / "via" / "ledger.sqlite", tmp_path / "via" / "x.json", tmp_path / "to-ledger.json",
              tmp_path / "out" / ".." / "home" / "x.json"):
        (tmp_path / "out").mkdir(exist_ok=True)
        refused(p, (home,), "inside the evidence home")
    refused(home / "keys" / "k.json", (tmp_path / "home-link",), "inside the evidence home")  # a home via a link
    assert (home / "knowledge" / "ledger.sqlite").read_bytes() == b"ledger"


def test_a_ledger_or_blob_folder_put_elsewhere_by_the_settings_is_the_home_too(tmp_path: Path) -> None:
    db, blobs = tmp_path / "db" / "ledger.sqlite", tmp_path / "blobs"
    paths = home_paths(tmp_path / "home", {"G6_LEDGER_URL": f"sqlite://{db}", "G6_BLOB_URL": f"file://{blobs}"})
    db.parent.mkdir()
    blobs.mkdir()
    for p in (db, db.with_name("ledger.sqlite-wal"), db.with_name("ledger.sqlite-shm"), blobs / "x.json"):
        refused(p, paths, "inside the evidence home")
    check_output(db.with_name("result.json"), paths, "-o")  # beside the ledger is not the ledger
    assert home_paths(tmp_path / "h", {"G6_LEDGER_URL": "postgresql://u@127.0.0.1/db"}) == (tmp_path / "h",)


def test_what_is_not_a_regular_file_is_refused_and_a_link_is_replaced_not_followed(tmp_path: Path,
                                                                                   home: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    refused(tmp_path / "fifo", (home,), "is a FIFO")
    refused(tmp_path, (home,), "give a file name|a folder")
    (tmp_path / "dir").mkdir()
    refused(tmp_path / "dir", (home,), "a folder")
    refused(Path("/dev/null"), (home,), "a device")
    refused(tmp_path / "missing" / "x.json", (home,), "does not exist")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock"))
        refused(tmp_path / "sock", (home,), "a socket")
    (tmp_path / "to-fifo").symlink_to(tmp_path / "fifo")
    refused(tmp_path / "to-fifo", (home,), "is a FIFO")
    target = tmp_path / "target.txt"
    target.write_text("keep me")
    (tmp_path / "link.json").symlink_to(target)
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere")
    for ok in (tmp_path / "new.json", target, tmp_path / "link.json", tmp_path / "dangling.json"):
        check_output(ok, (home,), "-o")
    write_output(tmp_path / "link.json", "new", (home,), "-o")
    assert target.read_text() == "keep me" and (tmp_path / "link.json").read_text() == "new"
    assert not (tmp_path / "link.json").is_symlink() and not (tmp_path / "nowhere").exists()


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_file(tmp_path: Path, home: Path) -> None:
    out = tmp_path / "result.json"
    out.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        write_output(out, "half \ud800 of a result", (home,), "-o")  # fails while the temporary file is written
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["home", "result.json"]
    write_output(out, "new", (home,), "-o")
    assert out.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["home", "result.json"]


def test_the_commands_refuse_an_output_in_the_home_before_reading_anything(tmp_path: Path, site: Site) -> None:
    """`-o`, `--manifest`, `--html` (with G6_HOME and with --home) and `report bundle -o` into the home's
    ledger, through a link to the home's folder: exit 2, one line, nothing fetched, the ledger still
    verifies; an earlier result file is left as it was when a later output is refused."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "report.json", report_of(cite(s.url("/a"), QUOTE)))
    home = tmp_path / "home"
    assert g6(home, "report", "check", str(report), "-o", "result.json").returncode == 0
    seen = len(s.requests)
    (tmp_path / "k").symlink_to(home / "knowledge")
    other = tmp_path / "other"
    for args in (("report", "check", str(report), "-o", "k/ledger.sqlite"),
                 ("report", "check", str(report), "--manifest", str(home / "keys" / "signing.key")),
                 ("report", "check", str(report), "--html", "k/fetched/x.html"),
                 ("--home", str(home), "report", "check", str(report), "-o", str(home / "knowledge" / "ledger.sqlite")),
                 ("report", "bundle", "result.json", "-o", "k/ledger.sqlite")):
        r = g6(other if args[0] == "--home" else home, *args)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, (args, r.stderr)
        assert b"inside the evidence home" in r.stderr
    assert len(s.requests) == seen and not other.exists()
    v = g6(home, "ledger", "verify", "--json")
    assert v.returncode == 0 and json.loads(v.stdout)["ok"]
    before = (tmp_path / "result.json").read_bytes()
    os.mkfifo(tmp_path / "page.html")
    r = g6(home, "report", "check", str(report), "-o", "result.json", "--html", "page.html")
    assert r.returncode == 2 and (tmp_path / "result.json").read_bytes() == before
