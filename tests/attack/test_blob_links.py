"""The folder store never follows a symbolic link it did not write (it writes none), issue 27.

A blob's file, its meta, its sha256 index entry or a fan-out folder replaced by a symbolic link — even
to a copy holding the very same bytes, outside the store or inside it — is no longer the store's own
evidence: ``blob verify`` and ``ledger verify`` fail it (BAD, exit 1), and every read through the store
(``blob cat``, ``convert``, a bundle, a citation) refuses it in one line (exit 1), serving nothing. A
put never writes through such a link either.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from g6.cite.cite import cite_web
from g6.errors import BlobCorrupt, StoreError
from g6.home import EvidenceHome
from g6.store import BlobStore
from tests.attack.test_blob_attacks import export_bundle, g6, refused


def _hex(d: str) -> str:
    return d.split(":", 1)[1]


def _root(ev: dict[str, Any]) -> Path:
    return ev["big_path"].parents[3]


def _swap_for_link(path: Path, outside: Path, *, relative: bool = False) -> None:
    """``path`` (a file or a folder) moved to ``outside`` and a symbolic link to it left in its place:
    the bytes read through the link are exactly those that were there."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(path, outside)
    os.symlink(os.path.relpath(outside, path.parent) if relative else outside, path)


def _copy_for_link(path: Path, copy: Path) -> None:
    """``path`` replaced by a symbolic link to an identical copy (``copy``)."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    (shutil.copytree if path.is_dir() else shutil.copy2)(path, copy)
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    os.symlink(copy, path)


def t_raw_blob_file(ev) -> tuple[str, str]:
    _copy_for_link(ev["small_path"], ev["tmp"] / "outside" / "small")
    return "small", "symbolic link"


def t_compressed_blob_file(ev) -> tuple[str, str]:
    _copy_for_link(ev["big_path"], ev["tmp"] / "outside" / "big.zst")
    return "big", "symbolic link"


def t_blob_file_to_another_name_in_the_store(ev) -> tuple[str, str]:
    """The raw blob moved to another name inside the store's own folder, a relative link left in its place."""
    p = ev["small_path"]
    _swap_for_link(p, p.with_name("elsewhere"), relative=True)
    return "small", "symbolic link"


def t_meta_file(ev) -> tuple[str, str]:
    h = _hex(ev["small"]["blake3"])
    _copy_for_link(_root(ev) / "meta" / h[:2] / f"{h}.json", ev["tmp"] / "outside" / "meta.json")
    return "small", "symbolic link"


def t_index_entry(ev) -> tuple[str, str]:
    h = _hex(ev["small"]["sha256"])
    _copy_for_link(_root(ev) / "sha256" / h[:2] / h, ev["tmp"] / "outside" / "entry")
    return "small", "symbolic link"


def t_inner_fan_out_folder(ev) -> tuple[str, str]:
    """blake3/ab/cd -> a copy of that folder outside the store."""
    _copy_for_link(ev["small_path"].parent, ev["tmp"] / "outside" / "cd")
    return "small", "symbolic link"


def t_outer_fan_out_folder(ev) -> tuple[str, str]:
    """blake3/ab -> a copy of that folder outside the store."""
    _copy_for_link(ev["small_path"].parents[1], ev["tmp"] / "outside" / "ab")
    return "small", "symbolic link"


def t_fan_out_folder_to_another_in_the_store(ev) -> tuple[str, str]:
    """blake3/ab/cd moved to blake3/ab/zz (a real folder of the store), a relative link left in its place."""
    p = ev["small_path"].parent
    _swap_for_link(p, p.with_name("zz" if p.name != "zz" else "yy"), relative=True)
    return "small", "symbolic link"


def t_meta_fan_out_folder(ev) -> tuple[str, str]:
    h = _hex(ev["small"]["blake3"])
    _copy_for_link(_root(ev) / "meta" / h[:2], ev["tmp"] / "outside" / "meta-ab")
    return "small", "symbolic link"


def t_index_fan_out_folder(ev) -> tuple[str, str]:
    h = _hex(ev["small"]["sha256"])
    _copy_for_link(_root(ev) / "sha256" / h[:2], ev["tmp"] / "outside" / "sha-ab")
    return "small", "symbolic link"


LINKS: list[Callable[[Any], tuple[str, str]]] = [
    t_raw_blob_file, t_compressed_blob_file, t_blob_file_to_another_name_in_the_store, t_meta_file, t_index_entry,
    t_inner_fan_out_folder, t_outer_fan_out_folder, t_fan_out_folder_to_another_in_the_store, t_meta_fan_out_folder,
    t_index_fan_out_folder]
# the links a read by the blob's blake3 name never meets (it does not read the sha256 index; it does look at
# the meta's path, and reads the meta of a compressed blob): only these may still serve by blake3
BLAKE3_READ_UNTOUCHED = {t_index_entry, t_index_fan_out_folder}


@pytest.mark.parametrize("attack", LINKS, ids=lambda f: f.__name__)
def test_blob_verify_fails_a_symbolic_link(ev, attack) -> None:
    which, words = attack(ev)
    r = g6(ev["home"], "blob", "verify", "--json")
    refused(r, f"blob verify after {attack.__name__}")
    assert r.exit_code == 1, r.output
    report = json.loads(r.output)
    assert not report["ok"] and any(words in b["detail"] for b in report["bad"]), report


