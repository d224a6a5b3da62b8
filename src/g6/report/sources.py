"""A citation's source as g6 reads it: an http(s) URL, or a paper id the paper sources resolve.

Papers: ``doi:10.…``, ``https://doi.org/10.…`` (and ``dx.doi.org``) become ``doi:10.…``; ``arXiv:2401.01234``
and ``https://arxiv.org/abs/…`` (``/pdf/``, ``/html/``, ``export.arxiv.org``) become ``arxiv:2401.01234``
(the version kept when given; old-style ids like ``hep-th/9901001`` too); ``openalex:W…``, ``OpenAlex W…`` and
``https://openalex.org/W…`` (``/works/W…``, ``api.openalex.org``) become ``openalex:W…``. A doi.org or arxiv.org
address is read as the paper it names because that is what the citation means: fetched as a web page, a DOI
is a redirect to a publisher's landing page, often behind a wall, and the check would judge the wall; through
the paper sources the read is receipted and the paper's landing or PDF text is what the quote is looked for
in. The address as written is kept beside it (``ReportCitation.address``).

Anything else must be an absolute http(s) URL with a host, no white space or control character, at most
``MAX_URL`` characters. A relative link is resolved on the base the caller gives (``base=``), else it is not
usable; other schemes (``javascript:``, ``data:``, ``file:``, ``mailto:``, ``ftp:``…) are not usable. An
unusable source is not an error: the citation is kept as ``UnusableCitation`` with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit

from g6.adapters.net.urls import MAX_URL_LENGTH

MAX_URL = MAX_URL_LENGTH  # the one limit of every URL g6 sends (RFC 9110 §4.1): a longer one could not be read
_DOI = r"10\.\d{4,9}/\S+"
_ARXIV = r"(?:\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?"
_PAPER_IDS = (
    (re.compile(rf"doi:\s*({_DOI})", re.I), "doi"),
    (re.compile(rf"https?://(?:dx\.)?doi\.org/({_DOI})", re.I), "doi"),
    (re.compile(rf"arxiv:\s*({_ARXIV})", re.I), "arxiv"),
    (re.compile(rf"https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/({_ARXIV})(?:\.pdf)?/?", re.I), "arxiv"),
    (re.compile(r"openalex:?\s*(W\d{2,12})", re.I), "openalex"),  # "openalex:W…", "OpenAlex W…"
    (re.compile(r"https?://(?:api\.)?openalex\.org/(?:works/)?(W\d{2,12})", re.I), "openalex"),
)
# a paper id as people write it in prose (not a link): "doi:10.1000/xyz", "arXiv:2401.01234", "OpenAlex W123…"
IN_PROSE = re.compile(rf"\b(?:doi:\s?{_DOI}|arxiv:\s?{_ARXIV}|openalex:?\s?W\d{{2,12}})", re.I)
_TRAILING = ".,;:!?)]}>\"'”’"
_CONTROL = re.compile(r"[\x00-\x20\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Source:
    """A source g6 can read (``source``) and the text it was read from when that differs (``address``)."""

    source: str
    address: str | None = None


@dataclass(frozen=True, slots=True)
class Unusable:
    reason: str


def strip_trailing(written: str) -> str:
    """A link found in prose loses the punctuation that ends its sentence ("see doi:10.1/x." -> "doi:10.1/x")."""
    return written.rstrip(_TRAILING) if written[-1:] in _TRAILING else written


def paper_id(written: str) -> str | None:
    """``doi:…``, ``arxiv:…`` or ``openalex:…`` when the text names a paper (see the module), else None."""
    for pattern, kind in _PAPER_IDS:
        m = pattern.fullmatch(written)
        if m:
            ident = unquote(m.group(1)) if kind == "doi" else m.group(1)
            if kind == "openalex":
                ident = "W" + ident[1:]
            return f"{kind}:{strip_trailing(ident) if kind == 'doi' else ident}"
    return None


def normalise_source(written: str, base: str | None = None) -> Source | Unusable:
    """What g6 reads for a source written ``written`` (a URL, a link, a paper id), or why it cannot."""
    w = written.strip()
    if not w:
        return Unusable("no address: the source is empty")
    if len(w) > MAX_URL:
        return Unusable(f"an address of {len(w):,} characters (over the {MAX_URL:,}-character limit)")
    paper = paper_id(w)
    if paper is not None:
        return Source(paper, None if paper == w else w)
    if _CONTROL.search(w):
        return Unusable("an address with white space or a control character in it")
    try:
        parts = urlsplit(w)
    except ValueError:
        return Unusable("an address that does not parse as a URL")
    scheme = parts.scheme.lower()
    if not scheme and base is not None:
        return _resolved(w, base)
    if not scheme:
        return Unusable("a relative link with no base to resolve it on (give the report's base URL: --base URL)")
    if scheme not in ("http", "https"):
        return Unusable(f"a {scheme}: address, not a source g6 reads (http, https, or a DOI, arXiv or OpenAlex id)")
    try:
        host = parts.hostname
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        return Unusable("a URL whose host or port does not parse")
    if not host:
        return Unusable("a URL with no host")
    return Source(w)


def _resolved(written: str, base: str) -> Source | Unusable:
    base_ok = normalise_source(base)
    if isinstance(base_ok, Unusable) or base_ok.address is not None:
        return Unusable(f"a relative link, and the base {base[:80]!r} is not an http(s) URL")
    try:
        joined = urljoin(base_ok.source, written)
    except ValueError:
        return Unusable("a relative link that does not resolve on the base")
    out = normalise_source(joined)
    if isinstance(out, Source):
        return Source(out.source, written)
    return out
