"""A manifest's citations as other tools cite: each one with its receipt, the time it was read, and the URI of
its memento in a ``g6 serve`` at a public base URL (``g6 manifest export``; ``robust_links`` and
``annotation`` write the formats).

The memento URI is ``{base}/web/{20 digits}id_/{url}``: the receipt's time to the microsecond, so it names the
cited capture alone for good (a 14-digit URI serves the first capture of its second; see ``g6 serve``'s
Memento). ``g6 serve`` gives every memento this same URI as its ``cite-as`` link (:func:`memento_uri` is the
one place it is made). A citation has a memento only when ``g6 serve`` serves its page as one: a web read
whose body was kept whole, with a 2xx; a failed read cited with ``--allow-failed-read``, a cut body, a body
left in a coding g6 could not undo and a search page have none (:attr:`Exported.why_no_memento` says why).
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

from g6.cite.manifest import Citation, Manifest
from g6.errors import InputError
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

# kept as they are in a URL written into a header or a space-separated attribute; anything else is escaped
_URI_SAFE = "!#$%&'()*+,-./:;=?@[]^_`{|}~"
ARCHIVE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
PLACEHOLDERS = ("url", "timestamp")
G6 = "g6"  # the name of the g6 serve memento among a citation's versions


def uri_text(url: str) -> str:
    """``url`` with no space, quote or angle bracket left in it (percent-escapes kept), as a space-separated
    list and a ``Link`` header need it."""
    return quote(url, safe=_URI_SAFE)


def memento_stamp(t: datetime) -> str:
    """The 20 digits of a memento URI: UTC, ``YYYYMMDDhhmmss`` and the microseconds."""
    t = t.astimezone(UTC)
    return t.strftime("%Y%m%d%H%M%S") + f"{t.microsecond:06d}"


def memento_uri(base: str, url: str, t: datetime) -> str:
    """The memento of ``url`` read at ``t`` in the ``g6 serve`` at ``base``."""
    return uri_text(f"{base.rstrip('/')}/web/{memento_stamp(t)}id_/{url}")


def read_time(fetched_at: str) -> datetime:
    """A receipt's ``fetched_at`` (RFC 3339, UTC) as an aware datetime."""
    try:
        t = datetime.fromisoformat(fetched_at.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"fetched_at {fetched_at[:40]!r} is not an RFC 3339 time") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def iso_second(t: datetime) -> str:
    """``YYYY-MM-DDThh:mm:ssZ``: the form both the Robust Links ``data-versiondate`` and ``xsd:dateTime`` read."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_base_url(base: str) -> str:
    """The public base URL of a ``g6 serve``: absolute http(s), no query or fragment; without its last ``/``."""
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment \
            or any(ch.isspace() for ch in base):
        raise InputError(f"--base-url {base[:80]!r} is not the http(s) root of a g6 serve "
                         "(like https://evidence.example.org or http://127.0.0.1:8426)")
    return base.rstrip("/")


@dataclass(frozen=True, slots=True)
class Archive:
    """Another web archive the user names: ``NAME=TEMPLATE``, the template an http(s) URL with ``{url}`` (the
    cited page's URL) and optionally ``{timestamp}`` (the read's ``YYYYMMDDhhmmss``, UTC)."""

    name: str
    template: str

    @classmethod
    def parse(cls, text: str) -> Archive:
        name, eq, template = text.partition("=")
        if not eq or not ARCHIVE_NAME.fullmatch(name):
            raise InputError(f"--archive {text[:80]!r} is not NAME=URLTEMPLATE (NAME: letters, digits, '.', '_', "
                             "'-'; e.g. ia=https://web.archive.org/web/{timestamp}/{url})")
        if name == G6:
            raise InputError("--archive: the name g6 is the g6 serve at --base-url; give the other archive "
                             "another name")
        try:
            fields = [f for _, f, spec, conv in string.Formatter().parse(template) if f is not None or spec or conv]
        except ValueError as e:
            raise InputError(f"--archive {name}: the template {template[:80]!r} does not parse: {e}") from None
        unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
        if unknown:
            raise InputError(f"--archive {name}: unknown placeholder {{{unknown[0][:20]}}} (the template takes "
                             "{url} and {timestamp})")
        if "url" not in fields:
            raise InputError(f"--archive {name}: the template has no {{url}}")
        probe = template.format(url="http://x.invalid/", timestamp="20000101000000")
        if urlsplit(probe).scheme not in ("http", "https") or not urlsplit(probe).netloc:
            raise InputError(f"--archive {name}: the template {template[:80]!r} is not an http(s) URL")
        return cls(name, template)

    def uri(self, url: str, t: datetime) -> str:
        return uri_text(self.template.format(url=url, timestamp=t.astimezone(UTC).strftime("%Y%m%d%H%M%S")))


@dataclass(frozen=True, slots=True)
class Version:
    """One snapshot of a cited page: the archive's name and its URI."""

    archive: str
    uri: str

    def to_json(self) -> dict[str, str]:
        return {"archive": self.archive, "uri": self.uri}


@dataclass(frozen=True, slots=True)
class Exported:
    """One citation with what the formats need from its receipt."""

    citation: Citation
    receipt: Receipt
    read_at: datetime
    versions: tuple[Version, ...]  # the g6 memento first (with a base URL), then each archive's, in order
    why_no_memento: str | None  # None when the citation has a g6 memento (or no base URL was given)

    @property
    def memento(self) -> str | None:
        return next((v.uri for v in self.versions if v.archive == G6), None)


def why_not_a_memento(c: Citation, r: Receipt) -> str | None:
    """Why ``g6 serve`` serves no memento of the cited page, in a few words; None when it does (the conditions
    of ``g6.serve.memento.entry_at`` and ``Capture.whole_body``)."""
    if c.kind != "web" or r.kind not in ("fetch", "recheck") or r.source != "web":
        return "a search page (g6 serve shows web reads)"
    if c.failed_read is not None or r.outcome != "ok" or not (r.http_status and 200 <= r.http_status < 300):
        return f"a failed read ({r.outcome}, HTTP {r.http_status})"
    if r.content is None or r.truncated or "content_encoding" in r.detail:
        return "its body was not kept whole"
    return None


def export_citations(home: EvidenceHome, manifest: Manifest, *, base_url: str | None = None,
                     archives: Sequence[Archive] = ()) -> list[Exported]:
    """Every citation of ``manifest`` with its receipt from ``home`` (a ``ReceiptNotFound`` for one the home does
    not hold; an ``InputError`` for a citation whose digests are not its receipt's)."""
    base = check_base_url(base_url) if base_url is not None else None
    names = [a.name for a in archives]
    if len(set(names)) != len(names):
        raise InputError(f"--archive: the name {next(n for n in names if names.count(n) > 1)!r} is given twice")
    out = []
    for c in manifest.citations:
        r = home.ledger.get(c.receipt_id)
        if r.content is None or any(str(r.content.get(k)) != str(c.content.get(k)) for k in ("sha256", "blake3")):
            raise InputError(f"citation {c.citation_id}: its content digests are not those of receipt {c.receipt_id} "
                             "in this home (is it the home the manifest was made in?)")
        t = read_time(r.fetched_at)
        why = why_not_a_memento(c, r) if base is not None else None
        versions = [Version(G6, memento_uri(base, c.source_url, t))] if base is not None and why is None else []
        versions += [Version(a.name, a.uri(c.source_url, t)) for a in archives]
        out.append(Exported(c, r, t, tuple(versions), why))
    return out
