"""The sentences of a report's text: what a citation's claim is widened to, and what "a claim without a
citation" counts.

A sentence ends at a line break, or at ``.``, ``!``, ``?`` or ``…`` (with any closing quotes or brackets after
it) followed by white space and a character that can start a sentence: an upper-case letter, a digit, an
opening quote or bracket, or a character of a script without case. It does not end after a few abbreviations
(``e.g.``, ``i.e.``, ``Dr.``, ``et al.``, ``Fig.``, a capital initial as in ``J. Smith``) unless a closing
quote mark follows its full stop (``He said "no." Then`` ends after the quote). A sentence longer than
``MAX_SENTENCE`` characters is cut at the last space before the limit (or hard at it), so a claim is never
longer than that, whatever the report. Everything here is one pass over the text plus binary searches: linear
in the text and ``log`` in the number of sentences per look-up.

A sentence does not end inside a quotation that opens and closes on the same line (``quotation_spans``): ``He
said "It rose. Then it fell" in May.`` is one sentence, so a quoted passage of several sentences stays one claim
with its quote. The quote marks are ``"…"``, ``“…”``, ``„…“`` (or ``„…”``), ``«…»`` and ``»…«`` (German and Danish
print); single quotes (``'``,
``‘``, ``’``) are apostrophes as often (``don't``, ``the '90s``, ``O’Brien``) and are not quote marks. A quotation
never runs past its line (a line break ends it, as it ends a sentence; in Markdown a paragraph is one line), and
one that does not close on its line changes nothing: a stray quote mark cannot join the rest of the report.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

MAX_SENTENCE = 2000
# the closing quotes and brackets a sentence's last mark may carry: also German "“" and "«", a French spaced " »"
_END = re.compile(r"[.!?…]+(?:[\"'”’»“«)\]]|[ \u00a0\u202f]»)*(?=\s)")
_ABBREVIATIONS = frozenset({"e.g", "i.e", "dr", "mr", "mrs", "ms", "prof", "st", "vs", "etc", "fig", "figs", "no",
                            "al", "cf", "approx", "ca", "vol", "pp", "p", "ed", "eds", "jr", "sr", "inc", "ltd", "co",
                            "corp", "dept", "est", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
                            "oct", "nov", "dec", "u.s", "u.k", "e.u"})
_OPENERS = "\"'“‘„«([¿¡"
_WORD = re.compile(r"\w+")
_QUOTE_MARKS = re.compile(r'["“”„«»]')
_CLOSING_QUOTE = re.compile(r'["”“»«]')


def quotation_spans(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """The ``(open, close)`` positions of the quote marks of each quotation opened and closed within
    ``text[a:b]``, outermost only, in order. ``“``, ``„`` and ``«`` open (``“`` closes when a ``„`` is open);
    ``”`` closes ``“`` or ``„``, ``»`` closes ``«``; a ``»`` with no ``«`` open opens, and ``«`` closes it (``»…«``,
    as German and Danish print). A straight ``"`` closes when a character is before it and a
    ``"`` is open, and else opens when a character is after it and no letter or digit before it (``a 12" pipe``
    opens nothing). A closing mark closes the nearest open quotation it can close (marks opened inside it and
    left open are dropped) and is ignored when none is open; quotations still open at ``b`` are dropped."""
    stack: list[tuple[str, int]] = []  # (opening mark, position)
    open_kinds = dict.fromkeys("\"“„«»", 0)  # how many of each kind are on the stack: no search for a closer in vain
    out: list[tuple[int, int]] = []
    for m in _QUOTE_MARKS.finditer(text, a, b):
        i = m.start()
        ch = text[i]
        if ch == '"':
            before = text[i - 1] if i > a else " "
            if before.isspace() or not open_kinds['"']:
                if i + 1 < b and not text[i + 1].isspace() and not before.isalnum():
                    stack.append((ch, i))
                    open_kinds[ch] += 1
                continue
            closes = '"'
        elif ch == "„" or (ch == "“" and not open_kinds["„"]) or (ch == "«" and not open_kinds["»"]) or (
                ch == "»" and not open_kinds["«"]):
            stack.append((ch, i))
            open_kinds[ch] += 1
            continue
        else:
            closes = "“„" if ch == "”" else "„" if ch == "“" else "«" if ch == "»" else "»"
            if not (open_kinds[closes[0]] or open_kinds[closes[-1]]):
                continue
        while True:  # each mark is pushed and popped once: linear in the line
            kind, at = stack.pop()
            open_kinds[kind] -= 1
            if kind in closes:
                break
        if not stack:
            out.append((at, i))
    return out


def _starts_sentence(ch: str) -> bool:
    return ch.isupper() or ch.isdigit() or ch in _OPENERS or (ch.isalpha() and not ch.islower())


def _ends_sentence(text: str, end_of_mark: int, mark_start: int, line_end: int) -> bool:
    """Whether the punctuation at ``[mark_start, end_of_mark)`` ends a sentence."""
    j = end_of_mark
    while j < line_end and text[j].isspace():
        j += 1
    if j >= line_end or not _starts_sentence(text[j]):
        return False
    # a full stop a quotation closes on ends what was quoted: 'said "no." Then' is not the abbreviation "No."
    if text[mark_start] == "." and not (end_of_mark - mark_start > 1 and
                                        _CLOSING_QUOTE.search(text, mark_start, end_of_mark)):
        k = mark_start
        while k > 0 and not text[k - 1].isspace() and text[k - 1] not in _OPENERS:
            k -= 1
        raw = text[k:mark_start]
        if raw.lower() in _ABBREVIATIONS or (len(raw) == 1 and raw.isupper()):  # "e.g.", "J. Smith"
            return False
    return True


def _trimmed(text: str, a: int, b: int) -> tuple[int, int] | None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if a < b else None


def _cut_long(text: str, a: int, b: int) -> Iterable[tuple[int, int]]:
    while b - a > MAX_SENTENCE:
        cut = text.rfind(" ", a + MAX_SENTENCE // 2, a + MAX_SENTENCE)
        cut = cut if cut > a else a + MAX_SENTENCE
        span = _trimmed(text, a, cut)
        if span:
            yield span
        a = cut
    span = _trimmed(text, a, b)
    if span:
        yield span


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Each sentence's ``(start, end)`` in ``text``, trimmed of white space, in order, none empty."""
    out: list[tuple[int, int]] = []
    line_start = 0
    n = len(text)
    while line_start <= n:
        line_end = text.find("\n", line_start)
        line_end = n if line_end < 0 else line_end
        start = line_start
        quoted = quotation_spans(text, line_start, line_end)
        q = 0
        for m in _END.finditer(text, line_start, line_end):
            while q < len(quoted) and quoted[q][1] < m.end():
                q += 1
            if q < len(quoted) and quoted[q][0] < m.start():  # inside a quotation that closes later on the line
                continue
            if _ends_sentence(text, m.end(), m.start(), line_end):
                out.extend(_cut_long(text, start, m.end()))
                start = m.end()
        out.extend(_cut_long(text, start, line_end))
        line_start = line_end + 1
    return out


