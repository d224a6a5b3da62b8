"""Orchestration: adapter result -> blob store (already written while reading) -> signed receipt.

The body is in the store before the receipt is appended, so no receipt ever points at a missing
blob; a crash between the two leaves an unreferenced blob, which ``gc`` may remove later.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from g6.adapters.html.interstitial import Interstitial, WallCheck
from g6.adapters.html.page import EXTRACT_MODES, MAX_EXTRACT_BYTES, Document, PageRead, media_type, read_page
from g6.adapters.html.text import HTMLParseError, TreeReader, parse_html, strip_unseen, visible_text
from g6.adapters.net.checked_client import CheckedClient, FetchPolicy, FetchResponse
from g6.adapters.net.redact import redact_json, redact_text, redact_url
from g6.adapters.net.urls import recorded_url
from g6.adapters.outcomes import Outcome, es_code
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from g6.store import BlobBackend, BlobRef, Digest
from g6.store.base import BlobWriterLike


@dataclass(frozen=True, slots=True)
class FetchResult:
    outcome: Outcome
    receipt_id: str
    requested_url: str
    final_url: str | None
    status: int | None
    byte_count: int
    truncated: bool
    content: Mapping[str, Any] | None
    documents: tuple[Document, ...]
    reason: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)
    interstitial: Mapping[str, Any] | None = None  # the receipt's: a login, challenge or consent wall

    @property
    def code(self) -> str:
        return self.outcome.code("fetch")

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value,
            "code": self.code,
            "trust": self.outcome.trust,
            "reason": self.reason,
            "receipt_id": self.receipt_id,
            "requested_url": self.requested_url,
            "final_url": self.final_url,
            "status": self.status,
            "byte_count": self.byte_count,
            "truncated": self.truncated,
            "content": dict(self.content) if self.content else None,
            "documents": [d.to_json() for d in self.documents],
            "detail": dict(self.detail),
            # only when flagged, as in the receipt: the read succeeded, but the words are the wall's
            **({"interstitial": dict(self.interstitial)} if self.interstitial is not None else {}),
        }


def wall_check(resp: FetchResponse) -> WallCheck:
    """The wall check of ``resp``'s body, to hand as the ``reader`` of the reading that parses it
    (``read_page``, ``read_texts``), then to ``interstitial_of``/``wall_of``: one parse for both."""
    return WallCheck(status=resp.status, final_url=resp.final_url, content_type=resp.content_type)


def interstitial_of(resp: FetchResponse, store: BlobBackend, outcome: Outcome,
                    seen: WallCheck | None = None) -> Interstitial | None:
    """The wall (login, challenge, consent) a successful HTML read met, or None. A failed read is typed
    as its failure already; a body too large to read as a page is not judged (walls are small).
    ``seen``: the ``wall_check`` the page's reading was shown its tree with."""
    if outcome not in (Outcome.OK, Outcome.EMPTY) or resp.body is None or resp.body.size > MAX_EXTRACT_BYTES:
        return None
    return wall_of(resp, store.read(resp.body.blake3), seen)


def wall_of(resp: FetchResponse, body: bytes, seen: WallCheck | None = None) -> Interstitial | None:
    """``interstitial_of`` for a successful read whose ``body`` the caller holds already."""
    if media_type(resp.content_type, body) not in ("text/html", "application/xhtml+xml"):
        return None
    return (seen or wall_check(resp)).verdict(body)


def receipt_from_response(resp: FetchResponse, *, kind: str, source: str, request: Mapping[str, Any],
                          outcome: Outcome | None = None, reason: str | None = None, op: str = "fetch",
                          detail: Mapping[str, Any] | None = None,
                          links: Mapping[str, Any] | None = None,
                          interstitial: Interstitial | None = None) -> Receipt:
    """The unsigned receipt for one checked fetch. URLs are redacted (no userinfo, no key values)."""
    out = outcome or resp.outcome
    d = resp.receipt_detail()
    if reason is not None:
        d["reason"] = reason
        if not reason:
            d.pop("reason")
    d.update(detail or {})
    d.pop("_body", None)
    return Receipt(
        kind=kind,
        source=source,
        request=dict(request),
        final_url=redact_url(resp.final_url) if resp.final_url else None,
        hops=tuple(replace(h, url=redact_url(h.url)) for h in resp.hops),  # with what TLS showed
        http_status=resp.status,
        byte_count=resp.byte_count,
        truncated=resp.truncated,
        allowlist=resp.allowlist,
        outcome=out.value,
        outcome_code=out.code(op),
        content=resp.body.to_json() if resp.body else None,
        detail=d,
        links=dict(links or {}),
        interstitial=interstitial.to_json() if interstitial is not None else None,
    )


