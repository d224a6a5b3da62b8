"""Fetch a list of URLs: hosts in parallel, one request at a time per host, a receipt per URL.

Each URL goes through ``capture.prepare_fetch`` as ``g6 fetch URL`` does (checked client, robots,
the host's pause, the store, a signed receipt), with ``documents=False``: the outcome is decided
as ``g6 fetch`` decides it, but the page's main text, which a batch does not print, is not read.
The host pool is re-check's (``g6.fetch.host_pool``). Receipts are appended by one ledger-writer thread
that owns its own SQLite connection and commits whatever receipts are waiting in one transaction
(group commit, one fsync per group). A host's thread hands its receipt over and goes on to its
next URL; the calling thread waits until the receipt is signed and durable, then writes the
result's run-file line (the lines of every result ready at that moment in one append and one
fsync) and only then reports it. So nothing is reported before its receipt and its line are on
disk, and a kill -9 loses no reported result.

Each result is appended to a run file (``$G6_HOME/knowledge/fetches/<run id>.jsonl``) after its
receipt; re-running with the same run id skips the URLs it already settled (ok or not). A run file
is not evidence: a line counts as settled only when this home's ledger holds its receipt, for the
same URL and with the same outcome (``backed``); any other line's URL is fetched again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import queue
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from g6.adapters.html.page import EXTRACT_MODES
from g6.adapters.net.checked_client import CheckedClient
from g6.adapters.net.redact import redact_text
from g6.adapters.net.urls import recorded_url
from g6.errors import G6Error, InputError, ReceiptNotFound
from g6.fetch.capture import prepare_fetch
from g6.fetch.host_pool import can_fork, host_of, per_host, per_host_processes, waited
from g6.fetch.render import PreparedPage, Renderer, prepare_page, prepare_page_steps
from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.receipts import new_receipt_id
from g6.runs import RunState
from g6.store import BlobStore

MAX_GROUP = 256  # receipts per transaction at most


@dataclass(frozen=True, slots=True)
class UrlResult:
    url: str
    outcome: str
    code: str
    receipt_id: str | None
    status: int | None = None
    byte_count: int = 0
    reason: str = ""
    content: Mapping[str, Any] | None = None
    interstitial: Mapping[str, Any] | None = None  # the receipt's: a login, challenge or consent wall
    render: Mapping[str, Any] | None = None  # with --render: mode, rendered, why, raw_receipt_id
    # when redaction changed the URL: a keyed hash of the URL itself (_Names), so two URLs that differ only in a
    # secret are two lines of the run file, never one
    url_key: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def to_json(self) -> dict[str, Any]:
        d = {"url": self.url, "outcome": self.outcome, "code": self.code, "receipt_id": self.receipt_id,
             "status": self.status, "byte_count": self.byte_count, "reason": self.reason,
             "content": dict(self.content) if self.content else None}
        if self.interstitial is not None:  # only when flagged, as in the receipt
            d["interstitial"] = dict(self.interstitial)
        if self.render is not None:  # only with --render
            d["render"] = dict(self.render)
        if self.url_key is not None:
            d["url_key"] = self.url_key
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> UrlResult:
        url_key = d.get("url_key")
        if url_key is not None and not isinstance(url_key, str):
            raise TypeError("url_key is text")  # an edited line: dropped as a torn one is
        return cls(d["url"], d["outcome"], d["code"], d.get("receipt_id"), d.get("status"),
                   int(d.get("byte_count") or 0), d.get("reason") or "", d.get("content"), d.get("interstitial"),
                   d.get("render"), url_key)

    def line_key(self) -> str:
        """What this line settles in the run file: its URL as shown, and its ``url_key`` when it has one."""
        return _line_key(self.url, self.url_key)


def _line_key(shown: str, url_key: str | None) -> str:
    return shown if url_key is None else f"{shown}\n{url_key}"


class _Names:
    """How a batch names each URL: ``names(u)`` as the run file, the output and the receipt show it (redacted,
    configured secrets too), and ``key(u)``, what its run-file line settles. Where redaction changed the URL the key
    adds a keyed hash of the URL itself (HMAC under a key only the home's signing key makes): two URLs that differ
    only in a secret are two lines, and a resumed run never takes one for the other (before, it took the second as
    done), while no secret, nor an unkeyed hash of one, reaches the file."""

    def __init__(self, home: EvidenceHome, urls: list[str], secrets: tuple[str, ...]) -> None:
        self._shown = {u: redact_text(u, secrets) for u in urls}
        changed = [u for u, s in self._shown.items() if s != u]
        mac = home.signing_key().derived_key(b"g6 run-file url key v1") if changed else b""
        self._keys = {u: hmac.new(mac, u.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:32]
                      for u in changed}

    def __call__(self, u: str) -> str:
        return self._shown[u]

    def key(self, u: str) -> str:
        """What ``u``'s line settles: ``UrlResult.line_key`` of the line ``tag`` makes for it."""
        return _line_key(self._shown[u], self._keys.get(u))

    def tag(self, r: UrlResult, u: str) -> UrlResult:
        k = self._keys.get(u)
        return r if k is None else replace(r, url_key=k)

    def result(self, u: str, fetched: _Fetched | _Later, signed: Receipt) -> UrlResult:
        """``u``'s line, once its receipt ``signed`` is durable."""
        return self.tag(fetched.result(self(u), signed), u)


@dataclass(frozen=True, slots=True)
class _Fetched:
    """One URL fetched, kept and read, its receipt not yet signed: what a worker (a thread, or a
    process, so it is small and pickles) hands back."""

    receipts: tuple[Receipt, ...]  # unsigned; the last is the one the result is of (a capture's, rendered)
    outcome: str
    code: str
    status: int | None
    byte_count: int
    render: Mapping[str, Any] | None = None

    def result(self, shown_url: str, signed: Receipt) -> UrlResult:
        return UrlResult(shown_url, self.outcome, self.code, signed.receipt_id, self.status, self.byte_count,
                         signed.detail.get("reason", ""), signed.content, signed.interstitial,
                         dict(self.render) if self.render is not None else None)


def usable_processes(home: EvidenceHome, processes: int) -> int:
    """How many processes a batch asking for ``processes`` gets: more than one only for a store in
    a folder (an object store's client is not shared across a fork) where ``can_fork()``."""
    if processes <= 1 or not isinstance(home.store, BlobStore) or not can_fork():
        return 1
    return processes


@dataclass(frozen=True, slots=True)
class BatchReport:
    run_id: str
    results: tuple[UrlResult, ...]
    resumed: int = 0
    counts: Mapping[str, int] = field(default_factory=dict)
    refetched: tuple[str, ...] = ()  # run-file lines no receipt in the ledger backs: fetched again

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "ok": self.ok, "urls": len(self.results), "resumed": self.resumed,
                "counts": dict(self.counts)}


