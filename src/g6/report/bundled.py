"""A report check's evidence packed for another machine (``g6 report bundle``), and read back from there
(``g6 report check REPORT --bundle evidence.zip --key KEY``).

The pack is an ordinary evidence bundle (:mod:`g6.prove.bundle`) of the result's manifest (the citations whose
quotes were found), carrying besides it every other receipt the result's verdicts rest on (a failed read, a
page where the quote was not found, a redirect, a paper's search page, a PDF's conversion), each with its body
and its inclusion proof against the bundle's one checkpoint. ``g6 bundle verify`` checks it as any bundle.

Read back, nothing is taken on trust: the bundle is first verified as ``g6 bundle verify`` verifies it (keys,
checkpoint, history, index, every manifest citation) and refused whole if any of that fails; then each receipt
is checked against the same keys (its signature) and the same checkpoint (its inclusion proof), and each body
against its receipt's digests as it is read. The check then runs on those receipts as on a home's with
``--receipts-only``: the same receipts give the same verdicts. The result records how the bundle's keys were
trusted (``describe``): pinned by the grader, or only the bundle's own (``--trust-bundle-keys``), which anyone can
make hold; ``g6 report verify`` says which.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import blake3

from g6.errors import EvidenceRefused
from g6.ledger.note import NoteError, open_checkpoint
from g6.ledger.proofs import parse_inclusion, verify_inclusion_proof
from g6.ledger.receipts import Receipt
from g6.prove.bundle import verify_bundle
from g6.prove.bundle_zip import (
    MAX_INDEX,
    RECORD_ERRORS,
    ZIP_ERRORS,
    Members,
    central_directory,
    declared_files,
    member_problems,
    strict_json,
)
from g6.report.evidence import ReceiptIndex, search_key, url_key

CITES_NOTHING = "the manifest cites nothing"


def result_receipts(result: Mapping[str, Any]) -> list[str]:
    """Every receipt a result's verdicts rest on: the reads, the paper searches, the PDF conversions."""
    ids: set[str] = set()
    for c in result.get("citations") or ():
        detail = c.get("detail") or {}
        for rid in (c.get("receipt_id"), detail.get("search"), detail.get("converted")):
            if isinstance(rid, str) and rid.startswith("rcpt_"):
                ids.add(rid)
    return sorted(ids)


def _refuse_unless_verified(path: Path, keys: Sequence[Any], trust_bundle_keys: bool) -> Any:
    """``g6 bundle verify``'s report on the bundle; EvidenceRefused unless it holds (a manifest that cites
    nothing is accepted: a report none of whose quotes was found packs only the other reads)."""
    report = verify_bundle(path, tuple(keys), trust_bundle_keys)
    bad = [c for c in report.bundle_checks if not c.ok and not (c.check == "manifest" and c.detail == CITES_NOTHING)]
    bad_cites = [v for v in report.citations if not v.ok]
    if bad or bad_cites or report.forks:
        why = "; ".join(f"{c.check}: {c.detail}" for c in bad[:4]) or \
            (f"citation {bad_cites[0].position} does not hold" if bad_cites else "a fork in the log's history")
        raise EvidenceRefused(f"the bundle {path} does not verify ({why[:400]}); `g6 bundle verify` says more")
    return report


