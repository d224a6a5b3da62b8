"""One verdict per citation, from the bytes of the read it rests on. Never stronger than that read:

* ``source_failed`` — there is no read to judge, or the read is no evidence of the page's words: no receipt
  (``--receipts-only`` and none kept), a source that cannot be read (``document:N`` not mapped, a scheme g6
  does not fetch), a failed read (refused, blocked, not found, robots, too large, unreachable…: the receipt's
  outcome and HTTP status), a login, challenge or consent wall in place of the page (``interstitial``), or a
  body with no text (empty, not text, unreadable, over the size a page is read at);
* ``redirected_elsewhere`` — the read ended on a different page than the one cited (:func:`elsewhere`);
* ``quote_found`` — the quote is in the page's reader-visible text, looked for exactly as ``g6 cite --quote``
  looks (:func:`g6.cite.cite.locate`: the main text first, then the whole visible text, compared after the
  normaliser of :mod:`g6.cite.passages`); ``found`` gives the text, the offsets, the passage id and whether
  the match was exact or only after normalising;
* ``quote_not_found`` — it is not; ``hints`` holds the closest span of the visible text and its similarity
  (rapidfuzz), labelled a hint: it is never support. A quote present only in hidden text or structured
  data (JSON-LD) is not found, and ``detail.hidden`` says where it was;
* ``no_quote`` — the report gives no quote for this citation, so nothing is called supported; ``hints``
  lists the passages most similar to the claim.

The verdict is a function of the receipt and its bytes only, so the same receipt gives the same verdict
in a check that fetched it, one that found it in the home (``--receipts-only``) and one that read it from
a bundle.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from rapidfuzz import fuzz, process

from g6.adapters.html.interstitial import Interstitial
from g6.adapters.html.page import MAX_EXTRACT_BYTES, media_type
from g6.adapters.html.text import STRUCTURED_DATA
from g6.adapters.net.urls import URLError, normalise_url
from g6.adapters.outcomes import Outcome
from g6.cite.cite import locate, read_failure, short_quote, web_citation, why_not_citable
from g6.cite.manifest import Citation
from g6.cite.page_text import RENDERED, PageTexts, read_texts
from g6.cite.passages import align, chunk, find, find_places, normalise
from g6.ledger.receipts import Receipt
from g6.report.model import UnusableCitation

VERDICTS = ("quote_found", "quote_not_found", "no_quote", "source_failed", "redirected_elsewhere")
HINT = "a hint, not support"
MAX_QUOTE = 100_000  # characters of a quote that are looked for; a longer one is not searched (and says so)
MAX_SHOWN = 2_000  # characters of a quote, claim or found text a result shows (with the whole one's sha256)
HINT_NEEDLE = 1_000  # characters of a quote or claim a hint is computed from
HINTS = 3  # passages most similar to the claim, for a citation without a quote

# The redirect rule (:func:`elsewhere`). Path segments are compared by their stem (the part before the first
# ".": ``login.php``, ``404.html``, ``index.asp`` are ``login``, ``404``, ``index``), as sites name them.
HOME_STEMS = frozenset({"index", "default", "home", "homepage"})  # the one segment of a home page's path
_LOCALE = re.compile(r"[a-z]{2}(?:[-_][a-z]{2})?")
SIGN_IN = frozenset({"login", "log-in", "log_in", "signin", "sign-in", "sign_in", "logon", "signon", "sign-on",
                     "wp-login", "auth", "authenticate", "sso", "session", "sessions", "oauth", "oauth2", "cas",
                     "saml"})
SIGN_IN_HOSTS = ("login.", "signin.", "accounts.", "auth.", "sso.", "idp.")
ERROR_PAGES = frozenset({"403", "404", "410", "500", "503", "not-found", "notfound", "not_found", "page-not-found",
                         "pagenotfound", "error", "errors"})
RETURN_PARAMS = frozenset({"next", "return", "returnto", "return_to", "returnurl", "return_url", "redirect",
                           "redirect_to", "redirect_uri", "redirect_url", "continue", "destination", "dest",
                           "target", "came_from", "from", "origin", "ref", "goto", "url"})


def bounded(text: str, n: int = MAX_SHOWN) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def sha256_text(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the check says of one citation, and the read it rests on."""

    verdict: str
    reason: str
    receipt_id: str | None = None
    read: Mapping[str, Any] | None = None  # the read: url, final_url, outcome, http_status, content, fetched_at
    found: Mapping[str, Any] | None = None  # quote_found: text_source, start, end, passage_id, match, text
    hints: tuple[Mapping[str, Any], ...] = ()
    detail: Mapping[str, Any] = field(default_factory=dict)
    citation: Citation | None = None  # quote_found in a fetched page: its manifest citation

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"verdict": self.verdict, "reason": self.reason, "receipt_id": self.receipt_id,
                             "read": dict(self.read) if self.read is not None else None}
        if self.found is not None:
            d["found"] = dict(self.found)
        d["hints"] = [dict(h) for h in self.hints]
        d["detail"] = dict(self.detail)
        if self.citation is not None:
            d["citation_id"] = self.citation.citation_id
        return d

    def run_json(self) -> dict[str, Any]:
        """As a run file keeps it: with the manifest citation whole, to rebuild the manifest on resume."""
        d = self.to_json()
        if self.citation is not None:
            d["citation"] = self.citation.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Verdict:
        if d["verdict"] not in VERDICTS:
            raise ValueError(f"unknown verdict {d['verdict']!r}")
        c = d.get("citation")
        return cls(d["verdict"], str(d["reason"]), d.get("receipt_id"), d.get("read"), d.get("found"),
                   tuple(d.get("hints") or ()), d.get("detail") or {}, Citation.from_json(c) if c else None)


