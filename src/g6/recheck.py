"""Re-check a manifest: fetch each cited source again and say, per citation, whether it still holds.

Verdicts: ``unchanged`` (same content digest), ``current`` (bytes changed, the cited normalised
text is still there — ``moved`` says whether its offset changed), ``changed`` (a passage close to
it is there with different text: the new text and a similarity figure), ``gone`` (the page
answered and the passage is not there), or the fetch's typed failure (``blocked``, ``not_found``,
``rate_limited``, ``unreachable``…), which is never reported as ``gone``.

Concurrency: one worker per host at a time (so the per-host pause and robots rules hold), hosts in
parallel on a thread pool; receipts are appended from the calling thread. Each verdict is
appended to a run file as it is decided, so a re-run with the same run id skips what was done.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from g6.adapters.checked_client import CheckedClient, FetchPolicy, FetchResponse
from g6.adapters.outcomes import Outcome
from g6.adapters.search import SearchRequest
from g6.adapters.urls import redact_url
from g6.adapters.web import PageRead, read_page
from g6.capture import receipt_from_response
from g6.home import EvidenceHome
from g6.host_pool import host_of, per_host
from g6.ledger.receipts import Receipt, new_receipt_id
from g6.manifest import Citation, Manifest
from g6.passages import closest, find

CHECKED = ("unchanged", "current", "changed", "gone")
CHANGED_THRESHOLD = 0.6
BATCH = 64  # re-check receipts appended per transaction


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

    @property
    def checked(self) -> bool:
        return self.verdict in CHECKED

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"citation_id": self.citation_id, "verdict": self.verdict,
                             "source_url": self.source_url, "receipt_id": self.receipt_id}
        for k in ("moved", "similarity", "new_text", "new_start", "new_end"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        d["detail"] = dict(self.detail)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Verdict:
        return cls(d["citation_id"], d["verdict"], d["source_url"], d.get("receipt_id"), d.get("moved"),
                   d.get("similarity"), d.get("new_text"), d.get("new_start"), d.get("new_end"), d.get("detail", {}))


@dataclass(frozen=True, slots=True)
class RecheckReport:
    run_id: str
    manifest_id: str
    verdicts: tuple[Verdict, ...]
    resumed: int = 0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for v in self.verdicts:
            out[v.verdict] += 1
        return dict(out)

    @property
    def exit_code(self) -> int:
        """0: all unchanged/current; 1: any changed/gone; 3: otherwise, some could not be checked."""
        if any(v.verdict in ("changed", "gone") for v in self.verdicts):
            return 1
        if any(not v.checked for v in self.verdicts):
            return 3
        return 0

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "manifest_id": self.manifest_id, "counts": self.counts(),
                "resumed": self.resumed, "exit_code": self.exit_code,
                "verdicts": [v.to_json() for v in self.verdicts]}


def unchanged(c: Citation, resp: FetchResponse) -> bool:
    return (c.kind == "web" and resp.outcome is Outcome.OK and resp.body is not None
            and resp.body.blake3 == c.content.get("blake3"))


def judge(c: Citation, page: PageRead) -> Verdict:
    """The verdict for one citation given a fresh read of its source."""
    url = c.requested_url
    if unchanged(c, page.response):
        return Verdict(c.citation_id, "unchanged", url)
    if not page.outcome.is_success:
        return Verdict(c.citation_id, page.outcome.value, url,
                       detail={"reason": page.reason, "trust": page.outcome.trust})
    if page.outcome is Outcome.EMPTY or not page.documents or page.documents[0].text is None:
        if page.outcome is Outcome.EMPTY:
            return Verdict(c.citation_id, "gone", url, detail={"reason": page.reason or "no_text"})
        return Verdict(c.citation_id, "parse_failed", url, detail={"reason": "no_text_in_new_body",
                                                                   **dict(page.detail)})
    text = page.documents[0].text
    span = find(c.text, text)
    if span is not None:
        moved = c.start is not None and span[0] != c.start
        return Verdict(c.citation_id, "current", url, moved=moved, new_start=span[0], new_end=span[1])
    near = closest(c.text, text)
    if near is not None and near.similarity >= CHANGED_THRESHOLD:
        return Verdict(c.citation_id, "changed", url, similarity=near.similarity, new_text=near.text,
                       new_start=near.start, new_end=near.end)
    return Verdict(c.citation_id, "gone", url, detail={"closest_similarity": near.similarity if near else 0.0})


def _policy_for(c: Citation, home: EvidenceHome, base: FetchPolicy) -> FetchPolicy:
    """The original read's allowlist and byte cap, so the re-check reads under the same rules."""
    try:
        r = home.ledger.get(c.receipt_id)
    except Exception:  # noqa: BLE001 - a citation whose receipt is gone keeps the base policy
        return base
    pol = base
    if r.allowlist.decision == "allowed" and r.allowlist.patterns:
        pol = replace(pol, allowlist=tuple(r.allowlist.patterns))
    mb = r.request.get("max_bytes")
    if isinstance(mb, int):
        pol = replace(pol, max_bytes=mb)
    return pol


