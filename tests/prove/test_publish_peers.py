"""What `g6 ledger publish` writes, read by two independent implementations of C2SP tlog-tiles: tessera's
fsck (github.com/transparency-dev/tessera v1.0.4, which recomputes every tile and the root from the entry
bundles) and Go's golang.org/x/mod/sumdb/tlog (tests/peers/tlogcheck: an inclusion proof of every entry from
the tiles, and consistency from an earlier size). Both must pass on a published log, and both must fail when a
byte of a tile or an entry bundle is flipped, a tile is missing, or the key is another.

A folder is read by fsck as file:// and by tlogcheck over a loopback http.server; S3 (SeaweedFS) through a
loopback proxy that reads the bucket with the test's credentials. Nothing is skipped: a tool that cannot be
built fails the test.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from g6.home import EvidenceHome
from g6.ledger import SigningKey
from g6.ledger.note import verifier_key
from g6.prove.publish import publish
from g6.prove.publish_dest import CHECKPOINT_HEADERS, TILE_HEADERS, open_destination
from tests.prove.tiles_peers import (
    NO_AWS_LOOKUPS,
    fill,
    folder_url,
    fsck,
    g6,
    serve_folder,
    serve_s3,
    tlogcheck,
    write_vkey,
)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """A log of 600 receipts published by `g6 ledger publish` at 255 and then 600: (folder, vkey, origin)."""
    tmp = tmp_path_factory.mktemp("pub600")
    with EvidenceHome(tmp / "home", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 255)
        vkey, origin = write_vkey(ev, tmp / "log.vkey"), ev.ledger.origin
    for size in (255, 600):
        with EvidenceHome(tmp / "home", fsync=False) as ev:
            fill(ev, size)
        r = g6(tmp / "home", "ledger", "publish", str(tmp / "pub"))
        assert r.returncode == 0, r.stderr
    yield tmp / "pub", vkey, origin


@pytest.mark.parametrize("size", [1, 255, 256, 257, 600])
def test_fsck_and_go_tlog_accept_the_published_log(tmp_path: Path, size: int) -> None:
    with EvidenceHome(tmp_path / "home", fsync=False) as ev:
        ev.keys.init()
        fill(ev, size)
        vkey = write_vkey(ev, tmp_path / "log.vkey")
        report = publish(ev, open_destination(str(tmp_path / "pub"), {}))
        origin = ev.ledger.origin
    assert report.size == size
    ok, err = fsck(folder_url(tmp_path / "pub"), vkey, origin)
    assert ok, err
    assert f"size {size} " in err
    with serve_folder(tmp_path / "pub") as url:
        r = tlogcheck(url, vkey)
    assert r.returncode == 0 and f"{size} records checked, 0 failed" in r.stdout, r.stdout + r.stderr


def test_published_incrementally_the_log_is_consistent_with_what_was_published_before(
        published: tuple[Path, Path, str]) -> None:
    folder, vkey, origin = published
    assert (folder / "tile" / "0" / "000.p" / "255").is_file()  # size 255's partial tile, still served
    ok, err = fsck(folder_url(folder), vkey, origin)
    assert ok, err
    with serve_folder(folder) as url:
        r = tlogcheck(url, vkey, old=255)
    assert r.returncode == 0 and "consistency 255 -> 600" in r.stdout and "600 records checked, 0 failed" in \
        r.stdout, r.stdout + r.stderr


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def _wrong_key(folder: Path, vkey: Path, origin: str) -> Path:
    """Another key under the log's own name: its signature line is not the checkpoint's."""
    other = vkey.parent / "other.vkey"
    other.write_text(verifier_key(origin, SigningKey.generate().public) + "\n")
    return other


# (case, what to do to a copy of the published folder; returns the vkey to check with)
DAMAGE = {
    "a flipped byte in a full level-0 tile": lambda f, k, o: (_flip(f / "tile/0/000", 40), k)[1],
    "a flipped byte in a partial level-0 tile": lambda f, k, o: (_flip(f / "tile/0/002.p/88", 5), k)[1],
    "a flipped byte in a full entry bundle": lambda f, k, o: (_flip(f / "tile/entries/001", 300), k)[1],
    "a flipped byte in a partial entry bundle": lambda f, k, o: (_flip(f / "tile/entries/002.p/88", 200), k)[1],
    "a missing level-1 tile": lambda f, k, o: ((f / "tile/1/000.p/2").unlink(), k)[1],
    "a missing entry bundle": lambda f, k, o: ((f / "tile/entries/001").unlink(), k)[1],
    "another key": _wrong_key,
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_fsck_and_go_tlog_refuse_a_damaged_log(published: tuple[Path, Path, str], tmp_path: Path,
                                               case: str) -> None:
    folder, vkey, origin = published
    copy = tmp_path / "pub"
    shutil.copytree(folder, copy)
    key = DAMAGE[case](copy, vkey, origin)
    ok, err = fsck(folder_url(copy), key, origin)
    assert not ok and "fsck failed" in err, err
    with serve_folder(copy) as url:
        r = tlogcheck(url, key)
    assert r.returncode != 0, r.stdout + r.stderr
    # the undamaged original still passes with the same tools and key
    assert fsck(folder_url(folder), vkey, origin)[0]


# -- S3 ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The test S3 (SeaweedFS on loopback): CI's (G6_TEST_S3_*), or one started here and stopped by PID."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import backends_setup

    env = {k: v for k, v in os.environ.items() if k.startswith("G6_TEST_S3_")}
    server = None
    if "G6_TEST_S3_ENDPOINT" not in env:
        server = backends_setup.start_seaweedfs(tmp_path_factory.mktemp("s3"))
        env = server.env
    try:
        yield env
    finally:
        if server is not None:
            server.stop()


def _settings(s3: dict[str, str]) -> dict[str, str]:
    return {"G6_S3_ENDPOINT": s3["G6_TEST_S3_ENDPOINT"], "AWS_ACCESS_KEY_ID": s3["G6_TEST_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": s3["G6_TEST_S3_SECRET_KEY"], **NO_AWS_LOOKUPS}


def test_publish_to_s3_incrementally_read_by_fsck_and_go_tlog(s3: dict[str, str], tmp_path: Path) -> None:
    settings = _settings(s3)
    url = f"s3://{s3['G6_TEST_S3_BUCKET']}/pub-{os.urandom(6).hex()}"
    home = tmp_path / "home"
    with EvidenceHome(home, fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
        vkey, origin = write_vkey(ev, tmp_path / "log.vkey"), ev.ledger.origin
    # the home's .env holds the S3 settings, as for its blob store
    (home / ".env").write_text("".join(f"{k}={v}\n" for k, v in settings.items() if not k.startswith("AWS_EC2")))
    assert g6(home, "ledger", "publish", url).returncode == 0
    with EvidenceHome(home, fsync=False) as ev:
        fill(ev, 300)
    r = g6(home, "ledger", "publish", url)
    assert r.returncode == 0 and "(it held size 3)" in r.stdout, r.stderr

    dest: Any = open_destination(url, settings)
    full = dest.s3.get_object(Bucket=dest.bucket, Key=dest.prefix + "tile/0/000")
    with EvidenceHome(home, fsync=False) as ev:
        fill(ev, 600)
        report = publish(ev, dest)
    assert report.left == 2 and "tile/0/000" not in report.written and report.previous_size == 300
    again = dest.s3.head_object(Bucket=dest.bucket, Key=dest.prefix + "tile/0/000")
    assert again["ETag"] == full["ETag"] and again["LastModified"] == full["LastModified"]  # never rewritten
    assert again["ContentType"] == TILE_HEADERS["Content-Type"]
    assert again["CacheControl"] == TILE_HEADERS["Cache-Control"]
    cp = dest.s3.head_object(Bucket=dest.bucket, Key=dest.prefix + "checkpoint")
    assert cp["ContentType"] == CHECKPOINT_HEADERS["Content-Type"]
    assert cp["CacheControl"] == CHECKPOINT_HEADERS["Cache-Control"]

    with serve_s3(dest.s3, dest.bucket, dest.prefix) as http_url:
        ok, err = fsck(http_url, vkey, origin)
        assert ok, err
        r = tlogcheck(http_url, vkey, old=300)
    assert r.returncode == 0 and "600 records checked, 0 failed" in r.stdout, r.stdout + r.stderr


def test_s3_put_if_absent_keeps_another_history(s3: dict[str, str], tmp_path: Path) -> None:
    settings = _settings(s3)
    url = f"s3://{s3['G6_TEST_S3_BUCKET']}/pub-{os.urandom(6).hex()}"
    dest: Any = open_destination(url, settings)
    dest.s3.put_object(Bucket=dest.bucket, Key=dest.prefix + "tile/entries/000", Body=b"someone else's")
    with EvidenceHome(tmp_path / "home", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 256)
        from g6.errors import PublishConflict

        with pytest.raises(PublishConflict, match="tile/entries/000 is there already and differs"):
            publish(ev, dest)
    body = dest.s3.get_object(Bucket=dest.bucket, Key=dest.prefix + "tile/entries/000")["Body"].read()
    assert body == b"someone else's" and dest.read("checkpoint") is None


def test_s3_failures_are_one_line(s3: dict[str, str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    with EvidenceHome(home, fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
    bucket = s3["G6_TEST_S3_BUCKET"]
    endpoint = {"G6_S3_ENDPOINT": s3["G6_TEST_S3_ENDPOINT"]}
    cases = [  # (settings, URL, what the line says)
        (endpoint, f"s3://{bucket}/p", "no credentials"),
        ({**_settings(s3), "AWS_SECRET_ACCESS_KEY": "wrong"}, f"s3://{bucket}/p", "access refused (403)"),
        (_settings(s3), "s3://no-such-bucket-g6/p", "bucket 'no-such-bucket-g6' does not exist"),
    ]
    from tests.prove.tiles_peers import one_line_error

    for env, url, says in cases:
        r = g6(home, "ledger", "publish", url, env=env)
        assert r.returncode == 1 and says in one_line_error(r), r.stderr
    with EvidenceHome(home, readonly=True) as ev:
        assert ev.ledger.checkpoints() == []  # refused before a checkpoint was signed


def test_publish_from_either_backend_pair(pair_home: EvidenceHome, tmp_path: Path) -> None:
    """The tiles come from the kept tree of SQLite or PostgreSQL alike, and read the same to fsck."""
    fill(pair_home, 300)
    vkey = write_vkey(pair_home, tmp_path / "log.vkey")
    report = publish(pair_home, open_destination(str(tmp_path / "pub"), {}))
    fill(pair_home, 520)
    again = publish(pair_home, open_destination(str(tmp_path / "pub"), {}))
    assert (report.size, again.previous_size, again.size, again.left) == (300, 300, 520, 2)
    ok, err = fsck(folder_url(tmp_path / "pub"), vkey, pair_home.ledger.origin)
    assert ok, err


def test_publish_latest_from_a_ledger_without_its_kept_tree(tmp_path: Path) -> None:
    """A ledger made before the kept tree existed, read-only (`--latest`): its tree is computed from the
    receipts, and the tiles are the same."""
    import sqlite3

    home = tmp_path / "home"
    with EvidenceHome(home, fsync=False) as ev:
        ev.keys.init()
        fill(ev, 300)
        ev.ledger.checkpoint(ev.signing_key())
        vkey, origin, path = write_vkey(ev, tmp_path / "log.vkey"), ev.ledger.origin, ev.ledger.path
    publish_with_tree = tmp_path / "kept"
    assert g6(home, "ledger", "publish", str(publish_with_tree), "--latest").returncode == 0
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM merkle_hashes")
    r = g6(home, "ledger", "publish", str(tmp_path / "pub"), "--latest")
    assert r.returncode == 0, r.stderr
    with sqlite3.connect(path) as conn:  # read-only: nothing written back
        assert conn.execute("SELECT COUNT(*) FROM merkle_hashes").fetchone() == (0,)
    ok, err = fsck(folder_url(tmp_path / "pub"), vkey, origin)
    assert ok, err
    def contents(folder: Path) -> dict[str, bytes]:
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    assert contents(tmp_path / "pub") == contents(publish_with_tree)
