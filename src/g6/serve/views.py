"""What the pages and the JSON API of ``g6 serve`` show, gathered once as plain dicts.

Every view here is the JSON answer of ``/api/...`` (each with its schema, ``schemas/serve-*.v1``) and the
data its HTML page renders, so the two cannot say different things. Nothing here writes to the home.

Where the data comes from:

* captures (receipts of kind ``fetch`` and ``recheck``: a page read) are found through
  :mod:`g6.serve.captures`, the read-only query layer the Memento routes use too;
* a capture's text is the project's own page text (:func:`g6.cite.page_text.read_texts`, the
  reader-visible text a citation can point into), computed from the stored bytes; for a rendered capture it
  is the text the browser showed, as the capture kept it (what its ``rendered`` citations point into), and
  the page also shows its screenshot and every request the page made (its parts, each a receipt);
* citations come from the manifests given to the server (``g6 serve --manifest FILE``): the home keeps
  no manifest, a manifest lives beside the report that cites it;
* re-checks come from the ledger itself: a ``recheck`` receipt names the receipts it re-read
  (``links.rechecks``), its manifest (``request.manifest_id``) and each citation's verdict
  (``detail.verdicts``), all signed, so a manifest page shows the latest verdicts even for a
  manifest the server was not given;
* the verify status is a full ``ledger verify`` run in the background, never on a page view (a large
  ledger takes minutes): its result is kept with the time it finished and the size it covered
  (:class:`VerifyStatus`).
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from g6.adapters.html.page import MAX_EXTRACT_BYTES
from g6.adapters.outcomes import Outcome
from g6.cite.cite import read_failure
from g6.cite.manifest import MANIFEST_ID, RECEIPT_ID, Citation, Manifest, load_manifest
from g6.cite.page_text import read_texts
from g6.cite.passages import find, text_hash
from g6.errors import G6Error, InputError
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from g6.ledger.redactions import Redacted
from g6.serve import lookup
from g6.serve.captures import Captures, named, parse_time
from g6.serve.memento import Entry, entries

DIGEST = re.compile(r"(?:(blake3|sha256):)?([0-9a-f]{64})")
LIST_LIMIT = 200  # captures listed per search; the count says how many there were
HOME_CAPTURES = 50  # captures a page of the home page lists, newest first
HOME_MANIFESTS = 20  # manifests a page of it lists


# -- small pieces ---------------------------------------------------------------------------------------------
def memento_path(caps: Captures, r: Receipt, memo: dict[str, list[Entry]] | None = None) -> str | None:
    """Where ``/web/`` serves the page this capture ended on (its last hop's URL; the earlier hops are redirect
    mementos), as :mod:`g6.serve.memento` names it; None for a read that failed or kept no whole body (listed
    in the TimeMap as what it was, never served as the page). ``memo`` keeps each URL's entries for a list."""
    if not r.hops:
        return None
    url = r.hops[-1].url
    memo = {} if memo is None else memo
    if url not in memo:
        memo[url] = entries(caps, url)
    e = next((e for e in memo[url] if e.capture.receipt_id == r.receipt_id), None)
    return f"/web/{e.stamp}id_/{e.url}" if e is not None and e.memento else None


def capture_summary(caps: Captures, r: Receipt, memo: dict[str, list[Entry]] | None = None) -> dict[str, Any]:
    content = dict(r.content) if r.content else None
    return {"receipt_id": r.receipt_id, "kind": r.kind, "fetched_at": r.fetched_at,
            "requested_url": str(r.request.get("url", "")), "final_url": r.final_url, "outcome": r.outcome,
            "http_status": r.http_status, "content_type": _str_or_none(r.detail.get("content_type")),
            "size": content.get("size") if content else None,
            "blake3": content.get("blake3") if content else None, "memento": memento_path(caps, r, memo)}