def failed(reason: str, **detail: Any) -> Verdict:
    """``source_failed`` with no read behind it."""
    return Verdict("source_failed", reason, detail=detail)


def unreadable(u: UnusableCitation) -> Verdict:
    """``source_failed`` for a citation whose source the report's reader found g6 cannot read (nothing is
    fetched for it): ``detail.unusable`` says why, ``detail.written`` is the source as the report wrote it."""
    return failed(f"the source cannot be read: {u.reason}", unusable=u.reason, written=u.written)


def read_of(r: Receipt, how: str) -> dict[str, Any]:
    """What a verdict shows of the read it rests on (``how``: pinned, home, fetched, bundle)."""
    return {"how": how, "kind": r.kind, "url": str(r.request.get("url", "")), "final_url": r.final_url,
            "outcome": r.outcome, "http_status": r.http_status, "fetched_at": r.fetched_at,
            "content": dict(r.content) if r.content else None, "truncated": r.truncated}


# -- the redirect rule ------------------------------------------------------------------------------
def _page_key(url: str) -> tuple[str, str, str] | None:
    """(host without a leading ``www.``, path without a trailing slash, query): what names a page. The
    scheme and a default port do not (``http`` to ``https`` is the same page)."""
    try:
        n = normalise_url(url)
    except (URLError, ValueError, UnicodeError, TypeError):
        return None
    parts = urlsplit(n.url)
    host = n.host_header.removeprefix("www.")
    return host, parts.path.rstrip("/") or "/", parts.query


def _stem(segment: str) -> str:
    return segment.split(".", 1)[0]


def _is_home(path: str) -> bool:
    """``/``, a bare locale (``/en``, ``/en-gb``), or one segment whose stem is a home page's (``/index.asp``,
    ``/home.html``, ``/default.aspx``), after a locale or not (``/en/index.html``)."""
    segments = [s for s in path.lower().split("/") if s]
    if segments and _LOCALE.fullmatch(segments[0]):
        segments = segments[1:]
    return not segments or (len(segments) == 1 and _stem(segments[0]) in HOME_STEMS)