def read_urls(lines: Iterable[str]) -> list[str]:
    """One URL a line; blank lines and ``#`` comments skipped; a URL listed twice is fetched once."""
    seen: dict[str, None] = {}
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if any(c.isspace() for c in line):
            raise InputError(f"one URL a line, got {line[:80]!r}")
        seen.setdefault(line, None)
    return list(seen)


def backed(home: EvidenceHome, line: UrlResult, url: str, secrets: Iterable[str] = ()) -> bool:
    """Whether ``line`` (an earlier run's result for ``url``) is backed by this home's ledger: its
    receipt is there, is the receipt of a fetch of this URL (redacted as the batch redacts it) and
    says what the line reports (``agrees``). A line without one (another home's, a restored ledger, an
    edited file, an append that failed) settles nothing."""
    if not isinstance(line.receipt_id, str) or not line.receipt_id:
        return False
    try:
        receipt = home.ledger.get(line.receipt_id)
    except ReceiptNotFound:
        return False
    return (receipt.kind == "fetch" and receipt.request.get("url") == recorded_url(redact_text(url, secrets))[0]
            and agrees(line, receipt))


def agrees(line: UrlResult, r: Receipt) -> bool:
    """Whether everything ``line`` reports of its read is what its receipt ``r`` says: a resumed run reports the
    line, so an edited one must not report, under a real receipt's id, another body, status or wall, or a render
    that was not made."""
    render = line.render
    if render is not None and not isinstance(render, Mapping):
        return False
    rendered = render is not None and render.get("rendered") is True
    return (line.outcome == r.outcome and line.code == r.outcome_code and line.status == r.http_status
            and line.byte_count == r.byte_count and line.reason == (r.detail.get("reason") or "")
            and line.content == (dict(r.content) if r.content is not None else None)
            and line.interstitial == (dict(r.interstitial) if r.interstitial is not None else None)
            and rendered == (r.capture is not None) and (render or {}).get("raw_receipt_id") == r.links.get("raw"))


