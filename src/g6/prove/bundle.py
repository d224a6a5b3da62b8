"""Offline evidence bundles: a manifest with everything needed to check it, in one zip.

``report-evidence.zip``::

    bundle.json                 index: schema, manifest id, origin, sha256 and size of every other file
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
blob digests, the cited text still at its offsets in that blob, the manifest's quote in that text)
plus the bundle-wide checks.

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
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import blake3

from g6.adapters.search import SearchRequest
from g6.adapters.sources import SOURCES
from g6.adapters.web import media_type
from g6.cite.cite import paper_citation_id, short_quote, web_citation_id
from g6.cite.manifest import Citation, Manifest
from g6.cite.page_text import TEXT_SOURCES, cited_text
from g6.cite.passages import normalise, text_hash
from g6.errors import BundleError, BundleMemberError, G6Error
from g6.home import EvidenceHome
from g6.ledger.keys import VerifyKey
from g6.ledger.note import NoteError, open_checkpoint, verifier_key
from g6.ledger.proofs import ProofCheck as BundleCheck
from g6.ledger.proofs import verify_inclusion_proof
from g6.ledger.receipts import Receipt, utc_now
from g6.prove.proofs import covering_checkpoint, prove

__all__ = ["SCHEMA", "BundleCheck", "BundleError", "BundleReport", "CitationVerdict", "PinnedKey", "build_bundle",
           "verify_bundle"]

SCHEMA = "g6.bundle.v2"  # v2: bundle.json declares each member's size beside its sha256
MAX_MEMBERS = 10_000  # entries in the zip's central directory
MAX_CENTRAL_DIRECTORY = 4 << 20  # bytes; checked before zipfile parses it (it holds all of it in memory)
MAX_INDEX = 2 << 20  # bundle.json and manifest.json (a manifest costs ~5x its size in memory)
MAX_RECORD = 1 << 20  # a receipt, a proof, the checkpoint, a key
MAX_RECORDS_TOTAL = 32 << 20  # all members but blobs, together
MAX_BLOB = 1 << 30
MAX_TOTAL = 4 << 30  # everything the bundle declares, inflated
MAX_PARSED_BODY = 256 << 10  # an HTML page or a search reply re-read to check cited text (see README: memory)
MAX_PLAIN_BODY = 4 << 20  # a text body is only decoded, not parsed
DEFLATE_MAX_RATIO = 1032  # deflate cannot inflate more than this per compressed byte
CHUNK = 256 << 10
_ALLOWED_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, OSError, NotImplementedError,
               RuntimeError, ValueError, struct.error)
# what a hostile record can make json/rfc8785/our parsers raise: a verdict, never a traceback
_RECORD_ERRORS = (G6Error, ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError,
                  UnicodeError)
_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
# the only names a bundle has (see the module docstring); anything else is not a bundle's
_LAYOUT = re.compile(r"manifest\.json|checkpoint\.note|keys/signing\.pub|keys/checkpoint\.vkey"
                     r"|keys/trusted/[A-Za-z0-9_.-]{1,100}\.pub|receipts/[A-Za-z0-9_-]{1,100}\.json"
                     r"|proofs/[A-Za-z0-9_-]{1,100}\.tlog-proof|blobs/[0-9a-f]{64}")


@dataclass(frozen=True, slots=True)
class PinnedKey:
    """A key the verifier trusts. A C2SP verifier key also names its log (``origin``), and then the
    checkpoint must be of that log, as ``g6 verify-proof`` requires; an ``ed25519:`` key names none."""

    key: VerifyKey
    origin: str | None = None


@dataclass(frozen=True, slots=True)
class CitationVerdict:
    """One citation. ``citation_id``, ``receipt_id``, ``url`` and ``quote`` are set only from what
    verified (the signed receipt, the body that hashes to it); they are None where that failed."""

    position: int
    checks: tuple[BundleCheck, ...]
    citation_id: str | None = None
    receipt_id: str | None = None
    url: str | None = None
    quote: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {"position": self.position, "ok": self.ok, "citation_id": self.citation_id,
                "receipt_id": self.receipt_id, "url": self.url, "quote": self.quote,
                "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True, slots=True)
class BundleReport:
    manifest_id: str | None  # only from a manifest whose signature verified
    bundle_checks: tuple[BundleCheck, ...]
    citations: tuple[CitationVerdict, ...] = field(default=())
    manifest_signed: bool = False
    declared_bytes: int = 0
    inflated_bytes: int = 0

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.bundle_checks) and all(c.ok for c in self.citations) and \
            bool(self.citations)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "manifest_id": self.manifest_id, "manifest_signed": self.manifest_signed,
                "declared_bytes": self.declared_bytes, "inflated_bytes": self.inflated_bytes,
                "bundle_checks": [c.to_json() for c in self.bundle_checks],
                "citations": [c.to_json() for c in self.citations]}


def build_bundle(home: EvidenceHome, manifest_path: str | os.PathLike[str], out: str | os.PathLike[str], *,
                 progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Pack the manifest, its receipts, blobs, proofs, checkpoint and keys into a zip at ``out``.
    ``progress(steps done, steps)``: a step per receipt read, per proof, per file written."""
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
    if not manifest.citations:
        raise BundleError("the manifest cites nothing")
    files: dict[str, bytes] = {"manifest.json": manifest_bytes}
    receipt_ids = sorted({c.receipt_id for c in manifest.citations})
    steps = [0, 5 * len(receipt_ids) + 5]  # done, and at most (the files are counted once the blobs are known)

    def step() -> None:
        steps[0] += 1
        if progress is not None:
            progress(steps[0], max(steps))
    # one checkpoint covering every cited receipt, so all proofs share it
    _, note, _ = covering_checkpoint(home, max(home.ledger.index_of(r) for r in receipt_ids))
    for rid in receipt_ids:
        receipt = home.ledger.get(rid)
        files[f"receipts/{rid}.json"] = json.dumps(receipt.to_json(), indent=2, ensure_ascii=False).encode()
        if receipt.content:
            hexd = str(receipt.content["blake3"]).split(":", 1)[1]
            files[f"blobs/{hexd}"] = home.store.read_as(receipt.content)
        step()
    tree = home.ledger.tree()  # hashed once for every proof
    for rid in receipt_ids:
        proof, _ = prove(home, rid, tree)
        if proof.checkpoint_note != note:
            raise BundleError("the ledger checkpoint changed while bundling; run again")
        files[f"proofs/{rid}.tlog-proof"] = proof.text().encode()
        step()
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
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    steps[1] = 2 * len(receipt_ids) + len(files)
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("bundle.json", json.dumps(index, indent=2))
        for name, data in sorted(files.items()):
            z.writestr(name, data)
            step()
    os.replace(tmp, out)
    return index


