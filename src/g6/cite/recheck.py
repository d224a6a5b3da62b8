"""Re-check a manifest: fetch each cited source again and say, per citation, whether it still holds.

A verdict is never stronger than the read behind it:

* ``unchanged`` — same content digest;
* ``current`` — the bytes changed, the cited normalised text is still in the page's text (in a
  truncated read too: what was read holds it); ``moved`` says whether its offset changed;
* ``changed`` — not there, but a span close to it is (similarity ≥ ``CHANGED_THRESHOLD`` and at least
  ``MIN_WORD_OVERLAP`` of its words, see :func:`g6.cite.passages.align`): the span's text, offsets,
  similarity and a word diff;
* ``gone`` — only after a complete, successful read of text in which nothing close is found (a
  passage still in the page but hidden from readers is gone, ``detail.hidden`` says how);
* ``interstitial`` — could not check: the source answered 2xx with a wall in front of the page (a login,
  challenge or consent page, ``detail.interstitial`` says which and what gave it away), so its words are the
  wall's: never ``current``, ``changed`` or ``gone`` against one, even when the wall shows the cited words;
* could not check: ``truncated`` (the read stopped at the byte cap before the passage was found),
  ``empty`` (no body, no text, or text only scripts would draw), ``parse_failed``, or the fetch's
  typed failure (``blocked``, ``not_found``, ``rate_limited`` with ``retry_after``, ``unreachable``…);
* ``unverified`` — the citation could not be verified against the evidence home (manifest signature,
  receipt missing or not verifying, digests or URL not the receipt's, text not in the original page),
  or it cites a read that failed (a 403 or 404 page: its words were an error page's, marked as a
  failed read or not) or that met a wall (its receipt's ``interstitial``), so nothing is fetched for it.

Concurrency: one request per host at a time (so the per-host pause and robots rules hold), hosts in
parallel on a thread pool, or on several forked processes (``processes``, as a batch fetch does: the
hosts' pauses are shared between them); each page is read and judged where it was fetched, and the
receipts are signed and appended from the calling thread. Each verdict is appended to a run file as
it is decided, so a re-run with the same run id skips what was done.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import monotonic
from typing import Any

from g6.adapters.browser.pool import BrowserPool
from g6.adapters.html.interstitial import Interstitial
from g6.adapters.html.page import MAX_EXTRACT_BYTES
from g6.adapters.html.text import STRUCTURED_DATA
from g6.adapters.net.checked_client import CheckedClient, FetchPolicy, FetchResponse
from g6.adapters.net.urls import redact_url
from g6.adapters.outcomes import Outcome
from g6.adapters.sources.search import SearchRequest
from g6.cite.cite import read_failure
from g6.cite.manifest import MANIFEST_ID, QUOTE_NOT_IN_TEXT, RUN_ID, Citation, Manifest, check_id, quote_in
from g6.cite.page_text import RENDERED, PageTexts, read_texts
from g6.cite.passages import align, find, text_hash
from g6.errors import G6Error, InputError
from g6.fetch.batch import usable_processes
from g6.fetch.capture import receipt_from_response, wall_check, wall_of
from g6.fetch.host_pool import fork_workers, host_of, per_host_groups
from g6.fetch.render import Renderer, prepare_render
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt, new_receipt_id
from g6.ledger.redactions import Redacted
from g6.runs import RunState, scrub
from g6.store.base import BlobRef

CHECKED = ("unchanged", "current", "changed", "gone")
# a manifest of no citations passes no check (``g6 bundle`` says the same): a re-check, a verify and a sign refuse it
CITES_NOTHING = "the manifest cites nothing"
# redacted: the cited body was taken out of the home on the record (g6.ledger.redactions); its page is not read
# again (that would bring the bytes back), and the citation has no evidence left
FAILING = ("changed", "gone", "unverified", "redacted")
CHANGED_THRESHOLD = 0.8  # similarity of the best span; docs/commands/cite.md shows the curve behind it
MIN_WORD_OVERLAP = 0.5  # and at least half the quote's words, in order, in that span
BATCH = 64  # re-check receipts appended per transaction
# ... or fewer, when no other result is waiting and the oldest in the batch has waited this long: a
# slow re-check still puts its verdicts on file as it goes, a fast one pays the transaction, the tree
# update and the run file's fsync once per BATCH pages, not once per page or two
FLUSH_AFTER = 1.0
# one page to fetch: (its URL, the policy it is read under, whether it is rendered) and the citations that quote it
Page = tuple[tuple[str, FetchPolicy, bool], list[Citation]]


@dataclass(frozen=True, slots=True)
class Verdict:
    citation_id: str
    verdict: str
    source_url: str
    receipt_id: str | None = None
    moved: bool | None = None
    similarity: float | None = None
    new_text: str | None = None
    new_start: int | None = None
    new_end: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)
    final_url: str | None = None  # where the source is now (after redirects), redacted
    retry_after: str | None = None  # rate_limited: the server's Retry-After
    diff: Mapping[str, list[str]] | None = None  # changed: {"removed": [...], "added": [...]} words
    text_source: str | None = None  # current/changed: the text the span was found in (main, visible, rendered)

    @property
    def checked(self) -> bool:
        return self.verdict in CHECKED

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"citation_id": self.citation_id, "verdict": self.verdict,
                             "source_url": self.source_url, "receipt_id": self.receipt_id}
        for k in ("final_url", "retry_after", "text_source", "moved", "similarity", "new_text", "new_start",
                  "new_end"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        if self.diff is not None:
            d["diff"] = {k: list(v) for k, v in self.diff.items()}
        d["detail"] = dict(self.detail)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Verdict:
        return cls(d["citation_id"], d["verdict"], d["source_url"], d.get("receipt_id"), d.get("moved"),
                   d.get("similarity"), d.get("new_text"), d.get("new_start"), d.get("new_end"), d.get("detail", {}),
                   d.get("final_url"), d.get("retry_after"), d.get("diff"), d.get("text_source"))


@dataclass(frozen=True, slots=True)
class RecheckReport:
    run_id: str
    manifest_id: str
    verdicts: tuple[Verdict, ...]
    resumed: int = 0
    manifest_signature: Mapping[str, str] = field(default_factory=lambda: {"status": "unsigned", "detail": ""})

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for v in self.verdicts:
            out[v.verdict] += 1
        return dict(out)

    @property
    def exit_code(self) -> int:
        """0: all unchanged/current; 1: any changed/gone/unverified; 3: otherwise, some could not be checked."""
        if any(v.verdict in FAILING for v in self.verdicts):
            return 1
        if any(not v.checked for v in self.verdicts):
            return 3
        return 0

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "manifest_id": self.manifest_id,
                "manifest_signature": dict(self.manifest_signature), "counts": self.counts(),
                "resumed": self.resumed, "exit_code": self.exit_code,
                "verdicts": [v.to_json() for v in self.verdicts]}


def unchanged(c: Citation, resp: FetchResponse) -> bool:
    return (c.kind == "web" and resp.outcome is Outcome.OK and resp.body is not None
            and resp.body.blake3 == c.content.get("blake3"))


def _short(text: str, n: int = 200) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[: n - 1] + "…"


def judge(c: Citation, resp: FetchResponse, texts: PageTexts | None, wall: Interstitial | None = None) -> Verdict:
    """The verdict for one citation given a fresh read of its source (``texts``: None when not read;
    ``wall``: the login, challenge or consent page the read met instead of the page, if any)."""
    base = Verdict(c.citation_id, "", c.requested_url,
                   final_url=redact_url(resp.final_url) if resp.final_url else None)
    if unchanged(c, resp):
        return replace(base, verdict="unchanged")
    if not resp.outcome.is_success:
        return replace(base, verdict=resp.outcome.value,
                       retry_after=resp.retry_after if resp.outcome is Outcome.RATE_LIMITED else None,
                       detail={"reason": resp.reason, "trust": resp.outcome.trust, "http_status": resp.status,
                               # the fetch's own words, as g6 fetch shows them (a refused loopback names the setting)
                               **({"message": str(resp.detail["message"])[:500]} if resp.detail.get("message")
                                  else {})})
    if wall is not None:  # before any text is read: a wall's words (a teaser, say) are not the page's
        return replace(base, verdict="interstitial", detail={
            "reason": f"the source answered with {wall.words()}, not the page", "interstitial": wall.to_json(),
            "trust": "no_evidence", "http_status": resp.status})
    if resp.outcome is Outcome.EMPTY or texts is None or texts.outcome is Outcome.EMPTY:
        reason = (texts.reason if texts is not None and texts.reason else resp.reason) or "no_body"
        return replace(base, verdict="empty", detail={"reason": reason, "trust": "no_evidence"})
    # a rendered page is judged on the text the browser showed; a raw one on its main and visible texts
    whole = texts.sources[-1]  # the text a reader sees in full: visible, or the rendered text
    if texts.outcome is not Outcome.OK or texts.text(whole) is None:
        return replace(base, verdict="parse_failed", detail={"reason": texts.reason or "no_text_in_new_body",
                                                             "media_type": texts.media_type})
    read = {"truncated": True, "bytes_read": resp.byte_count} if resp.truncated else {}
    own = c.text_source if c.text_source in texts.sources else texts.sources[0]
    for source in dict.fromkeys((own, whole)):
        span = find(c.text, texts.text(source) or "")
        if span is not None:
            moved = c.start is not None and (source != own or span[0] != c.start)
            return replace(base, verdict="current", moved=moved, new_start=span[0], new_end=span[1],
                           text_source=source, detail=read)
    hidden = texts.hidden_match(c.text)
    near = align(c.text, texts.text(whole) or "")
    closest: dict[str, Any] = {"closest_similarity": near.similarity if near else 0.0}
    if near is not None:
        closest["closest_text"] = _short(near.text)
    if hidden is not None:
        closest["hidden"] = hidden.how
    if resp.truncated:
        return replace(base, verdict="truncated", detail={
            "reason": "the read stopped at the byte cap and the passage is not in the part read", **read,
            "trust": "no_evidence", **closest})
    if near is not None and near.similarity >= CHANGED_THRESHOLD and near.word_overlap >= MIN_WORD_OVERLAP:
        # a reader sees the edited span (the old words may survive hidden: ``detail.hidden`` says so)
        return replace(base, verdict="changed", similarity=near.similarity, new_text=near.text,
                       new_start=near.start, new_end=near.end, text_source=whole, diff=near.diff_json(),
                       detail={"word_overlap": near.word_overlap,
                               **({"hidden": hidden.how} if hidden is not None else {})})
    if hidden is None:
        reason = "no close span in the page's visible text"
    elif hidden.reason == STRUCTURED_DATA:
        reason = "only in the page's structured data (JSON-LD), not in the text readers see"
    else:
        reason = "hidden from readers"
    return replace(base, verdict="gone", detail={"reason": reason, **closest})


def verify_citations(home: EvidenceHome, manifest: Manifest,
                     sources: Any = None) -> tuple[dict[str, str], dict[str, str]]:
    """(manifest signature verdict, {citation_id: why it is unverified}).

    Every citation's receipt must be in the ledger and verify with a trusted key, and the
    citation's digests, URL and text hash must be the receipt's. A signed manifest vouches for its
    cited texts (``g6 cite`` checked them before signing); an unsigned one does not, so each cited
    text is looked for at its offsets in the original stored page.
    """
    sig, problems, _ = _verified(home, manifest, sources)
    return sig, problems


def signing_problems(home: EvidenceHome, manifest: Manifest, sources: Any = None) -> dict[str, str]:
    """{citation_id: why it may not be signed}: a signature vouches for the cited texts (a signed manifest's are
    not looked for in their pages again by a re-check), so each is checked in full first, its quote included."""
    return _Verifier(home, replace(manifest, signature=None), sources, signing=True).problems(manifest.citations)


def _verified(home: EvidenceHome, manifest: Manifest,
              sources: Any = None) -> tuple[dict[str, str], dict[str, str], dict[str, Receipt | str]]:
    v = _Verifier(home, manifest, sources)
    return v.signature, v.problems(manifest.citations), v.receipts


class _Verifier:
    """:func:`verify_citations` a few citations at a time (a re-check verifies one host's citations while
    the hosts verified before it fetch), each receipt read and verified once, each blob looked for once."""

    def __init__(self, home: EvidenceHome, manifest: Manifest, sources: Any = None, *, signing: bool = False) -> None:
        self.home, self.manifest, self.sources = home, manifest, sources
        # signing: a citation of a failed read (marked so by ``g6 cite --allow-failed-read``) may be signed, the
        # rest is checked in full; a re-check and a verify hold such a citation unverified
        self.signing = signing
        self.trusted = home.keys.trusted()
        self.failed: str | None = None  # the manifest signature's failure: every citation is unverified
        if manifest.signature is None:
            self.signature = {"status": "unsigned", "detail": "the manifest is not signed; each cited text was "
                                                              "checked against its original page instead"}
        else:
            ok, why = manifest.verify_signature(self.trusted)
            self.signature = {"status": "ok" if ok else "failed", "detail": why}
            self.failed = None if ok else why
        self.receipts: dict[str, Receipt | str] = {}  # receipt id -> the verified receipt, or why not
        self.redactions = home.redactions()  # entries that count: a redacted body is no evidence, never re-read
        self.redacted: dict[str, Redacted] = {}  # citation id -> the redaction that took its body out
        self.texts: dict[str, PageTexts | str] = {}
        self.rechecks: dict[str, Receipt | None] = {}  # a resumed run's re-check receipts: verified, or None
        self.stored: dict[str, str | None] = {}  # blob digest -> why its stored bytes fail: one page, many citations

    def vouched(self, v: Verdict, c: Citation, run_id: str) -> bool:
        """Whether a run file's verdict on ``c`` is the one the signed re-check receipt it names records (that
        receipt's run, manifest, re-read receipt and ``detail.verdicts``). The run file is a plain file: it is
        trusted for a verdict's details (span, diff), never for the verdict; one that disagrees is checked again."""
        if v.citation_id != c.citation_id or v.source_url != c.requested_url or not isinstance(v.receipt_id, str):
            return False
        if v.receipt_id not in self.rechecks:
            try:
                r = self.home.ledger.get(v.receipt_id)
                self.rechecks[v.receipt_id] = r if r.verify_signature(self.trusted)[0] else None
            except G6Error:
                self.rechecks[v.receipt_id] = None
        r = self.rechecks[v.receipt_id]
        said = r.detail.get("verdicts") if r is not None else None
        return (r is not None and r.kind == "recheck" and isinstance(said, Mapping)
                and said.get(c.citation_id) == v.verdict and v.verdict not in ("unverified", "redacted")
                and r.request.get("run_id") == run_id and r.request.get("manifest_id") == self.manifest.manifest_id
                and c.receipt_id in (r.links.get("rechecks") or ()))

    def problems(self, citations: Iterable[Citation]) -> dict[str, str]:
        """{citation_id: why it is unverified} for ``citations``."""
        if self.failed is not None:
            return {c.citation_id: f"manifest signature: {self.failed}" for c in citations}
        problems: dict[str, str] = {}
        for c in citations:
            if c.receipt_id not in self.receipts:
                try:
                    r = self.home.ledger.get(c.receipt_id)
                    ok, why = r.verify_signature(self.trusted)
                    self.receipts[c.receipt_id] = r if ok else f"receipt {c.receipt_id}: {why}"
                except G6Error as e:
                    self.receipts[c.receipt_id] = f"receipt {c.receipt_id} is not in the ledger ({type(e).__name__})"
            r = self.receipts[c.receipt_id]
            if isinstance(r, str):
                problems[c.citation_id] = r
                continue
            gone = self.redactions.of_content(r.content)
            if gone is not None and dict(r.content or {}) == dict(c.content):
                self.redacted[c.citation_id] = gone
                problems[c.citation_id] = f"the cited body was {gone.said()}"
                continue
            why_not = None if self.signing else _read_problem(c, r)
            why_not = why_not or _citation_problem(self.home, c, r, self.texts,
                                                   unsigned=self.manifest.signature is None, sources=self.sources,
                                                   stored=self.stored)
            if why_not:
                problems[c.citation_id] = why_not
        return problems