class _KeptBody:
    """A store writer that also keeps the body it writes (up to ``limit`` bytes) in memory."""

    def __init__(self, inner: BlobWriterLike, kept: dict[str, bytes], limit: int) -> None:
        self._inner, self._kept, self._limit = inner, kept, limit
        self._chunks: list[bytes] | None = []
        self._size = 0

    def write(self, chunk: bytes) -> None:
        self._inner.write(chunk)
        if self._chunks is not None:
            self._size += len(chunk)
            if self._size > self._limit:
                self._chunks = None  # too large to be read as a page anyway: not held
            else:
                self._chunks.append(bytes(chunk))

    def commit(self) -> BlobRef:
        ref = self._inner.commit()
        if self._chunks is not None:
            self._kept[ref.blake3] = b"".join(self._chunks)
        return ref

    def abort(self) -> None:
        self._inner.abort()

    def __enter__(self) -> _KeptBody:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.__exit__(*exc)


class _ReadBack:
    """The store as one fetch sees it: the body the fetch just wrote is read from memory (the very
    bytes that were hashed and written), not decompressed back from disk; the rest is the store's."""

    def __init__(self, store: BlobBackend) -> None:
        self._store = store
        self._kept: dict[str, bytes] = {}

    def writer(self, *args: Any, **kwargs: Any) -> _KeptBody:
        return _KeptBody(self._store.writer(*args, **kwargs), self._kept, MAX_EXTRACT_BYTES)

    def read(self, digest: str | Digest) -> bytes:
        body = self._kept.get(str(digest))
        return body if body is not None else self._store.read(digest)

    def held(self, digest: str) -> bytes | None:
        """The body this fetch wrote under ``digest``, when it was held (one a page is read at, or smaller)."""
        return self._kept.get(digest)

    def forget(self, digest: str) -> None:
        """Stop holding the body written under ``digest`` (handed over, or never to be): a render's reads share
        one such store for the whole capture, and would otherwise hold every body until it ends."""
        self._kept.pop(digest, None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def page_outcome(resp: FetchResponse, store: BlobBackend, url: str, extract: str = "text",
                 reader: TreeReader | None = None) -> PageRead:
    """``read_page``'s outcome, reason and detail without its documents, for a caller that does not
    show them (``g6 fetch --input``). A page is ``ok`` when its text is not blank, and its text is
    the main text or, where that is blank, the visible text: so visible text that is not blank
    decides ``ok`` without the main-text pass (trafilatura, most of the cost). Anything else (no
    visible text, not HTML, unreadable) goes through ``read_page`` itself, so the answer is the same.
    ``reader`` is shown the tree, as ``read_page`` shows it."""
    if resp.outcome is Outcome.OK and resp.body is not None and resp.body.size <= MAX_EXTRACT_BYTES:
        body = store.read(resp.body.blake3)
        if media_type(resp.content_type, body) in ("text/html", "application/xhtml+xml"):
            try:
                root = parse_html(body, resp.content_type)
                if reader is not None:
                    reader.parsed(root, body)
                strip_unseen(root)  # hidden text is not a reader's text
                title = root.find(".//title")
                if title is not None and title.getparent() is not None:
                    title.getparent().remove(title)  # nor is the title (extract_html keeps it apart)
                if reader is not None:
                    reader.stripped(root)
                if visible_text(root).strip():
                    return PageRead(resp, Outcome.OK, "", ())
            except (HTMLParseError, RecursionError, ValueError):
                pass  # read_page gives the answer (parse_failed) in its own words
    page = read_page(resp, store, url, extract, reader)
    return replace(page, documents=())


@dataclass(frozen=True, slots=True)
class PreparedFetch:
    """A page fetched, kept in the store and read, with its receipt not yet appended."""

    page: PageRead
    receipt: Receipt  # unsigned
    requested_url: str
    # the body as it was hashed and written, when it was held (up to the size a page is read at): a caller that
    # reads the page again (g6 report check) need not read it back from the store
    body: bytes | None = field(default=None, repr=False, compare=False)

    def result(self, signed: Receipt) -> FetchResult:
        """The fetch's result once ``signed`` (this receipt, signed) is in the ledger."""
        resp = self.page.response
        return FetchResult(
            outcome=self.page.outcome, receipt_id=signed.receipt_id, requested_url=self.requested_url,
            final_url=signed.final_url, status=resp.status, byte_count=resp.byte_count, truncated=resp.truncated,
            content=signed.content, documents=self.page.documents, reason=signed.detail.get("reason", ""),
            detail={k: v for k, v in signed.detail.items() if k != "reason"}, interstitial=signed.interstitial,
        )


# How a fetched page is read: (response, store, URL, extract mode, the wall check's reader) -> its outcome and
# documents. ``read_page`` and ``page_outcome`` are two; a caller may give its own that decides as one of them does.
PageReading = Callable[[FetchResponse, BlobBackend, str, str, TreeReader | None], PageRead]


def prepare_fetch(store: BlobBackend, client: CheckedClient, url: str, *, extract: str = "text",
                  policy: FetchPolicy | None = None, links: Mapping[str, Any] | None = None,
                  kind: str = "fetch", documents: bool = True, pass_headers: tuple[str, ...] = (),
                  reading: PageReading | None = None) -> PreparedFetch:
    """Fetch a page through every check, keep its bytes in ``store``, read it, and make its receipt
    (unsigned): ``fetch`` without the append, for a caller that appends receipts in groups
    (``g6.fetch.batch``). ``documents=False`` (a caller that does not show the page's text)
    decides the outcome without reading the main text (``page_outcome``). ``pass_headers``: the response headers
    the read hands back (never receipted), for a browser that may be given these bytes (``--render auto``).
    ``reading``: how the page is read, in place of those two (it must give the outcome ``page_outcome`` gives; a
    caller that reads the page's texts anyway decides it from them, ``g6.report.fetching``)."""
    if extract not in EXTRACT_MODES:
        raise ValueError(f"extract must be one of {EXTRACT_MODES}")
    kept = _ReadBack(store)
    resp = client.fetch(url, kept, source="web", policy=policy, pass_headers=pass_headers)  # type: ignore[arg-type]
    seen = wall_check(resp)  # shown the tree the page's text is read from: the page is parsed once
    read = reading or (read_page if documents else page_outcome)
    page = read(resp, kept, url, extract, seen)  # type: ignore[arg-type]
    resp = page.response  # already through the redaction path (the client's)
    wall = interstitial_of(resp, kept, page.outcome, seen)  # type: ignore[arg-type]
    secrets = tuple(getattr(client, "secrets", ()))
    # a URL over the limit (refused, nothing sent) is recorded shortened, with its length and sha256 (``recorded_url``)
    shown, about = recorded_url(redact_text(url, secrets))
    request: dict[str, Any] = {"url": shown, "extract": extract}
    pol = policy or client.policy
    if pol.max_bytes is not None:
        request["max_bytes"] = pol.max_bytes
    receipt = receipt_from_response(resp, kind=kind, source="web", request=request, outcome=page.outcome,
                                    reason=redact_text(page.reason or resp.reason, secrets),
                                    detail={**redact_json(page.detail, secrets), **about}, links=links,
                                    interstitial=wall)
    held = kept.held(resp.body.blake3) if resp.body is not None else None
    return PreparedFetch(page, receipt, request["url"], held)


def fetch(home: EvidenceHome, client: CheckedClient, url: str, *, extract: str = "text",
          policy: FetchPolicy | None = None, links: Mapping[str, Any] | None = None,
          kind: str = "fetch", documents: bool = True) -> FetchResult:
    """Fetch a page through every check, keep its bytes, append a signed receipt."""
    prepared = prepare_fetch(home.store, client, url, extract=extract, policy=policy, links=links, kind=kind,
                             documents=documents)
    return prepared.result(home.record(prepared.receipt))


@dataclass(frozen=True, slots=True)
class SearchResult:
    source: str
    request: Mapping[str, Any]
    outcome: Outcome
    reason: str
    papers: tuple[Any, ...]
    total: int | None
    complete: bool
    receipt_ids: tuple[str, ...]
    pages: tuple[Mapping[str, Any], ...]
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return self.outcome.code("search")

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome.value, "code": self.code, "trust": self.outcome.trust, "reason": self.reason,
            "source": self.source, "request": dict(self.request), "total": self.total,
            "complete": self.complete, "returned": len(self.papers),
            "documents": [p.to_json() for p in self.papers], "receipt_ids": list(self.receipt_ids),
            "pages": [dict(p) for p in self.pages], "detail": dict(self.detail),
        }