@functools.lru_cache(maxsize=4096)
def elsewhere(requested: str, final: str | None) -> str | None:
    """Why a read of ``requested`` that ended at ``final`` ended on a different page than the one asked for,
    or None when it did not. The rule: after normalising both (host without ``www.``, path without a
    trailing slash; scheme and default port ignored), a final address that differs is a different page when

    * it is the site's home page (path ``/``, a bare locale such as ``/en`` or ``/en-gb``, or one segment,
      after a locale or not, whose stem is ``index``, ``default``, ``home`` or ``homepage``: ``/index.asp``,
      ``/home.html``), with any query (``/?from=article``), and the requested one was not the home page;
      or it is the home page without a query and the requested one was the home page with one (``/?p=1``
      is a page, not the home page);
    * it is a sign-in page: a path segment whose stem is ``login``, ``signin``, ``sign-in``, ``logon``,
      ``wp-login``, ``auth``, ``sso``, ``session``, ``oauth``… (``login.php``) or a host starting ``login.``,
      ``accounts.``, ``auth.``, ``sso.``, ``idp.``…; or a query parameter (``next``, ``return_to``,
      ``redirect``, ``continue``…) that sends the reader back to the requested address (a gate to pass first);
    * it is an error page: a path segment whose stem is ``404``, ``410``, ``403``, ``500``, ``not-found``,
      ``error``… (``404.html``).

    Any other redirect (``http`` to ``https``, ``www.``, a trailing slash, an article that moved, a DOI or a
    short link resolving to its page) reaches the page, which is then checked."""
    if not final:
        return None
    r, f = _page_key(requested), _page_key(final)
    if r is None or f is None or r == f:
        return None
    host, path, query = f
    segments = [s for s in path.lower().split("/") if s]
    if _is_home(path) and (not _is_home(r[1]) or (not query and r[2])):
        return "the site's home page"
    if any(_stem(s) in SIGN_IN for s in segments) or host.lower().startswith(SIGN_IN_HOSTS):
        return "a sign-in page"
    req_path = (urlsplit(requested).path or "/").rstrip("/")
    back = {requested.rstrip("/"), *((req_path,) if req_path else ())}
    for k, v in parse_qsl(query, keep_blank_values=True):
        value = unquote(v).rstrip("/")
        if k.lower() in RETURN_PARAMS and value and (value in back or _page_key(value) == r):
            return "a page that sends the reader back to the requested address once passed (a gate)"
    if any(_stem(s) in ERROR_PAGES for s in segments):
        return "an error page"
    return None


# -- reading a receipt's body -----------------------------------------------------------------------
def texts_source(r: Receipt) -> tuple[str, str | None]:
    """What a read's texts are read with besides its body: the URL (final, else requested) and content type."""
    return r.final_url or str(r.request.get("url", "")), r.detail.get("content_type")


def body_texts(r: Receipt, body: bytes | None) -> PageTexts:
    """The texts of a read's body, as ``g6 cite`` reads them (a body past the size a page is read at has none)."""
    if body is None:
        return PageTexts(Outcome.EMPTY, "no_body")
    if len(body) > MAX_EXTRACT_BYTES:
        return PageTexts(Outcome.PARSE_FAILED, f"body over {MAX_EXTRACT_BYTES} bytes",
                         media_type=media_type(r.detail.get("content_type"), body[:1024]))
    return read_texts(body, *texts_source(r))


def capture_text_ref(r: Receipt) -> Mapping[str, Any] | None:
    """The blob of the text the browser showed a reader, when ``r`` is a rendered capture (``g6 fetch --render``):
    the text ``g6 cite`` cites a capture in (``g6.cite.cite.receipt_texts``), and so the text it is judged on."""
    ref = r.capture.get("text") if isinstance(r.capture, Mapping) else None
    return ref if isinstance(ref, Mapping) else None


def shown_texts(texts: PageTexts, shown: str) -> PageTexts:
    """A capture's texts as ``g6 cite`` reads them: the browser's text (``rendered``) is the one a quote is looked
    for in (``PageTexts.sources``), the DOM's static texts and hidden pieces kept beside it for the hints."""
    if not shown.strip():
        return PageTexts(Outcome.EMPTY, "no_text (the rendered page showed none)", hidden=texts.hidden,
                         media_type=texts.media_type)
    return replace(texts, outcome=Outcome.OK, reason="", rendered=shown)


