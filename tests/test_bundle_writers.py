"""A bundle of a log with several writers, checked with the log's key alone.

The owner's key signs the bundle's checkpoint; a receipt signed by a writer the log added (a key entry
signed by the owner) holds because its proof carries that entry, back to the pinned key. Take the entry
out of the proof and the same receipt is signed by an unknown key.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import prepare_fetch
from g6.home import EvidenceHome
from g6.ledger.keys import SigningKey
from g6.ledger.proofs import parse_inclusion
from g6.prove.bundle import build_bundle, verify_bundle
from tests.test_bundle_trust import failed

Site = Callable[..., LocalSite]
TEXT = "A writer the owner added read this page, and a grader can check it."


def _read(home: EvidenceHome, url: str, key: SigningKey) -> str:
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        prepared = prepare_fetch(home.store, c, url)
    return home.ledger.append(prepared.receipt, key).receipt_id


def test_a_writers_receipt_holds_with_the_log_key_alone(site: Site, tmp_path: Path) -> None:
    s = site({"/w": Reply(body=f"<html><body><p>{TEXT}</p></body></html>".encode())})
    home = EvidenceHome(tmp_path / "h", fsync=False)
    owner = home.keys.init()
    writer = SigningKey.generate()
    home.add_writer(writer.public)
    rid = _read(home, s.url("/w"), writer)
    m = Manifest.new().with_citation(cite_web(home, rid, quote=TEXT)).signed(home.signing_key())
    save_manifest(m, tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    report = verify_bundle(tmp_path / "b.zip", [owner.public], allow_unsigned=False)
    assert report.ok, failed(report)
    assert [v.receipt_id for v in report.citations if v.ok] == [rid]
    # the same bundle with the key entry taken out of the receipt's proof: the writer is unknown
    with zipfile.ZipFile(tmp_path / "b.zip") as z:
        files = {n: z.read(n) for n in z.namelist()}
    name = f"proofs/{rid}.tlog-proof"
    proof = parse_inclusion(files[name].decode())
    files[name] = replace(proof, extra=rid.encode()).text().encode()
    index = json.loads(files["bundle.json"])
    index["files"][name] = {"sha256": "sha256:" + hashlib.sha256(files[name]).hexdigest(), "size": len(files[name])}
    files["bundle.json"] = json.dumps(index).encode()
    with zipfile.ZipFile(tmp_path / "bare.zip", "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    bare = verify_bundle(tmp_path / "bare.zip", [owner.public], allow_unsigned=False)
    assert not bare.ok and "unknown key" in failed(bare)["receipt_signature"]
    home.close()
