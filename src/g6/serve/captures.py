"""The captures of one home, read only: what every ``g6 serve`` module asks of the ledger and the store.

A *capture* is one web read: a receipt of kind ``fetch`` or ``recheck`` from the ``web`` source, ok or
failed (a 404, a timeout, a refusal are captures too: they say what the URL did at that time). Its
:class:`Capture` says what was read (requested URL, final URL, the redirect chain, status, outcome and
code, content type, when, the body's digests and size); :meth:`Captures.body` streams the stored body.

Use one :class:`Captures` per app, shared by every worker thread: ``Captures.of(reader)`` gives the
same one to every module (memento, tlog, api, pages), so the index below is built once::

    caps = Captures.of(reader)
    caps.of_url("https://example.org/a?b=1")   # every capture of that URL, oldest first
    caps.get("rcpt_…")                         # one capture by receipt id, or None
    caps.search("sha256:…")                    # by URL (exact, then prefix) or blob digest
    caps.counts()                              # receipts, captures, ok / failed, URLs
    caps.rechecks_of("rcpt_…")                 # the re-checks that re-read that receipt, in ledger order
    caps.rechecks_of_manifest("mfst_…")        # the re-checks of that manifest's citations, in ledger order
    for chunk in caps.body(capture): ...      # the stored bytes, streamed and checked

**Lookups by URL, digest and re-check.** The ledger has no index by URL or digest (the receipts table is
indexed by seq, receipt id and kind only, and a read-only server may create nothing), so the first lookup
reads every row once, in pages of ``PAGE`` rows by seq, and keeps one index in memory: for each URL (every
hop of a capture, its requested and its final URL, normalised as g6 stores them) and each digest, the seqs
of its captures; for each receipt a re-check re-read (``links.rechecks``) and each manifest it re-checked
(``request.manifest_id``), the seqs of those re-checks; about 200 bytes a capture. Later lookups read only
the rows appended since (the head is checked on every call, O(log n)); a ledger that shrank or was replaced
under us (the row the index stopped at has another hash) is indexed again. Receipts are then read by seq
(the primary key), so a lookup costs O(captures of that URL) rows.

**A rendered capture** (``g6 fetch --render``) is one capture: its receipt, listed under the URLs of its top
frame's requests. Each request the page made has a receipt of its own (``links.capture`` names the capture):
those are the capture's *parts*, never listed as captures of their URLs, in the home page's list or in the
counts; :meth:`Captures.parts_of` gives them, and a search by digest still finds the part whose body it is.

Nothing here verifies signatures (``g6 ledger verify`` does; the pages show its verdict); bodies are
served only once hashed and found to be the bytes the receipt names (``BlobBackend.open_verified``).
"""

from __future__ import annotations

import bisect
import json
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from g6.adapters.net.urls import URLError, normalise_url
from g6.errors import BadDigest, BlobCorrupt, G6Error
from g6.home import EvidenceHome
from g6.ledger.receipts import Hop, Receipt
from g6.ledger.redactions import Redacted
from g6.store.base import CHUNK
from g6.store.digest import Digest

CAPTURE_KINDS = ("fetch", "recheck")  # the receipts that are reads of a web URL
PAGE = 5000  # rows read at a time while indexing
SUCCESS = ("ok", "empty")  # outcomes where the page was read (``empty``: read, and it said nothing)


class HomeSource(Protocol):
    """What :class:`Captures` needs of ``g6.serve.app.HomeReader``: this thread's read-only home."""

    def home(self) -> EvidenceHome: ...


def normalise(url: str) -> str:
    """``url`` as g6 stores URLs (``g6.adapters.net.urls.normalise_url``: scheme and host lowercased, default port
    dropped, ``/`` for an empty path, query kept, fragment dropped); the text itself when it does not parse
    (a stored URL that g6 refused still indexes under what was asked)."""
    try:
        return normalise_url(url).url
    except (URLError, ValueError, UnicodeError, TypeError):
        return url