# --- reading an untrusted zip -------------------------------------------------------------------


def _shown(s: object, n: int = 80) -> str:
    """An untrusted string as it may appear in a verdict: quoted, escaped, cut."""
    text = str(s)
    return ascii(text[:n] + ("…" if len(text) > n else ""))


def _name_problem(name: str) -> str | None:
    if not name:
        return "an empty name"
    if len(name) > 512:
        return "a name over 512 characters"
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        return "an absolute name"
    if "\\" in name or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "a backslash or control character in the name"
    parts = name.split("/")
    if ".." in parts:
        return "'..' in the name"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' path part"
    return None


def _central_directory(fp: BinaryIO) -> tuple[int, int, int] | None:
    """(entries, size, offset) of the zip's central directory, read from its end record before
    zipfile parses (and holds in memory) the whole directory. None when there is no end record;
    zipfile then says what is wrong."""
    fp.seek(0, os.SEEK_END)
    size = fp.tell()
    tail_len = min(size, 22 + 0xFFFF)
    fp.seek(size - tail_len)
    tail = fp.read(tail_len)
    i = tail.rfind(b"PK\x05\x06")
    if i < 0 or len(tail) - i < 22:
        return None
    _, _, _, _, entries, cd_size, cd_offset, _ = struct.unpack("<4s4H2LH", tail[i:i + 22])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        loc = i - 20  # the zip64 end locator sits right before the end record
        if loc < 0 or tail[loc:loc + 4] != b"PK\x06\x07":
            return None
        _, _, z64_offset, _ = struct.unpack("<4sLQL", tail[loc:loc + 20])
        fp.seek(z64_offset)
        rec = fp.read(56)
        if len(rec) < 56 or rec[:4] != b"PK\x06\x06":
            return None
        _, _, _, _, _, _, _, entries, cd_size, cd_offset = struct.unpack("<4sQ2H2L4Q", rec)
    fp.seek(0)
    return entries, cd_size, cd_offset


def _zip_problems(infos: list[zipfile.ZipInfo], cd_offset: int | None) -> tuple[list[str], dict[str, str]]:
    """Problems of the archive as a whole, and the members never to open (name -> why)."""
    problems: list[str] = []
    refused: dict[str, str] = {}
    for info in infos:
        shown = _shown(info.filename)
        method = _ALLOWED_METHODS.get(info.compress_type)
        if method is None:
            refused[info.filename] = f"{shown} uses compression method {info.compress_type}; bundles use deflate"
        elif info.flag_bits & 0x1:
            refused[info.filename] = f"{shown} is encrypted"
        elif info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            refused[info.filename] = f"{shown} is stored but claims {info.file_size} bytes from {info.compress_size}"
        elif info.file_size > DEFLATE_MAX_RATIO * info.compress_size + 1024:
            refused[info.filename] = (f"{shown} claims {info.file_size} bytes from {info.compress_size} compressed, "
                                      "more than deflate can produce")
    problems += sorted(set(refused.values()))
    # members must not overlap: each local header + data ends before the next starts (a quoted-overlap
    # bomb points many entries at one stream)
    ordered = sorted(infos, key=lambda i: i.header_offset)
    for a, b in zip(ordered, [*ordered[1:], None], strict=True):
        end = a.header_offset + 30 + len(a.orig_filename.encode("utf-8", "replace")) + a.compress_size
        limit = b.header_offset if b is not None else cd_offset
        if limit is not None and end > limit:
            problems.append(f"{_shown(a.filename)} overlaps the next member or the directory")
            refused[a.filename] = f"{_shown(a.filename)} overlaps another member"
    return problems, refused


