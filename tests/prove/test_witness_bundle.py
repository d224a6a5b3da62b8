"""Bundles carry the cosigned checkpoint, and `bundle verify --policy` holds it to the quorum: a quorum not met,
a tampered cosignature and a checkpoint that does not verify fail; the kept cosignature travels in every proof."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.keys import SigningKey
from g6.ledger.note import parse_note
from g6.ledger.transparency.cosignature import CosignerKey, sign_cosignature
from g6.ledger.transparency.policy import PolicyWitness, parse_policy
from g6.prove.bundle import PinnedKey, build_bundle, verify_bundle
from g6.prove.proofs import checkpoint
from g6.prove.witness import new_client, submit

Site = Callable[..., LocalSite]
TEXT = "A sentence a witness never reads, under a checkpoint it cosigned."


class Witness:
    def __init__(self, name: str) -> None:
        self.key = SigningKey.generate()
        self.cosigner = CosignerKey(name, self.key.public)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        note = request.content.decode().split("\n\n", 1)[1]
        return httpx.Response(200, text=sign_cosignature(parse_note(note)[0], self.cosigner.name, self.key,
                                                         int(time.time())) + "\n")


@pytest.fixture
def made(home: EvidenceHome, site: Site, tmp_path: Path) -> dict[str, Any]:
    s = site({"/a": Reply(body=f"<html><body><p>{TEXT}</p></body></html>".encode()), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/a"))
    w = Witness("w.example")
    cp, note = checkpoint(home)
    with new_client(httpx.MockTransport(w)) as client:
        assert submit(home.ledger, cp, note, PolicyWitness("w", w.cosigner, "http://w.test"), client).ok
    m = Manifest.new().with_citation(cite_web(home, r.receipt_id, quote="a witness never reads"))
    save_manifest(m.signed(home.signing_key()), tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    other = CosignerKey("other.example", SigningKey.generate().public)
    return {"zip": tmp_path / "b.zip", "key": PinnedKey(home.signing_key().public), "w": w, "other": other,
            "tmp": tmp_path, "rid": r.receipt_id}


def _witnesses(report: Any) -> Any:
    return next(c for c in report.bundle_checks if c.check == "witnesses")


def test_a_quorum_not_met_fails_the_bundle(made: dict[str, Any]) -> None:
    two = parse_policy(f"witness w {made['w'].cosigner.vkey()}\nwitness o {made['other'].vkey()}\n"
                       "group g all w o\nquorum g\n")
    report = verify_bundle(made["zip"], [made["key"]], policy=two)
    assert not report.ok and not _witnesses(report).ok and "no quorum: cosigned by w" in _witnesses(report).detail


def test_a_tampered_cosignature_fails_the_bundle(made: dict[str, Any]) -> None:
    with zipfile.ZipFile(made["zip"]) as z:
        files = {i.filename: z.read(i) for i in z.infolist()}
    note = files["checkpoint.note"].decode()
    line = note.rstrip("\n").split("\n")[-1]
    name, b64 = line.rsplit(" ", 1)
    raw = bytearray(base64.b64decode(b64))
    raw[-1] ^= 1
    files["checkpoint.note"] = note.replace(line, f"{name} {base64.b64encode(bytes(raw)).decode()}").encode()
    index = json.loads(files["bundle.json"])
    index["files"]["checkpoint.note"] = {"sha256": "sha256:" + hashlib.sha256(files["checkpoint.note"]).hexdigest(),
                                         "size": len(files["checkpoint.note"])}
    files["bundle.json"] = json.dumps(index).encode()
    bad = made["tmp"] / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    one = parse_policy(f"witness w {made['w'].cosigner.vkey()}\nquorum w\n")
    report = verify_bundle(bad, [made["key"]], policy=one)
    assert not _witnesses(report).ok and "does not verify" in _witnesses(report).detail


def test_a_checkpoint_that_does_not_verify_fails_closed(made: dict[str, Any]) -> None:
    one = parse_policy(f"witness w {made['w'].cosigner.vkey()}\nquorum w\n")
    report = verify_bundle(made["zip"], [PinnedKey(SigningKey.generate().public)], policy=one)
    assert not _witnesses(report).ok and "not checked" in _witnesses(report).detail


def test_the_bundle_carries_the_cosigned_checkpoint_and_meets_the_quorum(made: dict[str, Any]) -> None:
    with zipfile.ZipFile(made["zip"]) as z:
        note = z.read("checkpoint.note").decode()
        proof = z.read(f"proofs/{made['rid']}.tlog-proof").decode()
    assert "\n— w.example " in note and proof.endswith(note)
    one = parse_policy(f"witness w {made['w'].cosigner.vkey()}\nquorum w\n")
    report = verify_bundle(made["zip"], [made["key"]], policy=one)
    assert report.ok, [c for c in report.bundle_checks if not c.ok]
    assert _witnesses(report).ok and _witnesses(report).detail.startswith("quorum met: cosigned by w")
    assert verify_bundle(made["zip"], [made["key"]]).ok  # without a policy: as before
    assert not any(c.check == "witnesses" for c in verify_bundle(made["zip"], [made["key"]]).bundle_checks)
