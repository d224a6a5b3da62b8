"""Offline evidence bundles: a manifest with everything needed to check it, in one zip.

``report-evidence.zip``::

    bundle.json                 index: schema, manifest id, origin, sha256 of every file
    manifest.json               the citation manifest, as given
    receipts/<receipt_id>.json  every cited receipt (signed)
    blobs/<blake3 hex>          every cited body, raw bytes
    proofs/<receipt_id>.tlog-proof   C2SP inclusion proof of each receipt
    checkpoint.note             the signed checkpoint the proofs are against
    keys/signing.pub            ed25519:<base64> public key
    keys/checkpoint.vkey        C2SP verifier key <origin>+<id>+<key>
    keys/trusted/*.pub          every trusted key (receipts signed before a key rotation)

``verify_bundle`` needs nothing but the zip and, to pin trust, the public key: it gives one
verdict per citation with a result per check (receipt signature, inclusion in the checkpoint,
blob digests, the cited text still at its offsets in that blob) plus the bundle-wide checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from g6.adapters.search import SearchRequest
from g6.adapters.sources import SOURCES
from g6.adapters.web import read_document
from g6.errors import G6Error, InputError
from g6.home import EvidenceHome
from g6.ledger.keys import VerifyKey
from g6.ledger.note import NoteError, open_checkpoint, signed_by, verifier_key
from g6.ledger.proofs import ProofCheck as BundleCheck
from g6.ledger.proofs import verify_inclusion_proof
from g6.ledger.receipts import Receipt, utc_now
from g6.manifest import Citation, Manifest
from g6.passages import normalise, text_hash
from g6.transparency import covering_checkpoint, prove

SCHEMA = "g6.bundle.v1"
MAX_MEMBER = 1 << 30  # a member larger than this is refused, never inflated


class BundleError(InputError):
    code = "G6_E_BUNDLE"


@dataclass(frozen=True, slots=True)
class CitationVerdict:
    citation_id: str
    quote: str
    checks: tuple[BundleCheck, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"citation_id": self.citation_id, "ok": self.ok, "quote": self.quote,
                "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True, slots=True)
class BundleReport:
    manifest_id: str | None
    bundle_checks: tuple[BundleCheck, ...]
    citations: tuple[CitationVerdict, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.bundle_checks) and all(c.ok for c in self.citations) and \
            bool(self.citations)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "manifest_id": self.manifest_id,
                "bundle_checks": [c.to_json() for c in self.bundle_checks],
                "citations": [c.to_json() for c in self.citations]}


def build_bundle(home: EvidenceHome, manifest_path: str | os.PathLike[str],
                 out: str | os.PathLike[str]) -> dict[str, Any]:
    manifest_bytes = Path(manifest_path).read_bytes()
    try:
        manifest = Manifest.from_json(json.loads(manifest_bytes))
    except ValueError as e:
        raise BundleError(f"{manifest_path} is not JSON: {e}") from None
    if not manifest.citations:
        raise BundleError("the manifest cites nothing")
    files: dict[str, bytes] = {"manifest.json": manifest_bytes}
    receipt_ids = sorted({c.receipt_id for c in manifest.citations})
    # one checkpoint covering every cited receipt, so all proofs share it
    _, note, _ = covering_checkpoint(home, max(home.ledger.index_of(r) for r in receipt_ids))
    for rid in receipt_ids:
        receipt = home.ledger.get(rid)
        files[f"receipts/{rid}.json"] = json.dumps(receipt.to_json(), indent=2, ensure_ascii=False).encode()
        if receipt.content:
            hexd = str(receipt.content["blake3"]).split(":", 1)[1]
            files[f"blobs/{hexd}"] = home.store.read(str(receipt.content["blake3"]))
    tree = home.ledger.tree()  # hashed once for every proof
    for rid in receipt_ids:
        proof, _ = prove(home, rid, tree)
        if proof.checkpoint_note != note:
            raise BundleError("the ledger checkpoint changed while bundling; run again")
        files[f"proofs/{rid}.tlog-proof"] = proof.text().encode()
    files["checkpoint.note"] = note.encode()
    key = home.signing_key().public
    files["keys/signing.pub"] = (key.to_text() + "\n").encode()
    files["keys/checkpoint.vkey"] = (verifier_key(home.ledger.origin, key) + "\n").encode()
    for kid, k in home.keys.trusted().items():
        files[f"keys/trusted/{kid.replace(':', '_')}.pub"] = (k.to_text() + "\n").encode()
    index = {"schema": SCHEMA, "manifest_id": manifest.manifest_id, "created_at": utc_now(),
             "origin": home.ledger.origin,
             "files": {name: "sha256:" + hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}}
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("bundle.json", json.dumps(index, indent=2))
        for name, data in sorted(files.items()):
            z.writestr(name, data)
    os.replace(tmp, out)
    return index


def _read(z: zipfile.ZipFile, name: str) -> bytes:
    try:
        info = z.getinfo(name)
    except KeyError:
        raise BundleError(f"the bundle has no {name}") from None
    if info.file_size > MAX_MEMBER:
        raise BundleError(f"{name} is larger than {MAX_MEMBER} bytes")
    with z.open(info) as f:
        data = f.read(MAX_MEMBER + 1)
    if len(data) > MAX_MEMBER:
        raise BundleError(f"{name} inflates past its declared size")
    return data


def verify_bundle(path: str | os.PathLike[str], keys: tuple[VerifyKey, ...] = (),
                  trust_bundle_keys: bool = False) -> BundleReport:
    """Check a bundle offline. ``keys`` pins the publisher's public key(s); without them the
    report fails ``key_pinned`` unless ``trust_bundle_keys`` says to take the bundle's own."""
    try:
        z = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        return BundleReport(None, (BundleCheck("zip", False, f"not a readable zip: {e}"),))
    with z:
        try:
            return _verify(z, keys, trust_bundle_keys)
        except (BundleError, G6Error, ValueError, NoteError) as e:
            return BundleReport(None, (BundleCheck("bundle", False, str(e)),))