def _read_problem(c: Citation, r: Receipt) -> str | None:
    """Why the cited read is no evidence of the page's words (it failed, or met a wall), or None."""
    failed = read_failure(r.outcome, r.http_status)
    if failed is not None:  # never current, never unchanged: the words cited were an error page's
        marked = " (the manifest marks it as one)" if c.failed_read is not None else ""
        return (f"the cited read failed ({failed}){marked}: a failed read is not evidence of the page's words, "
                "so there is nothing to re-check")
    wall = Interstitial.from_json(r.interstitial)
    if wall is not None or r.interstitial is not None:  # a wall's words, however it is described
        met = wall.words() if wall is not None else "a wall"
        return (f"the cited read met {met}, not the page: its words are the wall's, not evidence of the page's, "
                "so there is nothing to re-check")
    return None


def _citation_problem(home: EvidenceHome, c: Citation, r: Receipt, cache: dict[str, PageTexts | str], *,
                      unsigned: bool, sources: Any, stored: dict[str, str | None] | None = None) -> str | None:
    """Why ``c`` is not what its receipt and stored page say (its read's failure aside), or None."""
    if dict(r.content or {}) != dict(c.content):
        return "the citation's content digests are not its receipt's"
    if text_hash(c.text) != c.text_hash:
        return "the cited text does not match its own text_hash"
    if not quote_in(c.quote, c.text):  # the quote is what a reader is shown: it must be the cited text's
        return QUOTE_NOT_IN_TEXT
    digest = str(c.content.get("blake3", ""))
    stored = {} if stored is None else stored
    if digest not in stored:
        stored[digest] = _stored_problem(home, c.content)
    if stored[digest] is not None:
        return stored[digest]
    if c.kind == "web":
        if r.kind not in ("fetch", "recheck"):
            return f"receipt {r.receipt_id} is a {r.kind} receipt, not a fetched page"
        if c.requested_url != r.request.get("url"):
            return "the citation's URL is not the one its receipt fetched"
    elif r.kind != "search" or c.search is None:
        return f"a search citation must point at a search receipt (got {r.kind})"
    if not unsigned:
        return None
    if c.kind == "search":
        return _search_problem(home, c, r, sources)
    if r.receipt_id not in cache:
        try:
            from g6.cite.cite import receipt_texts

            cache[r.receipt_id] = receipt_texts(home, r)
        except G6Error as e:
            cache[r.receipt_id] = str(e)
    t = cache[r.receipt_id]
    if isinstance(t, str):
        return f"the original page has no text: {t}"
    text = t.text(c.text_source) or ""
    if c.start is None or c.end is None or text_hash(text[c.start:c.end]) != c.text_hash:
        return f"the cited text is not at its offsets in the original page's {c.text_source} text"
    return None


