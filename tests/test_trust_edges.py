"""Issue 13, the ledger / store / home / keys edges: an auditor's and an attacker's tries.

Reading never creates or rewrites; checks against checkpoints and keys kept elsewhere; what the
blob check checks; races on a fresh home; full disks; malformed rows. Everything runs on real
SQLite files, real folders and real subprocesses of the ``g6`` command.
"""

from __future__ import annotations

import hashlib
import io
import json
import multiprocessing
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pypdf
import pytest

from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.ledger import KeyDir, Receipt, SigningKey
from g6.schemas import load

Site = Callable[..., LocalSite]


def g6(home: Path, *args: str, env: dict[str, str] | None = None, fsize: int | None = None,
       prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``g6`` command. ``fsize`` sets RLIMIT_FSIZE in the child: the "disk" is full past
    that many bytes per file (the child must turn EFBIG into a typed error, not die of SIGXFSZ)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "PYTHONDONTWRITEBYTECODE": "1"})
    e.update(env or {})

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))

    return subprocess.run([*prefix, sys.executable, "-m", "g6", *args], capture_output=True, env=e, timeout=120,
                          preexec_fn=limit)


def one_line_error(r: subprocess.CompletedProcess[bytes]) -> str:
    err = r.stderr.decode()
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("g6: "), err
    return lines[0]