class _LedgerWriter:
    """One thread, one connection: signs and appends the receipts workers hand over, in groups. Once the batch is
    ``stopped`` early (Ctrl-C, an error) nothing more is appended: whatever is handed over from then on ends with no
    receipt and no line, and a resumed run reads it again (appended, it would have a receipt and no line, and be
    receipted twice)."""

    def __init__(self, home: EvidenceHome) -> None:
        self._ledger = home.ledger  # reopened in the writer's thread: a connection is its opener's
        self._key = home.signing_key()  # a missing key ends the batch here, before anything starts
        self._q: queue.Queue[tuple[tuple[Receipt, ...], Future[Receipt]] | None] = queue.Queue()
        self._closed = threading.Event()
        self.stopped = threading.Event()
        self._t = threading.Thread(target=self._run, name="g6-ledger-writer", daemon=True)

    def start(self) -> _LedgerWriter:
        self._t.start()
        return self

    def _run(self) -> None:
        ledger = self._ledger.reopen()
        try:
            stop = False
            while not stop:
                item = self._q.get()
                if item is None:
                    break
                group = [item]
                while len(group) < MAX_GROUP:
                    try:
                        nxt = self._q.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stop = True
                        break
                    group.append(nxt)
                try:
                    if self.stopped.is_set():
                        raise InputError("the batch was stopped before this receipt was written")
                    signed = ledger.append_many([r for rs, _ in group for r in rs], self._key)
                except BaseException as e:  # noqa: BLE001 - each waiting worker gets it
                    for _, f in group:
                        f.set_exception(e)
                    continue
                end = 0
                for rs, f in group:  # a URL's receipts go in one group; its future ends with the last of them
                    end += len(rs)
                    f.set_result(signed[end - 1])
        finally:
            ledger.close()
            self._closed.set()
            self._refuse_waiting()

    def _refuse_waiting(self) -> None:
        """Fail whatever is queued after the writer stopped, so no worker waits forever."""
        while True:
            try:
                item = self._q.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                with contextlib.suppress(InvalidStateError):  # another thread refused it first
                    item[1].set_exception(InputError("the batch was stopped before this receipt was written"))

    def submit(self, receipts: tuple[Receipt, ...]) -> Future[Receipt]:
        """Queue one URL's ``receipts`` (appended in one transaction); the future ends with the last of them
        signed and durable (or with the append's error)."""
        f: Future[Receipt] = Future()
        if self._closed.is_set() or self.stopped.is_set():
            raise InputError("the batch was stopped before this receipt was written")
        self._q.put((receipts, f))
        if self._closed.is_set():  # closed between the check and the put: nobody else will drain it
            self._refuse_waiting()
        return f

    def close(self) -> None:
        self._q.put(None)
        self._t.join()


def _resume(home: EvidenceHome, state: RunState, urls: list[str], shown: _Names,
            secrets: tuple[str, ...]) -> tuple[dict[str, UrlResult], list[str]]:
    """What an earlier run with this id settled (keyed by the redacted URL: no secret reaches the run
    file), less the lines no receipt in the ledger backs, whose URLs are fetched again (returned too)."""
    done: dict[str, UrlResult] = state.load()
    refetched: list[str] = []
    for u in urls:
        key = shown.key(u)
        if key in done and not backed(home, done[key], u, secrets):
            del done[key]  # a line the ledger does not back settles nothing: fetch again
            refetched.append(key)
    return done, refetched