def _stored_problem(home: EvidenceHome, content: Mapping[str, Any]) -> str | None:
    """Why the stored bytes a citation rests on are not its receipt's, or None. They are hashed, not only
    looked for: a blob edited in the store is no evidence of what was read, signed manifest or not."""
    try:
        expect = BlobRef(str(content["blake3"]), str(content["sha256"]), int(content["size"]))
    except (KeyError, TypeError, ValueError):
        return "the citation's content record lacks blake3, sha256 or size"
    checked = home.store.check(expect.blake3, expect)
    if checked.ok:
        return None
    if checked.detail == "missing" or not home.store.has(expect.blake3):
        return "the cited blob is not in the store"
    return f"the stored bytes of the cited page are not its receipt's ({checked.detail})"


def _search_problem(home: EvidenceHome, c: Citation, r: Receipt, sources: Any) -> str | None:
    assert c.search is not None
    reg = sources
    if reg is None:
        from g6.adapters.sources import SOURCES as reg  # noqa: N811
    try:
        parsed = reg.get(r.source).parse(SearchRequest.from_json(r.request), int(r.http_status or 0),
                                         r.detail.get("content_type"), home.store.read_as(r.content))
        paper = parsed.papers[int(c.search["number"]) - 1]
    except (G6Error, KeyError, IndexError, TypeError, ValueError) as e:
        return f"the cited paper is not on the search page ({type(e).__name__})"
    if paper.locator != c.requested_url or text_hash(paper.title or "") != c.text_hash:
        return "the cited paper's title or locator is not the search page's"
    return None


