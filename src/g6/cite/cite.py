"""Chunk a stored document and add citations to a manifest (``g6 chunk``, ``g6 cite``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from g6.adapters.html.text import (
    CSS_UNDECIDED,
    DETAILS_CLOSED,
    MAX_STYLE_CHARS,
    MAX_STYLE_VISITS,
    NEVER_SEEN,
    STRUCTURED_DATA,
)
from g6.adapters.outcomes import Outcome
from g6.adapters.sources import SOURCES
from g6.adapters.sources.search import SearchRequest
from g6.cite.manifest import Citation
from g6.cite.page_text import RENDERED, SENT_ON, STYLE_UNDECIDED, TEXT_SOURCES, PageTexts, read_texts
from g6.cite.passages import Passage, chunk, find, normalise, passage_id, quote_too_short, text_hash
from g6.errors import FailedReadError, G6Error, InputError, InterstitialReadError, QuoteTooShort
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

QUOTE_LEN = 200
# the reasons g6.adapters.html.css_invisible gives text the page's CSS lays out where no reader sees it, in words
# (display:none and visibility:hidden name themselves in ``how``)
CSS_INVISIBLE = {
    "font_size_zero": "a font size of zero",
    "opacity_zero": "painted fully transparent (opacity)",
    "color_transparent": "drawn in a transparent colour",
    "clip_hidden": "clipped away",
    "clip_path_hidden": "clipped away",
    "visually_hidden": "visually hidden, the screen-reader-only pattern",
    "max_height_zero": "in a box of no height",
    "width_zero": "in a box of no width",
    "transform_scale_zero": "scaled to nothing",
    "text_indent_offscreen": "indented off the page",
    "positioned_offscreen": "positioned off the page",
}
_HOW = "compared after normalising Unicode (NFKC), whitespace, case and quote marks"


def read_failure(outcome: object, http_status: object) -> str | None:
    """Why a read is no evidence of a page's words, in words (``blocked, HTTP 403``); None for a read
    that did not fail: outcome ``ok`` and, when there is one, a 2xx HTTP status. A failed read is kept
    and receipted (that it failed is evidence), but its body is an error page, not the page."""
    status_ok = http_status is None or (type(http_status) is int and 200 <= http_status < 300)
    if outcome == "ok" and status_ok:
        return None
    return read_words(outcome, http_status)


def read_words(outcome: object, http_status: object) -> str:
    status = f"HTTP {http_status}" if http_status is not None else "no HTTP status"
    return f"{str(outcome)[:40]}, {str(status)[:40]}"


def failed_read_mark(receipt: Receipt, allow_failed_read: bool,
                     home: EvidenceHome | None = None) -> dict[str, Any] | None:
    """The ``failed_read`` a citation of ``receipt`` records (None for a read that did not fail); a typed
    InputError naming the outcome and HTTP status unless the caller asked to cite a failed read. An empty read
    (``home`` given: the rendered capture of it looked for) is said to be one, not an error page."""
    why = read_failure(receipt.outcome, receipt.http_status)
    if why is None:
        return None
    if not allow_failed_read:
        if receipt.outcome == "empty":
            # not an error page, and --allow-failed-read (which cites a failed read's own text) finds none here:
            # the first move is the page's render
            raise FailedReadError(f"receipt {receipt.receipt_id} is an empty read ({why}; "
                                  f"{empty_words(receipt.detail.get('reason'))}), not an error page: "
                                  f"{render_hint(home, receipt)} (--allow-failed-read, allow_failed_read over MCP, "
                                  "cites a failed read's own text, marked in the manifest as one: an empty read has "
                                  "none)", receipt.outcome, receipt.http_status)
        raise FailedReadError(f"receipt {receipt.receipt_id} is a failed read ({why}): its body is an error page, "
                              "not evidence of the page's words; cite it anyway with --allow-failed-read "
                              "(allow_failed_read over MCP) and the manifest records it as a failed read",
                              receipt.outcome, receipt.http_status)
    return {"outcome": receipt.outcome, "http_status": receipt.http_status}


# why an empty read (outcome ``empty``) has nothing to cite, by its ``detail.reason``
_EMPTY_WORDS = {
    "no_text_without_scripts": "no text without scripts: the page's words are written by its scripts, which a "
                               "browser runs and a raw read does not",
    "no_text": "no text a reader sees",
    "no_body": "no body",
}


def empty_words(reason: object) -> str:
    """An empty read's reason in words (``no_text_without_scripts``: no text without scripts…)."""
    if isinstance(reason, str) and reason in _EMPTY_WORDS:
        return _EMPTY_WORDS[reason]
    return f"no text ({str(reason)[:60]})" if reason else "no text"


