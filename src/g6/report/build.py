"""What every reader shares: a report's text with its citation markers cut out, and the builder that numbers
citations, normalises their sources, bounds their quotes and claims, and counts the claims left uncited.

The readers' one rule on offsets: ``claim_start``/``claim_end`` point into ``Report.text`` and
``Report.text[claim_start:claim_end] == claim``. Claims are slices of the text shared between the citations
that make the same claim (500 citations of one sentence hold one string), so a report's memory is linear in
its size whatever its citations repeat.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from g6.errors import ReportTooLarge
from g6.report.model import Report, ReportCitation, UnusableCitation
from g6.report.sentences import Sentences
from g6.report.sources import Source, Unusable, normalise_source

MAX_QUOTE = 32_768  # characters of one quote
MAX_CITATIONS = 100_000  # citations (usable or not) of one report


class Cut:
    """A text with some spans removed (citation markers), and the map from the old offsets to the new.

    ``spans`` are ``(start, end)`` of the old text, in any order; overlapping spans are merged. An old offset
    inside a removed span maps to where the span was."""

    def __init__(self, old: str, spans: Iterable[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(s for s in spans if s[1] > s[0]):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self._starts = [a for a, _ in merged]
        self._ends = [b for _, b in merged]
        self._removed_before: list[int] = []  # characters removed before span i
        total, pieces, at = 0, [], 0
        for a, b in merged:
            self._removed_before.append(total)
            pieces.append(old[at:a])
            total += b - a
            at = b
        pieces.append(old[at:])
        self.text = "".join(pieces)

    def pos(self, old: int) -> int:
        i = bisect.bisect_right(self._starts, old) - 1
        if i < 0:
            return old
        if old < self._ends[i]:  # inside a removed span: where it was
            return self._starts[i] - self._removed_before[i]
        return old - self._removed_before[i] - (self._ends[i] - self._starts[i])


class ReportBuilder:
    """Collects one report's citations in order. ``cite`` normalises the source (an unusable one is kept as an
    ``UnusableCitation``) and bounds the quote; ``build`` adds the uncited claims."""

    def __init__(self, fmt: str, text: str, name: str, *, base: str | None = None,
                 sentences: Sentences | None = None) -> None:
        self.format = fmt
        self.text = text
        self.name = name
        self.base = base
        self.sentences = sentences if sentences is not None else Sentences(text)
        self.citations: list[ReportCitation] = []
        self.unusable: list[UnusableCitation] = []
        self.cited_spans: list[tuple[int, int]] = []
        self._claims: dict[tuple[int, int], tuple[str, int, int]] = {}
        self._n = 0

    # -- claims ------------------------------------------------------------------------------------------------
    def span_claim(self, a: int, b: int) -> tuple[str, int | None, int | None]:
        """The claim of text ``[a, b)``, trimmed of white space; one string per span however often it is cited."""
        key = (a, b)
        got = self._claims.get(key)
        if got is None:
            while a < b and self.text[a].isspace():
                a += 1
            while b > a and self.text[b - 1].isspace():
                b -= 1
            got = self._claims[key] = (self.text[a:b], a, b)
        if not got[0]:
            return "", None, None
        return got

    def sentence_claim(self, a: int, b: int | None = None) -> tuple[str, int | None, int | None]:
        """The claim a citation at ``[a, b)`` makes: the sentences it overlaps; for a marker (``b`` None or
        ``b == a``) the sentence it follows (``Sentences.index_before``)."""
        s = self.sentences
        if a > len(self.text):  # past the text's end (a reader cut trailing line breaks): no sentence on its line
            return "", None, None
        if b is None or b <= a:
            i = s.index_before(a)
            if i is None:
                return "", None, None
            return self.span_claim(*s.spans[i])
        lo, hi = s.covering(a, b)
        if lo >= hi:
            return self.span_claim(a, b)
        return self.span_claim(s.spans[lo][0], s.spans[hi - 1][1])

    # -- citations ---------------------------------------------------------------------------------------------
    def cite(self, written: str, where: str, *, claim: tuple[str, int | None, int | None] = ("", None, None),
             quote: str | None = None, source: str | None = None, **fields: str | None) -> None:
        """One citation of ``written`` (or of the already normalised ``source``, e.g. ``document:0``)."""
        self._n += 1
        if self._n > MAX_CITATIONS:
            raise ReportTooLarge(f"{self.name}: more than {MAX_CITATIONS:,} citations (at {where}); split the report",
                                 where)
        text, start, end = claim
        if start is not None and end is not None:
            self.cited_spans.append((start, end))
        got: Source | Unusable = Source(source) if source is not None else normalise_source(written, self.base)
        if isinstance(got, Unusable):
            self.unusable.append(UnusableCitation(self._n, written[:300], got.reason, text, start, end, where))
            return
        if quote is not None:
            quote = self.bounded_quote(quote, where)
        self.citations.append(ReportCitation(self._n, got.source, text, start, end, quote, where=where,
                                             address=got.address, **fields))  # type: ignore[arg-type]

    def unusable_citation(self, written: str, reason: str, where: str,
                          claim: tuple[str, int | None, int | None] = ("", None, None)) -> None:
        """A citation the format makes but that names no source (a marker with no source behind it)."""
        self._n += 1
        if claim[1] is not None and claim[2] is not None:
            self.cited_spans.append((claim[1], claim[2]))
        self.unusable.append(UnusableCitation(self._n, written[:300], reason, claim[0], claim[1], claim[2], where))

    def bounded_quote(self, quote: str, where: str) -> str | None:
        q = quote.strip()
        if len(q) > MAX_QUOTE:
            raise ReportTooLarge(f"{self.name}: the quote at {where} is {len(q):,} characters, over the "
                                 f"{MAX_QUOTE:,}-character limit; quote the passage that supports the claim", where)
        return q or None

    def build(self, *, skip: Sequence[tuple[int, int]] = (), count_uncited: bool = True) -> Report:
        uncited = self.sentences.uncited(self.cited_spans, skip) if count_uncited else ()
        return Report(self.format, self.text, tuple(self.citations), uncited, tuple(self.unusable))