def reader_text(texts: PageTexts) -> tuple[str, str]:
    """(source, text) of the whole text a reader saw: a capture's rendered text, else the visible text."""
    return (RENDERED, texts.rendered) if texts.rendered is not None else ("visible", texts.visible or "")


def is_pdf(r: Receipt, body: bytes | None) -> bool:
    return body is not None and media_type(r.detail.get("content_type"), body[:1024]) == "application/pdf"


def text_texts(text: str) -> PageTexts:
    """The texts of a converted document (a PDF's text): one text, main and visible alike."""
    if not text.strip():
        return PageTexts(Outcome.EMPTY, "no_text", media_type="text/plain")
    return PageTexts(Outcome.OK, "", text, text, (), "text/plain")


# -- the verdict ------------------------------------------------------------------------------------
def judge(quote: str | None, claim: str, r: Receipt, how: str, texts: PageTexts | None, *,
          converted: Receipt | None = None, context: tuple[str | None, str | None] = (None, None)) -> Verdict:
    """The verdict on one citation (its ``quote``, ``claim``) given the read ``r`` it rests on and the texts of
    its body (``texts``; for a PDF, those of ``converted``, its conversion's receipt). ``context``: the text the
    report says comes just before and after the quote (a TextQuoteSelector's ``prefix`` and ``suffix``): the quote
    is found only at a place they surround, which picks among the places a quote occurs more than once; it never
    makes a quote found."""
    base = Verdict("", "", r.receipt_id, read_of(r, how))
    why = read_failure(r.outcome, r.http_status)
    if why is not None:
        reason = str(r.detail.get("reason") or "")
        said = r.detail.get("message")  # the client's words: which address, and the setting that allows loopback
        if isinstance(said, str) and said.strip():
            reason = f"{reason}: {said}" if reason else said
        return replace(base, verdict="source_failed", reason=f"the read failed ({why}"
                       + (f": {reason[:300]}" if reason else "") + ")",
                       detail={"outcome": r.outcome, "http_status": r.http_status})
    where = elsewhere(str(r.request.get("url", "")), r.final_url)
    if where is not None:
        return replace(base, verdict="redirected_elsewhere",
                       reason=f"the read was redirected to {bounded(str(r.final_url), 300)}, {where}: not the cited "
                              "page", detail={"final_url": r.final_url, "rule": where})
    wall = Interstitial.from_json(r.interstitial)
    if wall is not None or r.interstitial is not None:
        met = wall.words() if wall is not None else "a wall"
        return replace(base, verdict="source_failed", reason=f"the read met {met}, not the page: its words are the "
                       "wall's", detail={"interstitial": dict(r.interstitial or {})})
    if texts is None or texts.outcome is not Outcome.OK or (texts.visible is None and texts.rendered is None):
        what = (texts.reason or texts.outcome.value) if texts is not None else "no body"
        mtype = texts.media_type if texts is not None else ""
        return replace(base, verdict="source_failed", reason=f"the read holds no text to look in ({what}"
                       + (f", {mtype}" if mtype else "") + ")", detail={"text": what, "media_type": mtype})
    detail: dict[str, Any] = {}
    if r.truncated:
        detail["truncated"] = True
    if converted is not None:
        detail["converted"] = converted.receipt_id
    if quote is None or (len(quote) <= MAX_QUOTE and not normalise(quote)):  # a long one is not normalised
        return _no_quote(base, claim, texts, detail)
    return _quote(base, quote, r, texts, detail, converted, context)


