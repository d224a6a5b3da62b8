"""The pages a check reads now: fetched on the host pool (hosts in parallel, one request at a time per host, on
forked processes where the home allows it, as ``g6 fetch --input`` fetches), each page read and judged where it
was fetched, and the receipts and verdicts written by one writer thread in groups.

The writer owns its own ledger connection: it takes every page that arrived since its last group, appends their
receipts in one transaction, then their verdicts' run-file lines in one append (one fsync), so a verdict on file
always has its receipt, and the thread that receives the pages never waits on the disk; when the disk is slow the
groups grow (group commit). A PDF's verdicts wait for its conversion, made and receipted here once every page is
in.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from g6.adapters.html.page import MAX_EXTRACT_BYTES, PageRead
from g6.adapters.html.text import TreeReader, visible_text
from g6.adapters.net.checked_client import FetchResponse
from g6.adapters.outcomes import Outcome
from g6.cite.page_text import PageTexts, read_texts
from g6.fetch.batch import usable_processes
from g6.fetch.capture import page_outcome, prepare_fetch
from g6.fetch.host_pool import fork_workers, host_of, per_host_groups
from g6.ledger.receipts import Receipt
from g6.report.evidence import ok_read
from g6.report.model import ReportCitation
from g6.report.runfile import Line
from g6.report.texts_cache import encode
from g6.report.verdicts import Verdict, body_texts, is_pdf, judge, texts_source


@dataclass
class Page:
    """One URL to read, the citations (by place) that rest on it, and their quotes and claims."""

    url: str
    items: list[tuple[int, ReportCitation]] = field(default_factory=list)  # (place, the citation)
    searched: dict[int, str] = field(default_factory=dict)  # place -> the search receipt that led here


class _ReadWithTexts:
    """``page_outcome`` for a page whose cited texts the check reads anyway (``read_texts``, as ``body_texts``
    does): the page parsed once, not once for its outcome and again for its texts, and the texts kept for the
    verdicts. It is ``read_texts``'s ``TreeReader`` (passing the tree on to the wall check's reader): shown the tree
    as ``page_outcome`` reads it (as parsed, then stripped, the title out), before the cited reading drops more of
    it, it asks ``page_outcome``'s own question of it, visible words; with them the page is ``ok`` as
    ``page_outcome`` says, else (or when the cited reading fails) ``page_outcome`` decides. The cited texts are not
    asked: they are not a part of that tree (a closed ``<details>``, fallback or CSS-undecided ``<body>`` dropped,
    visible_text reads the whole document, the head's text too; with no visible words, ``visible`` is trafilatura's
    main text, which may find words in a tree with less in it and none in ``page_outcome``'s). The wall check judges
    the first tree it is shown."""

    def __init__(self) -> None:
        self.texts: PageTexts | None = None
        self.source: tuple[str, str | None] | None = None  # the URL and content type the texts were read with
        self._reader: TreeReader | None = None
        self._words = False  # visible words in the tree as page_outcome reads it

    def parsed(self, root: Any, body: bytes) -> None:
        if self._reader is not None:
            self._reader.parsed(root, body)

    def stripped(self, root: Any) -> None:
        if self._reader is not None:
            self._reader.stripped(root)
        self._words = bool(visible_text(root).strip())

    def __call__(self, resp: FetchResponse, store: Any, url: str, extract: str,
                 reader: TreeReader | None) -> PageRead:
        if resp.outcome is Outcome.OK and resp.body is not None and resp.body.size <= MAX_EXTRACT_BYTES:
            source = (resp.final_url or url, resp.content_type)
            self._reader, self._words = reader, False
            try:
                self.texts, self.source = read_texts(store.read(resp.body.blake3), *source, self), source
            except Exception:  # the cited reading's failure is not page_outcome's: it decides
                self.texts, self.source = None, None
                return page_outcome(resp, store, url, extract, reader)  # and the verdicts read it as before
            finally:
                self._reader = None
            if self._words:
                return PageRead(resp, Outcome.OK, "", ())
        return page_outcome(resp, store, url, extract, reader)

    def texts_of(self, r: Receipt, body: bytes) -> PageTexts:
        """``body_texts(r, body)``: the texts read already when they were read with what ``r`` records."""
        if self.texts is not None and self.source == texts_source(r) and len(body) <= MAX_EXTRACT_BYTES:
            return self.texts
        return body_texts(r, body)


MAX_GROUP = 256  # pages whose receipts go in one transaction at most
# a page, its receipt (unsigned), its verdicts (None: a PDF), its texts' cache row (texts_cache.encode)
Arrived = tuple[Page, Receipt, list[Verdict] | None, Any]


class _Writer:
    """One thread, one ledger connection: receipts appended, then verdicts put on file, a group at a time."""

    def __init__(self, chk: Any) -> None:
        self.chk = chk
        self.key = chk.home.signing_key()  # a missing key ends the check here, before any page is read
        self.q: queue.Queue[Arrived | None] = queue.Queue()
        self.error: BaseException | None = None
        self.signed: list[Receipt] = []
        self.pdfs: list[tuple[Page, Receipt]] = []
        self.t = threading.Thread(target=self._run, name="g6-report-writer", daemon=True)

    def _run(self) -> None:
        ledger = self.chk.home.ledger.reopen()  # a connection is its opener thread's
        try:
            stop = False
            while not stop:
                item = self.q.get()
                if item is None:
                    break
                group = [item]
                while len(group) < MAX_GROUP:
                    try:
                        nxt = self.q.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stop = True
                        break
                    group.append(nxt)
                self._write(ledger, group)
        except BaseException as e:  # noqa: BLE001 - handed to the receiving thread, which raises it
            self.error = e
        finally:
            ledger.close()

    def _write(self, ledger: Any, group: list[Arrived]) -> None:
        signed = ledger.append_many([r for _, r, _, _ in group], self.key)
        self.signed += signed
        if self.chk.cache is not None:
            self.chk.cache.put_many(row for _, _, _, row in group)
        lines, decided = [], []
        for (page, _, verdicts, _), r in zip(group, signed, strict=True):
            if verdicts is None:
                self.pdfs.append((page, r))
                continue
            for (i, _), v in zip(page.items, verdicts, strict=True):
                v = self.chk.with_search(v, page.searched.get(i))
                lines.append(Line(self.chk.keys[i], v))
                decided.append((i, v))
        if lines:
            self.chk.state.add_many(lines)
        for i, v in decided:
            self.chk.done[i] = v
        if self.chk.progress is not None:
            self.chk.progress(len(self.chk.done), len(self.chk.report.citations))

    def put(self, item: Arrived) -> None:
        if self.error is not None:
            raise self.error
        self.q.put(item)

    def close(self) -> None:
        self.q.put(None)
        self.t.join()
        if self.error is not None:
            raise self.error


def fetch_pages(chk: Any, pages: dict[str, Page], workers: int, processes: int) -> None:
    """Read every page of ``pages`` now (``chk``: the check, ``g6.report.check._Check``) and decide the
    verdicts of the citations resting on each."""
    client, store = chk.client, chk.home.store
    assert client is not None
    key = chk.cache.key if chk.cache is not None else None

    listed = list(pages.values())

    # a page is handed to a worker by its place in ``listed``: a forked worker holds the list already, so only
    # the number crosses the pipe (not the page and its citations)
    def work(k: int) -> tuple[Receipt, list[Verdict] | None, Any]:
        page = listed[k]
        reading = _ReadWithTexts()
        prepared = prepare_fetch(store, client, page.url, documents=False, reading=reading)
        r = prepared.receipt
        body, row = None, None
        if ok_read(r):
            held = prepared.body  # the bytes just hashed and written: no read back from the store
            body = held if held is not None else store.read(str((r.content or {})["blake3"]))
            if is_pdf(r, body):
                return r, None, None  # converted in the calling process, which appends the conversion's receipt
        texts = reading.texts_of(r, body) if body is not None else None
        if texts is not None and key is not None and body is not None and len(body) <= MAX_EXTRACT_BYTES:
            row = encode(key, str((r.content or {})["blake3"]), *texts_source(r), texts)  # kept for the next run
        return r, [judge(c.quote, c.claim, r, "fetched", texts, context=(c.prefix, c.suffix))
                   for _, c in page.items], row

    by_host: dict[str, list[int]] = defaultdict(list)
    for k, page in enumerate(listed):
        by_host[host_of(page.url)].append(k)
    writer = _Writer(chk)
    with contextlib.ExitStack() as stack:
        if usable_processes(chk.home, processes) > 1 and len(by_host) > 1:
            stack.enter_context(client.hosts_shared(multiprocessing.get_context("fork")))
            # forked before the writer's thread starts: a fork needs this to be the only thread
            results: Any = fork_workers(work, workers, min(processes, len(by_host)), setup=client.forget_connections)
            stack.callback(results.close)
            results.give(list(by_host.values()))
        else:
            results = per_host_groups(list(by_host.values()), work, workers)
            stack.callback(results.close)
        writer.t.start()
        try:
            for k, res, _ in results:
                if isinstance(res, BaseException):
                    raise res
                writer.put((listed[k], *res))
        finally:
            writer.close()
    chk.ev.add(writer.signed)
    chk.fetched += len(writer.signed)
    decided = []
    for page, r in writer.pdfs:  # a PDF: its conversion is made and receipted here, in the check's thread
        for i, _ in page.items:
            decided.append((i, chk.with_search(chk.judge_stored(r, chk.report.citations[i], "fetched"),
                                             page.searched.get(i))))
    chk.decide(decided)


def judge_forked(chk: Any, items: list[tuple[Receipt, list[Any]]], processes: int) -> dict[str, list[Verdict] | None]:
    """The verdicts on stored reads, each page's body read and its text extracted on one of ``processes`` forked
    processes (the extraction is most of the cost): receipt id -> its citations' verdicts, or None for one the
    calling process must judge itself (a PDF, whose conversion it appends; a body the store cannot serve). The
    texts extracted go to the check's cache rows (``chk.rows``)."""
    key = chk.cache.key if chk.cache is not None else None
    chk.ev.redactions()  # read here, before the fork: each worker refuses a redacted body as the check does

    work_items = [(r, [(c, how) for _, c, _, how in entries]) for r, entries in items]

    def work(k: int) -> tuple[list[Verdict], Any] | None:  # by place: the forked worker holds the items already
        r, asked = work_items[k]
        texts, row = None, None
        if ok_read(r):
            try:  # as every body of the check is read: a redacted one refused, whatever bytes are left
                body = chk.ev.body(r.content or {})
            except Exception:  # noqa: BLE001 - the calling process says why, in its words
                return None
            if is_pdf(r, body):
                return None
            texts = body_texts(r, body)
            if key is not None and len(body) <= MAX_EXTRACT_BYTES:
                row = encode(key, str((r.content or {})["blake3"]), *texts_source(r), texts)
        return [judge(c.quote, c.claim, r, how, texts, context=(c.prefix, c.suffix)) for c, how in asked], row

    pool = fork_workers(work, processes, processes)
    out: dict[str, list[Verdict] | None] = {}
    try:
        pool.give([[k] for k in range(len(work_items))])
        for k, res, _ in pool:
            r = work_items[k][0]
            if isinstance(res, BaseException) or res is None:
                out[r.receipt_id] = None
            else:
                out[r.receipt_id] = res[0]
                chk.rows.append(res[1])
    finally:
        pool.close()
    return out
