"""Where a citation's evidence comes from: the receipts of an evidence home, or of a bundle, found by the URL
they read (or the id a report pins), and the bytes each one vouches for.

Which receipt a citation rests on, in this order:

1. the receipt the report pins (``ReportCitation.receipt_id``, as a g6 manifest gives it), whatever its
   outcome: the author says that read is the evidence; absent from the home or the bundle, the citation
   has no evidence;
2. else, when the report says when its author read the page (a W3C TimeState's ``sourceDate``, or its ``cached``
   memento's time), the read of that URL made at that time, whatever its outcome (``read_at``): g6's own
   annotation export names the read each annotation was made on that way;
3. else the newest *ok read* of the URL: a ``fetch`` or ``recheck`` receipt whose request was that URL
   (compared as g6 stores URLs: userinfo and secret parameters redacted, scheme and host lowercased,
   default port and fragment dropped), outcome ``ok`` with a 2xx status, a body, and no login,
   challenge or consent wall; a URL whose secret parameter the receipts redact (:func:`recorded_whole`) has
   no stored read that can be told to be of it, so it goes on to 4.;
4. else, when the check may fetch, a fetch now (:mod:`g6.report.check`); when it may not
   (``--receipts-only``, a bundle), the newest read of the URL whatever its outcome, so a failed read
   gives the verdict it gave when it was made; none at all: no evidence.

"Newest" is the ledger's order (the later row), not a clock. A bundle's receipts are ordered by the leaf
index their inclusion proofs give, which is the same order.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from g6.adapters.net.redact import redact_url
from g6.adapters.net.urls import URLError, normalise_url
from g6.cite.cite import read_failure
from g6.errors import G6Error
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt, canonical_json
from g6.ledger.redactions import Redactions
from g6.report.model import ReportCitation

READ_KINDS = ("fetch", "recheck")  # receipts whose body is a page read from a URL


@functools.lru_cache(maxsize=65536)
def url_key(url: str) -> str:
    """``url`` as receipts record it and as reads are matched: redacted (no userinfo, no secret values),
    normalised (``g6.adapters.net.urls.normalise_url``: the fragment dropped); the redacted text itself when it
    does not parse (so an unparseable URL still matches the receipt of its refused fetch)."""
    shown = redact_url(url)
    try:
        return normalise_url(shown).url
    except (URLError, ValueError, UnicodeError, TypeError):
        return shown


@functools.lru_cache(maxsize=65536)
def fetch_key(url: str) -> str:
    """``url`` as the request it names: normalised as :func:`url_key` but not redacted, so two URLs that differ
    only in a secret-named parameter (``/doc?key=A``, ``/doc?key=B``: two documents on many sites) are two pages
    to read. The redacted form is for receipts and display only."""
    try:
        return normalise_url(url).url
    except (URLError, ValueError, UnicodeError, TypeError):
        return url


def recorded_whole(url: str) -> bool:
    """Whether receipts record the request ``url`` names as it is: not when redaction takes a secret-named
    parameter's value out of it. Stored reads of such a URL cannot be told from reads of the same URL with
    another secret (both are ``/doc?key=REDACTED`` in their receipts), so none of them is evidence of it."""
    return url_key(url) == fetch_key(url)


def search_key(source: str, request: Mapping[str, Any]) -> str:
    """A search page's identity: the source's name and the request as its receipt records it."""
    return source + "\n" + canonical_json(dict(request)).decode()


def ok_read(r: Receipt) -> bool:
    """A read that is evidence of a page's words: ok with a 2xx status, a body kept, and no wall."""
    return read_failure(r.outcome, r.http_status) is None and r.interstitial is None and bool(r.content)


def choose(reads: list[Receipt], may_fetch: bool) -> Receipt | None:
    """The read a citation rests on among ``reads`` (newest first): the newest ok read; else, when the check
    may not fetch, the newest read whatever its outcome; else None (fetch now)."""
    ok = next((r for r in reads if ok_read(r)), None)
    if ok is not None or may_fetch:
        return ok
    return reads[0] if reads else None


