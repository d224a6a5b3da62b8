"""``g6 report check``: every citation of a report resolved to evidence and given its verdict.

For each citation, in order (:mod:`g6.report.evidence` says which receipt fits):

* its source is resolved to what is read: an http(s) URL as written; ``document:N`` through the user's
  mapping (``documents``: a URL or a receipt id), else no evidence; a paper (``doi:``, ``arxiv:``,
  ``openalex:``) through the paper sources to its landing page (:mod:`g6.report.papers`);
* the receipt the report pins, else the newest ok read of that URL in the evidence source, else a fetch now
  through the checked client (not with ``receipts_only``, nor from a bundle): each URL is read at most once a
  run, however often it is cited, hosts in parallel and one request at a time per host (the host pool batch
  fetch and re-check use, on forked processes where the home allows it); every read is receipted;
* a PDF is read through its conversion (``g6 convert``; receipted), the conversion kept being reused;
* the verdict (:mod:`g6.report.verdicts`) from the read's receipt and bytes.

Pages are read and judged where they were fetched (a worker), receipts are signed and appended here in groups,
and each verdict goes to the run file (``$G6_HOME/knowledge/reports/<run id>.jsonl``) once its receipt is
durable: a run stopped at any point and started again with the same run id reads nothing it read already, and
decides every verdict again from the receipts (a run file is not evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from g6.adapters.html.page import MAX_EXTRACT_BYTES
from g6.adapters.net.checked_client import CheckedClient
from g6.fetch.batch import usable_processes
from g6.fetch.host_pool import can_fork
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt, new_receipt_id
from g6.report.evidence import (
    READ_KINDS,
    EvidenceSource,
    choose,
    fetch_key,
    ok_read,
    read_at,
    recorded_whole,
    said_read,
    url_key,
)
from g6.report.fetching import Page, fetch_pages, judge_forked
from g6.report.model import Report, ReportCitation, UnusableCitation, source_kind
from g6.report.runfile import Line, citation_key, run_state
from g6.report.texts_cache import encode, open_cache
from g6.report.verdicts import (
    Verdict,
    body_texts,
    capture_text_ref,
    failed,
    is_pdf,
    judge,
    shown_texts,
    text_texts,
    texts_source,
    unreadable,
)
from g6.runs import RunState

STORED_BATCH = 1024  # verdicts on stored reads written to the run file at once (one fsync)
FORK_AT = 16  # stored reads from which their pages are judged on forked processes
PAPERS = ("doi", "arxiv", "openalex")
_NOT_WHOLE = ("{url} carries a secret parameter that receipts record redacted: a stored read cannot be told to be "
              "of this URL rather than of the same URL with another value (another page), so none in this {ev} is "
              "its evidence (it is read now, but not with --receipts-only or from a bundle)")


@dataclass(frozen=True, slots=True)
class CheckRun:
    """Every citation's verdict, in the report's order."""

    run_id: str
    report: Report
    verdicts: tuple[Verdict, ...]
    resumed: int = 0  # verdicts an earlier run with this run id had decided
    fetched: int = 0  # URLs read in this run
    evidence: str = "home"  # where receipts came from: home | bundle
    receipts_only: bool = False


class _Check:
    """One check: the plan (what each citation reads), the reads, the verdicts."""

    def __init__(self, home: EvidenceHome, ev: EvidenceSource, report: Report, client: CheckedClient | None,
                 documents: Mapping[int, str], sources: Any, state: RunState,
                 progress: Callable[[int, int], None] | None,
                 unusable: Mapping[int, UnusableCitation] | None = None) -> None:
        self.home, self.ev, self.report, self.client = home, ev, report, client
        self.unusable = dict(unusable or {})  # place -> a citation whose source cannot be read (with_unusable)
        self.documents, self.sources, self.state, self.progress = documents, sources, state, progress
        self.may_fetch = client is not None and ev.name == "home"
        self.keys = [citation_key(c) for c in report.citations]
        loaded: dict[str, Line] = state.load()
        self.resumed = sum(1 for k in self.keys if k in loaded)
        self.done: dict[int, Verdict] = {}
        # The reads an earlier run with this id made: a URL is read once a run, whatever its outcome. Its
        # verdicts are not taken from the file (a run file is not evidence, and anyone can edit one): each is
        # decided again from the receipts, and a line only spares a read the evidence rule would make again
        # (``_run_read``), never chooses which read is evidence.
        self.run_reads = {url_key(str(line.verdict.read["url"])): line.verdict.receipt_id
                          for line in loaded.values() if line.verdict.read is not None and line.verdict.receipt_id
                          and line.verdict.read.get("how") == "fetched"}
        self.fetched = 0
        self._texts: dict[str, Any] = {}  # receipt id -> texts (and conversion): several citations, one page
        self.papers: dict[str, Any] = {}  # paper source -> (landing URL, search receipt) or its verdict
        self.notes: dict[int, dict[str, Any]] = {}  # place -> what the verdict's detail adds (the read_at match)
        # receipt id -> the citations resting on it: (place, citation, search receipt, how it was chosen)
        self.stored: dict[str, list[tuple[int, ReportCitation, str | None, str]]] = {}
        # each page's texts kept by body digest across runs (a home's only: a bundle's bodies are read as given)
        self.cache = open_cache(home) if ev.name == "home" else None
        self.rows: list[Any] = []  # texts extracted in this run, to keep in the cache with the next verdicts

    # -- reporting ------------------------------------------------------------------------------
    def decide(self, decided: list[tuple[int, Verdict]]) -> None:
        """Verdicts on file (their receipts are durable already), then counted."""
        if self.rows and self.cache is not None:
            self.cache.put_many(self.rows)
            self.rows = []
        if not decided:
            return
        self.state.add_many([Line(self.keys[i], v) for i, v in decided])
        for i, v in decided:
            self.done[i] = v
        if self.progress is not None:
            self.progress(len(self.done), len(self.report.citations))

    # -- the plan -------------------------------------------------------------------------------
    def _target(self, c: ReportCitation) -> tuple[str, str] | Verdict:
        """("url", URL), ("receipt", id) or ("paper", source) for a citation; or its verdict when nothing
        can be read for it."""
        if c.receipt_id:
            return "receipt", c.receipt_id
        kind = source_kind(c.source)
        if kind == "url":
            return "url", c.source
        if kind == "document":
            n = c.source.split(":", 1)[1]
            mapped = self.documents.get(int(n)) if n.isdigit() else None
            if mapped is None:
                return failed(f"{c.source} is a document the report's author supplied, with no address: map it "
                              f"to a URL or a receipt id (--document {n}=URL) to check it", source=c.source)
            return ("receipt", mapped) if mapped.startswith("rcpt_") else ("url", mapped)
        if kind in PAPERS:
            return "paper", c.source
        return failed(f"{c.source[:80]!r} is not a source g6 reads (an http(s) URL, doi:, arxiv:, openalex: or "
                      "document:N)", source=c.source[:200])

    def plan(self) -> dict[str, Page]:
        """Decide what each undecided citation rests on: those with a stored read are judged now, the others
        are returned as pages to fetch (by URL key)."""
        pages: dict[str, Page] = {}
        # receipt id -> (place, citation, search receipt, how it was chosen)
        stored: dict[str, list[tuple[int, ReportCitation, str | None, str]]] = defaultdict(list)
        decided: list[tuple[int, Verdict]] = []
        for i, c in enumerate(self.report.citations):
            if i in self.done:
                continue
            if i in self.unusable:
                decided.append((i, unreadable(self.unusable[i])))
                continue
            target = self._target(c)
            if isinstance(target, Verdict):
                decided.append((i, target))
                continue
            kind, value = target
            searched = None
            if kind == "receipt":
                got = self._pinned_read(c, value)
                if isinstance(got, Verdict):
                    decided.append((i, got))
                else:
                    stored[got[0].receipt_id].append((i, c, got[1], "pinned"))
                continue
            if kind == "paper":
                from g6.report.papers import resolve

                landing = resolve(self, value)
                if isinstance(landing, Verdict):
                    decided.append((i, landing))
                    continue
                value, searched = landing
            # a URL whose secret parameter receipts redact has no stored read told to be of it: read now
            whole = recorded_whole(value)
            r = self._read_at(i, c, value) if kind == "url" and whole else None
            reads = self.ev.reads(value) if whole else []
            how = self.ev.name
            r = r or choose(reads, self.may_fetch)
            if r is None and (r := self._run_read(url_key(value), reads)) is not None:
                how = "fetched"  # by this run, before it stopped: said so again, so a second resume spares it too
            if r is not None:
                stored[r.receipt_id].append((i, c, searched, how))
            elif self.may_fetch:  # one read a run per request, told apart by its real URL (fetch_key)
                page = pages.setdefault(fetch_key(value), Page(value))
                page.items.append((i, c))
                if searched:
                    page.searched[i] = searched
            elif not whole:
                decided.append((i, failed(_NOT_WHOLE.format(url=url_key(value)[:200], ev=self.ev.name),
                                          url=url_key(value)[:500])))
            else:
                decided.append((i, failed(f"no read of {value[:200]} in this {self.ev.name} (nothing is fetched "
                                          "with --receipts-only or from a bundle)", url=value[:500])))
        self.decide(decided)
        self.stored = stored
        return pages

    def judge_stored_reads(self, processes: int) -> None:
        """The verdicts of the citations that rest on a stored read, a page read (and its text extracted) once
        for all its citations; on forked processes when the home allows it (``fetching.judge_forked``)."""
        items = [(r, entries) for rid, entries in self.stored.items() if (r := self.ev.get(rid)) is not None]
        got: dict[str, list[Verdict] | None] = {}
        if processes > 1 and self.ev.name == "home":
            # a page whose texts the cache holds is judged here; the others' texts are extracted on forked
            # processes when there are enough of them to be worth the fork
            # (a rendered capture is judged here too: its shown text is read through the evidence source)
            misses = [(r, e) for r, e in items if ok_read(r) and capture_text_ref(r) is None and not self._cached(r)]
            if len(misses) >= FORK_AT:
                got = judge_forked(self, misses, processes)
        decided: list[tuple[int, Verdict]] = []
        for r, entries in items:
            verdicts = got.get(r.receipt_id) or [self.judge_stored(r, c, how) for _, c, _, how in entries]
            decided += [(i, self.with_search(v, s)) for (i, _, s, _), v in zip(entries, verdicts, strict=True)]
            if len(decided) >= STORED_BATCH:  # their receipts are durable already: one run-file write a group
                self.decide(decided)
                decided = []
        self.decide(decided)

    def _pinned_read(self, c: ReportCitation, receipt_id: str) -> tuple[Receipt, str | None] | Verdict:
        """The receipt a citation pins and, for a paper, the search receipt that named the paper's page; or the
        citation's verdict. A pin on a paper (``doi:``, ``arxiv:``, ``openalex:``) must be a read of that
        paper's page as the paper sources resolve it (the same search, and the same check that the source
        answered with the cited paper, as an unpinned paper citation gets): a pinned read of any other page is
        no evidence of the paper's words, whatever the report calls it."""
        if source_kind(c.source) not in PAPERS:
            got = self._pinned(c, receipt_id)
            return got if isinstance(got, Verdict) else (got, None)
        from g6.report.papers import resolve

        landing = resolve(self, c.source)
        if isinstance(landing, Verdict):
            return replace(landing, reason=f"the pinned receipt {receipt_id[:80]} cannot be shown to be a read of "
                           f"{c.source[:80]}: {landing.reason}", detail={**dict(landing.detail),
                                                                        "receipt_id": receipt_id[:80]})
        url, searched = landing
        got = self._pinned(c, receipt_id, url)
        return self.with_search(got, searched) if isinstance(got, Verdict) else (got, searched)

    def _pinned(self, c: ReportCitation, receipt_id: str, paper_url: str | None = None) -> Receipt | Verdict:
        """The receipt a citation pins (or a ``document:N`` is mapped to), when it may be the citation's evidence:
        in the evidence, a read of a page, and, for a citation of a URL, a read of that URL (requested or, after
        redirects, final), for a paper a read of ``paper_url`` (its page, as resolved) the same way: a receipt
        of another page is no evidence of this one."""
        r = self.ev.get(receipt_id)
        if r is None:
            why = getattr(self.ev, "refused", {}).get(receipt_id)
            return failed(f"the pinned receipt {receipt_id[:80]} is not in this {self.ev.name}" if why is None else
                          f"the pinned receipt {receipt_id[:80]} does not verify: {why}", receipt_id=receipt_id[:80])
        if r.kind not in READ_KINDS:
            return failed(f"the pinned receipt {r.receipt_id} is a {r.kind} receipt, not a read of a page",
                          receipt_id=r.receipt_id)
        want = paper_url if paper_url is not None else c.source if source_kind(c.source) == "url" else None
        if want is not None and not recorded_whole(want):
            return failed(f"{url_key(want)[:200]} carries a secret parameter that receipts record redacted: the "
                          f"pinned receipt {r.receipt_id} cannot be told to be a read of this URL rather than of the "
                          "same URL with another value (another page)", receipt_id=r.receipt_id)
        if want is not None and url_key(want) not in {url_key(str(r.request.get("url", ""))),
                                                      url_key(r.final_url or "")}:
            of = "the cited URL" if paper_url is None else f"the page of {c.source[:80]} ({paper_url[:200]})"
            return failed(f"the pinned receipt {r.receipt_id} is a read of {str(r.request.get('url'))[:200]}, not of "
                          f"{of}", receipt_id=r.receipt_id)
        return r

    def _read_at(self, i: int, c: ReportCitation, url: str) -> Receipt | None:
        """The read of ``url`` made when the report says its author read it (``evidence.said_read``), noted in
        the verdict's ``detail.read_at`` either way."""
        when = said_read(c)
        if when is None:
            return None
        r = read_at(self.ev.reads(url), when)
        self.notes[i] = {"read_at": {"said": when[2][:100], "matched": r is not None}}
        return r

    def _run_read(self, key: str, reads: list[Receipt]) -> Receipt | None:
        """The read an earlier run with this id made of the URL ``key`` (a failed one: an ok read is chosen by
        the rule before this is asked), so a resumed run does not read the page again: only when it is the
        newest read of that URL in the evidence (``reads``, newest first, each verified and a read of that
        URL), which is what the run's own fetch left it. A line naming an older read, or another URL's, is
        ignored (the page is read now), so an edited run file chooses nothing."""
        rid = self.run_reads.get(key)
        return reads[0] if rid and reads and reads[0].receipt_id == rid else None

    @staticmethod
    def with_search(v: Verdict, search_receipt: str | None) -> Verdict:
        return v if search_receipt is None else replace(v, detail={**dict(v.detail), "search": search_receipt})

    # -- judging a stored read --------------------------------------------------------------------
    def _texts_of(self, r: Receipt) -> tuple[Any, Receipt | None] | Verdict:
        """The texts of ``r``'s body (a PDF's: through its conversion), once per receipt."""
        if r.receipt_id in self._texts:
            return self._texts[r.receipt_id]  # type: ignore[no-any-return]
        got: tuple[Any, Receipt | None] | Verdict
        if not ok_read(r):
            got = (None, None)
        else:
            try:
                body = self.ev.body(r.content or {})
            except Exception as e:  # noqa: BLE001 - a body the store cannot serve is no evidence, said why
                got = failed(f"the body of receipt {r.receipt_id} cannot be read from the {self.ev.name}: "
                             f"{str(e)[:200]}", receipt_id=r.receipt_id)
            else:
                got = self._pdf(r, body) if is_pdf(r, body) else self._rendered(r, self._page_texts(r, body))
        self._texts[r.receipt_id] = got
        return got

    def _rendered(self, r: Receipt, texts: Any) -> tuple[Any, Receipt | None] | Verdict:
        """A page's texts, and for a rendered capture the text the browser showed a reader with them (what
        ``g6 cite`` cites a capture in): the DOM a capture keeps as its body is not what the reader saw (a style
        sheet the static reader never fetches, a script, hid some of it)."""
        ref = capture_text_ref(r)
        if ref is None:
            return texts, None
        try:
            shown = self.ev.body(ref).decode("utf-8", "replace")
        except Exception as e:  # noqa: BLE001 - a capture judged on its DOM would be judged on what no one saw
            return failed(f"the text the browser showed for capture {r.receipt_id} cannot be read from the "
                          f"{self.ev.name}: {str(e)[:200]}", receipt_id=r.receipt_id)
        return shown_texts(texts, shown), None

    def _page_texts(self, r: Receipt, body: bytes) -> Any:
        """The texts of an ok read's body (read and checked against its receipt already): from the cache when
        it holds them, else extracted (and kept for the next run)."""
        if self.cache is None or len(body) > MAX_EXTRACT_BYTES:
            return body_texts(r, body)
        url, ctype = texts_source(r)
        blake3 = str((r.content or {})["blake3"])
        texts = self.cache.get(blake3, url, ctype)
        if texts is None:
            texts = body_texts(r, body)
            self.rows.append(encode(self.cache.key, blake3, url, ctype, texts))
        return texts

    def _cached(self, r: Receipt) -> bool:
        """Whether ``r``'s texts are ready without extracting them: the cache holds them (its body then read and
        checked, so that a body gone or changed is never judged from its old texts)."""
        if r.receipt_id in self._texts:
            return True
        if self.cache is None or capture_text_ref(r) is not None:  # a capture: judge_stored reads its shown text
            return False
        url, ctype = texts_source(r)
        texts = self.cache.get(str((r.content or {})["blake3"]), url, ctype)
        if texts is None:
            return False
        try:
            body = self.ev.body(r.content or {})
        except Exception:  # noqa: BLE001 - judge_stored reads it again and says why
            return False
        if len(body) > MAX_EXTRACT_BYTES or is_pdf(r, body):
            return False
        self._texts[r.receipt_id] = (texts, None)
        return True

    def _pdf(self, r: Receipt, body: bytes) -> tuple[Any, Receipt | None] | Verdict:
        """A PDF's text, from its newest ok conversion, or (in a home) converted now and receipted."""
        assert r.content is not None
        conv = next((x for x in self.ev.conversions(str(r.content["blake3"])) if x.outcome == "ok" and x.content),
                    None)
        if conv is None and self.ev.name == "home":
            from g6.fetch.convert import convert

            result = convert(self.home, str(r.content["blake3"]))
            conv = self.home.ledger.get(result.receipt_id)
            self.ev.add([conv])
            if conv.outcome != "ok" or not conv.content:
                return failed(f"the PDF could not be read as text ({conv.outcome}: "
                              f"{conv.detail.get('reason', '')})", receipt_id=r.receipt_id, converted=conv.receipt_id)
        if conv is None:
            return failed(f"receipt {r.receipt_id} holds a PDF and this {self.ev.name} holds no conversion of it "
                          "to text", receipt_id=r.receipt_id)
        text = self.ev.body(conv.content or {}).decode("utf-8", "replace")
        return text_texts(text), conv

    def judge_stored(self, r: Receipt, c: ReportCitation, how: str) -> Verdict:
        got = self._texts_of(r)
        if isinstance(got, Verdict):
            return got
        texts, conv = got
        return judge(c.quote, c.claim, r, how, texts, converted=conv, context=(c.prefix, c.suffix))