def search(home: EvidenceHome, client: CheckedClient, source: Any, request: Any, *,
           progress: Callable[[int, int], None] | None = None) -> SearchResult:
    """Run a paper search: every page kept in the store and receipted as soon as it is read.

    Each page's receipt carries the time that page was read. The last page's receipt also carries
    the run's summary, so it waits until the run ends; a run cut short (Ctrl-C, a crash) appends it
    with ``run.outcome: interrupted`` before the interruption goes on, so no page read is lost.
    ``progress(pages read, the request's max_pages)`` after each page, and (pages, pages) at the end."""
    from g6.adapters.sources.search import run_search

    secrets = tuple(getattr(client, "secrets", ())) + tuple(s for s in (getattr(source, "api_key", None),) if s)
    req = redact_json(request.to_json(), secrets)  # an endpoint may carry a token of its own
    signed: list[Receipt] = []
    read: list[Any] = []
    pending: list[Receipt] = []  # the newest page's receipt, not yet appended

    def page_receipt(page: Any) -> Receipt:
        p = page.parsed
        detail: dict[str, Any] = {"page": len(read), "total": p.total, "returned": len(p.papers), **dict(p.detail)}
        prev = pending[-1].receipt_id if pending else (signed[-1].receipt_id if signed else None)
        r = receipt_from_response(page.response, kind="search", source=source.name, request=req,
                                  outcome=p.outcome, reason=p.reason, op="search",
                                  detail=redact_json(detail, secrets), links={"previous_page": prev} if prev else {})
        return replace(r, fetched_at=page.read_at)

    def on_page(page: Any) -> None:
        read.append(page)
        receipt = page_receipt(page)
        if pending:
            signed.append(home.record(pending.pop()))
        pending.append(receipt)
        if progress is not None:
            progress(len(read), max(request.max_pages, len(read)))

    def flush(run_detail: dict[str, Any]) -> None:
        if pending:
            last = pending.pop()
            signed.append(home.record(replace(last, detail={**dict(last.detail), "run": run_detail})))

    try:
        run = run_search(source, client, home.store, request, on_page=on_page)
    except BaseException as e:
        flush({"outcome": "interrupted", "error": type(e).__name__, "pages": len(read)})
        raise
    flush({"outcome": run.outcome.value, "total": run.total, "complete": run.complete,
           "returned": len(run.papers), "pages": len(run.pages)})
    if progress is not None:  # max_pages was only the most there could be
        progress(len(read), len(read))
    pages = tuple({"receipt_id": r.receipt_id, "outcome": r.outcome, "status": r.http_status,
                   "returned": r.detail.get("returned", 0), "url": redact_text(page.url, secrets)}
                  for r, page in zip(signed, run.pages, strict=True))
    return SearchResult(run.source, req, run.outcome, redact_text(run.reason, secrets), run.papers, run.total,
                        run.complete, tuple(r.receipt_id for r in signed), pages,
                        redact_json(dict(run.detail), secrets))


