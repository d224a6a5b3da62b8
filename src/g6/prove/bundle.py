"""Offline evidence bundles: a manifest with everything needed to check it, in one zip.

``report-evidence.zip``::

    bundle.json                 index: schema, manifest id, origin, sha256 and size of every other file
    manifest.json               the citation manifest, as given
    receipts/<receipt_id>.json  every cited receipt (signed), and every request of a cited rendered capture
    blobs/<blake3 hex>          every cited body, raw bytes, and the certificates (DER) the cited receipts say
                                servers presented over TLS; of a rendered capture, its text and screenshot
                                (its requests' bodies are not carried: each is named by its receipt)
    redactions/<blake3 hex>     instead, for a cited body (or a capture's DOM, text, screenshot) a redaction entry
                                took out: that entry's receipt id (the entry is under receipts/ and proofs/ like a
                                cited receipt)
    proofs/<receipt_id>.tlog-proof   C2SP inclusion proof of each receipt
    proofs/consistency/<old>-<new>.tlog-consistency
                                a consistency proof between the bundle's checkpoint and another checkpoint
                                of the log: every one the ledger issued (signed by the current key, newest
                                first, at most MAX_CARRIED), and each the grader kept (``--checkpoint``)
    timestamps/<size>-<n>.json  an RFC 3161 token kept beside the log's checkpoint of that size (``{"tsa": name,
                                "token": base64 DER}``): only for the bundle's checkpoint and those a consistency
                                proof above ties to it, so a verifier knows the note body each is over
    checkpoint.note             the signed checkpoint the proofs are against
    keys/signing.pub            ed25519:<base64> public key
    keys/checkpoint.vkey        C2SP verifier key <origin>+<id>+<key>
    keys/trusted/*.pub          every trusted key (receipts signed before a key rotation)

``build_bundle`` (here) writes it, every inclusion proof against its one checkpoint; ``verify_bundle``
(:mod:`g6.prove.bundle_verify`) needs nothing but the zip and, to pin trust, the public key: it gives one
verdict per citation with a result per check (receipt signature, inclusion in the checkpoint, the read
it records, blob digests, the cited text still at its offsets in that blob, the manifest's quote in that
text) plus the bundle-wide checks, one of which is that every checkpoint it shows is of one history.

A bundle is untrusted input, read the way a hostile zip must be read:

- nothing is extracted to disk; members are looked up by the names the verifier expects;
- member names that are absolute, hold ``..``, control characters or a backslash, or repeat, fail
  the index check, and such members are never opened;
- only stored and deflate members are opened (bzip2/LZMA inflate without a bound in the standard
  library), and none whose sizes claim more than deflate can produce or overlap another;
- ``bundle.json`` declares the sha256 and size of every member; each member is inflated at most once,
  streaming, never past its declared size (so the total never passes the declared total), and
  must hash to what is declared. Records (manifest, receipts, proofs, keys) have small size limits;
  blobs are hashed streaming against the digests and size of the verified receipt;
- what the verdicts show (citation id, receipt id, URL, quote) is recomputed from the verified
  receipt and the verified body, never copied from the manifest, which may be unsigned.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from g6.cite.manifest import Manifest
from g6.errors import BundleError, LedgerError
from g6.home import EvidenceHome
from g6.ledger.merkle import TreeView
from g6.ledger.note import Checkpoint, NoteError, parse_note, signed_by, verifier_key
from g6.ledger.proofs import ConsistencyProof
from g6.ledger.receipts import utc_now
from g6.ledger.transparency.timestamp import KIND as TIMESTAMP_KIND
from g6.prove.bundle_history import consistency_name, timestamp_name
from g6.prove.bundle_redactions import packed
from g6.prove.bundle_report import MISBEHAVIOR
from g6.prove.bundle_verify import BundleCheck, BundleReport, CitationVerdict, PinnedKey, verify_bundle
from g6.prove.bundle_zip import MAX_INDEX, MAX_MEMBERS, MAX_PARSED_BODY, MAX_RECORDS_TOTAL, SCHEMA
from g6.prove.proofs import covering_checkpoint, prove
from g6.prove.witness import cosigned

__all__ = ["MAX_CARRIED", "MAX_INDEX", "MAX_PARSED_BODY", "SCHEMA", "BundleCheck", "BundleError", "BundleReport",
           "CitationVerdict", "PinnedKey", "build_bundle", "verify_bundle"]

MAX_CARRIED = 1000  # consistency proofs from the checkpoints the ledger issued (the newest sizes first)


def build_bundle(home: EvidenceHome, manifest_path: str | os.PathLike[str], out: str | os.PathLike[str], *,
                 kept: Sequence[tuple[str, str]] = (),
                 progress: Callable[[int, int], None] | None = None,
                 also: Sequence[str] = ()) -> dict[str, Any]:
    """Pack the manifest, its receipts, blobs, proofs, checkpoint and keys into a zip at ``out``, with a
    consistency proof from every checkpoint the ledger issued to the bundle's, and from each ``kept``
    (label, signed note) checkpoint a grader kept (LedgerError, naming the misbehavior, when one is not of
    this ledger's history; BundleError when it is no checkpoint of this log).
    ``progress(steps done, steps)``: a step per receipt read, per proof, per file written. ``also``: receipt
    ids packed too, with their blobs and inclusion proofs, though the manifest cites none of them (the reads a
    report check's other verdicts rest on: ``g6 report bundle``); with some, the manifest may cite nothing."""
    try:
        manifest_bytes = Path(manifest_path).read_bytes()
    except OSError as e:
        raise BundleError(f"cannot read the manifest {manifest_path}: {e.strerror or e}") from None
    if len(manifest_bytes) > MAX_INDEX:  # verify would refuse it: say so now, not to the grader
        raise BundleError(f"the manifest is {len(manifest_bytes)} bytes; a bundle carries at most {MAX_INDEX}")
    try:
        data = json.loads(manifest_bytes)
    except (ValueError, RecursionError) as e:
        raise BundleError(f"{manifest_path} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise BundleError(f"{manifest_path} is not a manifest object")
    manifest = Manifest.from_json(data)
    if not manifest.citations and not also:
        raise BundleError("the manifest cites nothing")
    files: dict[str, bytes] = {"manifest.json": manifest_bytes}
    receipt_ids = sorted({c.receipt_id for c in manifest.citations} | set(also))
    carried = {rid: home.ledger.get(rid) for rid in receipt_ids}
    # a rendered capture's requests: each receipt, with its inclusion proof, so a grader sees what the page
    # loaded and verifies it; their bodies stay home (the capture names each body's sha256)
    parts = sorted({str(x["receipt_id"]) for r in carried.values() if isinstance(r.capture, dict)
                    for x in r.capture.get("resources") or () if isinstance(x, dict)} - set(receipt_ids))
    # done, and at most (the files are counted once the blobs are known)
    steps = [0, 5 * len(receipt_ids) + 2 * len(parts) + 5]

    def step() -> None:
        steps[0] += 1
        if progress is not None:
            progress(steps[0], max(steps))
    # a cited body that was redacted travels as the redaction entry that took it out (g6.prove.bundle_redactions)
    red = home.redactions()
    gone = {str(ref["blake3"]): g for r in carried.values() for _, ref in r.blobs()
            if (g := packed(red, ref)) is not None}  # blake3 -> (member, its bytes, the entry's id)
    receipt_ids = sorted({*receipt_ids, *(g[2] for g in gone.values())})
    # one checkpoint covering every cited receipt, so all proofs share it
    cp, note, _ = covering_checkpoint(home, max(home.ledger.index_of(r) for r in receipt_ids))
    note = cosigned(home.ledger, cp, note)  # the witnesses' cosignatures travel with it
    for rid in receipt_ids:
        receipt = carried.get(rid) or home.ledger.get(rid)
        files[f"receipts/{rid}.json"] = json.dumps(receipt.to_json(), indent=2, ensure_ascii=False).encode()
        for _, ref in receipt.blobs():  # its body, a capture's text and screenshot, the certificates over TLS
            kept_out = gone.get(ref.get("blake3")) if isinstance(ref, Mapping) else None
            if kept_out is not None:  # taken out on the record: the entry's id stands in its place
                files[kept_out[0]] = kept_out[1]
                continue
            data = home.store.read_as(ref)  # BlobCorrupt (one line, exit 1) for a malformed reference too
            files[f"blobs/{str(ref['blake3']).split(':', 1)[1]}"] = data
        step()
    for rid in parts:
        files[f"receipts/{rid}.json"] = json.dumps(home.ledger.get(rid).to_json(), indent=2,
                                                   ensure_ascii=False).encode()
        step()
    tree = home.ledger.tree()  # hashed once for every proof
    for rid in [*receipt_ids, *parts]:
        proof, _ = prove(home, rid, tree)
        if proof.checkpoint_note != note:
            raise BundleError("the ledger checkpoint changed while bundling; run again")
        files[f"proofs/{rid}.tlog-proof"] = proof.text().encode()
        step()
    files.update(_consistency(home, tree, cp, note, kept))
    files.update(_timestamps(home, cp, files))
    files["checkpoint.note"] = note.encode()
    key = home.signing_key().public
    files["keys/signing.pub"] = (key.to_text() + "\n").encode()
    files["keys/checkpoint.vkey"] = (verifier_key(home.ledger.origin, key) + "\n").encode()
    for kid, k in home.keys.trusted().items():
        files[f"keys/trusted/{kid.replace(':', '_')}.pub"] = (k.to_text() + "\n").encode()
    index = {"schema": SCHEMA, "manifest_id": manifest.manifest_id, "created_at": utc_now(),
             "origin": home.ledger.origin,
             "files": {name: {"sha256": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}
                       for name, data in sorted(files.items())}}
    records = sum(len(d) for n, d in files.items() if not n.startswith("blobs/"))
    if len(files) + 1 > MAX_MEMBERS or records > MAX_RECORDS_TOTAL:  # verify would refuse it: say so now
        raise BundleError(f"the bundle would hold {len(files) + 1} files and {records} bytes of records; "
                          f"`g6 bundle verify` reads at most {MAX_MEMBERS} files and {MAX_RECORDS_TOTAL} bytes")
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    steps[1] = 2 * len(receipt_ids) + 2 * len(parts) + len(files)
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("bundle.json", json.dumps(index, indent=2))
        for name, data in sorted(files.items()):
            z.writestr(name, data)
            step()
    os.replace(tmp, out)
    return index


def _kept_checkpoint(home: EvidenceHome, label: str, note: str) -> Checkpoint:
    """A checkpoint a grader kept, signed by a key this home trusts for this log; BundleError otherwise."""
    origin = home.ledger.origin
    try:
        cp = Checkpoint.parse(parse_note(note)[0])
    except NoteError as e:
        raise BundleError(f"--checkpoint {label} is not a signed checkpoint note: {e}") from None
    if cp.origin != origin:
        raise BundleError(f"--checkpoint {label} is a checkpoint of {cp.origin}, this ledger is {origin}")
    if not any(signed_by(note, k, origin) for k in home.trusted().values()):
        raise BundleError(f"--checkpoint {label} is not signed by a key this home trusts")
    return cp


def _consistency(home: EvidenceHome, tree: TreeView, bundle_cp: Checkpoint, bundle_note: str,
                 kept: Sequence[tuple[str, str]]) -> dict[str, bytes]:
    """``proofs/consistency/<old>-<new>.tlog-consistency`` between the bundle's checkpoint and each other
    one a grader may hold: those the ledger issued (signed by the current key, the newest MAX_CARRIED
    sizes) and those in ``kept``. A checkpoint that is not of the ledger's history is refused in words a
    grader would use (LedgerError: exit 1), never packed."""
    key, origin = home.signing_key().public, home.ledger.origin
    chosen: dict[int, tuple[Checkpoint, str, str]] = {}  # size -> (checkpoint, its note, what it is)
    for cp, n in reversed(home.ledger.checkpoints()):
        if len(chosen) >= MAX_CARRIED:
            break
        if cp.size not in chosen and signed_by(n, key, origin):
            chosen[cp.size] = (cp, n, f"the ledger's checkpoint of size {cp.size}")
    for label, n in kept:
        cp = _kept_checkpoint(home, label, n)
        have = chosen.get(cp.size)
        if have is not None and have[0].root != cp.root:
            raise LedgerError(f"--checkpoint {label}: {MISBEHAVIOR}: the ledger issued another checkpoint of size "
                              f"{cp.size}; run `g6 ledger verify --checkpoint {label}`")
        chosen.setdefault(cp.size, (cp, n, f"--checkpoint {label}"))
    files = {}
    for size, (cp, n, what) in sorted(chosen.items()):
        if size == 0:
            continue
        if size > len(tree):
            raise LedgerError(f"{what} covers {size} receipts, the ledger holds only {len(tree)} (receipts removed "
                              "from the end?); run `g6 ledger verify`")
        if tree.root(size) != cp.root or (size == bundle_cp.size and cp.root != bundle_cp.root):
            raise LedgerError(f"{what}: {MISBEHAVIOR}: the ledger's first {size} receipts do not hash to its root; "
                              "run `g6 ledger verify`")
        if size == bundle_cp.size:
            continue
        old, new = sorted((size, bundle_cp.size))
        old_note, new_note = (n, bundle_note) if size < bundle_cp.size else (bundle_note, n)
        proof = ConsistencyProof(old, new, tuple(tree.consistency_proof(old, new)), old_note, new_note)
        files[consistency_name(old, new)] = proof.text().encode()
    return files


def _timestamps(home: EvidenceHome, bundle_cp: Checkpoint, files: dict[str, bytes]) -> dict[str, bytes]:
    """``timestamps/<size>-<n>.json``: every RFC 3161 token kept beside the bundle's checkpoint, or beside a
    checkpoint a carried consistency proof ties to it (the verifier reads the note body each is over there)."""
    out: dict[str, bytes] = {}
    seen: set[tuple[int, bytes]] = set()
    for cp, _ in home.ledger.checkpoints():
        if (cp.size, cp.root) in seen or cp.size == 0:
            continue
        seen.add((cp.size, cp.root))
        lo, hi = sorted((cp.size, bundle_cp.size))
        mine = cp.size == bundle_cp.size and cp.root == bundle_cp.root
        if not mine and (cp.size == bundle_cp.size or consistency_name(lo, hi) not in files):
            continue
        for n, (_, name, value) in enumerate(home.ledger.kept_beside(cp, TIMESTAMP_KIND)):
            out[timestamp_name(cp.size, n)] = json.dumps({"tsa": name, "token": value}, indent=2).encode()
    return out
