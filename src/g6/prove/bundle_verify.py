"""Verifying an evidence bundle offline (``g6 bundle verify``): one verdict per citation, a result per check.

What the verdicts show (citation id, receipt id, URL, quote) is recomputed from the verified receipt
and the verified body, never copied from the manifest, which may be unsigned. The zip is read by
:mod:`g6.prove.bundle_zip`; the layout is described in :mod:`g6.prove.bundle`.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import blake3

from g6.adapters.search import SearchRequest
from g6.adapters.sources import SOURCES
from g6.adapters.web import media_type
from g6.cite.cite import paper_citation_id, short_quote, web_citation_id
from g6.cite.manifest import Citation, Manifest
from g6.cite.page_text import TEXT_SOURCES, cited_text
from g6.cite.passages import normalise, text_hash
from g6.errors import BundleMemberError, G6Error
from g6.ledger.keys import VerifyKey
from g6.ledger.note import NoteError, open_checkpoint
from g6.ledger.proofs import ProofCheck as BundleCheck
from g6.ledger.proofs import verify_inclusion_proof
from g6.ledger.receipts import Receipt
from g6.prove.bundle_zip import (
    HEX64,
    ID,
    MAX_CENTRAL_DIRECTORY,
    MAX_INDEX,
    MAX_MEMBERS,
    MAX_PARSED_BODY,
    MAX_PLAIN_BODY,
    RECORD_ERRORS,
    ZIP_ERRORS,
    Members,
    central_directory,
    declared_files,
    member_problems,
    name_problem,
    quoted,
    strict_json,
)


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
            cd = central_directory(fp)
            if cd is not None and (cd[0] > MAX_MEMBERS or cd[1] > MAX_CENTRAL_DIRECTORY):
                return BundleReport(None, (BundleCheck("zip", False, f"the zip has {cd[0]} entries in a "
                                                       f"{cd[1]}-byte directory, over {MAX_MEMBERS} entries or "
                                                       f"{MAX_CENTRAL_DIRECTORY} bytes"),))
            with zipfile.ZipFile(fp) as z:
                return _Verifier(z, cd[2] if cd else None, pinned, trust_bundle_keys, origin, allow_unsigned,
                                 max_parsed_body, progress).run()
    except ZIP_ERRORS as e:
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
    return (isinstance(b3, str) and b3.startswith("blake3:") and bool(HEX64.fullmatch(b3[7:]))
            and isinstance(sha, str) and sha.startswith("sha256:") and bool(HEX64.fullmatch(sha[7:]))
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
        self.members: Members | None = None
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
        zip_problems, refused = member_problems(infos, self.cd_offset)
        by_name: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            bad = name_problem(info.filename)
            if bad:
                self.index_problems.append(f"member {quoted(info.filename)}: {bad}")
                refused[info.filename] = f"{quoted(info.filename)} has {bad}"
            if info.filename in by_name:
                self.index_problems.append(f"member {quoted(info.filename)} appears more than once")
                refused[info.filename] = f"{quoted(info.filename)} appears more than once"
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
            except ZIP_ERRORS as e:
                raise BundleMemberError(f"bundle.json is unreadable ({type(e).__name__}: {e})") from None
            self.root_inflated = len(raw)
            if len(raw) != root.file_size:
                raise BundleMemberError(f"bundle.json inflates to {len(raw)} bytes, not the {root.file_size} "
                                        "the zip declares")
            index = strict_json(raw, "bundle.json")
            declared, problems = declared_files(index)
        except BundleMemberError as e:
            self.index_problems.append(str(e))
            self.checks.append(self._index_check())
            return self._report()
        self.index_problems += problems
        self.declared_total = sum(s for _, s in declared.values()) + root.file_size
        self.index_problems += [f"bundle.json lists {quoted(n)}, which the zip does not hold"
                                for n in sorted(declared) if n not in by_name]
        self.index_problems += [f"the zip holds {quoted(n)}, which bundle.json does not list"
                                for n in sorted(by_name) if n not in declared and n != "bundle.json"]
        if any(p.startswith("bundle.json declares") for p in problems):
            self.checks.append(self._index_check())
            return self._report()
        self.members = Members(self.z, by_name, refused, declared, self.progress)
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
                                       + "; ".join(dict.fromkeys(quoted(w, 160)[1:-1] for w in why))))
        return None

    def _verify(self, index: Mapping[str, Any]) -> BundleReport:
        keys = self._keys()
        trusted = {k.key.key_id: k.key for k in keys}
        signer = self._checkpoint(keys)
        if signer is not None and index.get("origin") != signer[1]:
            self.index_problems.append(f"bundle.json names the log {quoted(index.get('origin'))}, the checkpoint "
                                       f"{quoted(signer[1])}")
        try:
            manifest = self._manifest()
        except RECORD_ERRORS as e:
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
            except RECORD_ERRORS as e:
                signed, why = False, f"unreadable: {e}"
            self.checks.append(BundleCheck("manifest_signature", signed, why))
        if signed and index.get("manifest_id") != manifest.manifest_id:
            self.index_problems.append("bundle.json names another manifest id than the signed manifest's")
        verdicts = self._citations(manifest.citations, trusted, signer)
        self._finish_index()
        return self._report(manifest.manifest_id if signed else None, verdicts, signed)

    def _manifest(self) -> Manifest:
        """Parsed in its own frame, so the raw bytes and the JSON tree are freed once it returns."""
        data = strict_json(self._record("manifest.json"), "manifest.json")
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
            if not isinstance(rid, str) or not ID.fullmatch(rid):
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
            data = strict_json(self._record(f"receipts/{rid}.json"), "the receipt")
            if not isinstance(data, dict):
                raise BundleMemberError(f"the receipt is a JSON {type(data).__name__}, not an object")
            receipt = Receipt.from_json(data)
            ok, why = receipt.verify_signature(trusted)
        except RECORD_ERRORS as e:
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
        except RECORD_ERRORS as e:
            return BundleCheck("inclusion", False, f"unreadable proof: {e}")
        # the receipt's own signature is checked against every pinned key above (a receipt signed
        # before a key rotation is fine); here only the proof counts, and it must name the receipt
        checks = {c.check: c for c in report.checks if c.check != "receipt_signature"}
        bad = [f"{c.check}: {c.detail}" for c in checks.values() if not c.ok]
        if "receipt_binding" not in checks:
            bad.append("the proof does not name the receipt it proves")
        if "inclusion" not in checks and not bad:
            bad.append("no inclusion path")
        return BundleCheck("inclusion", not bad, "; ".join(quoted(b, 200)[1:-1] for b in bad)
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
                raise BundleMemberError(f"unknown citation kind {quoted(c.kind, 20)}")
        except RECORD_ERRORS as e:
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
            return f"a web citation of a {quoted(t.kind, 20)} receipt"
        mtype = media_type(t.content_type, body[:1024] if body is not None else b"")
        parsed = mtype in ("text/html", "application/xhtml+xml") or t.content_type is None
        limit = self.max_parsed_body if parsed else MAX_PLAIN_BODY
        if body is None or size > limit:
            return self._too_big(size, limit, "page")
        if text_hash(c.text) != c.text_hash:
            return "the citation's text does not match its own hash"
        source = getattr(c, "text_source", None) or "main"
        if source not in TEXT_SOURCES:
            return f"unknown text_source {quoted(source, 20)}"
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
            return f"a search citation of a {quoted(t.kind, 20)} receipt"
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