class _Settler:
    """Results in, their receipts handed to the ledger writer, not yet durable (``arrived``): ``settle``
    waits until each one's receipt is durable, writes their run-file lines in one append (one fsync),
    then reports them. A render's line is written by its render thread (``_Renders``) as soon as its receipts
    are durable, so ``settle(wait=False)`` leaves a render still under way for later: no URL's line waits for
    another URL's render."""

    def __init__(self, state: RunState, done: dict[str, UrlResult], shown: _Names,
                 secrets: tuple[str, ...], finished: int, total: int,
                 on_result: Callable[[UrlResult, int, int], None] | None,
                 progress: Callable[[int, int], None] | None) -> None:
        self.state, self.done, self.shown, self.secrets = state, done, shown, secrets
        self.finished, self.total, self.on_result, self.progress = finished, total, on_result, progress
        self.arrived: list[tuple[str, Any]] = []
        # every URL whose receipts were handed to the ledger writer and whose line is not yet written, by the thread
        # that handed them: a result still in the hosts' queue when a stop comes is in no ``arrived`` yet, while the
        # writer may have made its receipt durable (``keep_ready``)
        self.handed: dict[str, tuple[_Fetched, Future[Receipt]]] = {}
        self.ready: list[tuple[UrlResult, bool]] = []  # each with whether its line is on file already

    def _outcome(self, url: str, res: Any) -> tuple[UrlResult, bool]:
        outcome: UrlResult | BaseException
        if isinstance(res, BaseException):
            outcome = res
        else:
            fetched, appended = res
            try:
                # its receipt is durable from here
                outcome = self.shown.result(url, fetched, waited(appended))
            except BaseException as e:  # noqa: BLE001 - sorted just below, as a fetch's own error is
                outcome = e
        if isinstance(outcome, G6Error):  # a bad input, a refused append: failed, the rest go on
            return self.shown.tag(UrlResult(self.shown(url), "error", outcome.code, None,
                                            reason=redact_text(str(outcome), self.secrets)[:300]), url), False
        if isinstance(outcome, BaseException):
            raise outcome  # ``arrived`` kept: ``keep_ready`` gives a line to each whose receipt is durable
        return outcome, isinstance(res[0], _Later)  # a render's line: written by its render thread

    def settle(self, wait: bool = True) -> None:
        later = []
        while self.arrived:  # each taken out once it is ready: a stop on the next leaves only the rest in ``arrived``
            url, res = self.arrived[0]
            if not wait and isinstance(res, tuple) and isinstance(res[0], _Later) and not res[1].done():
                later.append((url, res))  # a render under way: its thread writes its line
            else:
                self.ready.append(self._outcome(url, res))
                self.handed.pop(url, None)
            del self.arrived[0]
        self.arrived[:] = later
        if not self.ready:
            return
        self._keep([r for r, on_file in self.ready if not on_file])
        # on file now: a stop (Ctrl-C) while they are reported below must not write their lines again (keep_ready)
        self.ready[:] = [(r, True) for r, _ in self.ready]
        for r, _ in self.ready:
            self.done[r.line_key()] = r
            self.finished += 1
            if self.on_result:
                self.on_result(r, self.finished, self.total)
            if self.progress:
                self.progress(self.finished, self.total)
        self.ready.clear()

    def _keep(self, results: list[UrlResult]) -> None:
        if results:
            self.state.add_many(results)

    def keep_ready(self) -> None:
        """Stopped early: what ended before the stop keeps its line, so a resume skips it (and does not receipt it
        again): each result made ready, and each one not yet settled whose receipt the ledger writer made durable
        before it stopped, in ``arrived`` or still in the hosts' queue (``handed``) (called once the writer is closed
        and the hosts' threads ended: every receipt's future is done by then). A render's line is its render thread's.
        A line already on file with the same receipt is not written again: a stop can land between any two steps
        of ``settle`` (a result made ready and not yet taken out of ``arrived``, lines written and not yet marked)."""
        kept = [r for r, on_file in self.ready if not on_file]
        for url, res in [*self.arrived, *self.handed.items()]:
            if not isinstance(res, tuple) or isinstance(res[0], _Later) or not res[1].done():
                continue
            with contextlib.suppress(Exception):  # its append failed (the stop refused it): no receipt, no line
                kept.append(self.shown.result(url, res[0], res[1].result()))
        self.arrived.clear()
        self.handed.clear()
        if not kept:  # a batch that ran to its end, or stopped with nothing to keep: its run file is not read again
            return
        on_file: dict[str, UrlResult] = {}
        with contextlib.suppress(OSError):
            on_file = self.state.load()
        new: dict[str, UrlResult] = {}
        for r in kept:
            k = r.line_key()
            if k not in new and not (k in on_file and on_file[k].receipt_id == r.receipt_id):
                new[k] = r
        with contextlib.suppress(OSError):
            self._keep(list(new.values()))


def _fetched(p: PreparedPage) -> _Fetched:
    page = p.page
    return _Fetched(p.receipts, page.outcome.value, page.outcome.code("fetch"), page.response.status,
                    page.response.byte_count, p.render)


