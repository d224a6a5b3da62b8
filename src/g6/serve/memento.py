"""Memento (RFC 7089) over the captures of the home: TimeGate, TimeMaps, mementos.

``/web/{url}`` is the TimeGate, ``/web/timemap/link/{url}`` and ``/web/timemap/json/{url}`` the TimeMaps,
``/web/{timestamp}id_/{url}`` a memento (14 digits, ``YYYYMMDDhhmmss``, UTC; 20 with the microseconds,
see below). The URL is read from the raw request path and query string (Starlette's path parameters
decode it and drop the query), normalised as g6 stores URLs (``g6.serve.captures.normalise``).

What each capture is at a URL (``Entry``): every hop of a read is an answer the server gave at that hop's
URL, so a read of A redirected to B is a redirect memento of A and a memento of B.

- **mementos** (``rel="memento"``): answers a browser would show as the page: a 2xx whose body was kept
  whole (served byte for byte, streamed, with its original Content-Type) and a 3xx followed to its target
  (served as that status, ``Location`` the target's memento at the same time, as pywb does);
- **failed reads** (``rel="https://g6-evidence.invalid/rel/failed-read"``): everything else (an HTTP error,
  no answer at all: a timeout, a refusal, robots.txt, the allowlist; a body cut at a size limit). The
  TimeMaps list them with ``status`` (when the server answered), ``outcome``, ``code`` and ``receipt``
  attributes; Memento clients skip a relation they do not know, so no TimeGate lands on one, and their
  URIs never serve the captured page: an HTTP error answers its real status, anything else 404, each with
  a body (JSON or HTML) saying what the read was, and no ``Memento-Datetime``.

Several captures of one URL within one second share a 14-digit timestamp; each then gets a URI of its own
with 20 digits (the receipt's microseconds), and the 14-digit form of that second serves the first of them
(the TimeGate's choice too: nearest to the second's start). Every memento and answer links to its signed
receipt (``rel="describedby"``, ``/receipt/{id}``); a memento also names its 20-digit URI as ``rel="cite-as"``
(Signposting, RFC 8574: the URI to cite it by, which never comes to mean another capture), and carries
``Content-Digest`` and ``Repr-Digest`` (RFC 9530) of the kept bytes it sends: the receipt's signed sha256
(:mod:`g6.serve.digests`). Mementos carry a ``Content-Security-Policy`` of
``sandbox`` and ``default-src 'none'`` (:data:`MEMENTO_CSP`; headers only, the bytes are untouched): a
captured page opened here runs no script on this origin and loads nothing from anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from g6.errors import BlobCorrupt, BlobNotFound
from g6.export.citations import memento_uri
from g6.serve.captures import Capture, Captures, normalise
from g6.serve.digests import memento_fields
from g6.serve.responses import SECURITY_HEADERS, bad_request, not_found, redacted, refusal

FAILED_REL = "https://g6-evidence.invalid/rel/failed-read"
LINK_FORMAT = "application/link-format"
_STAMP = re.compile(r"(\d{14}|\d{20})id_/(.*)", re.S)
_HTTP_DATE = re.compile(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                        r"\d{4} \d{2}:\d{2}:\d{2} GMT")
_HEADER_SAFE = "!#$%&'()*+,-./:;=?@[]^_`{|}~"  # kept as they are in a URL put in a header; the rest is escaped


@dataclass(frozen=True, slots=True)
class Entry:
    """One capture as seen from one URL: what that URL answered in that read."""

    capture: Capture
    url: str
    status: int | None  # the status this URL answered in this read; None: no answer
    location: str | None  # the URL it redirected to, for a redirect memento
    memento: bool  # a memento (a page kept whole, or a redirect); else a failed read
    stamp: str = ""  # 14 digits, or 20 where the second holds several captures of this URL

    @property
    def time(self) -> datetime:
        return self.capture.time

# A memento is the stored bytes unchanged (its URLs not rewritten), so it is opened as an opaque, script-less
# origin, and it may load nothing from anywhere: its images, style sheets and fonts would come from the
# original site, telling it who reads the evidence and showing what that site serves today, not then.
MEMENTO_CSP = ("sandbox; default-src 'none'; style-src 'unsafe-inline' data:; img-src data:; font-src data:; "
               "media-src data:; base-uri 'none'; form-action 'none'")


def entry_at(c: Capture, url: str) -> Entry:
    """What ``url`` answered in capture ``c`` (see the module docstring)."""
    hops = c.hops
    i = next((k for k, h in enumerate(hops) if h.url == url), None)
    if i is None:  # refused before any request to it (the first URL, or a redirect target the allowlist denied)
        return Entry(c, url, None, None, False)
    status = hops[i].status
    if status is not None and 300 <= status < 400:
        target = hops[i + 1].url if i + 1 < len(hops) else c.final_url
        if target and target != url:
            return Entry(c, url, status, target, True)
        return Entry(c, url, status, None, False)
    last = i == len(hops) - 1
    return Entry(c, url, status, None, bool(last and status is not None and 200 <= status < 300 and c.whole_body))


def entries(caps: Captures, url: str) -> list[Entry]:
    """Every capture of ``url`` as an entry, oldest first, each with its timestamp."""
    out = [entry_at(c, url) for c in caps.of_url(url)]
    seconds: dict[str, int] = {}
    for e in out:
        s = e.time.strftime("%Y%m%d%H%M%S")
        seconds[s] = seconds.get(s, 0) + 1
    stamped = []
    for e in out:
        s = e.time.strftime("%Y%m%d%H%M%S")
        stamp = s if seconds[s] == 1 else s + f"{e.time.microsecond:06d}"
        stamped.append(Entry(e.capture, e.url, e.status, e.location, e.memento, stamp))
    return stamped


def http_date(t: datetime) -> str:
    """RFC 1123 (the date form of Memento-Datetime and Accept-Datetime), always GMT."""
    return t.astimezone(UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")


def parse_accept_datetime(text: str) -> datetime | None:
    """An RFC 1123 date (``Sun, 06 Nov 1994 08:49:37 GMT``), or None if it is not one."""
    text = text.strip()
    if not _HTTP_DATE.fullmatch(text):
        return None
    try:
        t = datetime.strptime(text, "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=UTC)
    except ValueError:  # 31 Feb, 25:00...
        return None
    return t if t.strftime("%a") == text[:3] else None  # a weekday that does not match the date is not a date


def header_url(url: str) -> str:
    """A URL as it can stand between ``<`` and ``>`` in a header: ASCII, no space, quote or angle bracket."""
    return quote(url, safe=_HEADER_SAFE + "%")


class Memento:
    """The routes over one server's captures; ``base`` (the server's own root URL) comes from each request."""

    def __init__(self, caps: Captures) -> None:
        self.caps = caps

    # -- URIs ---------------------------------------------------------------------------------------
    @staticmethod
    def base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    def uri_m(self, request: Request, e: Entry) -> str:
        return f"{self.base(request)}/web/{e.stamp}id_/{e.url}"

    def uri_g(self, request: Request, url: str) -> str:
        return f"{self.base(request)}/web/{url}"

    def uri_t(self, request: Request, url: str, form: str = "link") -> str:
        return f"{self.base(request)}/web/timemap/{form}/{url}"

    def receipt_uri(self, request: Request, c: Capture) -> str:
        return f"{self.base(request)}/receipt/{c.receipt_id}"

    def cite_as(self, request: Request, e: Entry) -> str:
        """The memento's URI with all 20 digits (the receipt's microseconds), whatever ``e.stamp`` is: it names
        this capture alone for good, where a 14-digit URI serves the first capture of its second (and a capture
        of the same second appended later, as ``ledger copy`` may, could come first). ``g6 manifest export``
        writes the same URI (``g6.export.citations.memento_uri``)."""
        return memento_uri(self.base(request), e.url, e.time)

    # -- the request's URL --------------------------------------------------------------------------
    @staticmethod
    def _raw_rest(request: Request) -> str:
        """What follows ``/web/`` in the raw path, with the query string: the URL exactly as sent."""
        raw = request.scope.get("raw_path") or request.url.path.encode()
        text = raw.decode("utf-8", "surrogateescape").split("/web/", 1)[-1]
        qs = request.scope.get("query_string", b"")
        return text + ("?" + qs.decode("latin-1") if qs else "")

    @staticmethod
    def _url(rest: str) -> str | None:
        """The URL asked about, normalised; None when it is not an http(s) URL. A proxy may have collapsed
        ``http://`` to ``http:/``: put back."""
        m = re.match(r"(?i)(https?):/+(.*)", rest, re.S)
        if not m:
            return None
        return normalise(f"{m.group(1).lower()}://{m.group(2)}")

    def dispatch(self, request: Request) -> Response:
        rest = self._raw_rest(request)
        for form in ("link", "json"):
            prefix = f"timemap/{form}/"
            if rest.startswith(prefix):
                return self._with_url(request, rest[len(prefix):], lambda u, f=form: self.timemap(request, u, f))
        m = _STAMP.fullmatch(rest)
        if m:
            return self._with_url(request, m.group(2), lambda u: self.memento(request, m.group(1), u))
        return self._with_url(request, rest, lambda u: self.timegate(request, u))

    def _with_url(self, request: Request, rest: str, answer: Any) -> Response:
        url = self._url(rest)
        if url is None:
            # no example path here: every path a refusal names must answer (an example URL was never captured)
            return bad_request(request, f"not an http(s) URL: {rest[:200]!r}; give the URL with its scheme "
                                        "(https://example.org/page, not example.org/page)")
        return answer(url)

    def _unknown(self, request: Request, url: str) -> Response:
        return not_found(request, f"{url} was never captured in this home (no fetch or re-check receipt names it)")

    # -- links --------------------------------------------------------------------------------------
    def _links(self, request: Request, url: str, es: list[Entry], chosen: Entry | None) -> str:
        """original, timegate, timemap, and the first/last (and prev/next around ``chosen``) mementos."""
        mems = [e for e in es if e.memento]
        rels: dict[str, tuple[list[str], Entry]] = {}

        def add(e: Entry, rel: str) -> None:
            rels.setdefault(e.stamp, ([], e))[0].append(rel)

        if mems:
            add(mems[0], "first")
            add(mems[-1], "last")
            if chosen is not None and chosen in mems:
                i = mems.index(chosen)
                if i > 0:
                    add(mems[i - 1], "prev")
                if i + 1 < len(mems):
                    add(mems[i + 1], "next")
                add(chosen, "")
        parts = [f'<{header_url(url)}>; rel="original"',
                 f'<{header_url(self.uri_g(request, url))}>; rel="timegate"',
                 f'<{header_url(self.uri_t(request, url))}>; rel="timemap"; type="{LINK_FORMAT}"',
                 f'<{header_url(self.uri_t(request, url, "json"))}>; rel="timemap"; type="application/json"']
        for names, e in sorted(rels.values(), key=lambda v: (v[1].time, v[1].capture.seq)):
            rel = " ".join(n for n in dict.fromkeys(names) if n) + " memento"
            parts.append(f'<{header_url(self.uri_m(request, e))}>; rel="{rel.strip()}"; '
                         f'datetime="{http_date(e.time)}"')
        return ", ".join(parts)

    def _attributes(self, request: Request, e: Entry) -> str:
        """The extension attributes of a TimeMap link: what the capture was, and its receipt. Every value
        is non-empty and quoted (pywb's parser needs both)."""
        c = e.capture
        attrs = [("datetime", http_date(e.time))]
        if e.status is not None:
            attrs.append(("status", str(e.status)))
        attrs += [("outcome", c.outcome), ("code", c.code), ("receipt", self.receipt_uri(request, c))]
        return "".join(f'; {k}="{v}"' for k, v in attrs if v and '"' not in v)

    # -- TimeMaps -----------------------------------------------------------------------------------
    def timemap(self, request: Request, url: str, form: str) -> Response:
        es = entries(self.caps, url)
        if not es:
            return self._unknown(request, url)
        mems = [e for e in es if e.memento]
        if form == "json":
            return JSONResponse(self.timemap_json(request, url, es), headers=SECURITY_HEADERS)
        span = f'; from="{http_date(es[0].time)}"; until="{http_date(es[-1].time)}"'
        lines = [f'<{header_url(url)}>; rel="original"',
                 f'<{header_url(self.uri_t(request, url))}>; rel="self"; type="{LINK_FORMAT}"{span}',
                 f'<{header_url(self.uri_t(request, url, "json"))}>; rel="alternate"; type="application/json"',
                 f'<{header_url(self.uri_g(request, url))}>; rel="timegate"']
        for e in es:
            if e.memento:
                first_last = " ".join(r for r, ok in (("first", e is mems[0]), ("last", e is mems[-1])) if ok)
                rel = f"{first_last} memento".strip()
            else:
                rel = FAILED_REL
            lines.append(f'<{header_url(self.uri_m(request, e))}>; rel="{rel}"{self._attributes(request, e)}')
        return Response(",\n".join(lines) + "\n", media_type=LINK_FORMAT, headers=SECURITY_HEADERS)

    def timemap_json(self, request: Request, url: str, es: list[Entry]) -> dict[str, Any]:
        """The JSON TimeMap (``schemas/serve-timemap.v1.schema.json``): the Memento aggregator's shape
        (original_uri, timegate_uri, timemap_uri, mementos.first/last/list) and the failed reads beside."""

        def item(e: Entry) -> dict[str, Any]:
            c = e.capture
            return {"datetime": e.time.strftime("%Y-%m-%dT%H:%M:%SZ"), "uri": self.uri_m(request, e),
                    "fetched_at": c.fetched_at, "status": e.status, "redirect_to": e.location,
                    "outcome": c.outcome, "code": c.code, "reason": c.reason, "receipt_id": c.receipt_id,
                    "receipt": self.receipt_uri(request, c)}

        mems = [item(e) for e in es if e.memento]
        return {"schema": "g6.serve-timemap.v1", "original_uri": url, "timegate_uri": self.uri_g(request, url),
                "timemap_uri": {"link_format": self.uri_t(request, url),
                                "json_format": self.uri_t(request, url, "json")},
                "mementos": {"first": mems[0] if mems else None, "last": mems[-1] if mems else None, "list": mems},
                "failed_reads": [item(e) for e in es if not e.memento]}

    # -- the TimeGate -------------------------------------------------------------------------------
    def timegate(self, request: Request, url: str) -> Response:
        asked = request.headers.get("accept-datetime")
        when = datetime.now(UTC)
        if asked is not None:
            parsed = parse_accept_datetime(asked)
            if parsed is None:
                return bad_request(request, f"Accept-Datetime {asked[:80]!r} is not an RFC 1123 date "
                                            "(like 'Sun, 06 Nov 1994 08:49:37 GMT')")
            when = parsed
        es = entries(self.caps, url)
        mems = [e for e in es if e.memento]
        vary = {"Vary": "accept-datetime"}
        if not mems:
            if not es:
                r = self._unknown(request, url)
            else:
                r = not_found(request, f"{url} has no memento: its {len(es)} capture(s) are failed reads, listed in "
                                       f"its TimeMap {self.uri_t(request, url)}", see=self.uri_t(request, url))
            r.headers.update(vary)
            return r
        # nearest to the time asked; a tie goes to the earlier capture
        chosen = min(mems, key=lambda e: (abs((e.time - when).total_seconds()), e.time, e.capture.seq))
        return Response(status_code=302, headers={**SECURITY_HEADERS, **vary,
                                                  "Location": header_url(self.uri_m(request, chosen)),
                                                  "Link": self._links(request, url, es, chosen)})

    # -- mementos -----------------------------------------------------------------------------------
    def memento(self, request: Request, stamp: str, url: str) -> Response:
        es = entries(self.caps, url)
        if not es:
            return self._unknown(request, url)
        if len(stamp) == 20:
            hit = [e for e in es if e.stamp == stamp or (e.stamp[:14] == stamp[:14] and
                                                         f"{e.time.microsecond:06d}" == stamp[14:])]
        else:
            hit = [e for e in es if e.stamp[:14] == stamp]
            hit = [e for e in hit if e.memento] or hit  # the second's first memento, else its first failed read
        if not hit:
            return not_found(request, f"no capture of {url} at {stamp} (UTC); its TimeMap lists them: "
                                      f"{self.uri_t(request, url)}", see=self.uri_t(request, url))
        e = hit[0]
        c = e.capture
        links = self._links(request, url, es, e if e.memento else None) + \
            f', <{header_url(self.receipt_uri(request, c))}>; rel="describedby"; type="application/json"'
        if not e.memento:
            return self._failed(request, e, links)
        gone = self.caps.redaction_of(c) if e.location is None else None
        if gone is not None:  # never served, whether or not bytes are still in the store
            # no cite-as and no digests of the body: there are no bytes here to cite (describedby stays: the
            # receipt is still served, and says what was read)
            r = redacted(request, f"the body of {c.receipt_id}", gone,
                         f"{self.base(request)}/receipt/{gone.receipt_id}")
            r.headers["Link"] = f"{links}, {r.headers['Link']}"
            return r
        links += f', <{header_url(self.cite_as(request, e))}>; rel="cite-as"'
        headers = {**SECURITY_HEADERS, "Memento-Datetime": http_date(e.time), "Link": links,
                   "Content-Security-Policy": MEMENTO_CSP}
        if e.location is not None:
            target = next((t for t in entries(self.caps, e.location) if t.capture.seq == c.seq), None)
            where = self.uri_m(request, target) if target is not None else self.uri_g(request, e.location)
            return Response(status_code=e.status or 302, headers={**headers, "Location": header_url(where)})
        try:
            body = self.caps.body(c)
        except BlobNotFound as err:
            return refusal(request, 404, "blob_missing", f"the body of {c.receipt_id} is not in the store: {err}")
        except BlobCorrupt as err:
            return refusal(request, 500, "blob_corrupt", f"the body of {c.receipt_id} is refused: {err}")
        headers["Content-Length"] = str(c.size)
        # the kept bytes, unchanged, are what is sent (no Content-Encoding, no Range): the receipt's sha256 is
        # their digest; the middleware leaves a streamed answer's own fields alone (g6.serve.digests)
        assert c.sha256 is not None  # a memento's body was kept whole (Entry.memento)
        headers.update({**memento_fields(c.sha256, head=request.method == "HEAD"), "Accept-Ranges": "none"})
        media = c.content_type
        if request.method == "HEAD":
            _close(body)
            return Response(status_code=e.status or 200, headers=headers, media_type=media)
        return StreamingResponse(body, status_code=e.status or 200, headers=headers, media_type=media)

    def _failed(self, request: Request, e: Entry, links: str) -> Response:
        """What a failed read's URI answers: its real status for an HTTP error, else 404; never its page."""
        c = e.capture
        status = e.status if e.status is not None and e.status >= 400 else 404
        said = f"answered HTTP {e.status}" if e.status is not None else "got no answer"
        why = (f"at {c.fetched_at} {e.url} {said}: a failed read ({c.outcome}, {c.code}"
               f"{', ' + c.reason if c.reason else ''}); g6 serves no page for it. Receipt: "
               f"{self.receipt_uri(request, c)}")
        r = refusal(request, status, "failed_read", why, see=self.receipt_uri(request, c))  # JSON or HTML, as asked
        r.headers.update({"Link": links, "Vary": "accept"})
        return r


def _close(chunks: Iterable[bytes]) -> None:
    close = getattr(chunks, "close", None)
    if close is not None:
        close()


def routes(reader: Any, **options: Any) -> list[BaseRoute]:
    m = Memento(Captures.of(reader))
    return [Route("/web/{rest:path}", m.dispatch, methods=["GET", "HEAD"])]


__all__ = ["Entry", "Memento", "entries", "entry_at", "http_date", "parse_accept_datetime", "routes"]