class RunState:
    """The results of one run (re-check verdicts; batch fetch results), one JSON line each,
    appended as they are decided. ``decode`` reads a line back, ``key`` names what it settled."""

    def __init__(self, path: Path, decode: Callable[[Mapping[str, Any]], Any] = Verdict.from_json,
                 key: Callable[[Any], str] = lambda v: v.citation_id) -> None:
        self.path = path
        self._decode = decode
        self._key = key
        self._lock = threading.Lock()

    def load(self) -> dict[str, Any]:
        done: dict[str, Any] = {}
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return done
        for line in lines:
            try:
                v = self._decode(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut by a crash: that item is done again
            done[self._key(v)] = v
        return done

    def add(self, v: Any) -> None:
        self.add_many([v])

    def add_many(self, verdicts: list[Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as f:
                f.seek(0, os.SEEK_END)
                if f.tell() > 0:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        f.write(b"\n")  # close a line a crash tore, so this verdict starts on its own
                f.write(b"".join(json.dumps(v.to_json(), ensure_ascii=False).encode() + b"\n" for v in verdicts))
                f.flush()
                os.fsync(f.fileno())


def recheck(home: EvidenceHome, client: CheckedClient, manifest: Manifest, *, run_id: str | None = None,
            state_dir: Path | None = None, workers: int = 8,
            progress: Callable[[int, int], None] | None = None,
            sources: Any = None) -> RecheckReport:
    run_id = run_id or "run_" + new_receipt_id().removeprefix("rcpt_")
    state = RunState((state_dir or home.root / "knowledge" / "rechecks") / f"{manifest.manifest_id}.{run_id}.jsonl")
    done = state.load()
    resumed = sum(1 for c in manifest.citations if c.citation_id in done)
    pending = [c for c in manifest.citations if c.citation_id not in done]
    total = len(manifest.citations)
    if progress:
        progress(resumed, total)

    # One fetch per (url, policy); one worker per host at a time.
    groups: dict[tuple[str, FetchPolicy], list[Citation]] = defaultdict(list)
    policies: dict[str, FetchPolicy] = {}  # many citations share one original receipt: read it once
    for c in pending:
        if c.receipt_id not in policies:
            policies[c.receipt_id] = _policy_for(c, home, client.policy)
        groups[(c.requested_url, policies[c.receipt_id])].append(c)
    def work(key: tuple[str, FetchPolicy]) -> FetchResponse:
        return client.fetch(key[0], home.store, source="web", policy=key[1])

    finished = resumed
    batch: list[tuple[Receipt, list[tuple[Citation, Verdict]]]] = []

    def flush() -> None:
        """Receipts first (one transaction), then the run file: a verdict on file always has its receipt."""
        nonlocal finished
        if not batch:
            return
        signed = home.ledger.append_many([r for r, _ in batch], home.signing_key())
        decided = []
        for s_receipt, (_, items) in zip(signed, batch, strict=True):
            for c, v in items:
                v = replace(v, receipt_id=s_receipt.receipt_id)
                if c.kind == "search" and c.search is not None:
                    v = _with_total(home, client, c, v, sources)
                decided.append(v)
                done[c.citation_id] = v
        state.add_many(decided)
        finished += len(decided)
        batch.clear()
        if progress:
            progress(finished, total)

    for key, resp, more_ready in per_host(groups, lambda k: host_of(k[0]), work, workers):
        if isinstance(resp, BaseException):
            raise resp
        cites = groups[key]
        if all(unchanged(c, resp) for c in cites):
            page = PageRead(resp, resp.outcome, resp.reason, ())  # same bytes: nothing to read again
        else:
            page = read_page(resp, home.store, key[0])
        verdicts = [judge(c, page) for c in cites]
        receipt = receipt_from_response(
            resp, kind="recheck", source="web", request={"url": redact_url(key[0]), "run_id": run_id,
                                                         "manifest_id": manifest.manifest_id},
            outcome=page.outcome, reason=page.reason or resp.reason,
            detail={"verdicts": {v.citation_id: v.verdict for v in verdicts}},
            links={"rechecks": sorted({c.receipt_id for c in cites}),
                   "citations": [c.citation_id for c in cites]})
        batch.append((receipt, list(zip(cites, verdicts, strict=True))))
        if len(batch) >= BATCH or not more_ready:
            flush()
    flush()
    ordered = tuple(done[c.citation_id] for c in manifest.citations if c.citation_id in done)
    return RecheckReport(run_id, manifest.manifest_id, ordered, resumed)


def _with_total(home: EvidenceHome, client: CheckedClient, c: Citation, v: Verdict, sources: Any) -> Verdict:
    """A search citation also re-runs its search (one page) to compare the source's total."""
    from g6.capture import search

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


__all__ = ["CHECKED", "RecheckReport", "RunState", "Verdict", "judge", "recheck"]
