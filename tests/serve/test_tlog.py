"""``g6 serve``'s receipts, proofs and tiles, through a real ``g6 serve`` process on loopback.

The receipt is the very bytes ``g6 receipt show --json`` prints; the proof is what ``g6 ledger prove``
prints for a covered receipt and verifies with the project's verifier; the published tiles pass tessera's
fsck and Go's sumdb/tlog over HTTP from the server, carry the spec's headers, and no request path reaches
outside the tiles folder.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from g6.ledger.note import parse_note
from g6.ledger.proofs import verify_inclusion_proof
from tests.peers.go_tools import go_tool
from tests.prove.tiles_peers import fsck, tlogcheck
from tests.serve.server import served
from tests.serve.tlog_home import COVERED, TlogHome, make_tlog_home

JSON = {"accept": "application/json"}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> TlogHome:
    return make_tlog_home(tmp_path_factory.mktemp("tlog"))


@pytest.fixture(scope="module")
def base(log: TlogHome) -> Iterator[str]:
    with served(log.home, "--tiles", str(log.tiles)) as url:
        yield url


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home), *args], capture_output=True, timeout=120)


def raw_get(base: str, path: str) -> tuple[int, bytes]:
    """GET with the path sent exactly as written (httpx would normalise ``..`` away first)."""
    u = urlsplit(base)
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=60)
    try:
        conn.request("GET", path, headers={"Accept": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# -- receipts ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["first", "unicode", "uncovered"])
def test_a_receipt_is_byte_for_byte_what_receipt_show_prints(log: TlogHome, base: str, which: str) -> None:
    rid = {"first": log.ids[0], "unicode": log.unicode_id, "uncovered": log.ids[-1]}[which]
    cli = g6(log.home, "receipt", "show", "--json", rid)
    assert cli.returncode == 0, cli.stderr
    r = httpx.get(base + f"receipt/{rid}")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.content == cli.stdout
    if which == "unicode":
        assert "café ✓".encode() in r.content  # not \u-escaped: the same text people read in the terminal


@pytest.mark.parametrize("path, status, why", [
    ("receipt/rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAV", 404, "no receipt rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    ("receipt/rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAV/proof", 404, "no receipt rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    ("receipt/nope", 400, "is not a receipt id"),
    ("receipt/rcpt_01arz3ndektsv4rrffq69g5fav", 400, "is not a receipt id"),  # lower case: not Crockford's
    ("receipt/rcpt_01ARZ3NDEKTSV4RRFFQ69G5FAU/proof", 400, "is not a receipt id"),  # U is no digit of it
    ("receipt/%3Cscript%3E/proof", 400, "is not a receipt id"),
])
def test_unknown_and_malformed_receipt_ids_say_why(base: str, path: str, status: int, why: str) -> None:
    r = httpx.get(base + path, headers=JSON)
    assert r.status_code == status
    assert why in r.json()["message"]
    assert r.json()["code"] == ("not_found" if status == 404 else "bad_request")
    page = httpx.get(base + path, headers={"accept": "text/html"})
    assert page.status_code == status and "<script>" not in page.text


# -- proofs --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("leaf", [0, 200, 255, 256, COVERED - 1])
def test_a_proof_is_against_the_latest_checkpoint_and_verifies(log: TlogHome, base: str, leaf: int) -> None:
    rid = log.ids[leaf]
    r = httpx.get(base + f"receipt/{rid}/proof")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.headers["cache-control"] == "no-cache"
    text = r.text
    assert text.startswith("c2sp.org/tlog-proof@v1\n") and f"\nindex {leaf}\n" in text
    key = log.key
    receipt = httpx.get(base + f"receipt/{rid}").content
    report = verify_inclusion_proof(text, receipt, key, log.origin)
    assert report.ok, report.to_json()
    published = (log.tiles / "checkpoint").read_text()
    assert text.endswith(published)  # the latest checkpoint, the one published
    assert parse_note(published)[0].split("\n")[1] == str(COVERED)
    # the same proof `g6 ledger prove` prints for it (a covered receipt: it signs nothing)
    cli = g6(log.home, "ledger", "prove", rid)
    assert cli.returncode == 0 and cli.stdout == r.content
    other = log.ids[leaf + 1]  # and it proves this receipt, not its neighbour
    assert not verify_inclusion_proof(text, httpx.get(base + f"receipt/{other}").content, key, log.origin).ok


def bundle_entries(data: bytes) -> list[bytes]:
    """The entries of a tlog-tiles entry bundle: each a big-endian uint16 length and its bytes."""
    out, i = [], 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 2], "big")
        out.append(data[i + 2:i + 2 + n])
        i += 2 + n
    return out


@pytest.mark.parametrize("leaf", [0, 200, 256, COVERED - 1])
def test_torchwood_verifies_the_served_proof(log: TlogHome, base: str, tmp_path: Path, leaf: int) -> None:
    """torchwood's own tlog-proof verifier (VerifyProof, v0.10.0), the entry taken from the served bundle."""
    bundle = "tile/entries/000" if leaf < 256 else f"tile/entries/001.p/{COVERED - 256}"
    entry = bundle_entries(httpx.get(base + bundle).content)[leaf % 256]
    assert f'"receipt_id":"{log.ids[leaf]}"'.encode() in entry
    (tmp_path / "entry").write_bytes(entry)
    (tmp_path / "p").write_bytes(httpx.get(base + f"receipt/{log.ids[leaf]}/proof").content)
    tool = str(go_tool("proofcheck"))
    args = ["-vkey", str(log.vkey), "-origin", log.origin, "-proof", str(tmp_path / "p")]
    r = subprocess.run([tool, *args, "-record", str(tmp_path / "entry")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "proof ok" in r.stdout, r.stderr
    # and it refuses the proof for another entry, or under another origin
    (tmp_path / "other").write_bytes(bundle_entries(httpx.get(base + "tile/entries/000").content)[leaf % 255 + 1])
    r = subprocess.run([tool, *args, "-record", str(tmp_path / "other")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "verification failed" in r.stderr
    args[3] = "example.org/another-log"
    r = subprocess.run([tool, *args, "-record", str(tmp_path / "entry")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1


def test_a_receipt_no_checkpoint_covers_yet_is_404_saying_so(log: TlogHome, base: str) -> None:
    before = (log.home / "ledger.db").stat().st_mtime_ns if (log.home / "ledger.db").exists() else None
    r = httpx.get(base + f"receipt/{log.ids[COVERED]}/proof", headers=JSON)
    assert r.status_code == 404
    assert "no checkpoint covers" in r.json()["message"] and "g6 ledger checkpoint" in r.json()["message"]
    assert f"the latest covers {COVERED}" in r.json()["message"]
    if before is not None:  # the server signed no checkpoint for it: it never writes to the home
        assert (log.home / "ledger.db").stat().st_mtime_ns == before


# -- tiles ---------------------------------------------------------------------------------------------------
def test_the_published_tiles_pass_tessera_fsck_and_go_tlog_over_http(log: TlogHome, base: str) -> None:
    ok, err = fsck(base, log.vkey, log.origin)
    assert ok, err
    assert f"size {COVERED} " in err
    r = tlogcheck(base, log.vkey)
    assert r.returncode == 0 and f"{COVERED} records checked, 0 failed" in r.stdout, r.stdout + r.stderr


def test_without_tiles_nothing_is_served_there_and_fsck_fails(log: TlogHome) -> None:
    with served(log.home) as url:
        assert httpx.get(url + "checkpoint").status_code == 404
        assert httpx.get(url + "tile/0/000").status_code == 404
        ok, _ = fsck(url, log.vkey, log.origin)
    assert not ok


@pytest.mark.parametrize("path, kind", [
    ("checkpoint", "checkpoint"), ("tile/0/000", "tile"), ("tile/0/001.p/44", "tile"), ("tile/1/000.p/1", "tile"),
    ("tile/entries/000", "tile"), ("tile/entries/001.p/44", "tile"),
])
def test_tiles_and_the_checkpoint_carry_the_spec_headers(log: TlogHome, base: str, path: str, kind: str) -> None:
    r = httpx.get(base + path, headers={"accept-encoding": "identity"})
    assert r.status_code == 200
    assert r.content == (log.tiles / path).read_bytes()
    if kind == "checkpoint":
        assert r.headers["content-type"] == "text/plain; charset=utf-8"
        assert r.headers["cache-control"] == "no-cache"
    else:
        assert r.headers["content-type"] == "application/octet-stream"
        assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert "content-encoding" not in r.headers


def test_entry_bundles_are_gzipped_for_clients_that_accept_it(log: TlogHome, base: str) -> None:
    r = httpx.get(base + "tile/entries/000", headers={"accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip" and r.headers["vary"] == "Accept-Encoding"
    assert r.content == (log.tiles / "tile/entries/000").read_bytes()  # httpx inflates it
    assert int(r.headers["content-length"]) < len(r.content)
    r = httpx.get(base + "tile/entries/000", headers={"accept-encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in r.headers


@pytest.mark.parametrize("path", ["tile/0/999", "tile/entries/001", "tile/5/000", "tile/0/001.p/45"])
def test_a_tile_not_published_is_404_and_not_cached(base: str, path: str) -> None:
    r = httpx.get(base + path, headers=JSON)
    assert r.status_code == 404 and "has not been published" in r.json()["message"]
    assert r.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize("path", [
    "/tile/../checkpoint", "/tile/../../../etc/passwd", "/tile/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/tile/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/tile//etc/passwd", "/tile/%2fetc%2fpasswd", "/tile/0/../../checkpoint",
    "/tile/0/000/../../../../etc/passwd", "/tile/0/0000", "/tile/00/000", "/tile/64/000", "/tile/0/000.p/256",
    "/tile/0/000.p/0", "/tile/0/x000/001", "/tile/entries/000.p/01", "/tile/0/000.P/1", "/tile/0/000%00",
    "/tile/-1/000", "/tile/entries", "/tile/", "/checkpoint/../etc/passwd",
])
def test_no_request_path_reaches_outside_or_past_the_grammar(base: str, path: str) -> None:
    status, body = raw_get(base, path)
    assert status in (400, 404)
    assert b"root:" not in body
    assert raw_get(base, "/tile/0/000")[0] == 200  # the way in is open: only the way out is shut


def test_a_link_planted_in_the_tiles_folder_is_not_followed(log: TlogHome, tmp_path: Path) -> None:
    tiles = tmp_path / "tiles"
    shutil.copytree(log.tiles, tiles)
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "000").write_bytes(b"SECRET outside the tiles folder")
    (secret / "checkpoint").write_bytes(b"SECRET checkpoint")
    (tiles / "tile" / "0" / "002").symlink_to(secret / "000")  # a file link leading out
    (tiles / "tile" / "7").symlink_to(secret)  # a folder link leading out
    (tiles / "checkpoint").unlink()
    (tiles / "checkpoint").symlink_to(secret / "checkpoint")
    with served(log.home, "--tiles", str(tiles)) as url:
        for path in ("tile/0/002", "tile/7/000", "checkpoint"):
            r = httpx.get(url + path, headers=JSON)
            assert r.status_code == 404, path
            assert b"SECRET" not in r.content
        assert httpx.get(url + "tile/0/000").status_code == 200  # what is really there is still served


def test_tiles_must_be_a_folder(log: TlogHome, tmp_path: Path) -> None:
    for bad in (tmp_path / "missing", log.tiles / "checkpoint"):
        r = g6(log.home, "serve", "--port", "0", "--tiles", str(bad))
        assert r.returncode == 2
        assert b"--tiles" in r.stderr and b"not a folder" in r.stderr and b"Traceback" not in r.stderr


def test_tiles_must_be_this_homes_log(log: TlogHome, tmp_path: Path) -> None:
    from g6.home import EvidenceHome

    with EvidenceHome(tmp_path / "other", fsync=False) as ev:  # another home, its own log
        ev.keys.init()
        origin = ev.ledger.origin
    r = g6(tmp_path / "other", "serve", "--port", "0", "--tiles", str(log.tiles))
    assert r.returncode == 2 and b"Traceback" not in r.stderr
    assert f"holds the log {log.origin}, not this home's ({origin})".encode() in r.stderr
    shutil.copytree(log.tiles, tmp_path / "garbled")
    (tmp_path / "garbled" / "checkpoint").write_bytes(b"not a checkpoint\n")
    r = g6(log.home, "serve", "--port", "0", "--tiles", str(tmp_path / "garbled"))
    assert r.returncode == 2 and b"its checkpoint is not a checkpoint" in r.stderr