def _policy_for(r: Receipt, base: FetchPolicy) -> FetchPolicy:
    """The original read's allowlist and byte cap, so the re-check reads under the same rules."""
    pol = base
    if r.allowlist.decision == "allowed" and r.allowlist.patterns:
        pol = replace(pol, allowlist=tuple(r.allowlist.patterns))
    mb = r.request.get("max_bytes")
    if isinstance(mb, int):
        pol = replace(pol, max_bytes=mb)
    return pol


def new_run_id() -> str:
    """A fresh re-check run id (``RUN_ID``'s alphabet)."""
    return "run_" + new_receipt_id().removeprefix("rcpt_")


def verdict_run(path: Path) -> RunState:
    """A re-check's run file: one verdict a line, keyed by citation id."""
    return RunState(path, Verdict.from_json, lambda v: v.citation_id)


def run_file(home: EvidenceHome, manifest_id: str, run_id: str, state_dir: Path | None = None) -> Path:
    """The run file of (manifest, run): both ids are checked against a fixed alphabet, and the file is
    inside ``state_dir`` (by default ``$G6_HOME/knowledge/rechecks``), never anywhere else."""
    check_id(manifest_id, MANIFEST_ID, "manifest_id")
    check_id(run_id, RUN_ID, "run id")
    base = (state_dir or home.root / "knowledge" / "rechecks").resolve()
    path = (base / f"{manifest_id}.{run_id}.jsonl").resolve()
    if path.parent != base:  # cannot happen with the alphabet above; kept as the last line of defence
        raise InputError(f"run file {path} would be outside {base}")
    return path