# How far past a raw read its rendered capture is looked for. ``g6 fetch --render auto`` appends the raw read,
# its render's request receipts (at most g6.fetch.render.MAX_REQUESTS_LIMIT) and the capture in one transaction,
# and a batch appends each page's receipts together: the capture is within that many rows (plus one) after its raw
# read; more than twice that here (tests/cite/test_empty_read.py holds it above the limit). A later render of the
# page is no capture *of this read* (it read the page again) and is not looked for.
CAPTURE_ROWS = 1024


def capture_of_raw(home: EvidenceHome, raw: Receipt) -> Receipt | None:
    """The rendered capture that names ``raw`` as its raw read (``links.raw``) and did not fail, or None. The
    ledger has no index by link, so the CAPTURE_ROWS rows after the raw read are scanned (one query by seq, the
    primary key; a row is parsed only when its text holds the raw read's id): bounded, whatever the home's size."""
    try:
        seq = home.ledger.index_of(raw.receipt_id) + 1
        rows = home.ledger.rows.rows_after(seq, CAPTURE_ROWS)
    except G6Error:
        return None  # only a hint is lost: the refusal stands
    for row in rows:
        rid, kind, text = row[1], row[2], row[5]
        if kind != "fetch" or (isinstance(text, str) and raw.receipt_id not in text):
            continue
        try:
            r = home.ledger.get(str(rid))
        except G6Error:
            continue
        if (r.capture is not None and r.links.get("raw") == raw.receipt_id and r.content
                and read_failure(r.outcome, r.http_status) is None and r.interstitial is None):
            return r
    return None


def render_hint(home: EvidenceHome | None, receipt: Receipt) -> str:
    """What to cite instead of an empty read: its rendered capture when the home holds one, else a render."""
    cap = capture_of_raw(home, receipt) if home is not None else None
    if cap is not None:
        return f"cite the rendered capture {cap.receipt_id} instead (the text a browser showed; it names this read " \
               "as its raw read)"
    url = str(receipt.final_url or receipt.request.get("url", "URL"))[:300]
    return f"render the page (g6 fetch {url} --render) and cite the rendered capture"


def refuse_interstitial(receipt: Receipt) -> None:
    """A typed refusal of a read that met a wall (``receipt.interstitial``): the words on a login, challenge
    or consent page are the wall's, so they are no evidence of the page; there is no override (fetch the
    page again once it can be read)."""
    wall = receipt.interstitial
    if wall is not None:
        raise InterstitialReadError(
            f"receipt {receipt.receipt_id} read a {wall.get('kind')} page ({wall.get('evidence')}), not the page: "
            "its words are the wall's, not evidence of the page's; fetch the page again when it can be read",
            wall)