@dataclass(frozen=True, slots=True)
class _Later:
    """A URL whose raw read was a shell: its render, under way on the batch's render threads."""

    fetched: Future[_Fetched]

    def result(self, shown_url: str, signed: Receipt) -> UrlResult:
        return waited(self.fetched).result(shown_url, signed)


class _Renders:
    """The renders of a ``--render auto`` batch, beside its raw reads: one thread per browser, so a host whose
    page was a shell goes on to its next page while a browser renders that one. Each rendered page's receipts
    (the raw read's, the sub-resources', the capture's) go to the ledger writer in one group, as before, and the
    render thread writes its run-file line (``on_file``) as soon as they are durable: a render that ended is never
    done again by a resumed run for want of a line that waited for the calling thread."""

    def __init__(self, browsers: int, on_file: Callable[[str, _Fetched, Receipt], None]) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, browsers), thread_name_prefix="g6-render")
        self._on_file = on_file

    def submit(self, url: str, render: Callable[[], PreparedPage],
               writer: _LedgerWriter) -> tuple[_Later, Future[Receipt]]:
        fetched: Future[_Fetched] = Future()
        appended: Future[Receipt] = Future()

        def run() -> None:
            try:
                done = _fetched(render())
                fetched.set_result(done)
                signed = writer.submit(done.receipts).result()  # this thread waits for the append
                self._on_file(url, done, signed)
                appended.set_result(signed)
            except BaseException as e:  # noqa: BLE001 - handed to the settler, as a worker's error is
                for f in (fetched, appended):
                    if not f.done():
                        f.set_exception(e)

        self._pool.submit(run)
        return _Later(fetched), appended

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)


def _fetch_one(home: EvidenceHome, client: CheckedClient, url: str, extract: str, render_mode: str,
               renderer: Renderer | None) -> _Fetched:
    """One URL read and kept, its receipts not yet signed. ``documents=False``: a batch reports outcomes, not
    page text, so the main-text pass runs only where it could change the outcome (capture.page_outcome)."""
    if render_mode != "off":
        return _fetched(prepare_page(home.store, client, url, render_mode=render_mode, renderer=renderer,
                                     extract=extract, documents=False))
    prepared = prepare_fetch(home.store, client, url, extract=extract, documents=False)
    page = prepared.page
    return _Fetched((prepared.receipt,), page.outcome.value, page.outcome.code("fetch"), page.response.status,
                    page.response.byte_count)


def _settle_all(results: Any, settler: _Settler, writer: _LedgerWriter, forked: bool,
                renderer: Renderer | None) -> None:
    """Each result as it comes, settled in groups. An early stop (Ctrl-C, an error) stops the ledger writer first
    (``per_host`` has stopped it already when the stop came while waiting for a result), so a read or a render that
    ends after the stop leaves no receipt (its URL has no line: a resumed run reads it again, and receipts it once),
    then closes a ``renderer``'s browsers, so a render under way ends now, not at its deadline."""
    try:
        for url, res, more in results:
            if forked and isinstance(res, _Fetched):
                # grouped: the writer takes what has arrived
                res = settler.handed[url] = (res, writer.submit(res.receipts))
            settler.arrived.append((url, res))
            if not more or len(settler.arrived) >= MAX_GROUP:
                # renders under way are waited for only when a group's worth of them are (the hosts wait then)
                settler.settle(wait=len(settler.arrived) >= MAX_GROUP)
        settler.settle()
    except BaseException:
        writer.stopped.set()
        writer.close()
        if renderer is not None:
            renderer.pool.close()
        raise


