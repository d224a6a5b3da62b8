"""The texts of a stored body that citations point into: the main content and the whole reader-visible text.

``main`` is the main-content extraction (trafilatura) a fetch shows; ``visible`` is every piece of
text a reader sees on the page (navigation, sidebars, captions, table cells). Plain-text bodies
have one text, used for both. ``hidden`` keeps the text a reader does not see and how it was
hidden, so a quote that cannot be cited (or a passage a re-check no longer sees) can say why. The
reader is a browser with scripts on: ``noscript`` and other fallback content are hidden text here
(``g6.adapters.html.text``: ``cited=True``), though a fetch's documents keep them; so is text the page's CSS
may hide where g6 cannot tell.

A page whose own CSS g6 could not apply in full (past the bounds of ``g6.adapters.html.css``:
``style_chars_not_read``, ``style_rules_not_applied``) could hide any of its text from a reader, so none of
it is taken as reader-visible: its texts are ``parse_failed`` with the reason ``STYLE_UNDECIDED`` (render the
page, ``g6 fetch --render``, to cite it).

A page that sends its reader on to another address at once (``<meta http-equiv="refresh" content="0;
url=/">``, within ``g6.adapters.html.refresh.MAX_DELAY`` seconds) is a stop on the way, like a 3xx's body: its texts
are ``empty`` with the reason ``SENT_ON`` and where it sends the reader; cite the page it sends them to.
"""

from __future__ import annotations

from dataclasses import dataclass

from g6.adapters.html.page import _TEXTUAL, media_type
from g6.adapters.html.refresh import sends_on
from g6.adapters.html.text import STRUCTURED_DATA, HiddenText, HTMLParseError, TreeReader, decode_text, extract_html
from g6.adapters.outcomes import Outcome
from g6.cite.passages import find, quote_too_short

TEXT_SOURCES = ("main", "visible")
# the reason of a page whose CSS is past what g6 applies (words: report check shows it as it is)
STYLE_UNDECIDED = "its CSS is past what g6 applies, so what a reader sees is undecided"
_BOUNDS = ("style_chars_not_read", "style_rules_not_applied")
# the reason (then ": a refresh to URL after N s") of a page that sends its reader on at once (g6.adapters.html.refresh)
SENT_ON = "the page sends a reader on at once, so its words are not what a reader reads"
# A rendered capture's text: what the browser showed a reader (g6.fetch.render), the only text cited of one.
RENDERED = "rendered"


@dataclass(frozen=True, slots=True)
class PageTexts:
    outcome: Outcome  # OK, EMPTY (no text, or text only scripts would draw) or PARSE_FAILED
    reason: str  # why not OK: no_text, no_text_without_scripts, html_unreadable, not_text
    main: str | None = None
    visible: str | None = None
    hidden: tuple[HiddenText, ...] = ()
    media_type: str = ""
    rendered: str | None = None  # a rendered capture's reader text; then the only source cited

    @property
    def sources(self) -> tuple[str, ...]:
        """The texts a quote is looked for in, in order."""
        return (RENDERED,) if self.rendered is not None else TEXT_SOURCES

    def text(self, source: str) -> str | None:
        if source == RENDERED:
            return self.rendered
        return self.visible if source == "visible" else self.main

    def hidden_match(self, quote: str) -> HiddenText | None:
        """The hidden piece holding ``quote``, if any (script, template, display:none…). A piece a
        reader could be shown (display:none…) comes before a copy in structured data (JSON-LD)."""
        if quote_too_short(quote) is not None:
            return None  # not looked for, in hidden text either
        hits = [h for h in self.hidden if find(quote, h.text) is not None]
        return next((h for h in hits if h.reason != STRUCTURED_DATA), hits[0] if hits else None)


def read_texts(body: bytes, url: str, content_type: str | None, reader: TreeReader | None = None) -> PageTexts:
    """The body's texts; ``reader`` (the wall check) is shown an HTML body's tree, so it need not parse it again."""
    mtype = media_type(content_type, body)
    if not body:
        return PageTexts(Outcome.EMPTY, "no_body", media_type=mtype)
    if mtype in ("text/html", "application/xhtml+xml"):
        try:
            page = extract_html(body, url, content_type, reader=reader, cited=True)
        except HTMLParseError:
            return PageTexts(Outcome.PARSE_FAILED, "html_unreadable", media_type=mtype)
        if sends_on(page.refresh, url):
            assert page.refresh is not None
            return PageTexts(Outcome.EMPTY, f"{SENT_ON}: {page.refresh.words()}", hidden=page.hidden, media_type=mtype)
        if any(page.unread.get(k) for k in _BOUNDS):
            return PageTexts(Outcome.PARSE_FAILED, STYLE_UNDECIDED, hidden=page.hidden, media_type=mtype)
        if not page.visible.strip() and not page.text.strip():
            return PageTexts(Outcome.EMPTY, "no_text_without_scripts" if page.had_scripts else "no_text",
                             hidden=page.hidden, media_type=mtype)
        return PageTexts(Outcome.OK, "", page.text, page.visible or page.text, page.hidden, mtype)
    if mtype.startswith("text/") or mtype in _TEXTUAL or mtype.endswith(("+json", "+xml")):
        text = decode_text(body, content_type)
        if not text.strip():
            return PageTexts(Outcome.EMPTY, "no_text", media_type=mtype)
        return PageTexts(Outcome.OK, "", text, text, (), mtype)
    return PageTexts(Outcome.PARSE_FAILED, "not_text", media_type=mtype)


def cited_text(body: bytes, url: str, content_type: str | None, text_source: str) -> str | None:
    """The text a citation's offsets point into (``text_source``: main, visible; anything else reads as main),
    or None when the body has no text. For verifiers that hold only the stored bytes (bundles)."""
    texts = read_texts(body, url, content_type)
    if texts.outcome is not Outcome.OK:
        return None
    return texts.text(text_source if text_source in TEXT_SOURCES else "main")
