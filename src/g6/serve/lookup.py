"""The few questions the pages ask of the ledger, over :class:`g6.serve.captures.Captures` (the query layer
every serve module shares, with its URL and digest index): captures of a URL or a digest, one capture by id,
the counts; and the re-check receipts of a capture or a manifest (:class:`Rechecks`), which it does not index."""

from __future__ import annotations

import threading
import weakref

from g6.errors import BadDigest, G6Error
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from g6.serve.captures import PAGE, Captures
from g6.serve.captures import _capture_of as capture_of


class NotFound(G6Error):
    """Nothing of that id, URL or digest in this home (a 404, with the reason)."""


def by_id(caps: Captures, receipt_id: str) -> Receipt:
    c = caps.get(receipt_id)
    if c is None:  # unknown, or a receipt that is not a web read (a search, a key entry…)
        raise NotFound(f"no capture {receipt_id} in this home (a receipt that is not a web read is at "
                       f"/receipt/{receipt_id})")
    return c.receipt


def of_url(caps: Captures, url: str) -> list[Receipt]:
    """Every page read that began at ``url``, was redirected through or to it (normalised as g6 stores URLs)."""
    return [c.receipt for c in caps.of_url(url)]


def of_digest(caps: Captures, hex_digest: str) -> list[Receipt]:
    """Every page read whose body has this blake3 or sha256 (64 hex digits: either algorithm)."""
    found: dict[str, Receipt] = {}
    for alg in ("blake3", "sha256"):
        try:
            found.update((c.receipt_id, c.receipt) for c in caps.by_digest(f"{alg}:{hex_digest}"))
        except BadDigest:
            continue
    return list(found.values())


class Rechecks:
    """The re-check receipts of the home, by the receipts they re-read and by manifest, in ledger order.

    Built once from the ledger's index by kind, then caught up with the rows appended since (the head is
    read on every call, O(log n)), so a capture or manifest page does not read every re-check again."""

    _shared: weakref.WeakKeyDictionary[Captures, Rechecks] = weakref.WeakKeyDictionary()
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.done = 0  # every re-check at seq <= done is indexed
        self.by_receipt: dict[str, list[Receipt]] = {}
        self.by_manifest: dict[str, list[Receipt]] = {}

    @classmethod
    def of(cls, caps: Captures) -> Rechecks:
        with cls._shared_lock:
            got = cls._shared.get(caps)
            if got is None:
                got = cls._shared[caps] = cls()
            return got

    def _add(self, r: Receipt) -> None:
        for rid in named(r.links.get("rechecks")):
            self.by_receipt.setdefault(rid, []).append(r)
        mid = r.request.get("manifest_id")
        if isinstance(mid, str):
            self.by_manifest.setdefault(mid, []).append(r)

    def current(self, home: EvidenceHome) -> Rechecks:
        head = home.ledger.head()[0] if home.ledger.present() else 0
        with self.lock:
            if head < self.done:  # the ledger shrank or was replaced: read it again
                self.reset()
            if self.done == 0 and head:
                for e in home.ledger.entries(kind="recheck"):
                    if e.seq <= head:
                        self._add(e.receipt)
                self.done = head
            while self.done < head:
                rows = home.ledger.rows.rows_after(self.done, PAGE)
                if not rows:
                    break
                for row in rows:
                    c = capture_of(row)
                    if c is not None and c.kind == "recheck" and int(row[0]) <= head:
                        self._add(c.receipt)
                self.done = int(rows[-1][0])
        return self


def named(ids: object) -> list[str]:
    """The receipt ids a ``links`` entry names (one id or a list of them)."""
    items = ids if isinstance(ids, list) else [ids]
    return [i for i in items if isinstance(i, str)]


def rechecks_of(caps: Captures, receipt_id: str) -> list[Receipt]:
    """The re-checks that re-read ``receipt_id``, in ledger order."""
    ix = Rechecks.of(caps).current(caps.home())
    with ix.lock:
        return list(ix.by_receipt.get(receipt_id, ()))


def rechecks_of_manifest(caps: Captures, manifest_id: str) -> list[Receipt]:
    """The re-checks of ``manifest_id``'s citations, in ledger order."""
    ix = Rechecks.of(caps).current(caps.home())
    with ix.lock:
        return list(ix.by_manifest.get(manifest_id, ()))


def counts(caps: Captures) -> dict[str, object]:
    return caps.counts().to_json()
