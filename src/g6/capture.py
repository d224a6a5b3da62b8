"""Orchestration: adapter result -> blob store (already written while reading) -> signed receipt.

The body is in the store before the receipt is appended, so no receipt ever points at a missing
blob; a crash between the two leaves an unreferenced blob, which ``gc`` may remove later.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from g6.adapters.checked_client import CheckedClient, FetchPolicy, FetchResponse
from g6.adapters.outcomes import Outcome, es_code
from g6.adapters.redact import redact_json, redact_text, redact_url
from g6.adapters.web import Document, fetch_page
from g6.home import EvidenceHome
from g6.ledger.receipts import Hop, Receipt


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
        }


def receipt_from_response(resp: FetchResponse, *, kind: str, source: str, request: Mapping[str, Any],
                          outcome: Outcome | None = None, reason: str | None = None, op: str = "fetch",
                          detail: Mapping[str, Any] | None = None,
                          links: Mapping[str, Any] | None = None) -> Receipt:
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
        hops=tuple(Hop(redact_url(h.url), h.status, h.connected_address) for h in resp.hops),
        http_status=resp.status,
        byte_count=resp.byte_count,
        truncated=resp.truncated,
        allowlist=resp.allowlist,
        outcome=out.value,
        outcome_code=out.code(op),
        content=resp.body.to_json() if resp.body else None,
        detail=d,
        links=dict(links or {}),
    )


def fetch(home: EvidenceHome, client: CheckedClient, url: str, *, extract: str = "text",
          policy: FetchPolicy | None = None, links: Mapping[str, Any] | None = None,
          kind: str = "fetch") -> FetchResult:
    """Fetch a page through every check, keep its bytes, append a signed receipt."""
    page = fetch_page(client, url, home.store, extract=extract, policy=policy)
    resp = page.response  # already through the redaction path (the client's)
    secrets = tuple(getattr(client, "secrets", ()))
    request: dict[str, Any] = {"url": redact_text(url, secrets), "extract": extract}
    pol = policy or client.policy
    if pol.max_bytes is not None:
        request["max_bytes"] = pol.max_bytes
    receipt = receipt_from_response(resp, kind=kind, source="web", request=request, outcome=page.outcome,
                                    reason=redact_text(page.reason or resp.reason, secrets),
                                    detail=redact_json(page.detail, secrets), links=links)
    signed = home.record(receipt)
    return FetchResult(
        outcome=page.outcome, receipt_id=signed.receipt_id, requested_url=request["url"],
        final_url=signed.final_url, status=resp.status, byte_count=resp.byte_count, truncated=resp.truncated,
        content=signed.content, documents=page.documents, reason=signed.detail.get("reason", ""),
        detail={k: v for k, v in signed.detail.items() if k != "reason"},
    )


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
    from g6.adapters.search import run_search

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