class BundleEvidence:
    """The receipts of a verified bundle, each checked (signature, inclusion in the bundle's checkpoint)."""

    name = "bundle"

    def __init__(self, path: Path, keys: Sequence[Any], trust_bundle_keys: bool) -> None:
        report = _refuse_unless_verified(path, keys, trust_bundle_keys)
        self.path = path
        self.trusted = {k.key_id: k.key for k in report.keys}
        # how the keys were trusted goes into the signed result: a bundle verified with the keys it ships
        # vouches for itself (anyone can make one that holds), one verified with a pinned key does not
        self.trust = "pinned" if report.pinned else "shipped"
        self.keys = [{"key_id": k.key_id, "source": k.source} for k in report.keys]
        self.checkpoint_key: str | None = None
        self.origin_pin = next((k.origin for k in report.keys if k.origin), None)
        self.index = ReceiptIndex()
        self.receipts: dict[str, Receipt] = {}
        self._bodies: dict[str, bytes] = {}
        self._fp = open(path, "rb")  # noqa: SIM115 - held while the check reads bodies; closed by close()
        try:
            cd = central_directory(self._fp)
            self._zip = zipfile.ZipFile(self._fp)
            infos = self._zip.infolist()
            _, refused = member_problems(infos, cd[2] if cd else None)
            by_name = {i.filename: i for i in infos}
            with self._zip.open("bundle.json") as f:
                index = strict_json(f.read(MAX_INDEX + 1), "bundle.json")
            declared, _ = declared_files(index)
            self.members = Members(self._zip, by_name, refused, declared)
            self.note = self.members.read("checkpoint.note").decode("utf-8")
            self.origin = str(index.get("origin"))
            self.sha256 = _sha256_file(path)
            self._load([n for n in sorted(declared) if n.startswith("receipts/")])
        except (*ZIP_ERRORS, *RECORD_ERRORS, NoteError) as e:
            self.close()
            raise EvidenceRefused(f"the bundle {path} cannot be read as evidence: {str(e)[:300]}") from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._fp.close()

    def describe(self) -> dict[str, Any]:
        """The evidence as the result records it: the bundle, how its keys were trusted (``pinned`` with --key,
        or ``shipped`` inside it and taken with --trust-bundle-keys), each key and where it came from, and the
        key that signed its checkpoint."""
        return {"origin": self.origin, "bundle": {"sha256": self.sha256, "receipts": len(self.receipts),
                                                  "trust": self.trust, "keys": self.keys,
                                                  "checkpoint_key": self.checkpoint_key}}

    def _signer(self) -> tuple[Any, str]:
        for key in self.trusted.values():
            try:
                cp = open_checkpoint(self.note, key, self.origin_pin or self.origin)
            except NoteError:
                continue
            return key, cp.origin
        raise EvidenceRefused(f"the bundle {self.path}'s checkpoint is not signed by a key given")

    def _load(self, names: list[str]) -> None:
        key, origin = self._signer()
        self.checkpoint_key = key.key_id
        placed: list[tuple[int, Receipt]] = []
        for name in names:
            rid = name.removeprefix("receipts/").removesuffix(".json")
            r = Receipt.from_json(strict_json(self.members.read(name), name))
            ok, why = r.verify_signature(self.trusted)
            if not ok or r.receipt_id != rid:
                raise EvidenceRefused(f"receipt {rid[:80]} in the bundle does not verify: {why}")
            proof = self.members.read(f"proofs/{rid}.tlog-proof").decode("utf-8")
            checks = [c for c in verify_inclusion_proof(proof, r, key, origin).checks if c.check != "receipt_signature"]
            inclusion = parse_inclusion(proof)
            if not checks or not all(c.ok for c in checks) or inclusion.checkpoint_note != self.note:
                bad = "; ".join(f"{c.check}: {c.detail}" for c in checks if not c.ok) or "another checkpoint"
                raise EvidenceRefused(f"receipt {rid[:80]}'s inclusion proof does not hold ({bad[:200]})")
            placed.append((inclusion.index, r))
        for _, r in sorted(placed, key=lambda x: x[0]):  # the log's order: the newest filed last
            self.receipts[r.receipt_id] = r
            self.index.file(r)

    def get(self, receipt_id: str) -> Receipt | None:
        return self.receipts.get(receipt_id)

    def reads(self, url: str) -> list[Receipt]:
        return [self.receipts[i] for i in self.index.by_url.get(url_key(url), [])]

    def search_pages(self, source: str, request: Mapping[str, Any]) -> list[Receipt]:
        return [self.receipts[i] for i in self.index.by_search.get(search_key(source, request), [])]

    def conversions(self, blake3_digest: str) -> list[Receipt]:
        return [self.receipts[i] for i in self.index.by_pdf.get(blake3_digest, [])]

    def body(self, content: Mapping[str, Any]) -> bytes:
        """The body a verified receipt names, hashed as it is read: its blake3, sha256 and size, or refused."""
        b3 = str(content.get("blake3", ""))
        if b3 in self._bodies:
            return self._bodies[b3]
        data = self.members.read("blobs/" + b3.removeprefix("blake3:"))
        if ("blake3:" + blake3.blake3(data).hexdigest() != b3 or len(data) != content.get("size")
                or "sha256:" + hashlib.sha256(data).hexdigest() != content.get("sha256")):
            raise EvidenceRefused(f"the bundle's body {b3[:80]} is not the one its receipt names")
        self._bodies[b3] = data
        return data

    def add(self, receipts: Iterable[Receipt]) -> None:
        raise EvidenceRefused("nothing is added to a bundle's evidence")


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def open_bundle(path: str | os.PathLike[str], keys: Sequence[Any], trust_bundle_keys: bool) -> BundleEvidence:
    return BundleEvidence(Path(path), keys, trust_bundle_keys)
