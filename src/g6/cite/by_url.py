"""The read of a URL to cite when only the URL is known (``g6 cite --annotation`` without a receipt id): the
newest good read of it in the home.

A *good* read is a web ``fetch`` or ``recheck`` receipt whose outcome is ``ok`` with a 2xx, whose body was
kept whole (not cut, not left in a coding g6 could not undo) and that met no login, challenge or consent wall:
the reads ``g6 cite`` accepts without ``--allow-failed-read``. A read is *of* a URL when the URL asked for, the
final URL or any hop's URL is that URL, compared as g6 stores URLs (``normalise_url``). *Newest* is the latest
``fetched_at``; the ledger's order breaks a tie. The ledger is read once for all the URLs asked about.
"""

from __future__ import annotations

from collections.abc import Iterable

from g6.adapters.net.urls import URLError, normalise_url
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

READ_KINDS = ("fetch", "recheck")


def same_url(url: str) -> str:
    """``url`` as g6 stores URLs; the text itself when it does not parse."""
    try:
        return normalise_url(url).url
    except (URLError, ValueError, UnicodeError, TypeError):
        return url


def good_read(r: Receipt) -> bool:
    return (r.kind in READ_KINDS and r.source == "web" and r.outcome == "ok" and r.http_status is not None
            and 200 <= r.http_status < 300 and r.content is not None and not r.truncated
            and "content_encoding" not in r.detail and r.interstitial is None)


def urls_of(r: Receipt) -> set[str]:
    """Every URL a read is of: asked for, final, each hop's; normalised."""
    found = {same_url(h.url) for h in r.hops}
    for u in (r.request.get("url"), r.final_url):
        if isinstance(u, str):
            found.add(same_url(u))
    return found


def newest_reads(home: EvidenceHome, urls: Iterable[str]) -> dict[str, Receipt]:
    """For each of ``urls`` (as given) that the home read well, its newest good read."""
    wanted: dict[str, list[str]] = {}
    for u in urls:
        wanted.setdefault(same_url(u), []).append(u)
    best: dict[str, tuple[str, int, Receipt]] = {}
    for kind in READ_KINDS:
        for e in home.ledger.entries(kind=kind):
            r = e.receipt
            if not good_read(r):
                continue
            for u in urls_of(r) & wanted.keys():
                key = (r.fetched_at, e.seq)
                if u not in best or key > best[u][:2]:
                    best[u] = (r.fetched_at, e.seq, r)
    return {given: best[u][2] for u, names in wanted.items() if u in best for given in names}


def is_read_of(r: Receipt, url: str) -> bool:
    return same_url(url) in urls_of(r)