class _Members:
    """The bundle's members, each opened at most once, read bounded by what ``bundle.json`` declares."""

    def __init__(self, z: zipfile.ZipFile, infos: Mapping[str, zipfile.ZipInfo], refused: Mapping[str, str],
                 declared: Mapping[str, tuple[str, int]], progress: Callable[[int, int], None] | None = None) -> None:
        self.z = z
        self.progress = progress
        self.infos = infos
        self.refused = dict(refused)
        self.declared = declared
        self.results: dict[str, str] = {}  # name -> "" when it matched its declaration, else why not
        self.inflated = 0

    def _limit(self, name: str) -> int:
        if name in ("manifest.json", "bundle.json"):
            return MAX_INDEX
        return MAX_BLOB if name.startswith("blobs/") else MAX_RECORD

    def stream(self, name: str, sink: Callable[[bytes], None] | None = None) -> None:
        """Inflate ``name`` chunk by chunk into ``sink``; BundleMemberError unless it is exactly what
        bundle.json declares (size and sha256)."""
        shown = _shown(name)
        if name in self.results:
            if self.results[name]:
                raise BundleMemberError(self.results[name])
            raise BundleMemberError(f"{shown} was already read once")  # never inflate a member twice
        why = None
        if name not in self.declared:
            why = f"{shown} is not listed in bundle.json"
        elif name not in self.infos:
            why = f"the bundle has no {shown}"
        elif name in self.refused:
            why = self.refused[name]
        if why is None:
            want_sha, want_size = self.declared[name]
            info = self.infos[name]
            if want_size > self._limit(name):
                why = f"{shown} declares {want_size} bytes, over the {self._limit(name)} allowed for it"
            elif info.file_size != want_size:
                why = f"{shown}: the zip says {info.file_size} bytes, bundle.json {want_size}"
        if why is not None:
            self.results[name] = why
            raise BundleMemberError(why)
        h = hashlib.sha256()
        n = 0
        try:
            with self.z.open(info) as f:
                while True:
                    chunk = f.read(min(CHUNK, want_size - n + 1))
                    if not chunk:
                        break
                    n += len(chunk)
                    self.inflated += len(chunk)
                    if n > want_size:
                        raise BundleMemberError(f"{shown} inflates past its declared {want_size} bytes")
                    h.update(chunk)
                    if sink is not None:
                        sink(chunk)
        except BundleMemberError as e:
            why = str(e)
        except _ZIP_ERRORS as e:
            why = f"{shown} is unreadable ({type(e).__name__}: {e})"
        else:
            if n != want_size:
                why = f"{shown} inflates to {n} bytes, not its declared {want_size}"
            elif "sha256:" + h.hexdigest() != want_sha:
                why = f"{shown} does not hash to the sha256 bundle.json declares"
        self.results[name] = why or ""
        if self.progress is not None:
            self.progress(len(self.results), max(len(self.declared), len(self.results)))
        if why:
            raise BundleMemberError(why)

    def read(self, name: str) -> bytes:
        buf = bytearray()
        self.stream(name, buf.extend)
        return bytes(buf)