_MEMENTO = re.compile(r"/web/(\d{14}(?:\d{6})?)(?:[a-z]{2}_)?/(.+)$")


def _instant(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo is not None else t.replace(tzinfo=UTC)).astimezone(UTC)


def said_read(c: ReportCitation) -> tuple[datetime, bool, str] | None:
    """When the report says its author read the cited page, as (time, to the second only, what it says): its
    ``read_at`` (a TimeState's ``sourceDate``), else the time in its ``cached`` copy's address when that is a
    memento of the cited URL (``…/web/<14 or 20 digits>id_/<url>``, as ``g6 serve`` and web archives name
    them; g6's own annotation export gives both, the receipt's ``fetched_at`` to the microsecond). None when
    it says nothing usable."""
    if c.read_at:
        t = _instant(c.read_at)
        if t is not None:
            whole = "." not in c.read_at.split("T", 1)[-1]
            return t, whole, c.read_at
    m = _MEMENTO.search(c.cached or "")
    if m is None or url_key(m.group(2)) != url_key(c.source):
        return None
    digits = m.group(1)
    t = datetime.strptime(digits[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC, microsecond=int(digits[14:] or 0))
    return t, len(digits) == 14, str(c.cached)


def read_at(reads: list[Receipt], when: tuple[datetime, bool, str]) -> Receipt | None:
    """The read among ``reads`` (newest first) made at the time the report gives (``said_read``), whatever its
    outcome: the author's own read, when the evidence holds it. Compared to the microsecond, or to the second
    when the report's time has no fraction."""
    t, whole, _ = when
    for r in reads:
        got = _instant(r.fetched_at or "")
        if got is not None and (got.replace(microsecond=0) == t.replace(microsecond=0) if whole else got == t):
            return r
    return None


class EvidenceSource(Protocol):
    """What the check reads evidence from: an evidence home (:class:`HomeEvidence`) or a verified bundle
    (:class:`g6.report.bundled.BundleEvidence`)."""

    name: str  # "home" | "bundle"

    def get(self, receipt_id: str) -> Receipt | None: ...

    def reads(self, url: str) -> list[Receipt]: ...

    def search_pages(self, source: str, request: Mapping[str, Any]) -> list[Receipt]: ...

    def conversions(self, blake3: str) -> list[Receipt]: ...

    def body(self, content: Mapping[str, Any]) -> bytes: ...

    def add(self, receipts: Iterable[Receipt]) -> None: ...


class ReceiptIndex:
    """Receipts of reads, search pages and conversions by what they are of, newest first."""

    def __init__(self) -> None:
        self.by_url: dict[str, list[str]] = defaultdict(list)
        self.by_search: dict[str, list[str]] = defaultdict(list)
        self.by_pdf: dict[str, list[str]] = defaultdict(list)

    def file(self, r: Receipt) -> None:
        """File ``r`` as the newest of its kind (callers give receipts oldest first)."""
        req = r.request if isinstance(r.request, Mapping) else {}
        if r.kind in READ_KINDS and isinstance(req.get("url"), str):
            self.by_url[url_key(req["url"])].insert(0, r.receipt_id)
        elif r.kind == "search":
            self.by_search[search_key(str(r.source), req)].insert(0, r.receipt_id)
        elif r.kind == "convert":
            src = r.links.get("from") if isinstance(r.links, Mapping) else None
            if isinstance(src, Mapping) and isinstance(src.get("blake3"), str):
                self.by_pdf[src["blake3"]].insert(0, r.receipt_id)


class HomeEvidence:
    """The receipts of an evidence home: its ledger read once (the receipts of reads, search pages and
    conversions, by what they are of), each receipt fetched by id when a citation needs it."""

    name = "home"

    def __init__(self, home: EvidenceHome) -> None:
        self.home = home
        self.index = ReceiptIndex()
        self._cache: dict[str, Receipt] = {}
        self.refused: dict[str, str] = {}  # receipt id -> why it is no evidence (its signature does not verify)
        self._trusted = home.trusted() if home.ledger.present() else {}
        self._redactions: Redactions | None = None
        # receipt id -> the seq of the row it stands in: "newest" is the rows' order, so a receipt must stand
        # where it signs it stands (``log.seq``); rows swapped in the database would make an old read the newest
        self._rows: dict[str, int] = {}
        self._origin: str | None = None
        for kind in (*READ_KINDS, "search", "convert"):
            for entry in home.ledger.entries(kind=kind):
                self._rows[entry.receipt.receipt_id] = entry.seq
                self.index.file(entry.receipt)

    def get(self, receipt_id: str) -> Receipt | None:
        """The receipt, when it is in the ledger and its signature verifies with a key this home trusts (a row
        edited in the database is no evidence; ``refused`` says why); else None."""
        r = self._cache.get(receipt_id)
        if r is None and receipt_id not in self.refused:
            try:
                got = self.home.ledger.get(receipt_id)
            except G6Error:
                return None
            ok, why = got.verify_signature(self._trusted)
            if ok:
                ok, why = self._in_place(got)
            if not ok:
                self.refused[receipt_id] = why
                return None
            r = self._cache[receipt_id] = got
        return r

    def _in_place(self, r: Receipt) -> tuple[bool, str]:
        """Whether ``r`` stands in the row of this log it signs (``log``: origin and seq), as ``ledger verify``'s
        binding rule asks. A receipt signed before binding existed has no ``log`` and passes (the old rule)."""
        log = r.log
        if log is None:
            return True, ""
        try:
            seq = self._rows.get(r.receipt_id)
            seq = seq if seq is not None else self.home.ledger.index_of(r.receipt_id) + 1
            origin = self._origin = self._origin or self.home.ledger.origin
        except G6Error as e:
            return False, f"its place in the log cannot be read ({str(e)[:200]})"
        if not isinstance(log, Mapping) or log.get("origin") != origin or log.get("seq") != seq:
            said = dict(log) if isinstance(log, Mapping) else log
            return False, (f"it stands at seq {seq} of {origin} but signs another place ({str(said)[:200]}): a row "
                           "moved in the database, which would change which read is the newest")
        return True, ""

    def _all(self, ids: list[str]) -> list[Receipt]:
        return [r for rid in ids if (r := self.get(rid)) is not None]

    def reads(self, url: str) -> list[Receipt]:
        return self._all(self.index.by_url.get(url_key(url), []))

    def search_pages(self, source: str, request: Mapping[str, Any]) -> list[Receipt]:
        return self._all(self.index.by_search.get(search_key(source, request), []))

    def conversions(self, blake3: str) -> list[Receipt]:
        return self._all(self.index.by_pdf.get(blake3, []))

    def body(self, content: Mapping[str, Any]) -> bytes:
        """The bytes the receipt's ``content`` names, hashed and found to be exactly those; ``BlobRedacted`` for
        bytes a redaction entry took out (so a verdict says redacted, never that the body is missing)."""
        self.home.refuse_redacted(content, self.redactions())
        return self.home.store.read_as(content)

    def redactions(self) -> Redactions:
        """The home's redactions, read once a check (a few rows by kind); read before a fork, so the forked
        processes that read bodies (``fetching.judge_forked``) refuse the same ones without the ledger."""
        if self._redactions is None:
            self._redactions = self.home.redactions() if self.home.ledger.present() else Redactions()
        return self._redactions

    def add(self, receipts: Iterable[Receipt]) -> None:
        """Receipts this run appended (signed), filed as the newest of their kind."""
        for r in receipts:
            self._cache[r.receipt_id] = r
            self.index.file(r)