def forget_texts(home: EvidenceHome, receipt_ids: Iterable[str], state_dir: Path | None = None) -> int:
    """Take the words of redacted reads out of the re-check run files (``g6.ledger.redactions``): a verdict
    decided on such a read keeps its verdict and loses the text it quoted (``new_text``, ``diff``, the
    closest span). How many verdicts lost text."""
    base = state_dir or home.root / "knowledge" / "rechecks"
    return scrub(base, set(receipt_ids), ("new_text", "diff"), ("closest_text",), {"text": "redacted"})


class _Plan:
    """The pages a re-check fetches, host by host: one fetch per (url, policy), with the citations it is
    for. Each host's citations are verified (in the calling thread: the ledger's connection is that
    thread's) only when its pages are asked for, so the first hosts fetch while the next are verified;
    nothing unverified is fetched."""

    def __init__(self, manifest: Manifest, verifier: _Verifier, loaded: Mapping[str, Verdict],
                 policy: FetchPolicy, run_id: str) -> None:
        self.verifier, self.loaded, self.policy, self.run_id = verifier, loaded, policy, run_id
        self.by_host: dict[str, list[Citation]] = defaultdict(list)
        hosts: dict[str, str] = {}  # url -> host: several citations quote one page, its URL parsed once
        for c in manifest.citations:
            h = hosts.get(c.requested_url)
            if h is None:
                h = hosts[c.requested_url] = host_of(c.requested_url)
            self.by_host[h].append(c)
        self.unverified: dict[str, Verdict] = {}  # not fetched, and not kept in the run file: verified each run
        self.resumed: dict[str, Verdict] = {}  # decided by an earlier run of this run id
        self.settled = 0  # citations of the hosts given out so far that need no fetch (the two above)
        self._policies: dict[str, FetchPolicy] = {}  # many citations share one original receipt: read it once

    def hosts(self) -> Iterator[list[Page]]:
        """Each host's pages, verified just now; a host with none to fetch gives an empty list."""
        for cites in self.by_host.values():
            problems = self.verifier.problems(cites)
            pages: dict[tuple[str, FetchPolicy, bool], list[Citation]] = {}
            for c in cites:
                gone = self.verifier.redacted.get(c.citation_id)
                if gone is not None:  # not fetched: a fresh read would put the redacted bytes back
                    self.unverified[c.citation_id] = Verdict(c.citation_id, "redacted", c.requested_url, detail={
                        "reason": problems[c.citation_id], "trust": "no_evidence", "redaction": gone.to_json()})
                elif c.citation_id in problems:
                    self.unverified[c.citation_id] = Verdict(c.citation_id, "unverified", c.requested_url, detail={
                        "reason": problems[c.citation_id], "trust": "no_evidence"})
                elif c.citation_id in self.loaded and self.verifier.vouched(self.loaded[c.citation_id], c,
                                                                            self.run_id):
                    self.resumed[c.citation_id] = self.loaded[c.citation_id]
                else:
                    # a citation of a rendered capture is re-checked by rendering again
                    pages.setdefault((c.requested_url, self._policy(c), c.text_source == RENDERED), []).append(c)
                    continue
                self.settled += 1
            yield list(pages.items())

    def _policy(self, c: Citation) -> FetchPolicy:
        if c.receipt_id not in self._policies:
            r = self.verifier.receipts[c.receipt_id]  # read and verified just now
            self._policies[c.receipt_id] = _policy_for(r, self.policy) if isinstance(r, Receipt) else self.policy
        return self._policies[c.receipt_id]