def receipt(i: int, content: dict | None = None, kind: str = "fetch") -> Receipt:
    return Receipt(kind=kind, source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", content=content, byte_count=i)


def build(root: Path, n: int = 3, *, blobs: bool = True) -> list[Receipt]:
    """A home with a key and ``n`` receipts (each citing its own blob)."""
    with EvidenceHome(root, fsync=False) as ev:
        ev.keys.ensure()
        out = []
        for i in range(n):
            content = ev.store.put(f"body {i} ".encode() * 40).to_json() if blobs else None
            out.append(ev.record(receipt(i, content)))
    return out


def append(root: Path, n: int, start: int = 100) -> None:
    with EvidenceHome(root, fsync=False) as ev:
        for i in range(start, start + n):
            ev.record(receipt(i))


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with the sha256 of its bytes (folders as 'dir')."""
    out = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def ledger_path(root: Path) -> Path:
    return root / "knowledge" / "ledger.sqlite"


def sql(root: Path, *statements: str) -> None:
    conn = sqlite3.connect(ledger_path(root), isolation_level=None)
    for s in statements:
        conn.execute(s)
    conn.close()


def verify_json(root: Path, *args: str, **kw: object) -> tuple[int, dict]:
    r = g6(root, "ledger", "verify", "--json", *args, **kw)  # type: ignore[arg-type]
    assert "Traceback" not in r.stderr.decode(), r.stderr.decode()
    report = json.loads(r.stdout)
    jsonschema.Draft202012Validator(load("ledger-verify.v1")).validate(report)  # every verdict keeps the shape
    return r.returncode, report


def failure_details(report: dict, check: str) -> list[str]:
    return [f["detail"] for f in report["checks"].get(check, {}).get("failures", [])]


# -- reading never creates or rewrites ------------------------------------------------------
READ_ONLY = [("ledger", "verify"), ("ledger", "list"), ("receipt", "show", "rcpt_00000000000000000000000000"),
             ("blob", "verify"), ("keys", "show"), ("ledger", "checkpoints"), ("blob", "cat", "blake3:" + "0" * 64),
             ("blob", "gc")]


@pytest.mark.parametrize("via_flag", [False, True])
def test_read_only_commands_on_a_missing_home_fail_and_create_nothing(tmp_path: Path, via_flag: bool) -> None:
    home = tmp_path / "nohome"
    for args in READ_ONLY:
        r = g6(tmp_path / "elsewhere", "--home", str(home), *args) if via_flag else g6(home, *args)
        assert r.returncode == 1, (args, r.stderr)
        assert "Traceback" not in r.stderr.decode()
        assert not home.exists(), args
    code, report = verify_json(home)
    assert code == 1 and not report["ok"]
    assert failure_details(report, "database")[0].startswith("no ledger at")
    assert not home.exists() and not (tmp_path / "elsewhere").exists()


def _zero(root: Path) -> None:
    (root / "knowledge").mkdir(parents=True)
    ledger_path(root).write_bytes(b"")


def _no_tables(root: Path) -> None:
    (root / "knowledge").mkdir(parents=True)
    sql(root, "CREATE TABLE other (x)")


def _no_meta_row(root: Path) -> None:
    build(root, 2)
    sql(root, "DELETE FROM meta")


def _no_checkpoints_table(root: Path) -> None:
    build(root, 2)
    sql(root, "DROP TABLE checkpoints")


@pytest.mark.parametrize("damage,words", [
    (_zero, "empty file (0 bytes)"),
    (_no_tables, "lacks the table(s) receipts, checkpoints, meta"),
    (_no_meta_row, "holds no log id"),
    (_no_checkpoints_table, "lacks the table(s) checkpoints"),
])
def test_a_damaged_ledger_is_a_failed_check_and_left_byte_for_byte(tmp_path: Path, damage: Callable[[Path], None],
                                                                   words: str) -> None:
    home = tmp_path / "h"
    damage(home)
    before = snapshot(home)
    code, report = verify_json(home)
    assert code == 1 and not report["ok"]
    assert any(words in d for d in failure_details(report, "database")), report
    for args in READ_ONLY[1:]:
        r = g6(home, *args)
        assert "Traceback" not in r.stderr.decode(), (args, r.stderr)
        # `blob verify` judges the store alone, which may be whole; everything else needs the ledger
        assert r.returncode == 1 or (args == ("blob", "verify") and (home / "knowledge" / "fetched").is_dir())
    assert snapshot(home) == before  # not a byte, not a table, not a log id, not a -wal/-shm file


def test_reading_a_healthy_home_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "h"
    rs = build(home, 3)
    before = snapshot(home)
    assert g6(home, "ledger", "verify").returncode == 0
    assert g6(home, "ledger", "list").returncode == 0
    assert g6(home, "receipt", "show", rs[0].receipt_id).returncode == 0
    assert g6(home, "blob", "verify").returncode == 0
    assert g6(home, "keys", "show").returncode == 0
    assert g6(home, "blob", "cat", rs[1].content["sha256"]).stdout == b"body 1 " * 40
    assert snapshot(home) == before


def test_a_read_only_verify_rereads_when_a_writer_came_by(tmp_path: Path) -> None:
    """A read-only verify reads a ledger with no pending WAL as an immutable file, without locks; if
    a writer appends and checkpoints meanwhile, the verdict must be of the new state, not a torn one."""
    home = tmp_path / "h"
    build(home, 2, blobs=False)
    with EvidenceHome(home, readonly=True) as reader:
        assert reader.verify().rows == 2
        with EvidenceHome(home, fsync=False) as writer:
            for i in range(5):
                writer.record(receipt(10 + i))
            conn = sqlite3.connect(ledger_path(home))
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the new rows move into the main file
            conn.close()
            report = reader.verify()
            assert report.ok and report.rows == 7


def test_only_writing_commands_create_a_home_and_they_say_so(tmp_path: Path) -> None:
    a = tmp_path / "a"
    r = g6(a, "keys", "init")
    assert r.returncode == 0 and f"created evidence home {a}" in r.stderr.decode()
    assert ledger_path(a).is_file()
    shown = g6(a, "keys", "show", "--json")  # works right after keys init: the log id exists
    assert shown.returncode == 0 and json.loads(shown.stdout)["signing"]["checkpoint_verifier_key"]
    b = tmp_path / "b"
    r = g6(b, "ledger", "checkpoint")
    assert r.returncode == 0
    err = r.stderr.decode()
    assert f"created evidence home {b}" in err and "created signing key" in err
    again = g6(b, "ledger", "checkpoint")
    assert again.returncode == 0 and "created" not in again.stderr.decode()


def test_keys_show_on_a_home_with_keys_but_no_ledger_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "h"
    key = KeyDir(home / "keys").init()
    before = snapshot(home)
    r = g6(home, "keys", "show", "--json")
    assert r.returncode == 0 and "no ledger yet" in r.stderr.decode()
    shown = json.loads(r.stdout)["signing"]
    assert shown["key_id"] == key.key_id and shown["checkpoint_verifier_key"] is None
    assert snapshot(home) == before


def test_es_creates_a_home_and_says_so(tmp_path: Path, site: Site) -> None:
    local = site({})  # every path a 404: enough for a receipted es read
    home = tmp_path / "es-home"
    r = g6(home, "es", "mapping", "papers", env={"G6_ELASTIC_URL": local.url("/").rstrip("/")})
    assert "Traceback" not in r.stderr.decode()
    assert f"created evidence home {home}" in r.stderr.decode() and ledger_path(home).is_file()


def test_a_home_that_is_a_file_or_empty_is_an_input_error(tmp_path: Path) -> None:
    f = tmp_path / "a-file"
    f.write_text("not a folder")
    for value in (str(f), "", "  ", str(f / "below")):
        r = g6(tmp_path / "unused", "--home", value, "ledger", "list")
        assert r.returncode == 2, (value, r.stderr)
        one_line_error(r)
    r = g6(f, "ledger", "verify")  # the same through G6_HOME
    assert r.returncode == 2 and "not a folder" in one_line_error(r)
    assert f.read_text() == "not a folder"


def test_an_unreadable_home_is_an_input_error(tmp_path: Path) -> None:
    home = tmp_path / "locked"
    build(home, 1)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        # root reads everything; without these two capabilities it obeys the mode bits like anyone
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder unreadable")
        prefix = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")
    home.chmod(0)
    try:
        r = g6(tmp_path, "--home", str(home), "ledger", "verify", prefix=prefix)
        assert r.returncode == 2 and "not readable" in one_line_error(r)
    finally:
        home.chmod(0o700)


def test_a_home_that_cannot_be_written_is_one_line_for_writing_commands(tmp_path: Path) -> None:
    home = tmp_path / "readonly"
    home.mkdir()
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder unwritable")
        prefix = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search")
    home.chmod(0o555)
    try:
        r = g6(tmp_path, "--home", str(home), "ledger", "checkpoint", prefix=prefix)
        assert r.returncode == 2 and "cannot write the evidence home" in one_line_error(r)
        assert list(home.iterdir()) == []
    finally:
        home.chmod(0o700)


def test_home_flag_reads_that_homes_dotenv(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / ".env").write_text("G6_OPENALEX_API_KEY=k-from-the-flag-home\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".env").write_text("G6_HOST_PAUSE=3\n")
    r = g6(elsewhere, "--home", str(d), "sources", "--json")
    assert r.returncode == 0, r.stderr
    rows = {x["name"]: x for x in json.loads(r.stdout)}
    assert rows["openalex"]["key_set"] is True
    from g6.config import load_settings

    s = load_settings({"G6_HOME": str(elsewhere)}, home=d)
    assert s.home == d and s.secret("G6_OPENALEX_API_KEY") == "k-from-the-flag-home" and s.host_pause == 1.0


# -- checks against what is kept elsewhere --------------------------------------------------
def test_checkpoint_out_then_verify_against_it(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 3)
    kept = tmp_path / "offsite" / "cp-3.note"
    kept.parent.mkdir()  # --out makes no folder (a missing one is an input error)
    r = g6(home, "ledger", "checkpoint", "--out", str(kept))
    assert r.returncode == 0 and kept.read_text() == r.stdout.decode()
    append(home, 2)
    code, report = verify_json(home, "--checkpoint", str(kept))
    assert code == 0, report
    kc = report["checks"]["kept_checkpoint"]
    assert kc == {"ok": True, "checked": 1, "failed": 0, "failures": []}
    bad = tmp_path / "garbage.note"
    bad.write_text("not a note\n")
    binary = tmp_path / "binary.note"
    binary.write_bytes(os.urandom(64) + b"\xff" * (2 << 20))  # not UTF-8, and past the note size limit
    code, report = verify_json(home, "--checkpoint", str(kept), "--checkpoint", str(bad), "--checkpoint", str(binary))
    assert code == 1 and len(failure_details(report, "kept_checkpoint")) == 2
    assert report["checks"]["kept_checkpoint"]["checked"] == 3
    assert g6(home, "ledger", "verify", "--checkpoint", str(tmp_path / "absent.note")).returncode == 2


@pytest.mark.parametrize("drop_stored_checkpoints", [True, False])
def test_rows_removed_from_the_end_fail_against_a_kept_checkpoint(tmp_path: Path,
                                                                  drop_stored_checkpoints: bool) -> None:
    home = tmp_path / "h"
    build(home, 4)
    kept = tmp_path / "kept.note"
    assert g6(home, "ledger", "checkpoint", "--out", str(kept)).returncode == 0
    sql(home, "DELETE FROM receipts WHERE seq > 2", *(["DELETE FROM checkpoints"] if drop_stored_checkpoints else []))
    # the stored Merkle tree still covers 4 receipts: the plain check sees the truncation
    code, report = verify_json(home)
    assert code == 1 and "rows removed from the end" in failure_details(report, "tree")[0]
    sql(home, "DELETE FROM merkle_hashes")  # an attacker who knows the layout drops it too
    if drop_stored_checkpoints:
        # the hole: nothing inside the home remembers the two receipts
        assert g6(home, "ledger", "verify").returncode == 0
    code, report = verify_json(home, "--checkpoint", str(kept))
    assert code == 1
    assert "the ledger now holds only 2 (receipts removed from the end)" in failure_details(report,
                                                                                         "kept_checkpoint")[0]


def _resign_history(home: Path, attacker: SigningKey, *, untrust_old: bool) -> None:
    """The attacker rewrites receipt 2, re-signs every receipt with their own key (added to
    keys/trusted/), rebuilds a valid chain under the same log id and drops the stored checkpoints."""
    with EvidenceHome(home, fsync=False) as ev:
        old = [e.receipt for e in ev.ledger.entries()]
    sql(home, "DELETE FROM receipts", "DELETE FROM checkpoints", "DELETE FROM merkle_hashes")
    forged = [replace(r, outcome="http_error" if i == 1 else r.outcome, signature=None) for i, r in enumerate(old)]
    kd = KeyDir(home / "keys")
    if untrust_old:
        for p in kd.trusted_dir.glob("*.pub"):
            p.unlink()
    kd.trust(attacker.public)
    with EvidenceHome(home, fsync=False) as ev:
        ev.ledger.append_many(forged, attacker)


@pytest.mark.parametrize("untrust_old", [False, True])
def test_resigned_history_fails_against_a_kept_checkpoint(tmp_path: Path, untrust_old: bool) -> None:
    home = tmp_path / "h"
    build(home, 3)
    kept = tmp_path / "kept.note"
    assert g6(home, "ledger", "checkpoint", "--out", str(kept)).returncode == 0
    _resign_history(home, SigningKey.generate(), untrust_old=untrust_old)
    assert g6(home, "ledger", "verify").returncode == 0  # the forgery holds against keys/trusted/
    code, report = verify_json(home, "--checkpoint", str(kept))
    assert code == 1
    detail = failure_details(report, "kept_checkpoint")[0]
    assert ("not signed by a trusted key" if untrust_old else "history rewritten") in detail


def test_a_recreated_ledger_fails_against_a_kept_checkpoint(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 2)
    kept = tmp_path / "kept.note"
    assert g6(home, "ledger", "checkpoint", "--out", str(kept)).returncode == 0
    ledger_path(home).unlink()
    append(home, 3)  # a fresh ledger: a new log id, a clean chain, signed by the trusted key
    assert g6(home, "ledger", "verify").returncode == 0
    code, report = verify_json(home, "--checkpoint", str(kept))
    assert code == 1 and "replaced or re-created" in failure_details(report, "kept_checkpoint")[0]


def test_pinned_keys_ignore_keys_trusted(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 2)
    with EvidenceHome(home) as ev:
        publisher = ev.signing_key().public
    pub_file = tmp_path / "publisher.pub"
    pub_file.write_text(publisher.to_text() + "\n")
    attacker = SigningKey.generate()
    KeyDir(home / "keys").trust(attacker.public)  # dropped into keys/trusted/
    with EvidenceHome(home, fsync=False) as ev:
        ev.ledger.append(receipt(9), attacker)
    assert g6(home, "ledger", "verify").returncode == 0  # keys/trusted/ vouches for the attacker
    code, report = verify_json(home, "--key", str(pub_file))
    assert code == 1
    bad = report["checks"]["signature"]["failures"]
    assert [f["seq"] for f in bad] == [3] and "unknown key" in bad[0]["detail"]
    # and the other way: with the publisher's key pinned, an emptied keys/trusted/ is not consulted
    clean = tmp_path / "clean"
    build(clean, 2)
    with EvidenceHome(clean) as ev:
        key_text = ev.signing_key().public.to_text()
    shutil.rmtree(clean / "keys" / "trusted")
    assert g6(clean, "ledger", "verify").returncode == 1
    assert g6(clean, "ledger", "verify", "--key", key_text, "--key", attacker.public.to_text()).returncode == 0
    r = g6(clean, "ledger", "verify", "--key", "ed25519:not-base64!")
    assert r.returncode == 2 and "bad --key" in one_line_error(r)


# -- what the blob check checks -------------------------------------------------------------
def _pdf() -> bytes:
    w = pypdf.PdfWriter()
    w.add_blank_page(72, 72)
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def test_a_sha256_index_entry_pointing_elsewhere_is_caught_and_never_served(tmp_path: Path) -> None:
    home = tmp_path / "h"
    with EvidenceHome(home, fsync=False) as ev:
        ev.keys.ensure()
        a = ev.store.put(b"the cited page " * 30)
        b = ev.store.put(_pdf())
        ev.record(receipt(1, a.to_json()))
    store = home / "knowledge" / "fetched"
    a_hex = a.sha256.split(":")[1]
    (store / "sha256" / a_hex[:2] / a_hex).write_text(b.blake3)  # the index now lies about sha256:a
    r = g6(home, "blob", "verify", "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and [x["digest"] for x in out["bad"]] == [a.sha256]
    assert "points at" in out["bad"][0]["detail"]
    code, report = verify_json(home)
    assert code == 1 and "the sha256 index points at" in failure_details(report, "blob")[0]
    cat = g6(home, "blob", "cat", a.sha256)
    assert cat.returncode == 1 and cat.stdout == b"" and "refusing" in one_line_error(cat)
    assert g6(home, "blob", "cat", b.sha256).stdout == _pdf()
    rows = len(list(EvidenceHome(home, readonly=True).ledger.entries()))
    conv = g6(home, "convert", a.sha256)
    assert conv.returncode == 1 and "refusing" in conv.stderr.decode() and "Traceback" not in conv.stderr.decode()
    with EvidenceHome(home, readonly=True) as ev:
        assert len(ev.ledger) == rows  # nothing converted, nothing receipted


def test_blob_cat_and_convert_refuse_bytes_that_changed(tmp_path: Path) -> None:
    home = tmp_path / "h"
    with EvidenceHome(home, fsync=False) as ev:
        ev.keys.ensure()
        ref = ev.store.put(_pdf())
        path = ev.store.path(ref.blake3)
    path.write_bytes(path.read_bytes().replace(b"%PDF-1.", b"%PDF-2."))
    for digest in (ref.blake3, ref.sha256):
        cat = g6(home, "blob", "cat", digest)
        assert cat.returncode == 1 and cat.stdout == b"" and "refusing" in one_line_error(cat)
        conv = g6(home, "convert", digest)
        assert conv.returncode == 1 and "refusing" in one_line_error(conv)
    with EvidenceHome(home, readonly=True) as ev:
        assert len(ev.ledger) == 0


@pytest.mark.parametrize("column,value", [("kind", "'search'"), ("outcome", "'http_error'"),
                                          ("fetched_at", "'2020-01-01T00:00:00.000000Z'"),
                                          ("receipt_id", "'rcpt_FORGED'")])
def test_every_column_beside_the_receipt_is_checked(tmp_path: Path, column: str, value: str) -> None:
    home = tmp_path / "h"
    build(home, 3)
    sql(home, f"UPDATE receipts SET {column} = {value} WHERE seq = 2")
    code, report = verify_json(home)
    assert code == 1
    bad = report["checks"]["chain"]["failures"]
    assert [f["seq"] for f in bad] == [2] and f"{column} column disagrees with the signed receipt" in bad[0]["detail"]
    if column == "kind":
        listed = json.loads(g6(home, "ledger", "list", "--kind", "search", "--json").stdout)
        assert listed == []  # the listing goes by the signed kind, not the edited column


def _unfinished_put(store: Path, data: bytes, age: float) -> tuple[Path, Path]:
    """What a put stopped before its data rename leaves: meta and sha256 index, no blob."""
    import blake3

    b3 = blake3.blake3(data).hexdigest()
    sha = hashlib.sha256(data).hexdigest()
    meta = store / "meta" / b3[:2] / f"{b3}.json"
    idx = store / "sha256" / sha[:2] / sha
    meta.parent.mkdir(parents=True, exist_ok=True)
    idx.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(json.dumps({"blake3": f"blake3:{b3}", "sha256": f"sha256:{sha}", "size": len(data)}))
    idx.write_text(f"blake3:{b3}")
    old = os.stat(store).st_mtime - age
    for p in (meta, idx):
        os.utime(p, (old, old))
    return meta, idx


def test_gc_sweeps_index_entries_of_puts_that_never_finished(tmp_path: Path) -> None:
    home = tmp_path / "h"
    rs = build(home, 2)
    store = home / "knowledge" / "fetched"
    stale = _unfinished_put(store, b"never renamed", age=7200)
    fresh = _unfinished_put(store, b"still being written", age=0)
    v = json.loads(g6(home, "blob", "verify", "--json").stdout)
    assert v["ok"] and len(v["dangling"]) == 4  # 2 index + 2 meta entries: reported, not failures
    gc = json.loads(g6(home, "blob", "gc", "--grace", "3600", "--json").stdout)
    assert gc["index_entries_removed"] == 2 and gc["removed"] == []
    assert not any(p.exists() for p in stale) and all(p.exists() for p in fresh)
    assert g6(home, "ledger", "verify").returncode == 0
    assert g6(home, "blob", "cat", rs[0].content["sha256"]).returncode == 0


def test_compressed_blobs_are_not_swept_and_are_checked_before_serving(tmp_path: Path) -> None:
    """Blobs kept zstd-compressed (``<hex>.zst``) are blobs: gc's sweep of unfinished puts and
    ``blob verify``'s dangling list must see them, and ``blob cat`` re-checks them before serving."""
    home = tmp_path / "h"
    text = b"A text body long enough to be kept compressed at rest. " * 40
    with EvidenceHome(home, fsync=False) as ev:
        ev.keys.ensure()
        ref = ev.store.put(text)
        r = ev.record(receipt(0, ref.to_json()))
        assert ev.store.path(ref.blake3).name.endswith(".zst")
    store = home / "knowledge" / "fetched"
    old = os.stat(store).st_mtime - 7200
    for p in store.rglob("*"):
        os.utime(p, (old, old))
    v = json.loads(g6(home, "blob", "verify", "--json").stdout)
    assert v["ok"] and v["dangling"] == []
    gc = json.loads(g6(home, "blob", "gc", "--grace", "3600", "--json").stdout)
    assert gc["index_entries_removed"] == 0 and gc["removed"] == []
    served = g6(home, "blob", "cat", r.content["sha256"])
    assert served.returncode == 0 and served.stdout == text
    assert g6(home, "ledger", "verify").returncode == 0
    # a compressed blob whose bytes were swapped for another compressed body is refused
    with EvidenceHome(tmp_path / "other", fsync=False) as other:
        forged = other.store.put(text.replace(b"long", b"LONG"))
        forged_bytes = other.store.path(forged.blake3).read_bytes()
    with EvidenceHome(home, fsync=False) as ev:
        kept = ev.store.path(ref.blake3)
    kept.write_bytes(forged_bytes)
    refused = g6(home, "blob", "cat", r.content["sha256"])
    assert refused.returncode != 0 and refused.stdout == b"" and b"Traceback" not in refused.stderr
    assert g6(home, "ledger", "verify").returncode == 1


# -- races and full disks -------------------------------------------------------------------
def _ensure_key(path: str, barrier: Any, out: Any) -> None:
    barrier.wait()
    key, _ = KeyDir(path).ensure()
    out.put(key.key_id)


def test_first_use_by_many_processes_makes_one_key(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    n = 6
    barrier, out = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_ensure_key, args=(str(tmp_path / "keys"), barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * n
    ids = {out.get(timeout=5) for _ in range(n)}
    kd = KeyDir(tmp_path / "keys")
    assert ids == {kd.load_signing().key_id} and set(kd.trusted()) == ids


def test_a_key_created_between_check_and_create_is_never_replaced(tmp_path: Path) -> None:
    class Racing(KeyDir):
        """Another process creates its key right after this one looked and found none."""

        raced = False

        def exists(self) -> bool:
            if not self.raced:
                self.raced = True
                KeyDir(self.path).init()
                return False
            return super().exists()

    path = tmp_path / "keys"
    key, created = Racing(path).ensure()
    winner = KeyDir(path).load_signing()
    assert not created and key.key_id == winner.key_id and set(KeyDir(path).trusted()) == {winner.key_id}


def test_fresh_home_under_concurrent_writers_signs_with_one_key(tmp_path: Path) -> None:
    home = tmp_path / "h"
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home)})
    procs = [subprocess.Popen([sys.executable, "-m", "g6", "ledger", "checkpoint"], env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(4)]
    results = [(p.wait(120), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    for p in procs:
        p.stdout.close()  # type: ignore[union-attr]
        p.stderr.close()  # type: ignore[union-attr]
    assert [rc for rc, _ in results] == [0] * 4, results
    assert b"Traceback" not in b"".join(err for _, err in results)
    kd = KeyDir(home / "keys")
    assert len(kd.trusted()) == 1
    code, report = verify_json(home, "--key", kd.load_signing().public.to_text())
    assert code == 0 and report["checks"]["checkpoint"]["checked"] == 4


_STORE_FULL = textwrap.dedent("""
    import json, os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    from g6.errors import StoreDiskFull
    from g6.store import BlobStore
    store = BlobStore(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY))
    # "raw": bytes kept as they are; "text": text kept zstd-compressed (hex: it does not shrink below the limit)
    body = b"\\0" + os.urandom(1 << 20) if sys.argv[2] == "raw" else os.urandom(1 << 20).hex().encode()
    try:
        store.put(body)
        print(json.dumps({"stored": True}))
    except StoreDiskFull as e:
        print(json.dumps({"code": e.code, "message": str(e), "cause": type(e.__cause__).__name__}))
""")


@pytest.mark.parametrize("kind", ["raw", "text"])
def test_a_full_disk_during_a_put_is_typed_and_leaves_nothing(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "store"
    r = subprocess.run([sys.executable, "-c", _STORE_FULL, str(root), kind], capture_output=True, timeout=60,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["code"] == "G6_E_STORE_DISK_FULL" and "disk full" in out["message"]
    assert "File too large" in out["message"] and out["cause"] == "OSError"  # the real OS error is kept
    assert [p for p in root.rglob("*") if p.is_file()] == []  # no temp file, no meta, no index entry
    from g6.store import BlobStore

    store = BlobStore(root)
    ref = store.put(b"x" * (1 << 20))  # space back: the next put works
    assert store.verify().ok and store.read(ref.sha256) == b"x" * (1 << 20)


def test_a_full_disk_during_fetch_is_typed_and_the_next_fetch_works(tmp_path: Path, site: Site) -> None:
    # random hex: kept compressed at rest, and still far past the 256 KiB file-size limit
    page = b"<html><body><p>" + os.urandom(600_000).hex().encode() + b"</p></body></html>"
    local = site({"/": Reply(body=page)})
    home = tmp_path / "h"
    build(home, 1)
    r = g6(home, "fetch", local.url("/"), env={"G6_ALLOW_LOOPBACK": "1"}, fsize=256 * 1024)
    assert r.returncode == 1
    line = one_line_error(r)
    assert "disk full" in line and "G6_E_STORE_DISK_FULL" in line and "File too large" in line
    code, report = verify_json(home)
    assert code == 0 and report["rows"] == 1  # nothing half-written: no receipt, no blob
    assert not list((home / "knowledge" / "fetched" / "tmp").iterdir())
    ok = g6(home, "fetch", local.url("/"), "--json", env={"G6_ALLOW_LOOPBACK": "1"})
    assert ok.returncode == 0, ok.stderr
    code, report = verify_json(home)
    assert code == 0 and report["rows"] == 2


_LEDGER_FULL = textwrap.dedent("""
    import json, os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    from g6.errors import LedgerDiskFull
    from g6.home import EvidenceHome
    from g6.ledger import Receipt

    def r(i):
        return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                       outcome_code="G6_E_KNOWLEDGE_FETCHED")

    ev = EvidenceHome(sys.argv[1], fsync=False)
    ev.keys.ensure()
    ev.record(r(0))
    before = len(ev.ledger)
    wal = os.path.getsize(str(ev.ledger.path) + "-wal")
    resource.setrlimit(resource.RLIMIT_FSIZE, (wal, resource.RLIM_INFINITY))  # the WAL may not grow
    out = {}
    try:
        ev.ledger.append_many([r(i) for i in range(1, 50)], ev.signing_key())
        out["appended"] = True
    except LedgerDiskFull as e:
        out.update(code=e.code, message=str(e), cause=type(e.__cause__).__name__)
    out["in_transaction"] = ev.ledger.rows.connection.in_transaction
    out["rows_after_failure"] = len(ev.ledger)
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    ev.record(r(99))
    out["before"] = before
    out["rows_after_retry"] = len(ev.ledger)
    out["verify_ok"] = ev.verify().ok
    print(json.dumps(out))
""")


def test_a_full_disk_during_append_is_typed_rolled_back_and_recoverable(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", _LEDGER_FULL, str(tmp_path / "h")], capture_output=True, timeout=60,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["code"] == "G6_E_LEDGER_DISK_FULL" and "disk full" in out["message"]
    assert out["cause"] == "OperationalError" and "disk" in out["message"].split("[", 1)[1]  # SQLite's own words
    assert out["in_transaction"] is False and out["rows_after_failure"] == out["before"] == 1
    assert out["rows_after_retry"] == 2 and out["verify_ok"] is True


def test_a_full_disk_during_a_ledger_write_from_the_cli_is_one_typed_line(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 2)
    r = g6(home, "ledger", "checkpoint", fsize=4096)
    assert r.returncode == 1
    line = one_line_error(r)
    assert "disk full" in line and "G6_E_LEDGER_DISK_FULL" in line
    assert g6(home, "ledger", "verify", fsize=0).returncode == 0  # still readable, beside the writer's leftovers
    assert g6(home, "ledger", "verify").returncode == 0
    assert g6(home, "ledger", "checkpoint").returncode == 0


def test_verify_on_a_full_disk_reads_without_writing(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 3)
    before = snapshot(home)
    code, report = verify_json(home, fsize=0)  # not one byte may be written anywhere
    assert code == 0 and report["ok"] and report["rows"] == 3
    assert g6(home, "blob", "verify", fsize=0).returncode == 0
    assert g6(home, "ledger", "list", fsize=0).returncode == 0
    assert snapshot(home) == before


@pytest.mark.parametrize("mutation", [
    "UPDATE receipts SET receipt = CAST(receipt AS BLOB) WHERE seq = 2",
    "UPDATE receipts SET receipt = 42 WHERE seq = 2",
    "UPDATE receipts SET receipt = '[1, 2]' WHERE seq = 2",
    "UPDATE receipts SET receipt = '\"a string\"' WHERE seq = 2",
    "UPDATE receipts SET receipt = '{not json' WHERE seq = 2",
    "UPDATE receipts SET receipt = json_set(receipt, '$.signature', 'abc') WHERE seq = 2",
    "UPDATE receipts SET receipt = json_set(receipt, '$.signature.key_id', json('[1]')) WHERE seq = 2",
    "UPDATE receipts SET receipt = json_set(receipt, '$.signature.value', 7) WHERE seq = 2",
    "UPDATE receipts SET receipt = json_set(receipt, '$.content', json('[1]')) WHERE seq = 2",
    "UPDATE receipts SET receipt = json_set(receipt, '$.content', 'x') WHERE seq = 2",
    "UPDATE receipts SET prev_hash = x'00' WHERE seq = 2",
    "UPDATE receipts SET receipt_id = 5, kind = 3 WHERE seq = 2",
])
def test_a_malformed_row_is_a_verdict_on_that_row(tmp_path: Path, mutation: str) -> None:
    home = tmp_path / "h"
    rs = build(home, 3)
    sql(home, mutation)
    code, report = verify_json(home)
    assert code == 1 and report["rows"] == 3
    bad_seqs = {f["seq"] for c in report["checks"].values() for f in c["failures"]}
    assert bad_seqs == {2}, report
    for args in (("ledger", "list"), ("receipt", "show", rs[1].receipt_id), ("blob", "gc", "--dry-run")):
        r = g6(home, *args)
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr.decode(), (args, r.stderr)


def test_a_malformed_stored_checkpoint_is_one_line_everywhere(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 2)
    assert g6(home, "ledger", "checkpoint").returncode == 0
    sql(home, "UPDATE checkpoints SET note = CAST(note AS BLOB)")
    code, report = verify_json(home)
    assert code == 1 and "stored as bytes" in failure_details(report, "checkpoint")[0]
    for args in (("ledger", "checkpoints"), ("ledger", "consistency", "2", "2")):
        r = g6(home, *args)
        assert r.returncode in (1, 2) and "checkpoint 1 is malformed" in one_line_error(r)


def test_missing_columns_are_a_database_verdict(tmp_path: Path) -> None:
    home = tmp_path / "h"
    build(home, 2)
    sql(home, "ALTER TABLE receipts DROP COLUMN outcome")
    code, report = verify_json(home)
    assert code == 1 and "lacks the column(s) outcome" in failure_details(report, "database")[0]
    r = g6(home, "ledger", "list")
    assert r.returncode == 1 and "outcome" in one_line_error(r)


def test_first_key_on_a_filesystem_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_link(*_: object, **__: object) -> None:
        raise PermissionError(1, "Operation not permitted")  # what link(2) says on e.g. some FUSE mounts

    monkeypatch.setattr(os, "link", no_link)
    kd = KeyDir(tmp_path / "keys")
    key, created = kd.ensure()
    assert created and kd.load_signing().key_id == key.key_id and set(kd.trusted()) == {key.key_id}
    from g6.errors import SigningKeyError

    with pytest.raises(SigningKeyError, match="exists already"):
        kd.init()
    assert sorted(p.name for p in kd.path.iterdir()) == ["signing.key", "trusted"]  # no temp file left


@pytest.fixture
def small_fs(tmp_path: Path) -> Any:
    """A real 2 MiB tmpfs, where a full disk is ENOSPC (needs root with CAP_SYS_ADMIN; skipped otherwise)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("needs root and mount(8) for a small tmpfs")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def _fill(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as e:
        assert e.errno == 28  # ENOSPC
    finally:
        os.close(fd)


def test_enospc_on_a_real_full_filesystem(small_fs: Path) -> None:
    from g6.errors import LedgerDiskFull, StoreDiskFull

    home = small_fs / "h"
    with EvidenceHome(home) as ev:
        ev.keys.ensure()
        ev.record(receipt(0))
        _fill(small_fs / "filler")
        with pytest.raises(StoreDiskFull, match=r"disk full.*No space left on device"):
            ev.store.put(os.urandom(300_000))
        with pytest.raises(LedgerDiskFull, match=r"disk full.*(database or disk is full|disk I/O error)"):
            ev.ledger.append_many([receipt(i) for i in range(1, 300)], ev.signing_key())
        assert len(ev.ledger) == 1 and not ev.ledger.rows.connection.in_transaction
        assert list((home / "knowledge" / "fetched" / "tmp").iterdir()) == []
    code, report = verify_json(home)  # reads on the full disk
    assert code == 0 and report["rows"] == 1
    r = g6(home, "ledger", "checkpoint")
    assert r.returncode == 1 and "G6_E_LEDGER_DISK_FULL" in one_line_error(r)
    (small_fs / "filler").unlink()
    assert g6(home, "ledger", "checkpoint").returncode == 0  # space freed: the next command works
    code, report = verify_json(home)
    assert code == 0 and report["checks"]["checkpoint"]["checked"] == 1