def _strict_json(data: bytes, what: str) -> Any:
    """JSON as RFC 8259 has it: UTF-8, no NaN/Infinity, no repeated key (json.loads keeps the last
    of a repeated key, so a reader and a signer could see different objects)."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in items:
            if k in d:
                raise BundleMemberError(f"{what} repeats the key {_shown(k, 40)}")
            d[k] = v
        return d

    def constant(name: str) -> Any:
        raise BundleMemberError(f"{what} holds {name}, which is not JSON")

    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except UnicodeDecodeError:
        raise BundleMemberError(f"{what} is not UTF-8") from None
    except RecursionError:
        raise BundleMemberError(f"{what} is nested too deeply") from None
    except ValueError as e:
        raise BundleMemberError(f"{what} is not JSON: {e}") from None


def _declared_files(index: Any) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """bundle.json's file table, and what is wrong with it."""
    if not isinstance(index, dict):
        raise BundleMemberError("bundle.json is not a JSON object")
    if index.get("schema") != SCHEMA:
        raise BundleMemberError(f"bundle.json is not a {SCHEMA} index (schema {_shown(index.get('schema'), 40)}); "
                                "bundles made before sizes were declared must be made again with `g6 bundle`")
    files = index.get("files")
    if not isinstance(files, dict) or not files:
        raise BundleMemberError("bundle.json lists no files")
    if len(files) > MAX_MEMBERS:
        raise BundleMemberError(f"bundle.json lists {len(files)} files, over {MAX_MEMBERS}")
    declared: dict[str, tuple[str, int]] = {}
    problems: list[str] = []
    for name, entry in files.items():
        bad = _name_problem(name) or (None if _LAYOUT.fullmatch(name) else "not a name a bundle has")
        if bad:
            problems.append(f"bundle.json lists {_shown(name)}: {bad}")
            continue
        sha = entry.get("sha256") if isinstance(entry, dict) else None
        size = entry.get("size") if isinstance(entry, dict) else None
        if not (isinstance(sha, str) and sha.startswith("sha256:") and _HEX64.fullmatch(sha[7:])
                and type(size) is int and size >= 0):
            problems.append(f"bundle.json entry {_shown(name)} is not {{sha256, size}}")
            continue
        declared[name] = (sha, size)
    records = sum(s for n, (_, s) in declared.items() if not n.startswith("blobs/"))
    total = sum(s for _, s in declared.values())
    if records > MAX_RECORDS_TOTAL:
        problems.append(f"bundle.json declares {records} bytes of records, over {MAX_RECORDS_TOTAL}")
    if total > MAX_TOTAL:
        problems.append(f"bundle.json declares {total} bytes in all, over {MAX_TOTAL}")
    return declared, problems


# --- verifying ------------------------------------------------------------------------------------


def verify_bundle(path: str | os.PathLike[str], keys: Sequence[VerifyKey | PinnedKey] = (),
                  trust_bundle_keys: bool = False, *, origin: str | None = None, allow_unsigned: bool = False,
                  max_parsed_body: int = MAX_PARSED_BODY,
                  progress: Callable[[int, int], None] | None = None) -> BundleReport:
    """Check a bundle offline. ``keys`` pins the publisher's public key(s); without them the
    report fails ``key_pinned`` unless ``trust_bundle_keys`` says to take the bundle's own.
    ``origin`` (or the origin a verifier key names) pins the log the checkpoint must be of.
    An unsigned manifest fails ``manifest_signature`` unless ``allow_unsigned``. ``progress(members
    checked, members)`` is called as each member is read."""
    pinned = tuple(k if isinstance(k, PinnedKey) else PinnedKey(k) for k in keys)
    try:
        with open(path, "rb") as fp:
            cd = _central_directory(fp)
            if cd is not None and (cd[0] > MAX_MEMBERS or cd[1] > MAX_CENTRAL_DIRECTORY):
                return BundleReport(None, (BundleCheck("zip", False, f"the zip has {cd[0]} entries in a "
                                                       f"{cd[1]}-byte directory, over {MAX_MEMBERS} entries or "
                                                       f"{MAX_CENTRAL_DIRECTORY} bytes"),))
            with zipfile.ZipFile(fp) as z:
                return _Verifier(z, cd[2] if cd else None, pinned, trust_bundle_keys, origin, allow_unsigned,
                                 max_parsed_body, progress).run()
    except _ZIP_ERRORS as e:
        return BundleReport(None, (BundleCheck("zip", False, f"not a readable zip: {e}"),))


@dataclass(frozen=True, slots=True)
class _Trusted:
    """What a citation may use of a receipt that verified: nothing else of it is kept."""

    receipt_id: str
    kind: str
    source: str
    url: str
    request_url: str
    request: Mapping[str, Any]
    http_status: int
    content_type: str | None
    content: Mapping[str, Any] | None


@dataclass(slots=True)
class _ReceiptResult:
    checks: list[BundleCheck]
    trusted: _Trusted | None


@dataclass(slots=True)
class _Pending:
    position: int
    citation: Citation | None
    checks: list[BundleCheck]
    trusted: _Trusted | None = None
    citation_id: str | None = None
    url: str | None = None
    quote: str | None = None


def _content_ok(content: Mapping[str, Any] | None) -> bool:
    if not content:
        return False
    b3, sha, size = content.get("blake3"), content.get("sha256"), content.get("size")
    return (isinstance(b3, str) and b3.startswith("blake3:") and bool(_HEX64.fullmatch(b3[7:]))
            and isinstance(sha, str) and sha.startswith("sha256:") and bool(_HEX64.fullmatch(sha[7:]))
            and type(size) is int and size >= 0)