def with_unusable(report: Report) -> tuple[Report, dict[int, UnusableCitation]]:
    """The report with every citation it makes whose source g6 cannot read (``Report.unusable``: a
    ``javascript:`` or ``data:`` link, a relative link with no base, a marker with no source behind it, a file
    citation) put in its place among the others, by ``n`` (the numbering the readers share), with no
    ``unusable`` left over: each gets a verdict (``source_failed``, saying why) and counts in the figures like any
    other citation. Also the places of those citations in the merged list."""
    if not report.unusable:
        return report, {}
    rows: list[tuple[int, int, ReportCitation, UnusableCitation | None]] = [
        (c.n, 0, c, None) for c in report.citations]
    rows += [(u.n, 1, ReportCitation(u.n, u.written, u.claim, u.claim_start, u.claim_end, where=u.where), u)
             for u in report.unusable]
    rows.sort(key=lambda row: (row[0], row[1]))  # stable: the report's own order among equal numbers
    merged = replace(report, citations=tuple(c for _, _, c, _ in rows), unusable=())
    return merged, {i: u for i, (_, _, _, u) in enumerate(rows) if u is not None}


def new_run_id() -> str:
    """A new run's id (a caller that shows it before the run ends makes it first: ``g6 report check``)."""
    return "run_" + new_receipt_id().removeprefix("rcpt_")