def is_claim(sentence: str) -> bool:
    """Whether a sentence without a citation counts as a claim without one: three words or more, not a question
    nor a line introducing what follows (ending in ``?`` or ``:``), and not a Markdown heading or table rule."""
    s = sentence.strip()
    if s.startswith(("#", "|-", "|:", "---", "```")) or s.endswith(("?", ":")):
        return False
    return len(_WORD.findall(s)) >= 3


class Sentences:
    """The sentences of one text, for look-ups by offset."""

    def __init__(self, text: str, spans: Sequence[tuple[int, int]] | None = None) -> None:
        self.text = text
        self.spans = list(spans) if spans is not None else sentence_spans(text)
        self._starts = [a for a, _ in self.spans]

    def index_at(self, pos: int) -> int | None:
        """The sentence holding the character at ``pos``, or None (white space between sentences)."""
        i = bisect.bisect_right(self._starts, pos) - 1
        return i if i >= 0 and pos < self.spans[i][1] else None

    def index_before(self, pos: int) -> int | None:
        """The sentence a marker at ``pos`` belongs to: the one holding the last non-space character before
        ``pos`` on its line ("rose 12%.[1]" and "rose 12% [1]." both belong to "rose 12%"); at the start of a
        line, the sentence that starts there."""
        j = pos
        while j > 0 and self.text[j - 1] in " \t":
            j -= 1
        if j > 0 and self.text[j - 1] not in "\n\r":
            i = self.index_at(j - 1)
            if i is not None:
                return i
        return self.index_at(pos) if pos < len(self.text) else None

    def covering(self, a: int, b: int) -> tuple[int, int]:
        """The ``[first, last)`` indices of the sentences that overlap ``[a, b)`` (``a < b``)."""
        lo = bisect.bisect_right(self._starts, a) - 1
        if lo < 0 or self.spans[lo][1] <= a:
            lo += 1
        hi = bisect.bisect_left(self._starts, b)
        return lo, max(lo, hi)

    def uncited(self, cited: Iterable[tuple[int, int]], skip: Sequence[tuple[int, int]] = ()) -> tuple[str, ...]:
        """The sentences that are claims (``is_claim``) and overlap no span of ``cited`` nor of ``skip`` (sorted,
        non-overlapping spans of text that holds no claims: headings, quotations, code)."""
        n = len(self.spans)
        mark = [0] * (n + 1)
        for a, b in cited:
            if b > a:
                lo, hi = self.covering(a, b)
                if lo < hi:
                    mark[lo] += 1
                    mark[hi] -= 1
        skip_starts = [a for a, _ in skip]
        out: list[str] = []
        depth = 0
        for i, (a, b) in enumerate(self.spans):
            depth += mark[i]
            if depth:
                continue
            k = bisect.bisect_right(skip_starts, a) - 1
            if k >= 0 and skip[k][1] > a:
                continue
            sentence = self.text[a:b]
            if is_claim(sentence):
                out.append(sentence)
        return tuple(out)