def receipt_texts(home: EvidenceHome, receipt: Receipt) -> PageTexts:
    """The main and reader-visible texts of the body a fetch (or re-check) receipt points at; for a rendered
    capture, the text the browser showed a reader (``rendered``), with the DOM's hidden text beside it."""
    if receipt.kind not in ("fetch", "recheck") or not receipt.content:
        raise InputError(f"receipt {receipt.receipt_id} holds no fetched page (kind {receipt.kind}, "
                         f"outcome {receipt.outcome})")
    home.refuse_redacted(receipt.content)  # taken out on the record: said so, not "no blob"
    body = home.store.read_as(receipt.content)
    url = receipt.final_url or str(receipt.request.get("url", ""))
    texts = read_texts(body, url, receipt.detail.get("content_type"))
    shown = rendered_text(home, receipt)
    if shown is not None:
        if not shown.strip():
            raise InputError(f"receipt {receipt.receipt_id}: no text to cite (the rendered page showed none)")
        return replace(texts, outcome=Outcome.OK, reason="", rendered=shown)
    if texts.reason.startswith(SENT_ON):
        raise InputError(f"receipt {receipt.receipt_id}: no text to cite: {texts.reason}; fetch and cite the page "
                         "it sends the reader to")
    if texts.reason == STYLE_UNDECIDED:
        raise InputError(f"receipt {receipt.receipt_id}: no text to cite: {STYLE_UNDECIDED} (past "
                         f"{MAX_STYLE_CHARS:,} characters of style sheets or {MAX_STYLE_VISITS:,} selector visits); "
                         "render the page (g6 fetch URL --render) and cite the rendered capture")
    if texts.outcome is Outcome.EMPTY:  # cited with --allow-failed-read, or an older read's outcome said ok
        raise InputError(f"receipt {receipt.receipt_id}: no text to cite (empty: {empty_words(texts.reason)}); "
                         f"{render_hint(home, receipt)}")
    if texts.outcome is not Outcome.OK or texts.main is None:
        raise InputError(f"receipt {receipt.receipt_id}: no text to cite ({texts.outcome.value} {texts.reason}, "
                         f"{texts.media_type})")
    return texts


def rendered_text(home: EvidenceHome, receipt: Receipt) -> str | None:
    """The reader's text a rendered capture kept (``capture.text``), or None for a receipt without one."""
    cap = receipt.capture
    ref = cap.get("text") if isinstance(cap, Mapping) else None
    if not isinstance(ref, Mapping):
        return None
    home.refuse_redacted(ref)  # the capture's text taken out on the record: said so, not "no blob"
    return home.store.read_as(ref).decode("utf-8", "replace")


def document_text(home: EvidenceHome, receipt: Receipt, source: str = "main") -> str:
    """One text (``main``, ``visible``, or a capture's ``rendered``) of the page a fetch (or re-check) receipt
    points at."""
    texts = receipt_texts(home, receipt)
    if source not in texts.sources:
        raise InputError(f"receipt {receipt.receipt_id} has no {source} text (it has: {', '.join(texts.sources)})")
    text = texts.text(source)
    assert text is not None
    return text


def chunk_receipt(home: EvidenceHome, receipt_id: str, source: str | None = None) -> tuple[Receipt, list[Passage]]:
    """The passages of one text of a receipt's page: ``source`` (None: the first it has, a rendered capture's
    rendered text or the main text)."""
    r, _, passages = chunk_text(home, receipt_id, source)
    return r, passages


def chunk_text(home: EvidenceHome, receipt_id: str, source: str | None = None) -> tuple[Receipt, str, list[Passage]]:
    """``chunk_receipt``, and which text it cut."""
    if source is not None and source not in (*TEXT_SOURCES, RENDERED):
        raise InputError(f"text must be one of {', '.join((*TEXT_SOURCES, RENDERED))}")
    r = home.ledger.get(receipt_id)
    if source is None:
        source = receipt_texts(home, r).sources[0]
    return r, source, chunk(document_text(home, r, source))


def web_citation_id(receipt_id: str, start: int, end: int, cited: str, source: str = "main") -> str:
    """A web citation's id: a function of the receipt, the text it was cut from and the cited span, so a
    verifier can recompute it. Main-text ids are as before ``text_source`` existed, so re-citing dedupes
    against older manifests."""
    src = "" if source == "main" else source + "\n"
    return "c_" + text_hash(f"{receipt_id}\n{src}{start}\n{end}\n{cited}").split(":")[1][:16]


def paper_citation_id(receipt_id: str, number: int, locator: str) -> str:
    return "c_" + text_hash(f"{receipt_id}\npaper\n{number}\n{locator}").split(":")[1][:16]


