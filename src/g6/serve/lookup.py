"""The few questions the pages ask of the ledger: captures of a URL or a digest, one capture by id, the
re-check receipts, and the counts on the home page.

(Until :mod:`g6.serve.captures` lands, each is a scan over the ledger's entries; the counts are kept per
ledger head, so a page view over an unchanged ledger does not scan it again.)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from g6.errors import G6Error, ReceiptNotFound
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

PAGE_KINDS = ("fetch", "recheck")


class NotFound(G6Error):
    """Nothing of that id, URL or digest in this home (a 404, with the reason)."""


def by_id(home: EvidenceHome, receipt_id: str) -> Receipt:
    try:
        return home.ledger.get(receipt_id)
    except ReceiptNotFound:
        raise NotFound(f"no capture {receipt_id} in this home") from None


def _pages(home: EvidenceHome) -> Iterator[Receipt]:
    for kind in PAGE_KINDS:
        for e in home.ledger.entries(kind=kind):
            yield e.receipt


def of_url(home: EvidenceHome, url: str) -> list[Receipt]:
    """Every page read whose requested or final URL is ``url``."""
    return [r for r in _pages(home) if url in (r.request.get("url"), r.final_url)]


def of_digest(home: EvidenceHome, hex_digest: str) -> list[Receipt]:
    """Every page read whose body has this blake3 or sha256."""
    names = (f"blake3:{hex_digest}", f"sha256:{hex_digest}")
    return [r for r in _pages(home) if r.content and (r.content.get("blake3") in names
                                                       or r.content.get("sha256") in names)]


def rechecks(home: EvidenceHome) -> Iterator[Receipt]:
    """Every re-check receipt, in ledger order."""
    for e in home.ledger.entries(kind="recheck"):
        yield e.receipt


_counted: dict[tuple[str, int], dict[str, Any]] = {}
_count_lock = threading.Lock()


def counts(home: EvidenceHome) -> dict[str, Any]:
    """Receipts per kind, page reads per outcome, distinct URLs and bodies (kept per ledger head)."""
    head = home.ledger.head()[0] if home.ledger.present() else 0
    key = (str(home.ledger.path), head)
    with _count_lock:
        if key in _counted:
            return _counted[key]
    kinds: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    urls: set[str] = set()
    bodies: set[str] = set()
    for e in home.ledger.entries() if head else ():
        r = e.receipt
        kinds[r.kind] += 1
        if r.kind in PAGE_KINDS:
            outcomes[r.outcome] += 1
            urls.add(str(r.request.get("url", "")))
            if r.content:
                bodies.add(str(r.content.get("blake3")))
    out = {"by_kind": dict(sorted(kinds.items())), "captures": sum(outcomes.values()),
           "captures_by_outcome": dict(sorted(outcomes.items())), "urls": len(urls), "bodies": len(bodies)}
    with _count_lock:
        _counted.clear()  # one home per server: keep only the newest head
        _counted[key] = out
    return out