def _verify(z: zipfile.ZipFile, keys: tuple[VerifyKey, ...], trust_bundle_keys: bool) -> BundleReport:
    checks: list[BundleCheck] = []
    index = json.loads(_read(z, "bundle.json"))
    if not isinstance(index, dict) or index.get("schema") != SCHEMA:
        raise BundleError("bundle.json is not a g6.bundle.v1 index")
    listed = index.get("files") or {}
    names = set(z.namelist())
    missing = sorted(n for n in listed if n not in names)
    bad = [n for n, d in listed.items() if n in names and "sha256:" + hashlib.sha256(_read(z, n)).hexdigest() != d]
    extra = sorted(names - set(listed) - {"bundle.json"})
    checks.append(BundleCheck("index", not bad and not extra and not missing,
                              "; ".join(filter(None, [f"digest differs: {bad}" if bad else "",
                                                      f"missing: {missing}" if missing else "",
                                                      f"unlisted files: {extra}" if extra else ""]))))
    bundle_keys = [VerifyKey.from_text(_read(z, "keys/signing.pub").decode())]
    bundle_keys += [VerifyKey.from_text(_read(z, n).decode()) for n in sorted(z.namelist())
                    if n.startswith("keys/trusted/")]
    pinned = list(keys)
    if pinned:
        checks.append(BundleCheck("key_pinned", True, "pinned " + ", ".join(k.key_id for k in pinned)))
    elif trust_bundle_keys:
        pinned = bundle_keys
        checks.append(BundleCheck("key_pinned", True, "trusting the keys inside the bundle, as asked"))
    else:
        pinned = bundle_keys
        checks.append(BundleCheck("key_pinned", False,
                                  "no --key given: keys shipped inside the bundle prove nothing; pin the publisher's"))
    trusted = {k.key_id: k for k in pinned}
    origin = str(index.get("origin") or "")
    note = _read(z, "checkpoint.note").decode()
    key = next((k for k in pinned if signed_by(note, k, origin)), None)
    if key is None:
        checks.append(BundleCheck("checkpoint_signature", False, "the checkpoint is not signed by a pinned key"))
        key = pinned[0]
    else:
        cp = open_checkpoint(note, key, origin)
        checks.append(BundleCheck("checkpoint_signature", True, f"{cp.origin} size {cp.size}"))
    manifest = Manifest.from_json(json.loads(_read(z, "manifest.json")))
    if manifest.signature is not None:
        ok, why = manifest.verify_signature(trusted)
        checks.append(BundleCheck("manifest_signature", ok, why))
    verdicts = tuple(_verify_citation(z, c, key, trusted, origin) for c in manifest.citations)
    return BundleReport(manifest.manifest_id, tuple(checks), verdicts)