def short_quote(text: str) -> str:
    """The short form of a cited text that a manifest shows people."""
    t = " ".join(text.split())
    return t if len(t) <= QUOTE_LEN else t[: QUOTE_LEN - 1] + "…"


def why_not_citable(texts: PageTexts, quote: str, receipt_id: str) -> str:
    """The reason a quote found in neither text cannot be cited: too short to look for, hidden (and how), or
    not there."""
    short = quote_too_short(quote)
    if short is not None:
        return short
    hit = texts.hidden_match(quote)
    if hit is not None:
        if hit.reason == STRUCTURED_DATA:
            return (f"the quote is on receipt {receipt_id}'s page only in its structured data (a JSON-LD "
                    '<script type="application/ld+json">, a copy for machines), not in the text readers see; '
                    "only reader-visible text can be cited")
        if hit.reason in NEVER_SEEN:
            return (f"the quote is {hit.how} of receipt {receipt_id}'s page, which readers never see; "
                    "only reader-visible text can be cited")
        if hit.reason == DETAILS_CLOSED:
            return (f"the quote is on receipt {receipt_id}'s page {hit.how}: not shown as the page loads, so not "
                    "cited as what a reader sees")
        if hit.reason == CSS_UNDECIDED:
            return (f"the quote is on receipt {receipt_id}'s page {hit.how}: whether a reader sees it is undecided, "
                    "so it is not cited from the page's bytes; render the page (g6 fetch URL --render) and cite "
                    "the rendered capture")
        if hit.reason in CSS_INVISIBLE:
            words = CSS_INVISIBLE[hit.reason]
            return f"the quote is on receipt {receipt_id}'s page but hidden from readers ({words}: {hit.how})"
        return f"the quote is on receipt {receipt_id}'s page but hidden from readers ({hit.how})"
    if texts.rendered is not None and any(find(quote, t or "") is not None for t in (texts.main, texts.visible)):
        # in the captured DOM's text, which g6 reads without a layout, but not in what the browser showed: laid out
        # where no reader sees it (white on white, covered, off screen, clipped); never a find, only the reason
        return (f"the quote is in receipt {receipt_id}'s captured page (its DOM) but not shown to readers: it is not "
                "in the text the browser showed a reader (drawn in the background's colour, covered, off screen or "
                f"clipped…); only the text a reader saw can be cited (`g6 chunk {receipt_id}` lists it)")
    return f"the quote is not in the document of receipt {receipt_id}: not on the page, visible or hidden ({_HOW})"


@functools.lru_cache(maxsize=16)
def _passages(text: str) -> tuple[Passage, ...]:
    """The passages of a text, kept for the next citation of the same page (a report cites a page many times)."""
    return tuple(chunk(text))


def locate(texts: PageTexts, *, passage: str | None = None,
           quote: str | None = None) -> tuple[str, int, int, str | None] | None:
    """Where a passage id or a quote is in a page's texts: (text source, start, end, passage id or None),
    the main-content text tried first, then the whole reader-visible text; None when in neither. The one
    search ``g6 cite`` and ``g6 report check`` share (same texts, same normaliser, same rules:
    :func:`g6.cite.passages.find`). A rendered capture has one text, the browser's (``PageTexts.sources``).
    A quote too short to be evidence of anything (:func:`g6.cite.passages.quote_too_short`) is not looked for:
    None (``cite_web`` refuses it, ``why_not_citable`` says why)."""
    if quote is not None and quote_too_short(quote) is not None:
        return None
    for source in texts.sources:
        text = texts.text(source) or ""
        passages = _passages(text)
        if passage is not None:
            hit = next((p for p in passages if p.passage_id == passage), None)
            if hit is not None:
                return source, hit.start, hit.end, hit.passage_id
        else:
            assert quote is not None
            span = find(quote, text)
            if span is not None:
                pid = next((p.passage_id for p in passages if p.start <= span[0] and span[1] <= p.end), None)
                return source, span[0], span[1], pid
    return None