def recheck(home: EvidenceHome, client: CheckedClient, manifest: Manifest, *, run_id: str | None = None,
            state_dir: Path | None = None, workers: int = 8, processes: int = 1,
            progress: Callable[[int, int], None] | None = None,
            sources: Any = None, renderer: Renderer | None = None) -> RecheckReport:
    """Re-check every citation of ``manifest``: ``workers`` hosts at a time, on ``processes`` forked
    processes where the home allows it (a store in a folder, no other thread running:
    :func:`g6.fetch.batch.usable_processes`), else on threads of this process. A citation of a rendered
    capture is re-checked by rendering its page again (``renderer``; a pool of one browser when not given),
    on threads of this process."""
    rendered = any(c.text_source == RENDERED for c in manifest.citations)
    with contextlib.ExitStack() as own:
        if rendered and renderer is None:
            renderer = Renderer(own.enter_context(BrowserPool(1)))
        return _recheck(home, client, manifest, run_id, state_dir, workers, 1 if rendered else processes, progress,
                        sources, renderer)


def _recheck(home: EvidenceHome, client: CheckedClient, manifest: Manifest, run_id: str | None,
             state_dir: Path | None, workers: int, processes: int, progress: Callable[[int, int], None] | None,
             sources: Any, renderer: Renderer | None) -> RecheckReport:
    if not manifest.citations:  # nothing checked is not "all unchanged"
        raise InputError(f"{CITES_NOTHING}: nothing to re-check")
    run_id = run_id or new_run_id()
    path = run_file(home, manifest.manifest_id, run_id, state_dir)
    with _run_lock(path, run_id):
        return _run(home, client, manifest, run_id, verdict_run(path), workers, processes, progress, sources, renderer)