class _Verifier:
    def __init__(self, z: zipfile.ZipFile, cd_offset: int | None, pinned: tuple[PinnedKey, ...],
                 trust_bundle_keys: bool, origin: str | None, allow_unsigned: bool, max_parsed_body: int,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.z = z
        self.progress = progress
        self.cd_offset = cd_offset
        self.pinned = pinned
        self.trust_bundle_keys = trust_bundle_keys
        self.origin = origin
        self.allow_unsigned = allow_unsigned
        self.max_parsed_body = max_parsed_body
        self.checks: list[BundleCheck] = []
        self.index_problems: list[str] = []
        self.members: _Members | None = None
        self.declared_total = 0
        self.root_inflated = 0

    def _report(self, manifest_id: str | None = None, citations: Iterable[CitationVerdict] = (),
                signed: bool = False) -> BundleReport:
        inflated = self.members.inflated if self.members else self.root_inflated
        return BundleReport(manifest_id, tuple(self.checks), tuple(citations), signed, self.declared_total, inflated)

    def _index_check(self) -> BundleCheck:
        problems = list(dict.fromkeys(self.index_problems))
        detail = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        return BundleCheck("index", not problems, detail)

    def run(self) -> BundleReport:
        infos = self.z.infolist()
        zip_problems, refused = _zip_problems(infos, self.cd_offset)
        by_name: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            bad = _name_problem(info.filename)
            if bad:
                self.index_problems.append(f"member {_shown(info.filename)}: {bad}")
                refused[info.filename] = f"{_shown(info.filename)} has {bad}"
            if info.filename in by_name:
                self.index_problems.append(f"member {_shown(info.filename)} appears more than once")
                refused[info.filename] = f"{_shown(info.filename)} appears more than once"
            by_name[info.filename] = info
        self.checks.append(BundleCheck("zip", not zip_problems, "; ".join(zip_problems[:8])))
        # bundle.json is the root of the member digests, so it is read bounded but against nothing
        try:
            root = by_name.get("bundle.json")
            if root is None:
                raise BundleMemberError("the bundle has no bundle.json")
            if "bundle.json" in refused:
                raise BundleMemberError(refused["bundle.json"])
            if root.file_size > MAX_INDEX:
                raise BundleMemberError(f"bundle.json is {root.file_size} bytes, over {MAX_INDEX}")
            try:
                with self.z.open(root) as f:
                    raw = f.read(MAX_INDEX + 1)
            except _ZIP_ERRORS as e:
                raise BundleMemberError(f"bundle.json is unreadable ({type(e).__name__}: {e})") from None
            self.root_inflated = len(raw)
            if len(raw) != root.file_size:
                raise BundleMemberError(f"bundle.json inflates to {len(raw)} bytes, not the {root.file_size} "
                                        "the zip declares")
            index = _strict_json(raw, "bundle.json")
            declared, problems = _declared_files(index)
        except BundleMemberError as e:
            self.index_problems.append(str(e))
            self.checks.append(self._index_check())
            return self._report()
        self.index_problems += problems
        self.declared_total = sum(s for _, s in declared.values()) + root.file_size
        self.index_problems += [f"bundle.json lists {_shown(n)}, which the zip does not hold"
                                for n in sorted(declared) if n not in by_name]
        self.index_problems += [f"the zip holds {_shown(n)}, which bundle.json does not list"
                                for n in sorted(by_name) if n not in declared and n != "bundle.json"]
        if any(p.startswith("bundle.json declares") for p in problems):
            self.checks.append(self._index_check())
            return self._report()
        self.members = _Members(self.z, by_name, refused, declared, self.progress)
        self.members.inflated += self.root_inflated
        return self._verify(index)

    def _record(self, name: str) -> bytes:
        assert self.members is not None
        return self.members.read(name)

    def _keys(self) -> list[PinnedKey]:
        if self.pinned:
            self.checks.append(BundleCheck("key_pinned", True, "pinned " + ", ".join(
                k.key.key_id + (f" (log {k.origin})" if k.origin else "") for k in self.pinned)))
            return list(self.pinned)
        bundle_keys: list[PinnedKey] = []
        assert self.members is not None
        for name in ["keys/signing.pub", *sorted(n for n in self.members.declared if n.startswith("keys/trusted/"))]:
            try:
                bundle_keys.append(PinnedKey(VerifyKey.from_text(self._record(name).decode("utf-8"))))
            except (G6Error, UnicodeDecodeError) as e:
                self.index_problems.append(str(e) if isinstance(e, BundleMemberError) else f"{name}: {e}")
        if self.trust_bundle_keys:
            self.checks.append(BundleCheck("key_pinned", bool(bundle_keys),
                                           "trusting the keys inside the bundle, as asked" if bundle_keys
                                           else "the bundle holds no readable key"))
        else:
            self.checks.append(BundleCheck("key_pinned", False, "no --key given: keys shipped inside the bundle "
                                                                "prove nothing; pin the publisher's"))
        return bundle_keys

    def _checkpoint(self, keys: list[PinnedKey]) -> tuple[VerifyKey, str] | None:
        """The pinned key that signs the checkpoint and the checkpoint's origin, checked as
        ``g6 verify-proof`` checks it: the origin a verifier key (or ``origin``) names must be the
        checkpoint's."""
        try:
            note = self._record("checkpoint.note").decode("utf-8")
        except (BundleMemberError, UnicodeDecodeError) as e:
            self.checks.append(BundleCheck("checkpoint_signature", False, str(e)))
            return None
        why: list[str] = []
        for k in keys:
            want = self.origin or k.origin
            try:
                cp = open_checkpoint(note, k.key, want)
            except NoteError as e:
                why.append(str(e))
                continue
            pin = ("the origin is pinned by --origin" if self.origin else
                   "the origin is pinned by the verifier key" if k.origin else
                   "the origin is not pinned: give the verifier key or --origin to pin it")
            self.checks.append(BundleCheck("checkpoint_signature", True, f"{cp.origin} size {cp.size}; {pin}"))
            return k.key, cp.origin
        if not keys:
            why.append("no key to check it with")
        self.checks.append(BundleCheck("checkpoint_signature", False,
                                       "the checkpoint is not signed by a pinned key: "
                                       + "; ".join(dict.fromkeys(_shown(w, 160)[1:-1] for w in why))))
        return None

    def _verify(self, index: Mapping[str, Any]) -> BundleReport:
        keys = self._keys()
        trusted = {k.key.key_id: k.key for k in keys}
        signer = self._checkpoint(keys)
        if signer is not None and index.get("origin") != signer[1]:
            self.index_problems.append(f"bundle.json names the log {_shown(index.get('origin'))}, the checkpoint "
                                       f"{_shown(signer[1])}")
        try:
            manifest = self._manifest()
        except _RECORD_ERRORS as e:
            self.checks.append(BundleCheck("manifest", False, str(e)))
            self._finish_index()
            return self._report()
        signed = False
        if manifest.signature is None:
            if self.allow_unsigned:
                self.checks.append(BundleCheck("manifest_signature", True,
                                               "missing, accepted by --allow-unsigned: nobody signed which "
                                               "citations this is; each is checked against its receipt"))
            else:
                self.checks.append(BundleCheck("manifest_signature", False, "missing"))
        else:
            try:
                signed, why = manifest.verify_signature(trusted)
            except _RECORD_ERRORS as e:
                signed, why = False, f"unreadable: {e}"
            self.checks.append(BundleCheck("manifest_signature", signed, why))
        if signed and index.get("manifest_id") != manifest.manifest_id:
            self.index_problems.append("bundle.json names another manifest id than the signed manifest's")
        verdicts = self._citations(manifest.citations, trusted, signer)
        self._finish_index()
        return self._report(manifest.manifest_id if signed else None, verdicts, signed)

    def _manifest(self) -> Manifest:
        """Parsed in its own frame, so the raw bytes and the JSON tree are freed once it returns."""
        data = _strict_json(self._record("manifest.json"), "manifest.json")
        if not isinstance(data, dict):
            raise BundleMemberError("manifest.json is not a JSON object")
        manifest = Manifest.from_json(data)
        if not manifest.citations:
            raise BundleMemberError("the manifest cites nothing")
        return manifest

    def _finish_index(self) -> None:
        """Read every member nothing else read, so each is checked against its declared digest once."""
        assert self.members is not None
        for name in sorted(self.members.declared):
            if name not in self.members.results and name in self.members.infos:
                try:
                    self.members.stream(name)
                except BundleMemberError:
                    pass
        self.index_problems += [why for why in self.members.results.values() if why]
        self.checks.insert(1, self._index_check())

    # -- citations ---------------------------------------------------------------------------------

    def _citations(self, citations: Sequence[Citation], trusted: Mapping[str, VerifyKey],
                   signer: tuple[VerifyKey, str] | None) -> list[CitationVerdict]:
        receipts: dict[str, _ReceiptResult] = {}
        pending: list[_Pending] = []
        for i, c in enumerate(citations, 1):
            rid = c.receipt_id
            if not isinstance(rid, str) or not _ID.fullmatch(rid):
                pending.append(_Pending(i, None, [BundleCheck("receipt", False, "the citation's receipt id is "
                                                                                 "not an id")]))
                continue
            if rid not in receipts:
                receipts[rid] = self._receipt(rid, trusted, signer)
            r = receipts[rid]
            pending.append(_Pending(i, c, list(r.checks), r.trusted))
        # one blob in memory at a time: the citations of a blob are checked together
        by_blob: dict[str, list[_Pending]] = {}
        for p in pending:
            if p.trusted is None or p.citation is None:
                if p.citation is not None:
                    p.checks.append(BundleCheck("cited_text", False, "not checked: the receipt does not verify"))
                continue
            content = p.trusted.content
            claimed = p.citation.content
            if not _content_ok(content):
                p.checks.append(BundleCheck("blob_digests", False, "the receipt names no well-formed body digests"))
                continue
            assert content is not None
            if not isinstance(claimed, Mapping) or dict(claimed) != dict(content):
                p.checks.append(BundleCheck("blob_digests", False, "the citation's digests are not the receipt's"))
                continue
            by_blob.setdefault("blobs/" + str(content["blake3"]).removeprefix("blake3:"), []).append(p)
        for name, group in sorted(by_blob.items()):
            self._blob(name, group)
        return [CitationVerdict(p.position, tuple(p.checks), p.citation_id,
                                p.trusted.receipt_id if p.trusted else None, p.url, p.quote) for p in pending]

    def _receipt(self, rid: str, trusted: Mapping[str, VerifyKey],
                 signer: tuple[VerifyKey, str] | None) -> _ReceiptResult:
        checks: list[BundleCheck] = []
        try:
            data = _strict_json(self._record(f"receipts/{rid}.json"), "the receipt")
            if not isinstance(data, dict):
                raise BundleMemberError(f"the receipt is a JSON {type(data).__name__}, not an object")
            receipt = Receipt.from_json(data)
            ok, why = receipt.verify_signature(trusted)
        except _RECORD_ERRORS as e:
            return _ReceiptResult([BundleCheck("receipt", False, str(e))], None)
        checks.append(BundleCheck("receipt_signature", ok, "" if ok else why))
        if ok and receipt.receipt_id != rid:
            ok = False
            checks.append(BundleCheck("receipt", False, f"receipts/{rid}.json holds another receipt"))
        checks.append(self._inclusion(rid, receipt, signer))
        if not ok:
            return _ReceiptResult(checks, None)
        # signed by a pinned key: its fields are as the publisher wrote them; still typed, not assumed
        request = receipt.request if isinstance(receipt.request, Mapping) else {}
        request_url = str(request.get("url") or "")
        detail = receipt.detail if isinstance(receipt.detail, Mapping) else {}
        ctype = detail.get("content_type")
        status = receipt.http_status if type(receipt.http_status) is int else 0
        return _ReceiptResult(checks, _Trusted(
            receipt.receipt_id, str(receipt.kind), str(receipt.source), str(receipt.final_url or request_url),
            request_url, request, status, ctype if isinstance(ctype, str) else None,
            receipt.content if isinstance(receipt.content, Mapping) else None))

    def _inclusion(self, rid: str, receipt: Receipt, signer: tuple[VerifyKey, str] | None) -> BundleCheck:
        try:
            proof = self._record(f"proofs/{rid}.tlog-proof").decode("utf-8")
        except (BundleMemberError, UnicodeDecodeError) as e:
            return BundleCheck("inclusion", False, str(e))
        if signer is None:
            return BundleCheck("inclusion", False, "not checked: the checkpoint does not verify with a pinned key")
        try:
            report = verify_inclusion_proof(proof, receipt, signer[0], signer[1])
        except _RECORD_ERRORS as e:
            return BundleCheck("inclusion", False, f"unreadable proof: {e}")
        # the receipt's own signature is checked against every pinned key above (a receipt signed
        # before a key rotation is fine); here only the proof counts, and it must name the receipt
        checks = {c.check: c for c in report.checks if c.check != "receipt_signature"}
        bad = [f"{c.check}: {c.detail}" for c in checks.values() if not c.ok]
        if "receipt_binding" not in checks:
            bad.append("the proof does not name the receipt it proves")
        if "inclusion" not in checks and not bad:
            bad.append("no inclusion path")
        return BundleCheck("inclusion", not bad, "; ".join(_shown(b, 200)[1:-1] for b in bad)
                           or checks["inclusion"].detail)

    def _blob(self, name: str, group: list[_Pending]) -> None:
        assert self.members is not None
        first = group[0].trusted
        assert first is not None and first.content is not None
        content = first.content
        want = (content.get("blake3"), content.get("sha256"), content.get("size"))
        size = content.get("size")
        declared = self.members.declared.get(name)
        limit = max(self.max_parsed_body, MAX_PLAIN_BODY)
        keep = isinstance(size, int) and size <= limit
        b3, sha = blake3.blake3(), hashlib.sha256()
        body = bytearray()

        def sink(chunk: bytes) -> None:
            b3.update(chunk)
            sha.update(chunk)
            if keep:
                body.extend(chunk)

        why = ""
        if declared is not None and (declared[0], declared[1]) != (content.get("sha256"), size):
            # the declaration must be the receipt's, so the read is bounded by the signed size
            why = "bundle.json declares another digest or size for this blob than the receipt"
        else:
            try:
                self.members.stream(name, sink)
            except BundleMemberError as e:
                why = str(e)
        if not why:
            got = ("blake3:" + b3.hexdigest(), "sha256:" + sha.hexdigest(), len(body) if keep else size)
            if got != want:
                why = "the blob does not hash to the receipt"
        data = bytes(body) if keep and not why else None
        body.clear()  # the copy above is what is kept
        memo: dict[tuple[Any, ...], Any] = {}  # a body is parsed once, however many citations it carries
        for p in group:
            p.checks.append(BundleCheck("blob_digests", not why, why))
            if why:
                p.checks.append(BundleCheck("cited_text", False, "not checked: the blob does not verify"))
                continue
            self._cited(p, data, memo)

    def _cited(self, p: _Pending, body: bytes | None, memo: dict[tuple[Any, ...], Any]) -> None:
        t, c = p.trusted, p.citation
        assert t is not None and c is not None and t.content is not None
        size = int(t.content.get("size") or 0)
        try:
            if c.kind == "search":
                found = self._search_text(t, c, body, size, memo)
            elif c.kind == "web":
                found = self._web_text(t, c, body, size, memo)
            else:
                raise BundleMemberError(f"unknown citation kind {_shown(c.kind, 20)}")
        except _RECORD_ERRORS as e:
            p.checks.append(BundleCheck("cited_text", False, str(e)))
            return
        if isinstance(found, str):
            p.checks.append(BundleCheck("cited_text", False, found))
            return
        verified_text, where, citation_id, url = found
        p.checks.append(BundleCheck("cited_text", True, where))
        p.quote, p.url, p.citation_id = short_quote(verified_text), url, citation_id
        quote = c.quote if isinstance(c.quote, str) else ""
        q = normalise(quote.removesuffix("…"))
        ok = bool(q) and q in normalise(verified_text)
        p.checks.append(BundleCheck("quote", ok, "" if ok else "the manifest's quote is not in the verified text"))
        wrong = [what for what, claimed, real in (("citation_id", c.citation_id, citation_id),
                                                   ("source_url", c.source_url, url))
                 if claimed != real]
        if c.kind == "web" and c.requested_url != t.request_url:
            wrong.append("requested_url")
        p.checks.append(BundleCheck("citation_fields", not wrong, "" if not wrong else
                                    "the manifest's " + ", ".join(wrong) + " differ from the verified receipt's"))

    def _too_big(self, size: int, limit: int, what: str) -> str:
        return (f"not checked: the {what} is {size} bytes; bundle verify re-reads at most {limit} "
                "(a memory bound; raise it with --max-parsed-body)")

    def _web_text(self, t: _Trusted, c: Citation, body: bytes | None, size: int,
                  memo: dict[tuple[Any, ...], Any]) -> str | tuple[str, str, str, str]:
        if t.kind not in ("fetch", "recheck"):
            return f"a web citation of a {_shown(t.kind, 20)} receipt"
        mtype = media_type(t.content_type, body[:1024] if body is not None else b"")
        parsed = mtype in ("text/html", "application/xhtml+xml") or t.content_type is None
        limit = self.max_parsed_body if parsed else MAX_PLAIN_BODY
        if body is None or size > limit:
            return self._too_big(size, limit, "page")
        if text_hash(c.text) != c.text_hash:
            return "the citation's text does not match its own hash"
        source = getattr(c, "text_source", None) or "main"
        if source not in TEXT_SOURCES:
            return f"unknown text_source {_shown(source, 20)}"
        key = ("web", t.url, t.content_type, source)
        if key not in memo:
            try:
                memo[key] = cited_text(body, t.url, t.content_type, source)
            except Exception as e:  # a page's parser failing is this citation's verdict, not a crash
                memo[key] = e
        if isinstance(memo[key], Exception):
            return f"the stored body could not be read again ({type(memo[key]).__name__})"
        text = memo[key]
        if text is None:
            return f"no {source} text in the stored body"
        start, end = c.start, c.end
        if type(start) is int and type(end) is int and 0 <= start <= end <= len(text) \
                and text_hash(text[start:end]) == c.text_hash:
            cited = text[start:end]
            return cited, f"at {start}-{end}", web_citation_id(t.receipt_id, start, end, cited, source), t.url
        return "the cited text is not at its offsets in the stored body"

    def _search_text(self, t: _Trusted, c: Citation, body: bytes | None, size: int,
                     memo: dict[tuple[Any, ...], Any]) -> str | tuple[str, str, str, str]:
        if t.kind != "search":
            return f"a search citation of a {_shown(t.kind, 20)} receipt"
        if body is None or size > self.max_parsed_body:
            return self._too_big(size, self.max_parsed_body, "search page")
        if text_hash(c.text) != c.text_hash:
            return "the citation's text does not match its own hash"
        key = ("search", t.receipt_id)
        if key not in memo:
            src = SOURCES.get(t.source)
            try:
                memo[key] = list(src.parse(SearchRequest.from_json(t.request), t.http_status, t.content_type,
                                           body).papers)
            except Exception as e:  # a reply's parser failing is this citation's verdict
                memo[key] = e
        if isinstance(memo[key], Exception):
            return f"the stored search page could not be read again ({type(memo[key]).__name__})"
        papers = memo[key]
        number = c.search.get("number") if isinstance(c.search, Mapping) else None
        candidates = [number] if type(number) is int else range(1, len(papers) + 1)
        for n in candidates:
            if 1 <= n <= len(papers) and papers[n - 1].title and \
                    normalise(papers[n - 1].title or "") == normalise(c.text):
                paper = papers[n - 1]
                locator = str(paper.locator or "")
                return str(paper.title), f"paper {n} of the page", paper_citation_id(t.receipt_id, n, locator), locator
        return "the paper is not on the cited search page"

