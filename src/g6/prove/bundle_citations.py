"""A bundle's citations, each checked against what verified: its signed receipt, the receipt's inclusion in
the bundle's history, the read it records (a failed read is no evidence of a page's words), the body that
hashes to it, the cited text at its offsets in that body, and the manifest's quote and fields.

What a verdict shows (citation id, receipt id, URL, quote, the read's outcome and HTTP status) is recomputed
from the verified receipt and the verified body, never copied from the manifest, which may be unsigned.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import blake3

from g6.adapters.html.page import media_type
from g6.adapters.sources import SOURCES
from g6.adapters.sources.search import SearchRequest
from g6.cite.cite import paper_citation_id, read_failure, read_words, short_quote, web_citation_id
from g6.cite.manifest import Citation, quote_in
from g6.cite.page_text import TEXT_SOURCES, cited_text
from g6.cite.passages import normalise, text_hash
from g6.errors import BundleMemberError
from g6.ledger.keys import VerifyKey
from g6.ledger.note import Checkpoint, NoteError, parse_note
from g6.ledger.proofs import ProofCheck, ProofReport, parse_inclusion, verify_inclusion_proof
from g6.ledger.receipts import Receipt
from g6.prove.bundle_capture import CapturedParts
from g6.prove.bundle_history import History, described, same_tree
from g6.prove.bundle_keys import BundleKeys
from g6.prove.bundle_redactions import verdict as redacted_verdict
from g6.prove.bundle_report import BundleCheck, CitationVerdict
from g6.prove.bundle_zip import ID, MAX_PLAIN_BODY, RECORD_ERRORS, Members, content_ok, quoted, strict_json


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
    outcome: str
    status_shown: int | None  # the HTTP status as signed (None when the receipt has none)
    interstitial: Mapping[str, Any] | None = None  # the wall the read met (login, challenge, consent), as signed
    # the certificates servers presented on the read's hops over TLS, as signed: (what, blob reference)
    certificates: tuple[tuple[str, Any], ...] = ()
    capture: Mapping[str, Any] | None = None  # a rendered capture's record (``capture``), as signed
    part_of: str | None = None  # the rendered capture this read is one request of (``links.capture``)


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
    failed_read: bool = False
    redaction: dict[str, Any] | None = None  # the redaction entry that took the cited body out
    named_id: str | None = None  # the id the manifest gives it, when one in form: names a citation that failed

    def verdict(self) -> CitationVerdict:
        t = self.trusted
        return CitationVerdict(self.position, tuple(self.checks), self.citation_id, t.receipt_id if t else None,
                               self.url, self.quote, t.outcome if t else None, t.status_shown if t else None,
                               self.failed_read, self.redaction, named_id=self.named_id)


CITATION_ID = re.compile(r"c_[0-9a-f]{16}")  # web_citation_id, paper_citation_id


def named_id(c: Citation) -> str | None:
    """The citation id a manifest entry gives, as written (never verified), when it has an id's form: so a failed
    citation can be named as the manifest names it, and nothing else of the entry is printed."""
    x = c.citation_id
    return x if isinstance(x, str) and CITATION_ID.fullmatch(x) else None


def read_check(t: _Trusted, c: Citation) -> tuple[BundleCheck, bool]:
    """The ``read`` verdict (and whether the cited read failed): a failed read fails the citation unless
    the manifest marks it as one, with the very outcome and status the signed receipt gives."""
    failure = read_failure(t.outcome, t.status_shown)
    said = read_words(t.outcome, t.status_shown)
    mark = c.failed_read
    if t.interstitial is not None:  # a wall's words (a login, challenge or consent page) are not the page's
        wall = f"a {str(t.interstitial.get('kind'))[:20]} page ({str(t.interstitial.get('evidence'))[:80]})"
        return BundleCheck("read", False, f"the cited read ({said}) met {wall}, not the page: its words are the "
                                          "wall's, not evidence of the page"), False
    if failure is None:
        if mark is not None:
            return BundleCheck("read", False, f"the manifest marks a failed read, but the receipt's read is {said}"), \
                False
        return BundleCheck("read", True, said), False
    if mark is None:
        return BundleCheck("read", False, f"the cited read failed ({said}): a failed read is not evidence of the "
                                          "page's words (`g6 cite --allow-failed-read` marks one as such)"), True
    if dict(mark) != {"outcome": t.outcome, "http_status": t.status_shown}:
        marked = read_words(mark.get("outcome"), mark.get("http_status"))
        return BundleCheck("read", False, f"the manifest marks a failed read ({marked}), the receipt's read is "
                                          f"{said}"), True
    return BundleCheck("read", True, f"a FAILED READ ({said}), marked in the manifest: the quoted words are the "
                                     "error page's, not evidence of the page"), True


class CitationChecks:
    """Every citation of a manifest, checked against the bundle's members (each read once)."""

    def __init__(self, members: Members, max_parsed_body: int, history: History | None, not_checked: str,
                 read_proof: Callable[[str], bytes] | None = None, keys: BundleKeys | None = None) -> None:
        self.members = members
        self.max_parsed_body = max_parsed_body
        self.history = history
        self.not_checked = not_checked  # why inclusion cannot be checked when there is no history
        self.read_proof = read_proof or members.read
        self.keys = keys  # the log's keys over time, from every proof the bundle carries
        self.proofs = 0
        self.leaves: dict[str, int] = {}  # receipt id -> its leaf index, when its inclusion proof held
        self.fetched: dict[str, object] = {}  # receipt id -> fetched_at, when its signature verified
        self.cert_cache: dict[str, str] = {}  # a certificate member -> why it fails ("": it holds), hashed once
        self.receipts: dict[str, _ReceiptResult] = {}  # receipt id -> its verdicts, each receipt read once
        self.captured = CapturedParts(self)  # what a rendered capture's citations rest on besides its DOM

    def run(self, citations: Sequence[Citation], roots: Sequence[VerifyKey],
            origin: str | None) -> list[CitationVerdict]:
        """Every citation's verdict. ``roots``: the keys used (pinned, or shipped); ``origin``: the log of the
        bundle's verified checkpoint (None when it does not verify: inclusion is then not checked)."""
        receipts = self.receipts
        self.captured.keys = (roots, origin)
        self.receipt_results = receipts  # each receipt member is read once, a redaction entry's too
        pending: list[_Pending] = []
        self.receipt_args = (roots, origin)  # a redaction entry in place of a body is checked as a receipt is
        for i, c in enumerate(citations, 1):
            rid = c.receipt_id
            if not isinstance(rid, str) or not ID.fullmatch(rid):
                pending.append(_Pending(i, None, [BundleCheck("receipt", False, "the citation's receipt id is "
                                                                                 "not an id")], named_id=named_id(c)))
                continue
            if rid not in receipts:
                receipts[rid] = self._receipt(rid, roots, origin)
            r = receipts[rid]
            p = _Pending(i, c, list(r.checks), r.trusted, named_id=named_id(c))
            if p.trusted is not None:
                check, p.failed_read = read_check(p.trusted, c)
                p.checks.append(check)
            pending.append(p)
        # one blob in memory at a time: the citations of a blob are checked together
        by_blob: dict[str, list[_Pending]] = {}
        for p in pending:
            if p.trusted is None or p.citation is None:
                if p.citation is not None:
                    p.checks.append(BundleCheck("cited_text", False, "not checked: the receipt does not verify"))
                continue
            content = p.trusted.content
            claimed = p.citation.content
            if not content_ok(content):
                p.checks.append(BundleCheck("blob_digests", False, "the receipt names no well-formed body digests"))
                continue
            assert content is not None
            if not isinstance(claimed, Mapping) or dict(claimed) != dict(content):
                p.checks.append(BundleCheck("blob_digests", False, "the citation's digests are not the receipt's"))
                continue
            by_blob.setdefault("blobs/" + str(content["blake3"]).removeprefix("blake3:"), []).append(p)
        for name, group in sorted(by_blob.items()):
            self._blob(name, group)
        for p in pending:
            if p.trusted is not None and p.trusted.certificates:
                p.checks.append(self._certificates(p.trusted.certificates))
            if p.trusted is not None and p.trusted.capture is not None and p.citation is not None:
                p.checks.append(self.captured.check(p.trusted))
        return [p.verdict() for p in pending]

    def _receipt(self, rid: str, roots: Sequence[VerifyKey], origin: str | None) -> _ReceiptResult:
        checks: list[BundleCheck] = []
        try:
            data = strict_json(self.members.read(f"receipts/{rid}.json"), "the receipt")
            if not isinstance(data, dict):
                raise BundleMemberError(f"the receipt is a JSON {type(data).__name__}, not an object")
            receipt = Receipt.from_json(data)
            ok, why = receipt.verify_signature({k.key_id: k for k in roots})
        except RECORD_ERRORS as e:
            return _ReceiptResult([BundleCheck("receipt", False, str(e))], None)
        inclusion, by_entries, index = self._inclusion(rid, receipt, roots, origin)
        if by_entries is not None:
            # the proof carries the log's key entries: they decide which key may sign at the receipt's leaf
            # (a writer the log added; the key before a rotation, by its successor's handover; a pinned
            # key, but not after the entry that retired it)
            ok, why = by_entries.ok, by_entries.detail or ("signed by a key the log's key entries in the proof "
                                                           "prove, back to a pinned key")
        signer = receipt.signature.key_id if receipt.signature is not None else ""
        if ok and index is not None and self.keys is not None and self.keys.life(signer) is not None:
            # and so do the entries all the bundle's proofs carry: a key's window is the same for every citation
            late = self.keys.timeline.why_not(signer, index + 1)
            ok, why = (False, late) if late else (ok, why)
        checks.append(BundleCheck("receipt_signature", ok, "" if ok and by_entries is None else why))
        if ok and receipt.receipt_id != rid:
            ok = False
            checks.append(BundleCheck("receipt", False, f"receipts/{rid}.json holds another receipt"))
        checks.append(inclusion)
        if not ok:
            return _ReceiptResult(checks, None)
        self.fetched[rid] = receipt.fetched_at
        # signed by a pinned key: its fields are as the publisher wrote them; still typed, not assumed
        request = receipt.request if isinstance(receipt.request, Mapping) else {}
        request_url = str(request.get("url") or "")
        detail = receipt.detail if isinstance(receipt.detail, Mapping) else {}
        ctype = detail.get("content_type")
        status = receipt.http_status if type(receipt.http_status) is int else None
        return _ReceiptResult(checks, _Trusted(
            receipt.receipt_id, str(receipt.kind), str(receipt.source), str(receipt.final_url or request_url),
            request_url, request, status or 0, ctype if isinstance(ctype, str) else None,
            receipt.content if isinstance(receipt.content, Mapping) else None, str(receipt.outcome)[:40], status,
            receipt.interstitial if isinstance(receipt.interstitial, Mapping) else None,
            tuple((what, ref) for what, ref in receipt.blobs() if what.startswith("hop ")),
            receipt.capture if isinstance(receipt.capture, Mapping) else None,
            _str(receipt.links.get("capture") if isinstance(receipt.links, Mapping) else None)))

    def _inclusion(self, rid: str, receipt: Receipt, roots: Sequence[VerifyKey],
                   origin: str | None) -> tuple[BundleCheck, ProofCheck | None, int | None]:
        """The proof's verdict, (when the proof carries key entries) its verdict on the receipt's signature,
        and the receipt's leaf index when the proof names one."""
        name = f"proofs/{rid}.tlog-proof"
        try:
            proof = self.read_proof(name).decode("utf-8")
        except (BundleMemberError, UnicodeDecodeError) as e:
            return BundleCheck("inclusion", False, str(e)), None, None
        if origin is None or self.history is None:
            return BundleCheck("inclusion", False, f"not checked: {self.not_checked}"), None, None
        self.proofs += 1
        try:
            report = verify_inclusion_proof(proof, receipt, roots, origin)
            index = parse_inclusion(proof).index if report.checks[0].ok else None
        except RECORD_ERRORS as e:
            return BundleCheck("inclusion", False, f"unreadable proof: {e}"), None, None
        by_entries = next((c for c in report.checks if c.check == "receipt_signature"), None) \
            if any(c.check == "key_entries" for c in report.checks) else None
        verdict = self._proof_verdict(name, proof, report)
        if verdict.ok and index is not None:
            self.leaves[rid] = index
        return verdict, by_entries, index

    def _proof_verdict(self, name: str, proof: str, report: ProofReport) -> BundleCheck:
        # the receipt's own signature is checked against every pinned key above (a receipt signed
        # before a key rotation is fine); here only the proof counts, and it must name the receipt
        checks = {c.check: c for c in report.checks if c.check != "receipt_signature"}
        bad = [f"{c.check}: {c.detail}" for c in checks.values() if not c.ok]
        if "receipt_binding" not in checks:
            bad.append("the proof does not name the receipt it proves")
        if "inclusion" not in checks and not bad:
            bad.append("no inclusion path")
        if bad:
            return BundleCheck("inclusion", False, "; ".join(quoted(b, 200)[1:-1] for b in bad))
        # one history: the proof's checkpoint (its signature verified above) is the bundle's, or provably
        # consistent with it by a proof the bundle carries
        try:
            note = parse_inclusion(proof).checkpoint_note
            cp = Checkpoint.parse(parse_note(note)[0])
        except (NoteError, *RECORD_ERRORS) as e:
            return BundleCheck("inclusion", False, f"unreadable proof: {e}")
        ok, why = self.history.relate(name, cp, note)
        mine = self.history.bundle.cp
        if not ok:
            return BundleCheck("inclusion", False, f"{name} is against the checkpoint of {cp.origin} {described(cp)}, "
                                                   f"not the bundle's checkpoint.note ({described(mine)}): {why}")
        detail = checks["inclusion"].detail
        return BundleCheck("inclusion", True, detail if same_tree(cp, mine) else f"{detail}; {why}")

    def _certificates(self, refs: Sequence[tuple[str, Any]]) -> BundleCheck:
        """The certificates the verified receipt says servers presented over TLS: each carried in the bundle
        (``blobs/<blake3>``) and hashing to the receipt. Only for a receipt that names some (hops over https
        read since receipts keep them); one missing or other bytes fails the citation, as its body would."""
        bad = []
        for what, ref in refs:
            if not isinstance(ref, Mapping) or not content_ok(ref):
                bad.append(f"{what}: the receipt names no well-formed digests")
                continue
            name = "blobs/" + str(ref["blake3"]).removeprefix("blake3:")
            if name not in self.cert_cache:
                gone = self._redacted(name, ref)  # a capture's DOM, text or screenshot taken out on the record
                self.cert_cache[name] = self._hashed(name, ref, keep=False)[0] if gone is None else \
                    f"redacted at seq {gone[1]['seq']} ({gone[1]['reason']})" if gone[1] else gone[0].detail
            if self.cert_cache[name]:
                bad.append(f"{what}: {self.cert_cache[name]}")
        if bad:
            return BundleCheck("certificates", False, "; ".join(bad[:4]) + (f"; {len(bad) - 4} more" if len(bad) > 4
                                                                             else ""))
        certs = "certificate" if len(refs) == 1 else "certificates"
        return BundleCheck("certificates", True, f"{len(refs)} {certs} the server presented over TLS, "
                                                 "each hashing to the receipt")

    def _blob(self, name: str, group: list[_Pending]) -> None:
        first = group[0].trusted
        assert first is not None and first.content is not None
        content = first.content
        gone = self._redacted(name, content)
        if gone is not None:  # the body was taken out on the record: redacted, never "damaged"
            for p in group:
                p.checks += [gone[0], BundleCheck("cited_text", False, "not checked: the body was redacted")]
                p.redaction = gone[1]
            return
        size = content.get("size")
        keep = isinstance(size, int) and size <= max(self.max_parsed_body, MAX_PLAIN_BODY)
        why, data = self._hashed(name, content, keep)
        memo: dict[tuple[Any, ...], Any] = {}  # a body is parsed once, however many citations it carries
        for p in group:
            p.checks.append(BundleCheck("blob_digests", not why, why))
            if why:
                p.checks.append(BundleCheck("cited_text", False, "not checked: the blob does not verify"))
                continue
            self._cited(p, data, memo)

    def _redacted(self, name: str, ref: Mapping[str, Any]) -> tuple[BundleCheck, dict[str, Any] | None] | None:
        """The ``redaction`` verdict when the bundle carries, in place of member ``name``, the redaction entry
        that took those bytes out (``g6.prove.bundle_redactions``); None when it says nothing of one."""
        if name in self.members.declared:
            return None
        return redacted_verdict(self, ref, *self.receipt_args)

    def _hashed(self, name: str, content: Mapping[str, Any], keep: bool) -> tuple[str, bytes | None]:
        """Member ``name`` streamed against the receipt's ``content`` digests and size: why it fails ("" when
        it holds) and, when ``keep`` and it holds, its bytes."""
        want = (content.get("blake3"), content.get("sha256"), content.get("size"))
        size = content.get("size")
        declared = self.members.declared.get(name)
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
        return why, data

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
        ok = quote_in(c.quote, verified_text)  # the rule manifest sign|verify and recheck hold the quote to
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
        if (getattr(c, "text_source", None) or "main") == "rendered":  # the capture's own text, not its DOM
            if text_hash(c.text) != c.text_hash:
                return "the citation's text does not match its own hash"
            text, why = self.captured.text(t)
            return why if text is None else _at_offsets(t, c, text, "rendered", "the capture's text")
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
        return _at_offsets(t, c, text, source, "the stored body")

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


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _at_offsets(t: _Trusted, c: Citation, text: str, source: str, where: str) -> str | tuple[str, str, str, str]:
    """The cited text at the citation's offsets into ``text`` (hashing to it), or why not."""
    start, end = c.start, c.end
    if type(start) is int and type(end) is int and 0 <= start <= end <= len(text) \
            and text_hash(text[start:end]) == c.text_hash:
        cited = text[start:end]
        return cited, f"at {start}-{end}", web_citation_id(t.receipt_id, start, end, cited, source), t.url
    return f"the cited text is not at its offsets in {where}"

__all__ = ["CitationChecks", "read_check"]
