"""`g6 monitor URL --key PUB --state DIR`: a published log followed over HTTP (a loopback server on a port the
system picks, stopped at the end of each test).

Failure paths first: a rewritten tile or entry bundle, a fork (another history under the same key and origin, at
the same or a larger size), a shrunk log, a wrong key, a missing witness quorum each exit 1 and leave the state as
it was (a fork prints both checkpoints); a garbled state and a bad URL are input errors (exit 2); an unreachable
log is one line, exit 1. Then the runs that hold: a first run from size 0, later runs from the last size, past
256 entries (level-1 tiles), a cosigned checkpoint under a policy, and --json against its schema.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx
import jsonschema
import pytest

from g6.errors import MonitorUnreachable
from g6.home import EvidenceHome
from g6.ledger.keys import SigningKey
from g6.ledger.merkle import leaf_hash
from g6.ledger.note import MAX_NOTE, Checkpoint, parse_note, sign_checkpoint, verifier_key
from g6.ledger.transparency.cosignature import CosignerKey, sign_cosignature
from g6.ledger.transparency.tiles import WIDTH, Tile, TileTree, encode_bundle
from g6.prove.monitor import MAX_TILE, STATE_FILE, MonitorReport, monitor, new_client
from g6.prove.publish import publish
from g6.prove.publish_dest import FolderDestination
from g6.schemas import load
from tests.prove.tiles_peers import fill, g6, one_line_error, serve_folder, write_vkey


@pytest.fixture
def home(tmp_path: Path) -> Path:
    with EvidenceHome(tmp_path / "home", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 3)
    return tmp_path / "home"


def publish_to(home: Path, folder: Path, size: int | None = None) -> None:
    folder.mkdir(exist_ok=True)
    with EvidenceHome(home, fsync=False) as ev:
        if size is not None:
            fill(ev, size)
        publish(ev, FolderDestination(folder))


def vkey(home: Path, tmp_path: Path) -> str:
    with EvidenceHome(home, readonly=True) as ev:
        return str(write_vkey(ev, tmp_path / "log.vkey"))


def signer(home: Path) -> tuple[SigningKey, str]:
    with EvidenceHome(home, readonly=True) as ev:
        return ev.signing_key(), ev.ledger.origin


def write_log(folder: Path, entries: list[bytes], key: SigningKey, origin: str, extra_sig: str = "") -> str:
    """Another history written as tlog-tiles, independently of `ledger publish`: every tile and bundle for
    ``entries``, and a checkpoint signed with ``key`` for ``origin``; returns the checkpoint note."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    tree = TileTree()

    def put(path: str, data: bytes) -> None:
        f = folder.joinpath(*path.split("/"))
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(data)

    for i in range(0, len(entries), WIDTH):
        chunk = entries[i:i + WIDTH]
        for e in chunk:
            for tile, hashes in tree.append(leaf_hash(e)):
                put(tile.path, b"".join(hashes))
        put(Tile(-1, i // WIDTH, len(chunk)).path, encode_bundle(chunk))
    for tile, hashes in tree.partial_tiles():
        put(tile.path, b"".join(hashes))
    note = sign_checkpoint(Checkpoint(origin, len(entries), tree.root()), key) + extra_sig
    (folder / "checkpoint").write_text(note)
    return note


def run(home: Path, url: str, key: str, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return g6(home, "monitor", url, "--key", key, "--state", str(state), *args)


def run_json(home: Path, url: str, key: str, state: Path, *args: str) -> tuple[int, dict]:
    r = run(home, url, key, state, "--json", *args)
    assert "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("monitor.v1"), format_checker=jsonschema.FormatChecker()).validate(doc)
    return r.returncode, doc


def state_bytes(state: Path) -> bytes | None:
    f = state / STATE_FILE
    return f.read_bytes() if f.exists() else None


def flip(path: Path, at: int = 5) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def failed(doc: dict) -> dict[str, str]:
    return {c["check"]: c["detail"] for c in doc["checks"] if not c["ok"]}


# -- failure paths -------------------------------------------------------------------------------------------
def test_a_flipped_byte_in_a_tile_fails(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    flip(pub / "tile/0/000.p/3", 40)
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, vkey(home, tmp_path), state)
    assert code == 1 and not doc["ok"] and not doc["state_saved"], doc
    assert "tile/0/000.p/3 is not what the entries hash to" in failed(doc).get("tiles", ""), doc
    assert state_bytes(state) is None


def test_a_flipped_byte_in_an_entry_bundle_fails(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    flip(pub / "tile/entries/000.p/3", 20)
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, vkey(home, tmp_path), state)
    assert code == 1 and set(failed(doc)) == {"tiles"} and state_bytes(state) is None


def test_a_rewritten_new_tile_on_a_later_run_fails_and_keeps_the_state(home: Path, tmp_path: Path) -> None:
    pub, state, key = tmp_path / "pub", tmp_path / "state", vkey(home, tmp_path)
    publish_to(home, pub)
    with serve_folder(pub) as url:
        assert run(home, url, key, state).returncode == 0
        before = state_bytes(state)
        publish_to(home, pub, 10)
        flip(pub / "tile/entries/000.p/10", 300)
        r = run(home, url, key, state)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "tiles                  FAILED" in r.stdout
    assert "the checkpoint this monitor verified last" in r.stdout and "the checkpoint the log serves now" in r.stdout
    assert state_bytes(state) == before


def test_a_fork_at_the_same_size_prints_both_checkpoints(home: Path, tmp_path: Path) -> None:
    pub, state, key = tmp_path / "pub", tmp_path / "state", vkey(home, tmp_path)
    publish_to(home, pub)
    sk, origin = signer(home)
    with serve_folder(pub) as url:
        assert run(home, url, key, state).returncode == 0
        before = state_bytes(state)
        old_note = json.loads(before or b"{}")["checkpoint"]
        forked = write_log(pub, [b"a", b"b", b"c"], sk, origin)
        r = run(home, url, key, state)
    assert r.returncode == 1
    assert "misbehavior detected" in r.stdout and "MISBEHAVIOR DETECTED" in r.stdout
    assert old_note in r.stdout and forked in r.stdout and old_note != forked
    assert state_bytes(state) == before


def test_a_fork_at_a_larger_size_is_misbehavior(home: Path, tmp_path: Path) -> None:
    pub, state, key = tmp_path / "pub", tmp_path / "state", vkey(home, tmp_path)
    publish_to(home, pub)
    sk, origin = signer(home)
    with serve_folder(pub) as url:
        assert run(home, url, key, state).returncode == 0
        before = state_bytes(state)
        forked = write_log(pub, [b"x%d" % i for i in range(7)], sk, origin)
        code, doc = run_json(home, url, key, state)
    assert code == 1 and doc["misbehavior"] and "misbehavior detected" in failed(doc)["consistency"]
    assert doc["checkpoint"] == forked and doc["previous_checkpoint"] == json.loads(before or b"{}")["checkpoint"]
    assert state_bytes(state) == before


def test_a_shrunk_log_fails(home: Path, tmp_path: Path) -> None:
    pub, state, key = tmp_path / "pub", tmp_path / "state", vkey(home, tmp_path)
    sk, origin = signer(home)
    entries = [b"entry %d" % i for i in range(5)]
    write_log(pub, entries, sk, origin)
    with serve_folder(pub) as url:
        assert run(home, url, key, state).returncode == 0
        before = state_bytes(state)
        write_log(pub, entries[:3], sk, origin)
        code, doc = run_json(home, url, key, state)
    assert code == 1 and doc["misbehavior"] and "the log shrank" in failed(doc)["size"]
    assert state_bytes(state) == before


def test_a_wrong_key_fails(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    _, origin = signer(home)
    other = verifier_key(origin, SigningKey.generate().public)
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, other, state)
    assert code == 1 and "the note is not signed by" in failed(doc)["checkpoint signature"]
    assert state_bytes(state) is None


def test_another_origin_fails(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    sk, _ = signer(home)
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, sk.public.to_text(), state, "--origin", "example.org/another")
    assert code == 1 and "is not the expected" in failed(doc)["checkpoint signature"]


def _witness_policy(tmp_path: Path) -> tuple[SigningKey, CosignerKey, Path]:
    wkey = SigningKey.generate()
    cosigner = CosignerKey("w.example", wkey.public)
    policy = tmp_path / "policy"
    policy.write_text(f"witness w {cosigner.vkey()}\nquorum w\n")
    return wkey, cosigner, policy


def test_a_policy_without_cosignatures_fails(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    _, _, policy = _witness_policy(tmp_path)
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, vkey(home, tmp_path), state, "--policy", str(policy))
    assert code == 1 and "no quorum" in failed(doc)["witness quorum"] and state_bytes(state) is None


def test_a_cosigned_checkpoint_meets_the_policy(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    wkey, cosigner, policy = _witness_policy(tmp_path)
    note = (pub / "checkpoint").read_text()
    line = sign_cosignature(parse_note(note)[0], cosigner.name, wkey, int(time.time()))
    (pub / "checkpoint").write_text(note + line.rstrip("\n") + "\n")
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, vkey(home, tmp_path), state, "--policy", str(policy))
    assert code == 0, doc
    assert {c["check"]: c["ok"] for c in doc["checks"]}["witness quorum"] and doc["state_saved"]


def test_a_garbled_state_is_an_input_error(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    state.mkdir()
    for garbage in (b"not json", b'{"format": "something else"}', b"\xff\xfe"):
        (state / STATE_FILE).write_bytes(garbage)
        with serve_folder(pub) as url:
            r = run(home, url, vkey(home, tmp_path), state)
        assert r.returncode == 2 and "monitor state" in one_line_error(r), r.stderr
        assert (state / STATE_FILE).read_bytes() == garbage


def test_the_state_of_another_log_is_an_input_error(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    publish_to(home, pub)
    with serve_folder(pub) as url:
        assert run(home, url, vkey(home, tmp_path), state).returncode == 0
        other = verifier_key("example.org/other", SigningKey.generate().public)
        r = run(home, url, other, state)
    assert r.returncode == 2 and "the state of another log" in one_line_error(r)


def test_an_unreachable_log_is_one_line(home: Path, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on once this socket is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = run(home, f"http://127.0.0.1:{port}/log/", vkey(home, tmp_path), tmp_path / "state")
    assert r.returncode == 1 and "cannot fetch" in one_line_error(r) and r.stdout == ""
    assert state_bytes(tmp_path / "state") is None


def test_a_missing_checkpoint_is_one_line(home: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with serve_folder(tmp_path / "empty") as url:
        r = run(home, url, vkey(home, tmp_path), tmp_path / "state")
    assert r.returncode == 1 and "HTTP 404" in one_line_error(r)


def test_a_missing_tile_fails(home: Path, tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    publish_to(home, pub)
    (pub / "tile/entries/000.p/3").unlink()
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, vkey(home, tmp_path), tmp_path / "state")
    assert code == 1 and "missing (HTTP 404)" in failed(doc)["entries"]


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/log/", "not a url", "http:///nohost", "file:///tmp/log/"])
def test_a_bad_url_is_an_input_error(home: Path, tmp_path: Path, url: str) -> None:
    r = run(home, url, vkey(home, tmp_path), tmp_path / "state")
    assert r.returncode == 2 and "bad URL" in one_line_error(r), r.stderr
    assert not (tmp_path / "state").exists()


# -- runs that hold ---------------------------------------------------------------------------------------------
def test_first_run_then_only_new_entries_past_256(home: Path, tmp_path: Path) -> None:
    pub, state, key = tmp_path / "pub", tmp_path / "state", vkey(home, tmp_path)
    publish_to(home, pub)
    with serve_folder(pub) as url:
        code, doc = run_json(home, url, key, state)
        assert code == 0 and doc["ok"] and doc["state_saved"] and doc["previous_size"] is None
        assert doc["size"] == 3 and doc["entries_checked"] == 3
        assert json.loads(state_bytes(state) or b"{}")["checkpoint"] == (pub / "checkpoint").read_text()

        code, doc = run_json(home, url, key, state)  # nothing new
        assert code == 0 and doc["entries_checked"] == 0 and not doc["state_saved"]

        publish_to(home, pub, 300)  # a full level-0 tile and a level-1 tile
        assert (pub / "tile/1/000.p/1").exists()
        code, doc = run_json(home, url, key, state)
        assert code == 0, doc
        assert doc["previous_size"] == 3 and doc["size"] == 300 and doc["entries_checked"] == 300

        publish_to(home, pub, 520)  # from the last size's tile on: 256..519
        code, doc = run_json(home, url, key, state)
        assert code == 0, doc
        assert doc["previous_size"] == 300 and doc["entries_checked"] == 520 - 256
        assert {c["check"] for c in doc["checks"]} == {"checkpoint signature", "size", "consistency", "entries",
                                                        "tiles", "root"}

        r = run(home, url, key, state)  # text mode
    assert r.returncode == 0 and "size 520 (was 520)" in r.stdout and "ok" in r.stdout


def test_a_first_run_over_many_tiles_of_another_writer(home: Path, tmp_path: Path) -> None:
    """A log not written by `ledger publish` (tiles written here, from the spec's rules) over two level-0 tiles
    and a partial one: the monitor reads it alike."""
    pub, state, key = tmp_path / "pub", tmp_path / "state", vkey(home, tmp_path)
    sk, origin = signer(home)
    entries = [b"e%d" % i for i in range(2 * WIDTH + 7)]
    write_log(pub, entries[:WIDTH + 1], sk, origin)
    with serve_folder(pub) as url:
        assert run_json(home, url, key, state)[0] == 0
        write_log(pub, entries, sk, origin)
        code, doc = run_json(home, url, key, state)
    assert code == 0 and doc["entries_checked"] == len(entries) - WIDTH


# -- the library, over an injected transport (what it asks for, and the bounds on what it reads) ----------------
def _transport(folder: Path, seen: list[str], override: dict[str, httpx.Response] | None = None) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/log/")
        seen.append(path)
        if override and path in override:
            return override[path]
        f = folder.joinpath(*path.split("/"))
        return httpx.Response(200, content=f.read_bytes()) if f.is_file() else httpx.Response(404)
    return httpx.MockTransport(handle)


def _lib(folder: Path, key: SigningKey, state: Path, seen: list[str],
         override: dict[str, httpx.Response] | None = None) -> MonitorReport:
    with new_client(_transport(folder, seen, override)) as client:
        return monitor("http://log.test/log/", key.public, state, client=client)


def test_a_later_run_reads_only_from_the_last_size_s_tile(home: Path, tmp_path: Path) -> None:
    pub, state = tmp_path / "pub", tmp_path / "state"
    sk, origin = signer(home)
    entries = [b"e%d" % i for i in range(600)]
    write_log(pub, entries[:300], sk, origin)
    seen: list[str] = []
    assert _lib(pub, sk, state, seen).ok
    assert "tile/entries/000" in seen and "tile/0/000" in seen
    write_log(pub, entries, sk, origin)
    seen.clear()
    report = _lib(pub, sk, state, seen)
    assert report.ok and report.entries_checked == 600 - 256, report.checks
    assert "tile/entries/000" not in seen and "tile/0/000" not in seen
    assert {"tile/entries/001", "tile/entries/002.p/88", "tile/0/001", "tile/0/002.p/88", "tile/1/000.p/2"} <= set(seen)


def test_a_partial_tile_no_longer_served_is_read_from_its_full_tile(home: Path, tmp_path: Path) -> None:
    sk, origin = signer(home)
    entries = [b"e%d" % i for i in range(512)]
    write_log(tmp_path / "big", entries, sk, origin)
    write_log(tmp_path / "pub", entries[:300], sk, origin)
    full = (tmp_path / "big" / "tile/0/001").read_bytes()
    seen: list[str] = []
    report = _lib(tmp_path / "pub", sk, tmp_path / "state", seen,
                  {"tile/0/001.p/44": httpx.Response(404), "tile/0/001": httpx.Response(200, content=full)})
    assert report.ok, report.checks
    assert seen.index("tile/0/001.p/44") < seen.index("tile/0/001")


def test_reads_are_bounded(home: Path, tmp_path: Path) -> None:
    pub = tmp_path / "pub"
    sk, origin = signer(home)
    write_log(pub, [b"a", b"b"], sk, origin)
    big = httpx.Response(200, content=b"\0" * (MAX_TILE + 1))
    report = _lib(pub, sk, tmp_path / "state", [], {"tile/0/000.p/2": big})
    assert not report.ok and "more than the 8,192" in {c.check: c.detail for c in report.checks}["tiles"]
    report = _lib(pub, sk, tmp_path / "state", [], {"tile/entries/000.p/2": httpx.Response(500)})
    assert not report.ok and "HTTP 500" in {c.check: c.detail for c in report.checks}["entries"]
    with pytest.raises(MonitorUnreachable, match="HTTP 302"):
        _lib(pub, sk, tmp_path / "state", [], {"checkpoint": httpx.Response(302, headers={"location": "/x"})})
    with pytest.raises(MonitorUnreachable, match="more than"):
        _lib(pub, sk, tmp_path / "state", [], {"checkpoint": httpx.Response(200, content=b"x" * (MAX_NOTE + 1))})
    assert not (tmp_path / "state").exists()


def test_a_state_that_is_a_file_is_an_input_error(home: Path, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("mine")
    for state in (tmp_path / "f", tmp_path / "f" / "sub"):
        r = run(home, "http://127.0.0.1:9/", vkey(home, tmp_path), state)
        line = one_line_error(r)
        assert r.returncode == 2 and ("is not a folder" in line or "is a file" in line), r.stderr
    assert (tmp_path / "f").read_text() == "mine"