def _verify_citation(z: zipfile.ZipFile, c: Citation, key: VerifyKey, trusted: dict[str, VerifyKey],
                     origin: str) -> CitationVerdict:
    checks: list[BundleCheck] = []
    try:
        raw = _read(z, f"receipts/{c.receipt_id}.json")
        receipt = Receipt.from_json(json.loads(raw))
    except (BundleError, InputError, ValueError) as e:
        return CitationVerdict(c.citation_id, c.quote, (BundleCheck("receipt", False, str(e)),))
    ok, why = receipt.verify_signature(trusted)
    checks.append(BundleCheck("receipt_signature", ok, "" if ok else why))
    try:
        report = verify_inclusion_proof(_read(z, f"proofs/{c.receipt_id}.tlog-proof").decode(), receipt, key, origin)
        bad = [f"{x.check}: {x.detail}" for x in report.checks if not x.ok]
        checks.append(BundleCheck("inclusion", report.ok, "; ".join(bad)))
    except BundleError as e:
        checks.append(BundleCheck("inclusion", False, str(e)))
    content = dict(receipt.content or {})
    if content != dict(c.content):
        checks.append(BundleCheck("blob_digests", False, "the citation's digests are not the receipt's"))
        return CitationVerdict(c.citation_id, c.quote, tuple(checks))
    try:
        blob = _read(z, "blobs/" + str(content["blake3"]).split(":", 1)[1])
    except (BundleError, KeyError) as e:
        checks.append(BundleCheck("blob_digests", False, str(e)))
        return CitationVerdict(c.citation_id, c.quote, tuple(checks))
    b3 = "blake3:" + blake3.blake3(blob).hexdigest()
    sha = "sha256:" + hashlib.sha256(blob).hexdigest()
    digests_ok = (b3, sha, len(blob)) == (content.get("blake3"), content.get("sha256"), content.get("size"))
    checks.append(BundleCheck("blob_digests", digests_ok,
                              "" if digests_ok else "the blob does not hash to the receipt"))
    checks.append(_cited_text_check(c, receipt, blob))
    return CitationVerdict(c.citation_id, c.quote, tuple(checks))


def _cited_text_check(c: Citation, receipt: Receipt, blob: bytes) -> BundleCheck:
    if text_hash(c.text) != c.text_hash:
        return BundleCheck("cited_text", False, "the citation's text does not match its own hash")
    if c.kind == "search":
        try:
            src = SOURCES.get(receipt.source)
            parsed = src.parse(SearchRequest.from_json(receipt.request), int(receipt.http_status or 0),
                               receipt.detail.get("content_type"), blob)
        except G6Error as e:
            return BundleCheck("cited_text", False, str(e))
        titles = {normalise(p.title or "") for p in parsed.papers}
        ok = normalise(c.text) in titles
        return BundleCheck("cited_text", ok, "" if ok else "the paper is not on the cited search page")
    url = receipt.final_url or str(receipt.request.get("url", ""))
    outcome, _, docs, _ = read_document(blob, url, receipt.detail.get("content_type"), str(c.content["blake3"]))
    if not docs or docs[0].text is None:
        return BundleCheck("cited_text", False, f"no text in the stored body ({outcome.value})")
    text = docs[0].text
    if c.start is not None and c.end is not None and text_hash(text[c.start:c.end]) == c.text_hash:
        return BundleCheck("cited_text", True, f"at {c.start}-{c.end}")
    return BundleCheck("cited_text", False, "the cited text is not at its offsets in the stored body")