@pytest.mark.parametrize("attack", LINKS, ids=lambda f: f.__name__)
def test_ledger_verify_fails_the_blob_check(ev, attack) -> None:
    attack(ev)
    r = g6(ev["home"], "ledger", "verify", "--json")
    refused(r, f"ledger verify after {attack.__name__}")
    assert r.exit_code == 1, r.output
    blob = json.loads(r.output)["checks"]["blob"]
    assert not blob["ok"], blob


@pytest.mark.parametrize("attack", LINKS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", ["blake3", "sha256"])
def test_blob_cat_refuses_and_serves_nothing(ev, attack, name: str) -> None:
    which, words = attack(ev)
    r = g6(ev["home"], "blob", "cat", ev[which][name])
    if name == "blake3" and attack in BLAKE3_READ_UNTOUCHED:
        assert r.exit_code == 0  # nothing a read by its blake3 name opens was touched
        return
    refused(r, f"blob cat after {attack.__name__}")
    assert r.exit_code == 1 and r.stdout_bytes == b"", r.output
    assert words in r.stderr and len(r.stderr.splitlines()) == 1 and r.stderr.startswith("g6: "), r.stderr


@pytest.mark.parametrize("attack", LINKS, ids=lambda f: f.__name__)
def test_a_bundle_is_refused(ev, attack) -> None:
    attack(ev)
    r, out = export_bundle(ev)
    if attack in BLAKE3_READ_UNTOUCHED:  # a bundle reads each body by its blake3 name: no link is met
        assert r.exit_code == 0, r.output
        return
    refused(r, f"bundle after {attack.__name__}")
    assert not out.exists()


@pytest.mark.parametrize("attack", [a for a in LINKS if a not in BLAKE3_READ_UNTOUCHED], ids=lambda f: f.__name__)
def test_a_citation_is_refused(ev, attack) -> None:
    which, _ = attack(ev)
    with EvidenceHome(ev["home"], fsync=False, readonly=True) as home:
        rid = next(e.receipt.receipt_id for e in home.ledger.entries()
                   if e.receipt.kind == "fetch" and e.receipt.content == ev[which])
        with pytest.raises(BlobCorrupt, match="symbolic link"):
            cite_web(home, rid, quote="the cited sentence stays in the stored bytes")


def test_the_same_store_without_links_is_whole(ev) -> None:
    """The cases above fail for the link alone: the untouched home passes every check."""
    assert g6(ev["home"], "blob", "verify").exit_code == 0
    assert g6(ev["home"], "ledger", "verify").exit_code == 0
    for which in ("big", "small"):
        assert g6(ev["home"], "blob", "cat", ev[which]["sha256"]).exit_code == 0


@pytest.mark.parametrize("where", ["blake3/ab/cd", "blake3/ab", "meta/ab", "sha256/ab"])
def test_a_put_never_writes_through_a_link(tmp_path: Path, where: str) -> None:
    """A fan-out folder the next put would write into is a link to a folder outside: the put is a typed
    error, nothing is written there, and no index entry of it is left behind."""
    store = BlobStore(tmp_path / "s", fsync=False)
    data = b"a body written after the link was planted\n" * 3
    probe = BlobStore(tmp_path / "probe", fsync=False).put(data)
    b3, sha = _hex(probe.blake3), _hex(probe.sha256)
    folder = {"blake3/ab/cd": f"blake3/{b3[:2]}/{b3[2:4]}", "blake3/ab": f"blake3/{b3[:2]}",
              "meta/ab": f"meta/{b3[:2]}", "sha256/ab": f"sha256/{sha[:2]}"}[where]
    outside = tmp_path / "outside"
    outside.mkdir()
    link = store.root / folder
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, link)
    with pytest.raises(StoreError, match="symbolic link"):
        store.put(data)
    assert list(outside.iterdir()) == []
    assert not store.has(probe.blake3)
    assert not any(p.is_file() for p in (store.root / "tmp").iterdir())


@pytest.mark.parametrize("where", ["tmp", "blake3/ab", "blake3/ab/cd", "meta/ab", "sha256/ab"])
def test_gc_never_removes_through_a_link(tmp_path: Path, where: str) -> None:
    """A folder gc would sweep is a link to a folder outside the store holding a copy of what was there
    (old enough to collect): gc removes nothing through it (a typed error, or it passes the link by) and
    `verify` names the link."""
    store = BlobStore(tmp_path / "s", fsync=False)
    ref = store.put(b"an unreferenced body gc would collect\n" * 20)  # compressed: .zst
    b3, sha = _hex(ref.blake3), _hex(ref.sha256)
    (store.root / "tmp" / "put-stale").write_bytes(b"a temp file left by a put that stopped")
    folder = {"tmp": "tmp", "blake3/ab": f"blake3/{b3[:2]}", "blake3/ab/cd": f"blake3/{b3[:2]}/{b3[2:4]}",
              "meta/ab": f"meta/{b3[:2]}", "sha256/ab": f"sha256/{sha[:2]}"}[where]
    outside = tmp_path / "outside"
    _copy_for_link(store.root / folder, outside)
    old = 1_000_000_000
    for p in [outside, *outside.rglob("*")]:
        os.utime(p, (old, old))
    before = sorted(p.relative_to(outside) for p in outside.rglob("*"))
    try:
        store.gc([], grace_seconds=0)
    except StoreError as e:
        assert "symbolic link" in str(e)
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == before
    assert any("symbolic link" in b.detail for b in store.verify().bad) or where == "tmp"