def batch_fetch(home: EvidenceHome, client: CheckedClient, urls: list[str], *, run_id: str | None = None,
                state_dir: Path | None = None, concurrency: int = 8, extract: str = "text",
                processes: int = 1,
                on_result: Callable[[UrlResult, int, int], None] | None = None,
                progress: Callable[[int, int], None] | None = None,
                on_refetch: Callable[[list[str]], None] | None = None, render_mode: str = "off",
                renderer: Renderer | None = None) -> BatchReport:
    """Fetch every URL (those a resumed run settled are skipped); ``on_result(result, done, total)``
    and ``progress(done, total)`` are called in this thread as each URL ends, after its receipt and
    run-file line are written (``progress`` once first with the URLs an earlier run settled).
    ``on_refetch(urls)`` is called once, before any fetch, with the (redacted) URLs whose run-file
    lines no receipt in the ledger backs, which are fetched again.

    ``processes`` > 1 fetches on that many forked processes (``usable_processes`` says when it may):
    the hosts are shared out among them, ``concurrency`` threads in all, and the client's per-host
    gate and pause are shared by them all. Signing and appending stay in this process.

    ``render_mode`` (``always`` or ``auto``, with ``renderer``) renders as ``g6 fetch URL --render`` does, on
    threads of this process only (a browser is this process's child); a URL's receipts (the raw read's, the
    sub-resources', the capture's) are appended in one transaction. With ``auto`` a shell's render runs on a
    render thread (one per browser) while its host's thread goes on to the host's next URL. An early stop closes
    the renderer's browsers (the renders under way end without a receipt)."""
    if extract not in EXTRACT_MODES:
        raise ValueError(f"extract must be one of {EXTRACT_MODES}")
    run_id = run_id or "fetch_" + new_receipt_id().removeprefix("rcpt_")
    if not run_id.replace("_", "").replace("-", "").isalnum():
        raise InputError(f"a run id is letters, digits, '-' and '_', got {run_id!r}")
    state = RunState((state_dir or home.root / "knowledge" / "fetches") / f"{run_id}.jsonl",
                     decode=UrlResult.from_json, key=UrlResult.line_key)
    secrets = tuple(getattr(client, "secrets", ()))
    shown = _Names(home, urls, secrets)
    done, refetched = _resume(home, state, urls, shown, secrets)
    if refetched and on_refetch:
        on_refetch(refetched)
    total = len(urls)
    resumed = sum(1 for u in urls if shown.key(u) in done)
    pending = [u for u in urls if shown.key(u) not in done]
    finished = 0
    if on_result:  # a line per URL, the ones an earlier run settled too
        for key in dict.fromkeys(shown.key(u) for u in urls):
            if key in done:
                finished += 1
                on_result(done[key], finished, total)
    finished = resumed
    if progress and resumed:
        progress(finished, total)

    def fetch_one(url: str) -> _Fetched:
        return _fetch_one(home, client, url, extract, render_mode, renderer)

    forked = usable_processes(home, processes) > 1 and len(pending) > 1 and render_mode == "off"
    settler = _Settler(state, done, shown, secrets, finished, total, on_result, progress)
    with contextlib.ExitStack() as stack:
        if forked:
            import multiprocessing

            stack.enter_context(client.hosts_shared(multiprocessing.get_context("fork")))
            writer = _LedgerWriter(home)
            # forked before the ledger writer's thread starts: a fork needs this to be the only thread
            results: Any = per_host_processes(pending, host_of, fetch_one, concurrency, processes,
                                              setup=client.forget_connections)
            stack.callback(results.close)
            writer.start()
        else:
            writer = _LedgerWriter(home).start()
            renders = _Renders(renderer.pool.size, lambda u, f, signed: state.add(shown.result(u, f, signed))) \
                if render_mode == "auto" and renderer is not None else None
            if renders is not None:
                stack.callback(renders.close, True)  # after the normal close below: only an early stop cancels

            def work(url: str) -> tuple[_Fetched | _Later, Future[Receipt]]:
                # the receipt goes to the writer from here and the host goes on to its next URL;
                # the calling thread waits for it before reporting
                if renders is not None:  # a shell is rendered beside the raw reads, its host goes on
                    step = prepare_page_steps(home.store, client, url, render_mode="auto", renderer=renderer,
                                              extract=extract, documents=False)
                    if not isinstance(step, PreparedPage):
                        return renders.submit(url, step, writer)
                    fetched = _fetched(step)
                else:
                    fetched = fetch_one(url)
                handed = settler.handed[url] = (fetched, writer.submit(fetched.receipts))
                return handed

            # stopped early, the hosts' reads still under way are waited for: the writer takes none of them
            results = per_host(pending, host_of, work, concurrency, on_stop=writer.stopped.set)
        try:
            _settle_all(results, settler, writer, forked, renderer if render_mode != "off" else None)
        finally:
            results.close()  # on an early stop: no host starts another URL
            writer.close()
            settler.keep_ready()
    settled = tuple(done[k] for k in dict.fromkeys(shown.key(u) for u in urls) if k in done)
    counts: dict[str, int] = {}
    for r in settled:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    return BatchReport(run_id, settled, resumed, counts, tuple(refetched))