def _str_or_none(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def search_link(url: str) -> str:
    return "/search?q=" + quote(url, safe="")


# -- manifests given to the server ----------------------------------------------------------------------------
class Manifests:
    """The manifests ``g6 serve --manifest FILE`` was given, read once at start (a bad file is refused
    then, exit 2); restart the server to show citations added since."""

    def __init__(self, paths: Sequence[str | Path] = ()) -> None:
        self.by_id: dict[str, tuple[Manifest, str]] = {}
        for p in paths:
            m = load_manifest(p)
            if m.manifest_id in self.by_id and self.by_id[m.manifest_id][1] != str(p):
                raise InputError(f"manifest {m.manifest_id} is given twice ({self.by_id[m.manifest_id][1]} and {p})")
            self.by_id[m.manifest_id] = (m, str(p))

    def citing(self, receipt_id: str) -> list[tuple[Manifest, Citation]]:
        return [(m, c) for m, _ in self.by_id.values() for c in m.citations if c.receipt_id == receipt_id]


# -- verify status ---------------------------------------------------------------------------------------------
class VerifyStatus:
    """The last full ``ledger verify`` of the home, run off the request path, one at a time.

    A page view never verifies: the home page shows the last result and when it was computed. ``run``
    starts a verify unless one is running (then it waits for that one) or the last one is fresher than
    ``every`` seconds and the ledger has not grown since."""

    def __init__(self, every: float = 60.0) -> None:
        self.every = every
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._running_since: float | None = None
        self._last: dict[str, Any] | None = None
        self._last_at = 0.0

    def snapshot(self, head: int) -> dict[str, Any]:
        with self._lock:
            last, running = self._last, self._running_since
        out: dict[str, Any] = {"status": "running" if last is None and running else
                               (last["status"] if last else "never"),
                               "running_since": _utc(running) if running else None}
        if last is not None:
            out.update({k: v for k, v in last.items() if k != "status"})
            out["grown_since"] = head - last["receipts"]
        else:
            out.update({"checked_at": None, "receipts": None, "took_seconds": None, "checks": [], "error": None,
                        "grown_since": None})
        return out

    def run(self, home: EvidenceHome) -> None:
        """Verify now (or join the verify under way); returns once a result at least as new exists."""
        with self._lock:
            if self._running_since is not None:
                while self._running_since is not None:
                    self._done.wait()
                return
            fresh = self._last is not None and time.time() - self._last_at < self.every
            if fresh and self._last is not None and self._last["receipts"] == head_of(home):
                return
            self._running_since = time.time()
        started = time.monotonic()
        try:
            # in this process, on this thread: a pool of worker processes would be cut by the server's stop, which
            # never waits for a verify (its teardown cut at the interpreter's exit left a semaphore of the pool's
            # named on stderr), and a server's verify leaves the other cores to the pages it serves
            report = home.verify(workers=1)
            body = report.to_json()
            result = {"status": "ok" if report.ok else "failed", "receipts": int(report.rows),
                      "checks": [{"name": name, "ok": bool(c["ok"]), "checked": int(c["checked"]),
                                  "failed": int(c["failed"])} for name, c in body["checks"].items()],
                      "error": None}
        except Exception as e:  # noqa: BLE001 - a verify that cannot run is a failed verify, said in one line
            result = {"status": "failed", "receipts": 0, "checks": [], "error": f"{type(e).__name__}: {e}"[:300]}
        result["took_seconds"] = round(time.monotonic() - started, 3)
        with self._lock:
            self._last_at = time.time()
            result["checked_at"] = _utc(self._last_at)
            self._last, self._running_since = result, None
            self._done.notify_all()


def head_of(home: EvidenceHome) -> int:
    try:
        return home.ledger.head()[0] if home.ledger.present() else 0
    except G6Error:
        return 0


# -- the views -------------------------------------------------------------------------------------------------
def home_view(caps: Captures, manifests: Manifests, verify: VerifyStatus, *, page: str | None = None,
              manifests_page: str | None = None, path: str = "/api/home") -> dict[str, Any]:
    """The home page's data: counts, the latest checkpoint, the last verify, the manifests given, and the
    newest captures and manifests, a page of each (``page``, ``manifests_page``: the numbers as asked, 1 when
    absent; a number that is not a page of its list is a :class:`PageError`). ``path`` is where the page
    links of the lists lead (``/`` for the HTML page, ``/api/home`` for its JSON)."""
    home = caps.home()
    head = head_of(home)
    counts = lookup.counts(caps) if head else {"receipts": 0, "captures": 0, "ok": 0, "failed": 0, "urls": 0,
                                                "outcomes": {}}
    latest = None
    if head:
        cp = home.ledger.latest_checkpoint()
        if cp is not None:
            latest = {"origin": cp[0].origin, "size": cp[0].size, "root": cp[0].root.hex(),
                      "behind": head - cp[0].size}
    known = known_manifests(caps, manifests, head)
    captured = counts["captures"]
    assert isinstance(captured, int)
    at = _page_number(page, _pages(captured, HOME_CAPTURES), "newest captures",
                      lambda n: _captures_link(path, n, 1))
    mat = _page_number(manifests_page, _pages(len(known), HOME_MANIFESTS), "manifests",
                       lambda n: _manifests_link(path, at, n))
    _, newest = caps.newest((at - 1) * HOME_CAPTURES, HOME_CAPTURES) if head else (0, [])
    memo: dict[str, list[Entry]] = {}
    return {"schema": "g6.serve.home.v1", "home": str(home.root), "receipts": head, "counts": counts,
            "latest_checkpoint": latest, "verify": verify.snapshot(head),
            "manifests": [{"manifest_id": m.manifest_id, "citations": len(m.citations), "file": file}
                          for m, file in manifests.by_id.values()],
            "newest_captures": _paged(captured, HOME_CAPTURES, at, lambda n: _captures_link(path, n, mat),
                                      [capture_summary(caps, c.receipt, memo) for c in newest]),
            "newest_manifests": _paged(len(known), HOME_MANIFESTS, mat, lambda n: _manifests_link(path, at, n),
                                       known[(mat - 1) * HOME_MANIFESTS:mat * HOME_MANIFESTS])}


HOME_PARAMETERS = ("page", "manifests_page")


def unknown_home_parameter(query: Mapping[str, str]) -> str | None:
    """Why the home page's query is refused (a parameter it does not take, as ``/api/captures`` refuses
    one), or None."""
    unknown = sorted(set(query) - set(HOME_PARAMETERS))
    return f"unknown parameter {unknown[0][:40]!r}: the home page takes page= and manifests_page=" if unknown else None


class PageError(InputError):
    """A page number that is not a page of its list (a 400); ``see``: a page of it that exists."""

    def __init__(self, message: str, see: str) -> None:
        super().__init__(message)
        self.see = see


def known_manifests(caps: Captures, manifests: Manifests, head: int) -> list[dict[str, Any]]:
    """Every manifest the server knows, given to it (``--manifest``) or named by a re-check in the ledger,
    newest first: by the later of its ``created_at`` and its newest re-check (then that re-check's seq)."""
    rechecked = caps.manifests_rechecked() if head else {}
    out = []
    for mid in set(manifests.by_id) | {m for m in rechecked if MANIFEST_ID.fullmatch(m)}:  # others have no page
        given = manifests.by_id.get(mid)
        n, last_at, last_seq = rechecked.get(mid, (0, None, 0))
        created = given[0].created_at if given else None
        when = max((parse_time(t).timestamp() for t in (created, last_at) if t), default=0.0)
        out.append(((when, last_seq, mid), {
            "manifest_id": mid, "file": given[1] if given else None,
            "citations": len(given[0].citations) if given else None, "created_at": created, "rechecks": n,
            "last_recheck_at": last_at}))
    return [m for _, m in sorted(out, key=lambda x: x[0], reverse=True)]


def _pages(total: int, per_page: int) -> int:
    return max(1, -(-total // per_page))


def _page_number(raw: str | None, pages: int, what: str, link: Callable[[int], str]) -> int:
    if raw is None:
        return 1
    if not re.fullmatch(r"[0-9]{1,9}", raw.strip()) or int(raw) < 1:
        raise PageError(f"page {raw[:20]!r} of the {what} is not a page number: give a whole number from 1 to "
                        f"{pages}", see=link(1))
    if int(raw) > pages:
        raise PageError(f"page {int(raw)} of the {what} is past the last, {pages}", see=link(pages))
    return int(raw)


def _captures_link(path: str, page: int, manifests_page: int) -> str:
    """A link names the page of the list it pages, and the other list's page unless it is the first."""
    return f"{path}?page={page}" + (f"&manifests_page={manifests_page}" if manifests_page > 1 else "")


def _manifests_link(path: str, page: int, manifests_page: int) -> str:
    return f"{path}?" + (f"page={page}&" if page > 1 else "") + f"manifests_page={manifests_page}"


def _paged(total: int, per_page: int, page: int, link: Callable[[int], str], items: list[Any]) -> dict[str, Any]:
    """One page of a list, with the links to the first, previous, next and last pages (None past the ends)."""
    pages = _pages(total, per_page)
    return {"page": page, "pages": pages, "per_page": per_page, "total": total, "first": link(1),
            "prev": link(page - 1) if page > 1 else None, "next": link(page + 1) if page < pages else None,
            "last": link(pages), "items": items}


def parse_query(q: str) -> tuple[str, str]:
    """("url" | "digest" | "receipt", value) of a search box's text, or an InputError saying what it takes."""
    q = q.strip()
    if not q:
        raise InputError("give a URL, a digest (blake3 or sha256, 64 hex digits) or a receipt id")
    if m := DIGEST.fullmatch(q.lower()):
        return "digest", m.group(2)
    if RECEIPT_ID.fullmatch(q):
        return "receipt", q
    if re.match(r"(?i)https?://", q):
        return "url", q
    raise InputError(f"{q[:80]!r} is neither a URL (http:// or https://), a digest nor a receipt id")


def captures_view(caps: Captures, *, url: str | None = None, digest: str | None = None) -> dict[str, Any]:
    home = caps.home()
    if (url is None) == (digest is None):
        raise InputError("give exactly one of url= or digest=")
    if digest is not None:
        m = DIGEST.fullmatch(digest.strip().lower())
        if m is None:
            raise InputError(f"{digest[:80]!r} is not a digest (64 hex digits, optionally blake3: or sha256:)")
        found = lookup.of_digest(caps, m.group(2)) if head_of(home) else []
        query = {"digest": m.group(2)}
    else:
        assert url is not None
        if not re.match(r"(?i)https?://", url):
            raise InputError(f"{url[:80]!r} is not an http:// or https:// URL")
        found = lookup.of_url(caps, url) if head_of(home) else []
        query = {"url": url}
    found = sorted(found, key=lambda r: r.fetched_at, reverse=True)
    memo: dict[str, list[Entry]] = {}
    # nothing at that very URL: the captured URLs that begin with it (a person types a site or a folder)
    starting = caps.urls_starting(url, 20) if url is not None and not found and head_of(home) else []
    return {"schema": "g6.serve.captures.v1", "query": query, "total": len(found),
            "captures": [capture_summary(caps, r, memo) for r in found[:LIST_LIMIT]], "urls_starting": starting}


def capture_view(caps: Captures, manifests: Manifests, receipt_id: str) -> dict[str, Any]:
    home = caps.home()
    if not RECEIPT_ID.fullmatch(receipt_id) or not head_of(home):
        raise lookup.NotFound(f"no capture {receipt_id[:80]!r} in this home")
    r = lookup.by_id(caps, receipt_id)
    red = home.redactions()
    gone = red.of_content(r.content) if r.content else None
    if gone is None and isinstance(r.capture, Mapping):  # a capture's text (and DOM, screenshot) taken out
        gone = red.of_content(blob_ref(r.capture.get("text")))
    text, text_status, source = _visible_text(home, r, gone)
    cited = []
    for m, c in manifests.citing(r.receipt_id):
        span = _span(c, text, source)
        cited.append({"citation_id": c.citation_id, "manifest_id": m.manifest_id, "quote": c.quote,
                      "text_source": c.text_source, "start": span[0] if span else None,
                      "end": span[1] if span else None, "found": span is not None})
    return {"schema": "g6.serve.capture.v1", **capture_summary(caps, r),
            "hops": [h.to_json() for h in r.hops], "outcome_code": r.outcome_code,
            "failed_read": read_failure(r.outcome, r.http_status), "truncated": r.truncated,
            "byte_count": r.byte_count, "reason": _str_or_none(r.detail.get("reason")) or None,
            "source": r.source, "content": dict(r.content) if r.content else None,
            "signed_by": r.signature.key_id if r.signature else None,
            "log": dict(r.log) if r.log else None,
            "receipt": f"/receipt/{r.receipt_id}", "proof": f"/receipt/{r.receipt_id}/proof",
            "rechecked": named(r.links.get("rechecks")) if r.kind == "recheck" else [],
            "text": text, "text_status": text_status, "citations": cited,
            "rechecks": [_recheck_summary(x) for x in lookup.rechecks_of(caps, r.receipt_id)],
            "part_of": _str_or_none(r.links.get("capture")), "rendered": rendered_view(caps, r),
            "redaction": gone.to_json() if gone is not None else None}


def blob_ref(v: object) -> Mapping[str, Any] | None:
    """A well-formed blob reference as a receipt names it (``blake3:<hex>``, ``sha256:<hex>``, a size), or None."""
    if not isinstance(v, Mapping) or type(v.get("size")) is not int or v["size"] < 0:
        return None
    ok = all(isinstance(v.get(a), str) and v[a].startswith(a + ":") and DIGEST.fullmatch(v[a])
             for a in ("blake3", "sha256"))
    return v if ok else None


def _part(c: Any) -> dict[str, Any]:
    """One request of a rendered capture, as its receipt says."""
    r, body = c.receipt, c.receipt.content or {}
    return {"receipt_id": r.receipt_id, "url": str(r.request.get("url", "")),
            "method": _str_or_none(r.request.get("method")),
            "resource_type": _str_or_none(r.request.get("resource_type")), "outcome": r.outcome,
            "http_status": r.http_status, "reason": _str_or_none(r.detail.get("reason")) or None,
            "content_type": _str_or_none(r.detail.get("content_type")), "size": body.get("size"),
            "sha256": body.get("sha256")}


def rendered_view(caps: Captures, r: Receipt) -> dict[str, Any] | None:
    """What a rendered capture's page shows of it: where its screenshot is served, how the render went, and
    every request the page made, in the order its signed receipt lists them, each from its own receipt (one the
    ledger lacks is listed as missing); None for any other read."""
    cap = r.capture
    if not isinstance(cap, Mapping):
        return None
    parts = {c.receipt_id: c for c in caps.parts_of(r.receipt_id)}
    listed = cap.get("resources") if isinstance(cap.get("resources"), list) else []
    resources = []
    for e in listed:
        rid = e.get("receipt_id") if isinstance(e, Mapping) else None
        c = parts.get(rid) if isinstance(rid, str) else None
        resources.append({**_part(c), "missing": False} if c is not None else
                         {"receipt_id": rid if isinstance(rid, str) else None, "missing": True})
    engine = cap.get("engine") if isinstance(cap.get("engine"), Mapping) else {}
    counts = cap.get("counts") if isinstance(cap.get("counts"), Mapping) else {}
    return {"screenshot": f"/capture/{r.receipt_id}/screenshot" if blob_ref(cap.get("screenshot")) else None,
            "screenshot_clipped": bool(cap.get("screenshot_clipped")), "ended": _str_or_none(cap.get("ended")),
            "render_ms": cap.get("render_ms") if type(cap.get("render_ms")) is int else None,
            "browser": _str_or_none(engine.get("product")) or _str_or_none(engine.get("version")),
            "counts": {str(k): v for k, v in counts.items() if type(v) is int}, "resources": resources}


def _visible_text(home: EvidenceHome, r: Receipt, gone: Redacted | None = None) -> tuple[str | None, str, str]:
    """The reader-visible text a citation quotes, or why there is none, and which text it is: of a rendered
    capture, the text the browser showed (``rendered``); of any other read, the stored body's (``visible``).
    ``gone``: the redaction that took the body (or the capture's text) out."""
    if gone is not None:  # never read again, whether or not bytes are still in the store
        return None, f"the body was {gone.said()}: the home no longer serves it", \
            "rendered" if isinstance(r.capture, Mapping) else "visible"
    if isinstance(r.capture, Mapping):
        ref = blob_ref(r.capture.get("text"))
        if ref is None:
            return None, "the capture kept no text", "rendered"
        try:
            return home.store.read_as(ref).decode("utf-8", "replace"), "ok", "rendered"
        except G6Error as e:
            return None, f"the capture's text cannot be read: {e}"[:300], "rendered"
    if not r.content:
        return None, "no body was kept", "visible"
    size = r.content.get("size")
    if isinstance(size, int) and size > MAX_EXTRACT_BYTES:
        return None, f"body over {MAX_EXTRACT_BYTES} bytes: not read as text", "visible"
    try:
        body = home.store.read_as(r.content)
    except G6Error as e:
        return None, f"the body cannot be read: {e}"[:300], "visible"
    texts = read_texts(body, r.final_url or str(r.request.get("url", "")), _str_or_none(r.detail.get("content_type")))
    if texts.outcome is not Outcome.OK or texts.visible is None:
        return None, f"no text ({texts.outcome.value}: {texts.reason}, {texts.media_type})", "visible"
    return texts.visible, "ok", "visible"


def _span(c: Citation, text: str | None, source: str = "visible") -> tuple[int, int] | None:
    """Where the cited text is in the text shown: at its own offsets when they are into that text (``source``)
    and still hash to the citation, else found after normalising (a main-text citation)."""
    if text is None:
        return None
    if c.text_source == source and c.start is not None and c.end is not None \
            and text_hash(text[c.start:c.end]) == c.text_hash:
        return c.start, c.end
    return find(c.text, text)


def _recheck_summary(r: Receipt) -> dict[str, Any]:
    verdicts = r.detail.get("verdicts")
    return {"receipt_id": r.receipt_id, "fetched_at": r.fetched_at, "outcome": r.outcome,
            "http_status": r.http_status, "manifest_id": _str_or_none(r.request.get("manifest_id")),
            "run_id": _str_or_none(r.request.get("run_id")),
            "verdicts": {str(k): str(v) for k, v in verdicts.items()} if isinstance(verdicts, Mapping) else {}}


def manifest_view(caps: Captures, manifests: Manifests, manifest_id: str) -> dict[str, Any]:
    home = caps.home()
    if not MANIFEST_ID.fullmatch(manifest_id):
        raise lookup.NotFound(f"{manifest_id[:80]!r} is not a manifest id")
    latest: dict[str, dict[str, Any]] = {}
    runs = 0
    for r in lookup.rechecks_of_manifest(caps, manifest_id) if head_of(home) else ():
        runs += 1
        s = _recheck_summary(r)
        for cid, verdict in s["verdicts"].items():  # ledger order: a later re-check replaces an earlier verdict
            latest[cid] = {"verdict": verdict, "receipt_id": r.receipt_id, "fetched_at": r.fetched_at,
                           "run_id": s["run_id"]}
    given = manifests.by_id.get(manifest_id)
    if given is None and not latest:
        raise lookup.NotFound(f"no manifest {manifest_id}: it was not given to g6 serve (--manifest FILE) "
                                "and no re-check of it is in the ledger")
    citations: list[dict[str, Any]] = []
    signature: dict[str, str] | None = None
    if given is not None:
        m = given[0]
        if m.signature is None:
            signature = {"status": "unsigned", "detail": "the manifest is not signed"}
        else:
            ok, why = m.verify_signature(home.trusted())
            signature = {"status": "ok" if ok else "failed", "detail": why}
        for c in m.citations:
            citations.append({"citation_id": c.citation_id, "kind": c.kind, "receipt_id": c.receipt_id,
                              "source_url": c.source_url, "quote": c.quote, "text_source": c.text_source,
                              "failed_read": dict(c.failed_read) if c.failed_read else None,
                              "latest": latest.get(c.citation_id)})
    else:  # only what the ledger's re-checks say: ids and verdicts, no quotes
        citations = [{"citation_id": cid, "kind": None, "receipt_id": None, "source_url": None, "quote": None,
                      "text_source": None, "failed_read": None, "latest": v} for cid, v in latest.items()]
    return {"schema": "g6.serve.manifest.v1", "manifest_id": manifest_id,
            "file": given[1] if given else None, "created_at": given[0].created_at if given else None,
            "signature": signature, "rechecks": runs, "citations": citations}


def verdict_counts(citations: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    return dict(Counter((c["latest"] or {}).get("verdict", "never re-checked") for c in citations))


# -- what the api and the pages share, once per server ------------------------------------------------------------
class ServeState:
    """The manifests given to the server and its verify status: one of each per reader (so the pages and
    the API, each built from the same options, show the same)."""

    def __init__(self, caps: Captures, manifests: Sequence[str | Path] = (), verify_every: float = 60.0) -> None:
        self.caps = caps
        self.manifests = Manifests(manifests)
        self.verify = VerifyStatus(verify_every)


_states: weakref.WeakKeyDictionary[Any, ServeState] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def serve_state(reader: Any, **options: Any) -> ServeState:
    """The one :class:`ServeState` of ``reader``, made from ``options`` (``manifests``: files,
    ``verify_every``: seconds a verify result stays fresh; ``verify_at_start``: verify in the background
    now, so the home page soon has a status)."""
    with _states_lock:
        state = _states.get(reader)
        if state is None:
            state = ServeState(Captures.of(reader), options.get("manifests") or (),
                               float(options.get("verify_every", 60.0)))
            _states[reader] = state
            if options.get("verify_at_start"):
                threading.Thread(target=_verify_in_background, args=(state, reader), name="g6-serve-verify",
                                 daemon=True).start()
    return state


def _verify_in_background(state: ServeState, reader: Any) -> None:
    """The verify at start, on a home of this thread's own, closed here when it is done (a server stopped
    before then exits without waiting for it: the thread is a daemon, the home only read)."""
    try:
        home = reader.open()
    except G6Error:  # the home cannot be opened: every page says why; nothing to verify
        return
    try:
        state.verify.run(home)
    finally:
        home.close()
