"""A Robust Links reader, written from the spec for the tests (the Robust Links project's ``robustlinks.js`` is
not in the npm registry, the one place this machine may install JavaScript from; nothing of it is used here).

What it reads (Robust Links, https://robustlinks.mementoweb.org/spec/ , and its revision
https://robustlinks.org/spec/ , §3 "Robust Links attributes" and the appendix's ABNF):

* ``data-originalurl``: the URI of the resource that motivates the link (absolute);
* ``data-versiondate``: the intended datetime of linking, UTC, one of ``YYYY-MM-DD``, ``YYYYMMDD``,
  ``YYYY-MM-DDThh:mm:ssZ``, ``YYYYMMDDhhmmss``; a date alone means noon UTC of that day (§3.3);
* ``data-versionurl``: ``URI *1(SP versiondate) *(SP URI *1(SP versiondate))``, absolute http(s) URIs of
  snapshots, each optionally followed by the snapshot's own datetime (§3.4).

And the pathways it follows (§2): each snapshot URI is visited as it is; and the original URI with the
version date is handed to a Memento TimeGate (RFC 7089 §4.1: ``Accept-Datetime`` in RFC 1123 form, the
TimeGate answers 302 with ``Location`` the memento nearest that time), which is how the spec's "find snapshots
temporally close to the linking date" is done. Anything that does not parse raises ``ValueError``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
import lxml.html

_DATES = (  # (pattern, strptime format, date only)
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "%Y-%m-%d", True),
    (re.compile(r"\d{8}"), "%Y%m%d", True),
    (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"), "%Y-%m-%dT%H:%M:%SZ", False),
    (re.compile(r"\d{14}"), "%Y%m%d%H%M%S", False),
)


def version_date(text: str) -> datetime | None:
    """The datetime a ``versiondate`` names (noon UTC for a date), or None when ``text`` is not one."""
    for pattern, fmt, date_only in _DATES:
        if pattern.fullmatch(text):
            t = datetime.strptime(text, fmt).replace(tzinfo=UTC)
            return t.replace(hour=12) if date_only else t
    return None


def _absolute_http(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


@dataclass(frozen=True)
class RobustLink:
    href: str
    original: str
    date: datetime
    versions: tuple[tuple[str, datetime | None], ...]  # (snapshot URI, its own datetime when given)


def parse_versionurl(value: str) -> tuple[tuple[str, datetime | None], ...]:
    out: list[tuple[str, datetime | None]] = []
    for token in value.split():
        when = version_date(token)
        if when is not None:
            if not out or out[-1][1] is not None:
                raise ValueError(f"data-versionurl: a datetime {token!r} that follows no URI")
            out[-1] = (out[-1][0], when)
        elif _absolute_http(token):
            out.append((token, None))
        else:
            raise ValueError(f"data-versionurl: {token!r} is neither an absolute http(s) URI nor a datetime")
    if not out:
        raise ValueError("data-versionurl is empty")
    return tuple(out)


def read_links(page: str) -> list[RobustLink]:
    """Every anchor of ``page`` that carries ``data-originalurl``, read as the spec says."""
    links = []
    for a in lxml.html.fromstring(page).iter("a"):
        original = a.get("data-originalurl")
        if original is None:
            continue
        if not _absolute_http(original):
            raise ValueError(f"data-originalurl {original!r} is not an absolute http(s) URI")
        date = version_date(a.get("data-versiondate") or "")
        if date is None:
            raise ValueError(f"data-versiondate {a.get('data-versiondate')!r} is not a versiondate")
        value = a.get("data-versionurl")
        links.append(RobustLink(a.get("href") or "", original, date,
                                parse_versionurl(value) if value is not None else ()))
    return links


def rfc1123(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


def near_link_date(client: httpx.Client, timegate: str, link: RobustLink) -> str:
    """The memento a TimeGate (``timegate`` + original URI) gives for the link's date: RFC 7089 negotiation."""
    r = client.get(timegate + link.original, headers={"Accept-Datetime": rfc1123(link.date)},
                   follow_redirects=False)
    if r.status_code != 302 or "location" not in r.headers:
        raise ValueError(f"the TimeGate answered {r.status_code} for {link.original}")
    if "accept-datetime" not in r.headers.get("vary", "").lower():
        raise ValueError("a TimeGate's 302 must say Vary: accept-datetime (RFC 7089 §4.1.2)")
    return r.headers["location"]