def _quote(base: Verdict, quote: str, r: Receipt, texts: PageTexts, detail: dict[str, Any],
           converted: Receipt | None, context: tuple[str | None, str | None] = (None, None)) -> Verdict:
    if len(quote) > MAX_QUOTE:
        return replace(base, verdict="quote_not_found", detail={**detail, "quote_chars": len(quote)},
                       reason=f"the quote is {len(quote):,} characters, over the {MAX_QUOTE:,} a quote is looked "
                              "for up to: not searched")
    at = locate(texts, quote=quote)
    placed = _occurrence(texts, quote, at, context) if at is not None else None
    if at is not None and placed is None and not r.truncated:  # (a truncated read: its end may hold the suffix)
        return _not_surrounded(base, quote, texts, at, detail)
    if placed is not None:
        at, occurrences = placed
        source, start, end, pid = at
        text = texts.text(source) or ""
        cited = text[start:end]
        match = "exact" if cited == quote else "normalised"
        found = {"text_source": source, "start": start, "end": end, "passage_id": pid, "match": match,
                 "text": bounded(cited), **occurrences}
        citation, note = None, None
        if converted is None:
            citation = web_citation(r, texts, at)
        else:
            note = ("the quote is in the text of a PDF (its conversion's receipt), which a manifest citation "
                    "cannot point into: it is not in the manifest")
        how = "exactly" if match == "exact" else "after normalising (Unicode NFKC, case, whitespace, quote marks)"
        return replace(base, verdict="quote_found", reason=f"the quote is in the page's {source} text, {how}",
                       found=found, citation=citation, detail={**detail, **({"manifest": note} if note else {})})
    if r.truncated:  # the read stopped at its byte cap: the quote may be in what was not read
        return replace(base, verdict="source_failed", detail={**detail, "bytes_read": r.byte_count},
                       reason=f"the read stopped at its byte cap ({r.byte_count:,} bytes) and the quote is not in "
                              "the part read: too large to check")
    hidden = texts.hidden_match(quote)
    if hidden is not None:
        detail["hidden"] = hidden.how
        detail["hidden_in"] = "structured_data" if hidden.reason == STRUCTURED_DATA else hidden.reason
    reason = why_not_citable(texts, quote, r.receipt_id)
    if hidden is None and texts.rendered is not None and find(quote, texts.visible or "") is not None:
        # in the captured DOM's text, not in what the browser showed: a style sheet or a script hid it
        detail["hidden"] = "in the captured page's DOM, not in the text the browser showed (hidden by its style " \
                           "sheets or scripts)"
        detail["hidden_in"] = "rendering"
        reason = (f"the quote is in the DOM of capture {r.receipt_id} but not in the text the browser showed a "
                  "reader (a style sheet or script hid it); only what a reader saw can be cited")
    return replace(base, verdict="quote_not_found", reason=reason, detail=detail,
                   hints=_closest(quote, texts))


MAX_OCCURRENCES = 1_000  # places of one quote in one text weighed against the report's prefix and suffix
Place = tuple[str, int, int, str | None]  # as locate gives it: text source, start, end, passage id


def _squeezed(text: str) -> str:
    """Normalised text without its whitespace: a prefix or suffix is compared with the page this way, so where
    the report's author and g6's reader put a space or a line break (between blocks, around a link) is no
    difference, while every letter, digit and mark is."""
    return "".join(normalise(text).split())


def _surrounds(h: str, k: int, n: int, before: str, after: str) -> bool:
    """Whether the page's normalised text ``h`` holds ``before`` just before ``h[k:k+n]`` and ``after`` just after
    it (both squeezed, compared in full: text the page lacks there, the page's start or end too, is a
    difference). A window of 2L+1 normalised characters holds L that are not spaces (no two spaces meet)."""
    if before and _squeezed(h[max(0, k - 2 * len(before) - 1):k])[-len(before):] != before:
        return False
    return not after or _squeezed(h[k + n:k + n + 2 * len(after) + 1])[:len(after)] == after


def _places(text: str, quote: str) -> tuple[Any, str, list[int]]:
    # only the places g6 cite would take (whole words, numbers as written): a prefix never moves a citation
    # into the middle of a word
    return find_places(quote, text, MAX_OCCURRENCES)