def parse_time(text: str) -> datetime:
    """A receipt's ``fetched_at`` (RFC 3339, UTC) as an aware datetime; the epoch for a malformed one (verify
    fails such a row; here it only sorts first)."""
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return datetime.fromtimestamp(0, UTC)
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Capture:
    """One web read, ok or failed, as its signed receipt tells it. ``seq`` is its row in the ledger."""

    seq: int
    receipt: Receipt

    @property
    def receipt_id(self) -> str:
        return self.receipt.receipt_id

    @property
    def kind(self) -> str:
        """``fetch``, or ``recheck`` (a citation's page read again)."""
        return self.receipt.kind

    @property
    def requested_url(self) -> str:
        """The URL as asked (redacted, not normalised)."""
        return str(self.receipt.request.get("url", ""))

    @property
    def url(self) -> str:
        """The URL the read began at, normalised: the first hop's, else the requested one's."""
        return self.receipt.hops[0].url if self.receipt.hops else normalise(self.requested_url)

    @property
    def final_url(self) -> str | None:
        """Where the read ended (after redirects); None when no request was sent."""
        return self.receipt.final_url

    @property
    def hops(self) -> tuple[Hop, ...]:
        """Every request sent, in order: the first URL and each redirect target, with its status."""
        return self.receipt.hops

    @property
    def redirects(self) -> tuple[tuple[str, int | None, str], ...]:
        """(from, status, to) for each redirect followed."""
        h = self.receipt.hops
        return tuple((h[i].url, h[i].status, h[i + 1].url) for i in range(len(h) - 1))

    @property
    def status(self) -> int | None:
        """The HTTP status of the last answer; None when nothing answered (timeout, refusal, robots...)."""
        return self.receipt.http_status

    @property
    def outcome(self) -> str:
        """g6's typed outcome: ``ok``, ``empty``, ``not_found``, ``unreachable``, ``robots_disallowed``..."""
        return self.receipt.outcome

    @property
    def code(self) -> str:
        return self.receipt.outcome_code

    @property
    def ok(self) -> bool:
        """Whether the page was read (``ok`` or ``empty``); every other outcome is a failed read."""
        return self.receipt.outcome in SUCCESS

    @property
    def reason(self) -> str:
        """The failure's short word (``http_404``, ``connect_timeout``...), empty for a read that succeeded."""
        return str(self.receipt.detail.get("reason", ""))

    @property
    def content_type(self) -> str | None:
        """The Content-Type the server sent (the one header value a receipt keeps)."""
        v = self.receipt.detail.get("content_type")
        return v if isinstance(v, str) else None

    @property
    def fetched_at(self) -> str:
        """When, as signed (RFC 3339, UTC, microseconds)."""
        return self.receipt.fetched_at

    @property
    def time(self) -> datetime:
        return parse_time(self.receipt.fetched_at)

    @property
    def blake3(self) -> str | None:
        c = self.receipt.content
        return str(c["blake3"]) if c else None

    @property
    def sha256(self) -> str | None:
        c = self.receipt.content
        return str(c["sha256"]) if c else None

    @property
    def size(self) -> int | None:
        """Bytes kept in the store (None: no body kept)."""
        c = self.receipt.content
        return int(c["size"]) if c else None

    @property
    def truncated(self) -> bool:
        """Whether the body kept is only the first part of what was sent (a ``max_bytes`` read)."""
        return self.receipt.truncated

    @property
    def whole_body(self) -> bool:
        """Whether the bytes kept are exactly the body the server sent: kept, not cut at a limit, not left in a
        content coding g6 could not undo."""
        return (self.receipt.content is not None and not self.receipt.truncated
                and self.receipt.outcome != "too_large" and "content_encoding" not in self.receipt.detail)

    @property
    def part_of(self) -> str | None:
        """The rendered capture this read is one request of (its ``links.capture``), or None."""
        cid = self.receipt.links.get("capture")
        return cid if isinstance(cid, str) else None

    @property
    def urls(self) -> tuple[str, ...]:
        """Every URL this capture is listed under: each hop's, the requested one's and the final one's."""
        out = [h.url for h in self.receipt.hops]
        for u in (normalise(self.requested_url), self.receipt.final_url):
            if u and u not in out:
                out.append(u)
        return tuple(out)

    def to_json(self) -> dict[str, Any]:
        """What was read, for JSON answers (the receipt itself is at ``/receipt/{id}``)."""
        return {"receipt_id": self.receipt_id, "seq": self.seq, "kind": self.kind,
                "requested_url": self.requested_url, "url": self.url, "final_url": self.final_url,
                "hops": [{"url": h.url, "status": h.status} for h in self.hops], "status": self.status,
                "outcome": self.outcome, "code": self.code, "reason": self.reason, "ok": self.ok,
                "content_type": self.content_type, "fetched_at": self.fetched_at,
                "content": dict(self.receipt.content) if self.receipt.content else None,
                "truncated": self.truncated}