@contextlib.contextmanager
def _run_lock(path: Path, run_id: str) -> Iterator[None]:
    """The run held by this process alone: two re-checks of one run would both fetch everything and each
    append every verdict. An advisory lock (flock) on ``<run file>.lock``, released when the process ends."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"run {run_id} is being re-checked by another process now; wait for it to end, or "
                             "start another run (without --run)") from None
        yield
    finally:
        os.close(fd)  # the lock goes with the last descriptor (a forked worker's copy too)


def _run(home: EvidenceHome, client: CheckedClient, manifest: Manifest, run_id: str, state: RunState, workers: int,
         processes: int, progress: Callable[[int, int], None] | None, sources: Any,
         renderer: Renderer | None) -> RecheckReport:
    verifier = _Verifier(home, manifest, sources)
    loaded = state.load()
    done: dict[str, Verdict] = {}
    total = len(manifest.citations)
    if progress:
        progress(0, total)
    plan = _Plan(manifest, verifier, loaded, client.policy, run_id)

    def work(page: Page) -> tuple[tuple[Receipt, ...], list[Verdict]]:
        # the page is read and judged on the worker too: the calling thread, which alone signs and
        # appends, is the re-check's one serial stage, so it is left only what must be done in order
        (url, policy, render), cites = page
        if render:
            assert renderer is not None
            return _render_and_judge(home, client, renderer, url, policy, cites, run_id, manifest.manifest_id)
        resp = client.fetch(url, home.store, source="web", policy=policy)
        receipt, verdicts = _read_and_judge(home, url, resp, cites, run_id, manifest.manifest_id)
        return (receipt,), verdicts

    fetched = 0  # citations decided by a fetch in this run
    # one page's receipts (a rendered page's sub-resources, then the one its verdicts are on) and its verdicts
    batch: list[tuple[tuple[Receipt, ...], list[tuple[Citation, Verdict]]]] = []
    since = monotonic()  # when the oldest result in ``batch`` was taken

    def flush() -> None:
        """Receipts first (one transaction), then the run file: a verdict on file always has its receipt."""
        nonlocal fetched
        if not batch:
            return
        signed = home.ledger.append_many([r for rs, _ in batch for r in rs], home.signing_key())
        decided = []
        ends = [sum(len(rs) for rs, _ in batch[:i + 1]) - 1 for i in range(len(batch))]
        for s_receipt, (_, items) in zip((signed[e] for e in ends), batch, strict=True):
            for c, v in items:
                v = replace(v, receipt_id=s_receipt.receipt_id)
                if c.kind == "search" and c.search is not None:
                    v = _with_total(home, client, c, v, sources)
                decided.append(v)
                done[c.citation_id] = v
        state.add_many(decided)
        fetched += len(decided)
        batch.clear()
        if progress:
            progress(plan.settled + fetched, total)

    with contextlib.ExitStack() as stack:
        if usable_processes(home, processes) > 1 and len(plan.by_host) > 1:
            # Forked: the pages are read and judged on other processes (one GIL each), so this
            # process, which alone verifies, signs and appends, is not starved of its GIL by the fetch
            # threads. The workers are forked first (no other thread may run at a fork), then given
            # each host as soon as it is verified here.
            stack.enter_context(client.hosts_shared(multiprocessing.get_context("fork")))
            results: Any = fork_workers(work, workers, min(processes, len(plan.by_host)),
                                        setup=client.forget_connections)
            stack.callback(results.close)
            results.give(plan.hosts())
        else:
            results = per_host_groups(plan.hosts(), work, workers)
            stack.callback(results.close)
        for (_, cites), res, more_ready in results:
            if isinstance(res, BaseException):
                raise res
            receipts, verdicts = res
            batch.append((receipts, list(zip(cites, verdicts, strict=True))))
            if len(batch) == 1:
                since = monotonic()
            if len(batch) >= BATCH or (not more_ready and monotonic() - since >= FLUSH_AFTER):
                flush()
        flush()
    if progress:
        progress(plan.settled + fetched, total)  # the resumed and unverified, when nothing was fetched
    done.update(plan.resumed)
    done.update(plan.unverified)
    resumed = len(plan.resumed)
    ordered = tuple(done[c.citation_id] for c in manifest.citations if c.citation_id in done)
    return RecheckReport(run_id, manifest.manifest_id, ordered, resumed, verifier.signature)


def _read_and_judge(home: EvidenceHome, url: str, resp: FetchResponse, cites: list[Citation], run_id: str,
                    manifest_id: str) -> tuple[Receipt, list[Verdict]]:
    """The verdicts on one fresh read of ``url`` and the (unsigned) re-check receipt recording them."""
    texts, wall = None, None
    if resp.outcome is Outcome.OK and resp.body is not None and not all(unchanged(c, resp) for c in cites):
        # same bytes need no reading again; new bytes are read once for all their citations
        if resp.body.size > MAX_EXTRACT_BYTES:
            texts = PageTexts(Outcome.PARSE_FAILED, f"body over {MAX_EXTRACT_BYTES} bytes")
        else:
            body = home.store.read(resp.body.blake3)
            seen = wall_check(resp)  # shown the tree the texts are read from: the page is parsed once
            texts = read_texts(body, resp.final_url or url, resp.content_type, seen)
            wall = wall_of(resp, body, seen)
    verdicts = [judge(c, resp, texts, wall) for c in cites]
    outcome = texts.outcome if texts is not None else resp.outcome
    receipt = receipt_from_response(
        resp, kind="recheck", source="web", request={"url": redact_url(url), "run_id": run_id,
                                                     "manifest_id": manifest_id},
        outcome=outcome, reason=(texts.reason if texts is not None else "") or resp.reason,
        detail={"verdicts": {v.citation_id: v.verdict for v in verdicts}},
        links={"rechecks": sorted({c.receipt_id for c in cites}),
               "citations": [c.citation_id for c in cites]}, interstitial=wall)
    return receipt, verdicts


def _render_and_judge(home: EvidenceHome, client: CheckedClient, renderer: Renderer, url: str,
                      policy: FetchPolicy, cites: list[Citation], run_id: str,
                      manifest_id: str) -> tuple[tuple[Receipt, ...], list[Verdict]]:
    """A rendered capture's citations, judged on a new render of their page: its receipts (the sub-resources',
    then the re-check's, which is a capture too) and the verdicts."""
    request = {"url": redact_url(url), "run_id": run_id, "manifest_id": manifest_id, "render": True}
    links = {"rechecks": sorted({c.receipt_id for c in cites}), "citations": [c.citation_id for c in cites]}
    p = prepare_render(home.store, client, renderer.pool, url, limits=renderer.limits, policy=policy, kind="recheck",
                       request=request, links=links)
    resp, texts = p.page.response, None
    if p.render.text is not None and p.render.dom is not None and resp.outcome.is_success:
        base = read_texts(p.render.dom, resp.final_url or url, resp.content_type)
        ok = bool(p.render.text.strip())
        texts = replace(base, outcome=Outcome.OK if ok else Outcome.EMPTY, reason="" if ok else "no_text_rendered",
                        rendered=p.render.text)
    verdicts = [judge(c, resp, texts, p.interstitial) for c in cites]
    cap = p.receipt
    receipt = replace(cap, detail={**dict(cap.detail), "verdicts": {v.citation_id: v.verdict for v in verdicts}})
    return (*p.receipts[:-1], receipt), verdicts


def _with_total(home: EvidenceHome, client: CheckedClient, c: Citation, v: Verdict, sources: Any) -> Verdict:
    """A search citation also re-runs its search (one page) to compare the source's total."""
    from g6.fetch.capture import search

    assert c.search is not None
    reg = sources
    if reg is None:
        from g6.adapters.sources import SOURCES as reg  # noqa: N811
    try:
        src = reg.get(c.search["source"])
        req = replace(SearchRequest.from_json(c.search["request"]), max_results=1, max_pages=1)
        result = search(home, client, src, req)
    except Exception as e:  # noqa: BLE001 - the page verdict stands; the total could not be had
        return replace(v, detail={**dict(v.detail), "total_then": c.search.get("total"), "total_now": None,
                                  "total_error": str(e)[:200]})
    return replace(v, detail={**dict(v.detail), "total_then": c.search.get("total"), "total_now": result.total,
                              "total_outcome": result.outcome.value, "total_receipt_ids": list(result.receipt_ids)})


__all__ = ["CHANGED_THRESHOLD", "CHECKED", "CITES_NOTHING", "MIN_WORD_OVERLAP", "RecheckReport", "RunState",
           "Verdict", "judge", "new_run_id", "recheck", "run_file", "signing_problems", "verify_citations"]