def _occurrence(texts: PageTexts, quote: str, at: Place,
                context: tuple[str | None, str | None]) -> tuple[Place, dict[str, Any]] | None:
    """Which place of the quote it cites. Without a prefix or suffix: the first place ``locate`` found, as
    ``g6 cite`` cites (``found`` says how many places there were when more than one). With them (a
    TextQuoteSelector's), the quote is found only where they surround it: the first such place, in the texts
    in ``locate``'s order (main, then visible); None when the text around every place says otherwise (the
    selector selects nothing on this page: "was not effective" is not "was effective")."""
    before, after = _squeezed(context[0] or ""), _squeezed(context[1] or "")
    if not (before or after):
        _, _, places = _places(texts.text(at[0]) or "", quote)
        return at, ({"occurrences": len(places), "occurrence": 1, "chosen_by": "first"} if len(places) > 1 else {})
    for source in texts.sources:
        text = texts.text(source) or ""
        h, n, places = _places(text, quote)
        for j, k in enumerate(places):
            if _surrounds(h.text, k, len(n), before, after):
                start, end = h.raw_span(k, k + len(n))
                pid = next((p.passage_id for p in chunk(text) if p.start <= start and end <= p.end), None)
                return (source, start, end, pid), ({"occurrences": len(places), "occurrence": j + 1,
                                                    "chosen_by": "prefix_suffix"} if len(places) > 1 else {})
    return None


def _not_surrounded(base: Verdict, quote: str, texts: PageTexts, at: Place, detail: dict[str, Any]) -> Verdict:
    """``quote_not_found`` for a quote whose every place on the page has other text around it than the report's
    prefix and suffix: the first place is a hint."""
    source, start, end, pid = at
    places = len(_places(texts.text(source) or "", quote)[2])
    hint = {"label": HINT, "text_source": source, "text": short_quote((texts.text(source) or "")[start:end]),
            "start": start, "end": end, "similarity": 1.0, **({"passage_id": pid} if pid else {})}
    where = f"{places:,} place{'s' * (places != 1)}"
    return replace(base, verdict="quote_not_found", hints=(hint,), detail={**detail, "context": "not_around"},
                   reason=f"the quote's words are in the page's {source} text ({where}), but not with the text the "
                          "report says is just before and after them (its prefix and suffix, compared after "
                          "normalising): what the report quotes is not what the page says there")


def _closest(quote: str, texts: PageTexts) -> tuple[Mapping[str, Any], ...]:
    """The span of the reader's text (``reader_text``) most like the quote (its first HINT_NEEDLE characters): a
    hint."""
    needle = quote[:HINT_NEEDLE]
    source, text = reader_text(texts)
    near = align(needle, text, slack=6)
    if near is None:
        return ()
    return ({"label": HINT, "text_source": source, "text": short_quote(near.text), "start": near.start,
             "end": near.end, "similarity": near.similarity, "word_overlap": near.word_overlap,
             **({"of": f"the quote's first {HINT_NEEDLE} characters"} if len(quote) > HINT_NEEDLE else {})},)


def _claim_score(claim: str, passage: str, **_: Any) -> float:
    """How like the claim a passage is: the claim against the passage's best claim-sized window (or the
    whole passage, when it is shorter), Indel similarity 0-100."""
    if len(passage) >= len(claim):
        return fuzz.partial_ratio(claim, passage)
    return fuzz.ratio(claim, passage)


def _no_quote(base: Verdict, claim: str, texts: PageTexts, detail: dict[str, Any]) -> Verdict:
    reason = "the report gives no quote for this citation: nothing in the page is called support"
    hints: list[Mapping[str, Any]] = []
    c = normalise(claim[:HINT_NEEDLE])
    if c:
        source, text = reader_text(texts)
        passages = chunk(text)
        choices = [normalise(p.text) for p in passages]
        for _, score, i in process.extract(c, choices, scorer=_claim_score, limit=HINTS):
            p = passages[i]
            hints.append({"label": HINT, "text_source": source, "passage_id": p.passage_id,
                          "text": short_quote(p.text), "start": p.start, "end": p.end,
                          "similarity": round(score / 100, 4)})
        reason += "; the passages most like the claim are listed as hints"
    return replace(base, verdict="no_quote", reason=reason, hints=tuple(hints), detail=detail)