@dataclass(frozen=True, slots=True)
class Counts:
    receipts: int  # every row of the ledger, of any kind
    captures: int  # web reads (fetch, recheck)
    ok: int  # captures whose page was read
    failed: int  # captures that failed (HTTP errors, timeouts, refusals...)
    urls: int  # distinct URLs captured (every hop counted)
    outcomes: dict[str, int]  # captures by outcome

    def to_json(self) -> dict[str, Any]:
        return {"receipts": self.receipts, "captures": self.captures, "ok": self.ok, "failed": self.failed,
                "urls": self.urls, "outcomes": dict(self.outcomes)}


def named(ids: object) -> list[str]:
    """The receipt ids a ``links`` entry names (one id or a list of them)."""
    items = ids if isinstance(ids, list) else [ids]
    return [i for i in items if isinstance(i, str)]


def capture_of_row(row: tuple[Any, ...]) -> Capture | None:
    """The capture a ledger row holds, or None for another kind of row or one that does not parse (verify
    reports those; a server shows what it can read)."""
    seq, kind_column, text = row[0], row[2], row[5]
    if kind_column not in CAPTURE_KINDS or not isinstance(text, str) or not isinstance(seq, int):
        return None
    try:
        data = json.loads(text)
        r = Receipt.from_json(data) if isinstance(data, dict) else None
    except (ValueError, G6Error):  # a malformed row is skipped (verify reports it), never a 500
        return None
    if r is None or r.kind not in CAPTURE_KINDS or r.source != "web" or not isinstance(r.request.get("url"), str):
        return None
    return Capture(seq, r)


