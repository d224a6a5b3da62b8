"""WACZ export (Web Archive Collection Zipped 1.1.1): the WARC export, indexed and packaged by the
webrecorder ``wacz`` package, so ReplayWeb.page or pywb open the evidence and show each page as it
was read.

Layout: ``archive/data.warc.gz`` (see ``g6.export.warc``), ``indexes/`` (written by ``wacz``),
``pages/pages.jsonl`` (one line per archived read: id is the receipt id, ``url``, ``ts`` the read's
time, ``title``), and the evidence beside it as extra files listed in ``datapackage.json`` with
their sha256: ``receipts/<receipt id>.json`` (every exported receipt, signed),
``checkpoint/checkpoint.note`` (a signed checkpoint covering them all), ``proofs/<receipt
id>.tlog-proof`` (each receipt's inclusion proof against that checkpoint), ``timestamps/<size>-<n>.json``
(each RFC 3161 token kept beside that checkpoint, ``{"tsa": name, "token": base64 DER}``, as a bundle
carries it; none when the checkpoint was signed for the export) and ``keys/signing.pub`` /
``keys/checkpoint.vkey``. (Extra files sit one folder deep: ``wacz validate`` checks paths by their
last two parts.) ``datapackage-digest.json`` holds the hash of ``datapackage.json``; with a signer it
is signed too (``g6.export.wacz_sign``), and the WACZ key entry that vouches for the signing key is
exported with the receipts.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from g6.errors import WaczError, WaczUnavailable
from g6.export.wacz_sign import SignedDigest, WaczSigner, created_of, signed_digest
from g6.export.warc import WarcSummary, export_warc
from g6.home import EvidenceHome
from g6.ledger.note import verifier_key
from g6.ledger.receipts import Receipt
from g6.ledger.transparency.timestamp import KIND as TIMESTAMP_KIND
from g6.prove.proofs import covering_checkpoint, prove


@dataclass(frozen=True, slots=True)
class WaczSummary:
    path: str
    pages: int
    receipts: int
    proofs: int
    warc: WarcSummary
    timestamps: int = 0
    signature: dict[str, Any] | None = None  # SignedDigest.to_json: key, key entry, created, TSA

    def to_json(self) -> dict[str, Any]:
        w = self.warc.to_json()
        w.pop("path")
        return {"path": self.path, "pages": self.pages, "receipts": self.receipts, "proofs": self.proofs,
                "timestamps": self.timestamps, "warc": w, "signature": self.signature}


def pages_jsonl(summary: WarcSummary, title: str) -> bytes:
    lines = [{"format": "json-pages-1.0", "id": "pages", "title": title}]
    for p in summary.pages:
        page: dict[str, Any] = {"id": p.receipt_id, "url": p.url, "ts": p.date,
                                "title": f"{p.url} ({p.kind}, {p.status})", "status": p.status}
        if p.final_url != p.url:
            page["final_url"] = p.final_url
        lines.append(page)
    return b"".join(json.dumps(x, ensure_ascii=False).encode() + b"\n" for x in lines)


def _evidence_files(home: EvidenceHome, receipts: list[Receipt],
                    step: Callable[[], None] | None = None) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for r in receipts:
        files[f"receipts/{r.receipt_id}.json"] = json.dumps(r.to_json(), indent=2, ensure_ascii=False).encode()
    if not receipts:
        return files
    cp, note, _ = covering_checkpoint(home, max(home.ledger.index_of(r.receipt_id) for r in receipts))
    tree = home.ledger.tree()  # hashed once for every proof
    for r in receipts:
        proof, _ = prove(home, r.receipt_id, tree)
        if proof.checkpoint_note != note:
            raise WaczError("the ledger checkpoint changed while exporting; run again")
        files[f"proofs/{r.receipt_id}.tlog-proof"] = proof.text().encode()
        if step is not None:
            step()
    files["checkpoint/checkpoint.note"] = note.encode()
    for n, (_, name, value) in enumerate(home.ledger.kept_beside(cp, TIMESTAMP_KIND)):
        files[f"timestamps/{cp.size}-{n}.json"] = json.dumps({"tsa": name, "token": value}, indent=2).encode()
    key = home.signing_key().public
    files["keys/signing.pub"] = (key.to_text() + "\n").encode()
    files["keys/checkpoint.vkey"] = (verifier_key(home.ledger.origin, key) + "\n").encode()
    return files


def _wacz_main() -> Any:
    try:
        from wacz.main import main as wacz_main
    except ImportError:
        raise WaczUnavailable("export wacz needs the wacz package: pip install 'g6-evidence[wacz]'") from None
    return wacz_main


def _run_wacz_create(warc: Path, pages: Path, out: Path) -> None:
    wacz_main = _wacz_main()
    chatter = io.StringIO()  # wacz prints its progress on stdout; a library of ours never prints
    with contextlib.redirect_stdout(chatter):
        rc = wacz_main(["create", "-o", str(out), str(warc), "-p", str(pages), "--copy-pages",
                        "--hash-type", "sha256", "--title", "g6 evidence"])
    if rc not in (0, None) or not out.exists():
        raise WaczError(f"wacz create failed: {chatter.getvalue().strip().splitlines()[-1:]}")


def export_wacz(home: EvidenceHome, out: str | os.PathLike[str], receipts: Iterable[Receipt], *,
                progress: Callable[[int, int], None] | None = None, signer: WaczSigner | None = None) -> WaczSummary:
    """Write a WACZ at ``out``; ``progress(steps done, steps)``: a step per receipt written to the WARC,
    one for packaging, one per inclusion proof. With ``signer`` (``g6.export.wacz_sign.prepare_signer``)
    its digest file is signed, and the WACZ key entry is among the receipts exported."""
    out = Path(out)
    _wacz_main()  # before any work: without the package there is nothing to package with
    receipts = list(receipts)
    if signer is not None and all(r.receipt_id != signer.entry.receipt_id for r in receipts):
        receipts.append(signer.entry)  # the trust from the log's key to the signing key travels with it
    steps = [0, 2 * len(receipts) + 1]

    def step() -> None:
        steps[0] += 1
        if progress is not None:
            progress(*steps)

    with tempfile.TemporaryDirectory(prefix="g6-wacz-", dir=out.parent) as tmpd:
        tmp = Path(tmpd)
        warc = export_warc(home, tmp / "data.warc.gz", receipts, progress=lambda _i, _n: step())
        (tmp / "pages.jsonl").write_bytes(pages_jsonl(warc, "Pages read (g6 receipts)"))
        _run_wacz_create(tmp / "data.warc.gz", tmp / "pages.jsonl", tmp / "base.wacz")
        step()
        extra = _evidence_files(home, receipts, step)
        final = tmp / "final.wacz"
        with zipfile.ZipFile(tmp / "base.wacz") as zin, zipfile.ZipFile(final, "w") as zout:
            package = json.loads(zin.read("datapackage.json"))
            for info in zin.infolist():
                if info.filename in ("datapackage.json", "datapackage-digest.json"):
                    continue
                with zin.open(info) as src, zout.open(info, "w") as dst:  # same compression as wacz chose
                    for chunk in iter(lambda: src.read(1 << 20), b""):
                        dst.write(chunk)
            listed = {r["path"] for r in package.get("resources", [])}
            for name, data in sorted(extra.items()):
                if name in listed:
                    raise WaczError(f"{name} is already in the WACZ")
                zout.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data,
                              compress_type=zipfile.ZIP_DEFLATED)
                package["resources"].append({"name": name.replace("/", "-").lower(), "path": name,
                                             "hash": "sha256:" + hashlib.sha256(data).hexdigest(),
                                             "bytes": len(data)})
            package["description"] = ("Reads recorded in a g6 evidence ledger; receipts, inclusion proofs and "
                                      "the checkpoint they prove against are in receipts/, proofs/, checkpoint/; "
                                      "RFC 3161 tokens over that checkpoint, if any, in timestamps/.")
            created = created_of(package, now=signer is not None)
            pkg = json.dumps(package, indent=2).encode()
            zout.writestr("datapackage.json", pkg, compress_type=zipfile.ZIP_DEFLATED)
            signed = signed_digest(pkg, created, signer) if signer is not None else None
            digest = signed.digest if signed is not None else {
                "path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(pkg).hexdigest()}
            zout.writestr("datapackage-digest.json", json.dumps(digest, indent=2), compress_type=zipfile.ZIP_DEFLATED)
        with open(final, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(final, out)
    return WaczSummary(str(out), len(warc.pages), len(receipts), sum(n.startswith("proofs/") for n in extra), warc,
                       sum(n.startswith("timestamps/") for n in extra),
                       _signature_json(signed, signer))


def _signature_json(signed: SignedDigest | None, signer: WaczSigner | None) -> dict[str, Any] | None:
    return signed.to_json(signer) if signed is not None and signer is not None else None


__all__ = ["WaczError", "WaczSummary", "WaczUnavailable", "export_wacz", "pages_jsonl"]