def es_read(home: EvidenceHome, result: Any, request: Mapping[str, Any]) -> tuple[Any, tuple[str, ...]]:
    """Receipt every reply an Elasticsearch read made (the mapping look-up too), in one transaction."""
    receipts = []
    for i, reply in enumerate(result.replies):
        last = i == len(result.replies) - 1
        outcome = result.outcome if last else reply.outcome
        code = result.code if last else es_code(reply.op, reply.outcome, reply.reason)
        detail = {k: v for k, v in dict(reply.detail).items() if k != "query"}
        if reply.reason or (last and result.reason):
            detail["reason"] = result.reason if last else reply.reason
        if last:
            for k in ("total", "total_relation", "count"):
                if getattr(result, k) is not None:
                    detail[k] = getattr(result, k)
            for k in ("partial_count", "partial_total", "hits_in_partial_reply", "shards", "timed_out"):
                if k in result.detail:
                    detail[k] = result.detail[k]
        receipts.append(Receipt(
            kind="es", source="elasticsearch", request={**dict(request), "op": reply.op},
            final_url=reply.url if reply.status is not None else None, hops=reply.hops, http_status=reply.status,
            byte_count=reply.body.size if reply.body else 0, outcome=outcome.value, outcome_code=code,
            content=reply.body.to_json() if reply.body else None, detail=detail,
            links={"previous": receipts[-1].receipt_id} if receipts else {}))
    signed = home.ledger.append_many(receipts, home.signing_key()) if receipts else []
    return result, tuple(r.receipt_id for r in signed)
