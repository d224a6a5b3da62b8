"""What a report is once read, whatever its format: its text, and each citation's claim, source and quote.

Every reader (one per format the field produces) gives a ``Report``; the check never sees the format. Offsets
are Python ``str`` indices (code points) into ``Report.text``, whatever unit the format counted in (Gemini
counts UTF-8 bytes, OpenAI code points): the reader converts, and refuses offsets outside the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# A citation's source, normalised by the reader: an http(s) URL as written, or one of these prefixes with the
# bare identifier after it ("doi:10.1000/xyz", "arxiv:2401.01234v2", "openalex:W2741809807"), or
# "document:N" for a document the report's author supplied (Anthropic char_location), which has no address.
SOURCE_KINDS = ("url", "doi", "arxiv", "openalex", "document")


def source_kind(source: str) -> str:
    """``url`` for an http(s) URL, else the prefix before the first colon (one of SOURCE_KINDS)."""
    head = source.split(":", 1)[0].lower()
    return "url" if head in ("http", "https") else head


@dataclass(frozen=True, slots=True)
class ReportCitation:
    n: int  # 1-based, in the order the citations appear in the report
    source: str  # see SOURCE_KINDS
    claim: str  # the sentence or segment the citation supports ("" when the format gives none)
    claim_start: int | None = None  # claim's offsets in Report.text, when the format locates it
    claim_end: int | None = None
    quote: str | None = None  # the quoted passage, when the format gives one (cited_text, exact, a quote)
    prefix: str | None = None  # text just before the quote in the source (TextQuoteSelector), a hint only
    suffix: str | None = None
    title: str | None = None  # the source's title as the report gives it
    receipt_id: str | None = None  # a receipt the report pins (a g6 manifest's citation)
    read_at: str | None = None  # when the author read it, as the report says (TimeState sourceDate), RFC 3339
    where: str = ""  # where in the input the citation is, for messages: "output[1].content[0].annotations[3]"
    # Optional fields added by the readers (g6.report.read); each defaults to "the format does not say".
    # the link as the report wrote it, when ``source`` is not that text: a doi.org, arxiv.org or openalex.org URL
    # read as a paper id ("https://doi.org/10.1/x" -> source "doi:10.1/x"), or a relative link resolved on a base
    address: str | None = None
    # where the format says the quote sits in the source, for people: "characters 0-20" (Anthropic char_location),
    # "page 3", "blocks 0-1"; a hint, never used to find the quote
    locator: str | None = None
    cached: str | None = None  # an archived copy the report points at (W3C TimeState ``cached``), a hint


@dataclass(frozen=True, slots=True)
class UnusableCitation:
    """A citation the report makes whose source g6 cannot read: ``javascript:``, ``data:``, ``mailto:``, a
    relative link with no base, a marker ``[7]`` with no 7th source. Kept, so the check can count and show it
    (nothing is fetched for it); ``n`` shares the numbering of ``Report.citations``."""

    n: int
    written: str  # the source as the report wrote it (cut to 300 characters)
    reason: str  # why it cannot be read, one line
    claim: str = ""
    claim_start: int | None = None
    claim_end: int | None = None
    where: str = ""


@dataclass(frozen=True, slots=True)
class Report:
    format: str  # the reader's name: "openai-responses", "markdown", …
    text: str  # the report's text as its reader sees it ("" when the format carries only citations)
    citations: tuple[ReportCitation, ...] = ()
    # sentences of the text that carry no citation, in order (for the "claims without citations" figure)
    uncited_claims: tuple[str, ...] = field(default_factory=tuple)
    # citations whose source cannot be read (added by the readers; see UnusableCitation)
    unusable: tuple[UnusableCitation, ...] = ()