class _Index:
    """URL and digest -> seqs of captures, re-read receipt and manifest -> seqs of re-checks, for every row up to
    ``done``; guarded by ``lock``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.done = 0  # rows indexed: every seq <= done
        self.done_hash: str | None = None  # the entry hash at ``done``: a ledger replaced under us is re-read
        self.by_url: dict[str, list[tuple[float, int]]] = {}  # (fetched_at as POSIX time, seq), kept sorted
        self.by_digest: dict[str, list[tuple[float, int]]] = {}
        self.sorted_urls: list[str] = []
        self.outcomes: Counter[str] = Counter()
        self.rechecks_of: dict[str, list[int]] = {}  # receipt id -> seqs of the re-checks that re-read it
        self.rechecks_of_manifest: dict[str, list[int]] = {}  # manifest id -> seqs of its re-checks
        self.manifest_last: dict[str, tuple[float, int, str]] = {}  # manifest id -> its newest re-check's time
        self.seqs: list[int] = []  # every capture's seq, in ledger order (the home page's list, 8 bytes each)
        self.parts: dict[str, list[int]] = {}  # rendered capture id -> the seqs of its requests' receipts

    def add(self, c: Capture) -> None:
        key = (c.time.timestamp(), c.seq)
        if c.part_of is not None:  # one request of a rendered capture: listed under it, found by its digest
            self.parts.setdefault(c.part_of, []).append(c.seq)
            if c.receipt.content:
                for d in (c.blake3, c.sha256):
                    if d:
                        bisect.insort(self.by_digest.setdefault(d, []), key)
            return
        self.seqs.append(c.seq)
        for u in c.urls:
            seqs = self.by_url.get(u)
            if seqs is None:
                self.by_url[u] = [key]
                bisect.insort(self.sorted_urls, u)
            else:
                bisect.insort(seqs, key)
        if c.receipt.content:
            for d in (c.blake3, c.sha256):
                if d:
                    bisect.insort(self.by_digest.setdefault(d, []), key)
        self.outcomes[c.outcome] += 1
        if c.kind == "recheck":  # rows come in seq order: these lists stay in ledger order
            for rid in named(c.receipt.links.get("rechecks")):
                self.rechecks_of.setdefault(rid, []).append(c.seq)
            mid = c.receipt.request.get("manifest_id")
            if isinstance(mid, str):
                self.rechecks_of_manifest.setdefault(mid, []).append(c.seq)
                last = (*key, c.fetched_at)
                if mid not in self.manifest_last or last > self.manifest_last[mid]:
                    self.manifest_last[mid] = last


class Captures:
    """The captures of the home ``source`` reads, for every thread of one server."""

    _shared: weakref.WeakKeyDictionary[Any, Captures] = weakref.WeakKeyDictionary()
    _shared_lock = threading.Lock()

    def __init__(self, source: HomeSource) -> None:
        self._source = source
        self._index = _Index()

    @classmethod
    def of(cls, source: HomeSource) -> Captures:
        """The one ``Captures`` of this reader (made on first call): every serve module shares its index."""
        with cls._shared_lock:
            got = cls._shared.get(source)
            if got is None:
                got = cls._shared[source] = cls(source)
            return got

    def home(self) -> EvidenceHome:
        """This thread's read-only home."""
        return self._source.home()

    # -- the index --------------------------------------------------------------------------------
    def _current(self) -> tuple[EvidenceHome, _Index]:
        """This thread's home and the index, brought up to the ledger's head."""
        ev = self._source.home()
        ev.ledger.reopen_if_changed()  # a quiet SQLite file is read immutable: see a writer's new rows
        ix = self._index
        head, head_hash = ev.ledger.head()
        if head == ix.done and head_hash == (ix.done_hash or head_hash):
            return ev, ix
        with ix.lock:
            if ix.done and (head < ix.done or (ev.ledger.rows.row_at(ix.done) or (None,) * 8)[7] != ix.done_hash):
                ix.reset()  # the ledger shrank or was replaced: index it again
            self._catch_up(ev, ix, head)
        return ev, ix

    @staticmethod
    def _catch_up(ev: EvidenceHome, ix: _Index, head: int) -> None:
        while ix.done < head:
            rows = ev.ledger.rows.rows_after(ix.done, PAGE)
            if not rows:
                break
            for row in rows:
                c = capture_of_row(row)
                if c is not None:
                    ix.add(c)
            ix.done, ix.done_hash = int(rows[-1][0]), rows[-1][7]

    def _load(self, ev: EvidenceHome, seqs: Iterable[int]) -> list[Capture]:
        out = []
        for seq in seqs:
            row = ev.ledger.rows.row_at(seq)
            c = capture_of_row(row) if row is not None else None
            if c is not None:
                out.append(c)
        return out

    # -- queries ----------------------------------------------------------------------------------
    def of_url(self, url: str) -> list[Capture]:
        """Every capture listed under ``url`` (normalised as g6 stores URLs), oldest first (by ``fetched_at``,
        then by seq): reads that began there, were redirected through or to it, or were refused at it."""
        ev, ix = self._current()
        keys = list(ix.by_url.get(normalise(url), ()))
        return self._load(ev, (seq for _, seq in keys))

    def get(self, receipt_id: str) -> Capture | None:
        """The capture with this receipt id; None for an unknown id or a receipt that is not a web read."""
        ev = self._source.home()
        ev.ledger.reopen_if_changed()
        row = ev.ledger.rows.find(receipt_id) if isinstance(receipt_id, str) else None
        return capture_of_row(row) if row is not None else None

    def kind_of(self, receipt_id: str) -> str | None:
        """The kind of the receipt with this id, of any kind (``search``, ``key``…); None when the home has
        none (``/receipt/{id}`` serves exactly these)."""
        ev = self._source.home()
        ev.ledger.reopen_if_changed()
        row = ev.ledger.rows.find(receipt_id) if isinstance(receipt_id, str) else None
        return str(row[2]) if row is not None else None

    def by_digest(self, digest: str) -> list[Capture]:
        """Captures whose body has this digest (``blake3:<hex>`` or ``sha256:<hex>``), oldest first.
        ``BadDigest`` (a ``g6.errors.InputError``) for text that is not a digest."""
        d = str(Digest.parse(digest))
        ev, ix = self._current()
        return self._load(ev, [seq for _, seq in ix.by_digest.get(d, ())])

    def urls_starting(self, prefix: str, limit: int = 50) -> list[str]:
        """Captured URLs that begin with ``prefix`` (as given, and normalised), sorted, at most ``limit``."""
        _, ix = self._current()
        out: list[str] = []
        for p in dict.fromkeys((normalise(prefix), prefix)):
            i = bisect.bisect_left(ix.sorted_urls, p)
            while i < len(ix.sorted_urls) and ix.sorted_urls[i].startswith(p) and len(out) < limit:
                if ix.sorted_urls[i] not in out:
                    out.append(ix.sorted_urls[i])
                i += 1
        return out

    def search(self, text: str, limit: int = 50) -> list[Capture]:
        """A person's search box: a digest finds the captures of that body; anything else finds the captures of
        that URL, then of URLs beginning with it. Newest first, at most ``limit``."""
        text = text.strip()
        try:
            return list(reversed(self.by_digest(text)))[:limit]
        except BadDigest:
            pass
        ev, ix = self._current()
        keys: list[tuple[float, int]] = []
        for u in self.urls_starting(text, limit):
            keys.extend(ix.by_url.get(u, ()))
        keys = sorted(set(keys), reverse=True)[:limit]
        return self._load(ev, (seq for _, seq in keys))

    def newest(self, skip: int, limit: int) -> tuple[int, list[Capture]]:
        """How many captures there are, and ``limit`` of them after the newest ``skip``, newest first (in the
        order the ledger received them)."""
        ev, ix = self._current()
        seqs = ix.seqs  # the one list, appended to under the index's lock: read once, as it is now
        total = len(seqs)
        hi = max(0, total - skip)
        return total, self._load(ev, reversed(seqs[max(0, hi - limit):hi]))

    def manifests_rechecked(self) -> dict[str, tuple[int, str, int]]:
        """Each manifest id the ledger's re-checks name: (how many re-checks, the newest one's ``fetched_at``,
        its seq)."""
        _, ix = self._current()
        return {mid: (len(ix.rechecks_of_manifest.get(mid, ())), at, seq)
                for mid, (_, seq, at) in list(ix.manifest_last.items())}

    def parts_of(self, receipt_id: str) -> list[Capture]:
        """The receipts of the requests rendered capture ``receipt_id`` made, in ledger order."""
        ev, ix = self._current()
        return self._load(ev, list(ix.parts.get(receipt_id, ())))

    def rechecks_of(self, receipt_id: str) -> list[Capture]:
        """The re-checks that re-read ``receipt_id`` (named in their ``links.rechecks``), in ledger order."""
        ev, ix = self._current()
        return self._rechecks(ev, list(ix.rechecks_of.get(receipt_id, ())))

    def rechecks_of_manifest(self, manifest_id: str) -> list[Capture]:
        """The re-checks of ``manifest_id``'s citations (their ``request.manifest_id``), in ledger order."""
        ev, ix = self._current()
        return self._rechecks(ev, list(ix.rechecks_of_manifest.get(manifest_id, ())))

    def _rechecks(self, ev: EvidenceHome, seqs: list[int]) -> list[Capture]:
        return [c for c in self._load(ev, seqs) if c.kind == "recheck"]

    def counts(self) -> Counts:
        ev, ix = self._current()
        ok = sum(n for o, n in ix.outcomes.items() if o in SUCCESS)
        total = sum(ix.outcomes.values())
        return Counts(receipts=ix.done, captures=total, ok=ok, failed=total - ok, urls=len(ix.by_url),
                      outcomes=dict(sorted(ix.outcomes.items())))

    # -- bodies -----------------------------------------------------------------------------------
    def redaction_of(self, capture: Capture) -> Redacted | None:
        """The redaction entry that took ``capture``'s body out (``g6.ledger.redactions``), or None: read
        from the log on every call (a few rows, by kind), so a redaction counts from the next request on."""
        return self._source.home().redactions().of_content(capture.receipt.content)

    def body(self, capture: Capture, chunk: int = CHUNK) -> Iterator[bytes]:
        """The stored body of ``capture``, in chunks of at most ``chunk`` bytes, never whole in memory beyond
        what the store holds (see ``open_verified``). The blob is opened (and hashed against the blake3 digest
        the receipt names) when this is called, so ``BlobNotFound`` / ``BlobCorrupt`` are raised before a
        caller sends anything; a size that differs from the receipt's raises ``BlobCorrupt`` while
        streaming. ``ValueError`` for a capture that kept no body."""
        if capture.blake3 is None or capture.size is None:
            raise ValueError(f"capture {capture.receipt_id} kept no body")
        return self.blob(capture.receipt_id, capture.blake3, capture.size, chunk)

    def blob(self, receipt_id: str, blake3: str, size: int, chunk: int = CHUNK) -> Iterator[bytes]:
        """A blob receipt ``receipt_id`` names (``blake3``, ``size``), streamed and checked as :meth:`body`."""
        f = self._source.home().store.open_verified(blake3)
        return _stream(f, receipt_id, blake3, size, chunk)


def _stream(f: Any, receipt_id: str, blake3: str, want: int, chunk: int) -> Iterator[bytes]:
    sent = 0
    try:
        while block := f.read(chunk):
            sent += len(block)
            if sent > want:
                raise BlobCorrupt(f"blob {blake3} is longer than the {want} bytes receipt "
                                  f"{receipt_id} names; refusing to serve more")
            yield block
        if sent != want:
            raise BlobCorrupt(f"blob {blake3} holds {sent} bytes, receipt {receipt_id} names {want}")
    finally:
        f.close()