def web_citation(r: Receipt, texts: PageTexts, found: tuple[str, int, int, str | None],
                 failed: Mapping[str, Any] | None = None) -> Citation:
    """The manifest citation of the span ``found`` (as :func:`locate` gives it) of receipt ``r``'s page."""
    source, start, end, pid = found
    cited = (texts.text(source) or "")[start:end]
    assert r.content is not None
    url = r.final_url or str(r.request.get("url"))
    return Citation(
        citation_id=web_citation_id(r.receipt_id, start, end, cited, source),
        kind="web", receipt_id=r.receipt_id, source_url=url, requested_url=str(r.request.get("url", url)),
        content=dict(r.content), passage_id=pid, text_hash=text_hash(cited), text=cited, start=start, end=end,
        quote=short_quote(cited), text_source=source, failed_read=failed)


def cite_web(home: EvidenceHome, receipt_id: str, *, passage: str | None = None,
             quote: str | None = None, allow_failed_read: bool = False) -> Citation:
    """Cite a passage id or a quote. The main-content text is tried first, then the whole reader-visible
    text; the citation's ``text_source`` says which one its offsets are into. A receipt whose read failed
    (a 403 or 404 page…) is refused unless ``allow_failed_read``, and then marked ``failed_read``; one whose
    read met a login, challenge or consent wall (``interstitial``) is refused."""
    if (passage is None) == (quote is None):
        raise InputError("cite exactly one of --passage ID or --quote TEXT")
    r = home.ledger.get(receipt_id)
    failed = failed_read_mark(r, allow_failed_read, home)
    refuse_interstitial(r)
    texts = receipt_texts(home, r)
    if quote is not None and not normalise(quote):
        raise InputError("the quote is empty")
    short = quote_too_short(quote) if quote is not None else None
    if short is not None:
        raise QuoteTooShort(short)
    found = locate(texts, passage=passage, quote=quote)
    if found is None:
        if passage is not None:
            raise InputError(f"no passage {passage!r} in receipt {receipt_id}; `g6 chunk {receipt_id}` lists them")
        assert quote is not None
        raise InputError(why_not_citable(texts, quote, receipt_id))
    return web_citation(r, texts, found, failed)


def cite_paper(home: EvidenceHome, receipt_id: str, number: int, *, allow_failed_read: bool = False) -> Citation:
    """Cite paper ``number`` (1-based) of a search page: its title, locator and the source's total. A
    search page whose read failed is refused unless ``allow_failed_read`` (then marked ``failed_read``)."""
    r = home.ledger.get(receipt_id)
    failed = failed_read_mark(r, allow_failed_read)
    if r.kind != "search" or not r.content:
        raise InputError(f"receipt {receipt_id} is not a search page with a body")
    src = SOURCES.get(r.source)
    request = SearchRequest.from_json(r.request)
    home.refuse_redacted(r.content)
    parsed = src.parse(request, int(r.http_status or 0), r.detail.get("content_type"),
                       home.store.read_as(r.content))
    if not 1 <= number <= len(parsed.papers):
        raise InputError(f"receipt {receipt_id} lists {len(parsed.papers)} papers; --paper takes 1 to "
                         f"{len(parsed.papers)}")
    paper = parsed.papers[number - 1]
    if not paper.locator or not paper.title:
        raise InputError(f"paper {number} has no locator or title to re-check")
    search: dict[str, Any] = {"source": r.source, "request": dict(r.request), "total": parsed.total,
                              "paper": paper.to_json(), "number": number}
    return Citation(
        citation_id=paper_citation_id(receipt_id, number, paper.locator),
        kind="search", receipt_id=receipt_id, source_url=paper.locator, requested_url=paper.locator,
        content=dict(r.content), passage_id=passage_id(paper.title), text_hash=text_hash(paper.title),
        text=paper.title, start=None, end=None, quote=short_quote(paper.title), search=search, text_source="title",
        failed_read=failed)