def check_report(home: EvidenceHome, ev: EvidenceSource, report: Report, *, client: CheckedClient | None = None,
                 run_id: str | None = None, documents: Mapping[int, str] | None = None, sources: Any = None,
                 workers: int = 8, processes: int = 1, state_dir: Path | None = None,
                 progress: Callable[[int, int], None] | None = None) -> CheckRun:
    """Check every citation of ``report`` against evidence from ``ev`` (this home's receipts, or a bundle's);
    with a ``client`` (and ``ev`` the home) a URL without a fitting read is fetched now, else it has no
    evidence. ``documents`` maps ``document:N`` sources to a URL or a receipt id. Resumable by ``run_id``. The
    run's report holds every citation, the unusable ones in their places (:func:`with_unusable`).
    ``progress(decided, citations)`` as verdicts are decided."""
    run_id = run_id or new_run_id()
    state = run_state(home, run_id, state_dir)
    report, unusable = with_unusable(report)
    chk = _Check(home, ev, report, client, dict(documents or {}), sources, state, progress, unusable)
    if progress is not None:
        progress(len(chk.done), len(report.citations))
    pages = chk.plan()
    chk.judge_stored_reads(processes if usable_processes(home, processes) > 1 and can_fork() else 1)
    if pages:
        fetch_pages(chk, pages, workers, processes)
    chk.decide([])  # texts extracted last, into the cache
    if chk.cache is not None:
        chk.cache.close()
    missing = [i for i in range(len(report.citations)) if i not in chk.done]
    if missing:  # every citation gets a verdict; none may be dropped on the way
        raise RuntimeError(f"citations {missing[:5]} got no verdict")
    verdicts = tuple(replace(v, detail={**dict(v.detail), **chk.notes[i]}) if i in chk.notes else v
                     for i, v in ((i, chk.done[i]) for i in range(len(report.citations))))
    return CheckRun(run_id, report, verdicts, chk.resumed, chk.fetched, ev.name, client is None)


def iter_citations(run: CheckRun) -> Iterator[tuple[ReportCitation, Verdict]]:
    return zip(run.report.citations, run.verdicts, strict=True)
