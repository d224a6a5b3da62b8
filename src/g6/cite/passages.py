"""Passages of a stored document: normalisation, stable ids, the chunker, finding cited text.

**Normalised text** (what passage ids and text hashes are computed over), in this order:
Unicode NFKC of the whole string; case folding (``str.casefold``); typographic quotes, dashes and
the ellipsis mapped to ASCII (‘’‚‛ → ', “”„‟ → ", ‐‑‒–—― → -, … → ...); zero-width characters
(U+200B–U+200D, U+2060, U+FEFF) and soft hyphens removed; every run of whitespace collapsed to one
space; ends stripped. ``text_hash`` is ``sha256:`` + sha256 of the UTF-8 of that string; a passage
id is ``p_`` + its first 16 hex digits. So ids survive re-flowed whitespace, case, quote styles and
NFC/NFD spellings, and do not depend on where the passage sits in the page.

NFKC is applied to the whole string (composition crosses character boundaries: ``e`` + U+0301 is
``é``), and every normalised character keeps the raw span it came from, so a match in normalised
text maps back to exact raw offsets.

**Chunker**: the extracted text is split at line breaks (paragraphs, headings, list items); a
paragraph longer than ``MAX_PASSAGE`` characters is split at sentence ends. Offsets are character
offsets into the extracted text.

**Finding a quote** (:func:`find`): the normalised quote must be in the normalised text *and*

* begin and end at word boundaries of the page: a match whose first character is a word character
  (a letter, digit, ``_`` or combining mark) may not follow one on the page, nor its last precede one
  ("effective" is not found in "ineffective", "2%" not in "12%", "rose by 1" not in "rose by 12%"); a
  combining mark always belongs to the character before it. In scripts written without spaces
  between words (Chinese, Japanese, Thai, Lao, Khmer, Myanmar…: ``_UNSEGMENTED``) every character
  boundary counts as a word boundary, since there is no word segmentation here (no dictionary);
  there a quote can begin or end inside a word;
* not begin or end inside what one character of the page normalised to (the "2" of "½");
* not begin or end inside a number of the page: digits joined by a decimal point or comma, a group separator
  (``'``, ``٫``, ``٬``, a middle dot, or a no-break, figure, thin or narrow no-break space between up to three
  digits and a group of three, read on the raw page since normalising makes those spaces plain), a fraction's
  slash or a date's or time's ``/`` and ``:``, a range's or a date's dash are one number ("rose by 1" is not found
  in "rose by 1.9%", nor "rose by 1." in it, nor "version 3.11" in "version 3.11.2", nor "$1,500" or "500,000" in
  "$1,500,000", nor "at 10" in "at 10:30", nor "rose by 10" in "rose by 10-12%": ``_in_number``), and a quote
  does not begin at a number's first digit after its sign ("5 degrees" is not found in "-5 degrees": ``_signed``).
  A period or comma not followed by a digit ends a number ("rose by 12." is found in "rose by 12. Then"), and an
  ordinary space never joins digits;
* keep every number as written: NFKC turns superscripts, subscripts, circled digits and vulgar
  fractions into plain digits (10⁶ → 106), so a match where the page has such a character and the
  quote a plain one, or the other way round, is no match (``_kept``; ids and hashes still use NFKC);

:func:`quote_too_short` says when a quote holds too few letters and digits to be evidence of anything
(``MIN_QUOTE_WEIGHT``); ``g6 cite --quote`` and ``g6 report check`` refuse such a quote before looking.

**Alignment** (:func:`align`): the best-matching span of a text for a quote, independent of how long
the paragraph around it is: rapidfuzz's ``partial_ratio_alignment`` finds the best window of the
normalised text, which is then snapped to whole words and widened or narrowed by a few words to the
span with the highest Indel similarity (``fuzz.ratio``) to the quote. A word diff says what was
removed and what was added.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from rapidfuzz import fuzz

MAX_PASSAGE = 1200
_MAP = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"',
                      "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "…": "...",
                      "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "", "\u00ad": ""})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Normalised:
    """Normalised text; character ``i`` came from raw ``[starts[i], ends[i])``."""

    text: str
    starts: Sequence[int]
    ends: Sequence[int]

    def raw_span(self, i: int, j: int) -> tuple[int, int]:
        """Raw (start, end) of normalised ``[i, j)`` (j > i)."""
        return self.starts[i], self.ends[j - 1]


def normalise(text: str) -> str:
    if text.isascii():
        # the text alone, without the offset map: ``normalised``'s ASCII branch joins the same \S+ tokens
        # (str.split splits on exactly what \S+ does not match) lowered, with one space between them
        return " ".join(text.split()).lower()
    # not through ``normalised``'s cache: the passages' ids normalise every passage of a page, which would push the
    # page's own text (normalised once for all the quotes looked for in it) out of the cache
    return (_normalised_by_words(text) or _whole_normalised(text)).text


def _joins_before(ch: str) -> bool:
    """A character that composes with (or belongs to) the one before it: a mark, or a Hangul vowel or
    final consonant jamo (decomposed Hangul, as macOS writes it)."""
    return unicodedata.category(ch)[0] == "M" or "\u1160" <= ch <= "\u11ff" or "\ud7b0" <= ch <= "\ud7ff"


def _segments(text: str, fine: bool) -> list[tuple[int, int]]:
    """Raw spans NFKC can be applied to one at a time. ``fine``: a new span at every character that
    does not join the one before it (exact unless a starter composes with the one before it in some
    other way); otherwise a new span only before whitespace, which never composes with anything."""
    cuts = [0]
    for i in range(1, len(text)):
        ch = text[i]
        if (not _joins_before(ch)) if fine else ch.isspace():
            cuts.append(i)
    cuts.append(len(text))
    return [(cuts[k], cuts[k + 1]) for k in range(len(cuts) - 1) if cuts[k] < cuts[k + 1]]


def _pieces_nfkc(text: str) -> list[tuple[int, int, str]]:
    """(raw start, raw end, NFKC) pieces whose NFKC texts join to exactly ``NFKC(text)``."""
    whole = unicodedata.normalize("NFKC", text)
    for fine in (True, False):
        pieces = [(a, b, unicodedata.normalize("NFKC", text[a:b])) for a, b in _segments(text, fine)]
        if "".join(p for _, _, p in pieces) == whole:
            return pieces
    return [(0, len(text), whole)]  # cannot happen for whitespace cuts; the whole string is still right


@functools.lru_cache(maxsize=16)
def normalised(text: str) -> Normalised:
    """The normalised text with its map back to raw offsets.

    Cached: a re-check looks for several citations in the same page text.
    """
    return _normalised_by_words(text) or _whole_normalised(text)


class _RunOffsets(Sequence[int]):
    """The raw offsets (``Normalised.starts`` or ``ends``) of a text's normalised characters, kept as runs: run ``k``
    begins at normalised ``at[k]``; a *linear* run is an ASCII word (character ``i`` came from raw ``a[k] + i -
    at[k]``, one character), any other run's characters all came from raw ``[a[k], b[k])`` (one NFKC piece, or the
    whitespace a space stands for)."""

    __slots__ = ("_at", "_a", "_b", "_linear", "_size", "_end")

    def __init__(self, at: list[int], a: list[int], b: list[int], linear: list[bool], size: int, end: bool) -> None:
        self._at, self._a, self._b, self._linear, self._size, self._end = at, a, b, linear, size, end

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i: int) -> int:  # type: ignore[override]
        if not isinstance(i, int):
            raise TypeError("an offset map is read one index at a time")
        if i < 0:
            i += self._size
        if not 0 <= i < self._size:
            raise IndexError(i)
        k = bisect.bisect_right(self._at, i) - 1
        if self._linear[k]:
            return self._a[k] + i - self._at[k] + (1 if self._end else 0)
        return self._b[k] if self._end else self._a[k]


_PAST_ASCII = re.compile(r"[^\x00-\x7f]")


def _normalised_by_words(text: str) -> Normalised | None:
    """``normalised`` a stretch at a time: the ASCII stretches (most of most pages) at once, their words lowered,
    one space between them; only the stretches holding a character past ASCII (the word it is in, or a no-break
    space and the word after it) NFKC piece by piece, character by character. The result is the whole-text way's
    (``_whole_normalised``) wherever its pieces are the ones that way takes, which is checked: a stretch that
    begins with a character joining the one before it, or pieces that do not make the whole text's NFKC, give
    None (the caller takes the whole-text way)."""
    at: list[int] = []
    ra: list[int] = []
    rb: list[int] = []
    linear: list[bool] = []
    out: list[str] = []
    made: list[str] = []  # the NFKC of each stretch, in order: they must make the whole text's
    size = 0
    pending: tuple[int, int] | None = None  # the whitespace a space will stand for, once a word follows

    def constant(ch: str, a: int, b: int) -> None:
        """One character that came from raw ``[a, b)``: a piece's, or a space standing for whitespace."""
        nonlocal size
        at.append(size)
        ra.append(a)
        rb.append(b)
        linear.append(False)
        out.append(ch)
        size += 1

    def ascii_stretch(lo: int, hi: int) -> None:
        nonlocal size, pending
        spans = [m.span() for m in _TOKEN.finditer(text, lo, hi)]
        made.append(text[lo:hi])
        if not spans:
            if hi > lo and size and pending is None:
                pending = (lo, lo + 1)
            return
        if spans[0][0] > lo and size and pending is None:
            pending = (lo, lo + 1)
        if pending is not None:
            constant(" ", *pending)
            pending = None
        # each word but the last with the space after it, which stands for the first whitespace character after
        # the word: raw ``end`` of a word is that character, so one linear run covers the word and its space
        lens = [b - a for a, b in spans]
        at.extend(itertools.accumulate([n + 1 for n in lens[:-1]], initial=size))
        ra.extend(a for a, _ in spans)
        rb.extend(b for _, b in spans)
        linear.extend([True] * len(spans))
        words = " ".join(text[a:b] for a, b in spans).lower()
        out.append(words)
        size += len(words)
        if spans[-1][1] < hi:
            pending = (spans[-1][1], spans[-1][1] + 1)

    pos, n = 0, len(text)
    while (m := _PAST_ASCII.search(text, pos)) is not None:
        a = b = m.start()
        while a > pos and not text[a - 1].isspace():  # back to the start of its word (a space starts a stretch)
            a -= 1
        b += 1
        while b < n and not text[b].isspace():  # on to the end of the word
            b += 1
        if a > pos:
            ascii_stretch(pos, a)
        pos = b
        if a > 0 and _joins_before(text[a]):
            return None
        pieces = [(a + x, a + y, unicodedata.normalize("NFKC", text[a + x:a + y]))
                  for x, y in _segments(text[a:b], True)]
        made.extend(p for _, _, p in pieces)
        for pa, pb, piece in pieces:
            for c in piece.casefold().translate(_MAP):
                if c.isspace():
                    if size and pending is None:
                        pending = (pa, pb)
                    continue
                if pending is not None:
                    constant(" ", *pending)
                    pending = None
                constant(c, pa, pb)
    if pos < n:
        ascii_stretch(pos, n)
    if not text.isascii() and "".join(made) != unicodedata.normalize("NFKC", text):
        return None
    return Normalised("".join(out), _RunOffsets(at, ra, rb, linear, size, False),
                      _RunOffsets(at, ra, rb, linear, size, True))


def _whole_normalised(text: str) -> Normalised:
    """``normalised`` by NFKC pieces of the whole text (``_pieces_nfkc``), character by character."""
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pending: tuple[int, int] | None = None
    for a, b, piece in _pieces_nfkc(text):
        for c in piece.casefold().translate(_MAP):
            if c.isspace():
                if out and pending is None:
                    pending = (a, b)
                continue
            if pending is not None:
                out.append(" ")
                starts.append(pending[0])
                ends.append(pending[1])
                pending = None
            out.append(c)
            starts.append(a)
            ends.append(b)
    return Normalised("".join(out), starts, ends)


def text_hash(text: str) -> str:
    return "sha256:" + hashlib.sha256(normalise(text).encode()).hexdigest()


def passage_id(text: str) -> str:
    return "p_" + text_hash(text).split(":", 1)[1][:16]


@dataclass(frozen=True, slots=True)
class Passage:
    passage_id: str
    start: int
    end: int
    text: str
    text_hash: str

    def to_json(self) -> dict[str, object]:
        return {"passage_id": self.passage_id, "start": self.start, "end": self.end, "text": self.text,
                "text_hash": self.text_hash}


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    if end - start <= MAX_PASSAGE:
        return [(start, end)]
    out, cur = [], start
    for m in _SENTENCE_END.finditer(text, start, end):
        if m.start() - cur >= MAX_PASSAGE // 2:
            out.append((cur, m.start()))
            cur = m.end()
    out.append((cur, end))
    final = []
    for a, b in out:  # a sentence longer than the limit is cut hard
        while b - a > MAX_PASSAGE:
            final.append((a, a + MAX_PASSAGE))
            a += MAX_PASSAGE
        final.append((a, b))
    return final


def chunk(text: str) -> list[Passage]:
    passages: list[Passage] = []
    for m in re.finditer(r"[^\n]+", text):
        a, b = m.start(), m.end()
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        for s, e in _pieces(text, a, b):
            piece = text[s:e]
            if normalise(piece):
                passages.append(Passage(passage_id(piece), s, e, piece, text_hash(piece)))
    return passages


# Scripts written without spaces between words: every character boundary in them is a word boundary.
# Thai, Lao, Myanmar, Khmer, Tai Le, New Tai Lue, Tai Tham; CJK radicals, 々〆〇, Hiragana, Katakana,
# Bopomofo, CJK ideographs (and their extensions and compatibility forms), Yi, halfwidth Katakana.
_UNSEGMENTED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u1950-\u19df\u1a20-\u1aaf"
                          "\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"
                          "\u3040-\u30ff\u3100-\u312f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf"
                          "\u4e00-\u9fff\ua000-\ua4cf\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]")
# Characters that each say about as much as a short word: ideographs, kana, Bopomofo, Yi, Hangul syllables.
_DENSE = re.compile("[\u2e80-\u2fdf\u3005-\u3007\u3040-\u30ff\u3100-\u312f\u31a0-\u31bf\u31f0-\u31ff"
                    "\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff"
                    "\U00020000-\U0003134f]")
# A quote needs this many letters or digits (after normalising; a _DENSE character counts 2) to be looked
# for: English words average under five letters, so 8 is about two content words or one long one. Below it
# are single letters, stop words and their pairs ("the", "of the", "in the": 3-5), bare figures ("2020",
# "12%"), which are on most pages; each is no evidence that a page says anything in particular.
MIN_QUOTE_WEIGHT = 8
_KEEP_TAGS = ("<super>", "<sub>", "<circle>", "<fraction>")


def quote_too_short(quote: str) -> str | None:
    """Why ``quote`` is too short to be evidence of anything, or None when it is long enough (or empty:
    an empty quote is the caller's own case)."""
    n = normalise(quote)
    weight = 0
    for c in n:
        if c.isalnum():
            weight += 2 if _DENSE.match(c) else 1
            if weight >= MIN_QUOTE_WEIGHT:
                return None
    if not n:
        return None
    shown = n if len(n) <= 40 else n[:39] + "…"
    return (f"the quote {shown!r} is too short to be evidence of anything: a quote needs at least {MIN_QUOTE_WEIGHT} "
            f"letters or digits (an ideograph, kana or Hangul syllable counts 2) and it has {weight}; quote more of "
            "the sentence")


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_" or unicodedata.category(c)[0] == "M"


def _joined(a: str, b: str) -> bool:
    """Whether ``a`` then ``b`` are inside one word (no word boundary between them)."""
    if unicodedata.category(b)[0] == "M":
        return True  # a combining mark belongs to the character before it
    return _word_char(a) and _word_char(b) and not (_UNSEGMENTED.match(a) or _UNSEGMENTED.match(b))


@functools.lru_cache(maxsize=4096)
def _kept(c: str) -> bool:
    """A character whose NFKC form is plain digits or letters that mean something else: superscripts
    (10⁶), subscripts, circled digits, vulgar fractions (½ is 1⁄2)."""
    return unicodedata.decomposition(c).startswith(_KEEP_TAGS)


def _has_kept(raw: str) -> bool:
    return not raw.isascii() and any(_kept(c) for c in raw if not c.isascii())


def _cut(h: Normalised, k: int) -> bool:
    """Normalised ``k`` (0 < k < len) is a place a quote may begin or end: a word boundary, and not inside
    what one raw character normalised to (the "2" of "½" → "1⁄2", the second "s" of "ß" → "ss")."""
    if _joined(h.text[k - 1], h.text[k]):
        return False
    return not (h.starts[k - 1] == h.starts[k] and h.ends[k - 1] == h.ends[k] == h.starts[k] + 1)


# Between two digits these continue one number: decimal points and commas, group separators (the Swiss
# apostrophe, Arabic ٫ and ٬, the middle dot some journals write a decimal point with), a fraction's slash (1/2,
# as ½ is), a date's or a time's (12/03/2024, 10:30). Normalised characters: NFKC has made fullwidth ．，
# and the one dot leader "." already, and ’ is "'".
_NUMBER_INNER = frozenset(".,'\u00b7/:\u2044\u066b\u066c-\u2212")  # "-": a range or a date (10-12%, 2024-03-01)
_SIGNS = frozenset("-\u2212+\u00b1")  # a number's sign: "5 degrees" is not "-5 degrees" (every dash reads "-")
# Spaces that group digits (1 500 000): no-break, figure, thin and narrow no-break. Normalised they are a plain
# space like any other, so the raw page is read; an ordinary space never groups (in 2019 500 people moved).
_GROUP_SPACES = frozenset("\u00a0\u2007\u2009\u202f")


def _digits_around(t: str, p: int, step: int) -> int:
    """How many digits (up to 4) run from normalised ``p`` on in direction ``step``."""
    n = 0
    while n < 4 and 0 <= p < len(t) and t[p].isdecimal():
        n, p = n + 1, p + step
    return n


def _number_joint(h: Normalised, raw: str, p: int) -> bool:
    """Normalised ``p`` (0 < p < len - 1) joins the digits either side of it into one number: a
    ``_NUMBER_INNER`` character, or one grouping space (``_GROUP_SPACES``) between up to three digits and a
    group of exactly three."""
    t = h.text
    if not (t[p - 1].isdecimal() and t[p + 1].isdecimal()):
        return False
    if t[p] in _NUMBER_INNER:
        return True
    return (t[p] == " " and raw[h.ends[p - 1]:h.starts[p + 1]] in _GROUP_SPACES
            and _digits_around(t, p - 1, -1) <= 3 and _digits_around(t, p + 1, 1) == 3)


def _in_number(h: Normalised, raw: str, k: int) -> bool:
    """Normalised ``k`` (0 < k < len) is inside a number as written: just before or just after a character
    joining two digits ("rose by 1|.9", "rose by 1.|9", "$1,|500,000")."""
    return any(_number_joint(h, raw, p) for p in (k - 1, k) if 0 < p < len(h.text) - 1)


def _signed(t: str, i: int) -> bool:
    """Normalised ``i`` is a number's first digit after its sign ("-5", "+5", "±5"; a dash inside a word, as in
    "COVID-19", is no sign)."""
    return (t[i].isdecimal() and i >= 1 and t[i - 1] in _SIGNS
            and (i == 1 or not (t[i - 2].isalnum() or t[i - 2] in _SIGNS)))


def _whole(h: Normalised, raw: str, i: int, j: int) -> bool:
    """Normalised ``[i, j)`` begins and ends where a quote may (:func:`_cut`), neither inside a number of
    the raw page ``raw`` (:func:`_in_number`) nor just after its sign (:func:`_signed`)."""
    return ((i == 0 or (_cut(h, i) and not _in_number(h, raw, i) and not _signed(h.text, i)))
            and (j == len(h.text) or (_cut(h, j) and not _in_number(h, raw, j))))


def _same_numbers(needle: str, haystack: str, h: Normalised, i: int, j: int) -> bool:
    """Every character of the match came from a superscript, subscript, circled digit or fraction on
    the page exactly where it did in the quote (NFKC makes 10⁶ and 106 alike)."""
    rs, re_ = h.raw_span(i, j)
    if not _has_kept(haystack[rs:re_]) and not _has_kept(needle):
        return True
    q = normalised(needle)
    return all(_has_kept(haystack[h.starts[i + k]:h.ends[i + k]]) == _has_kept(needle[q.starts[k]:q.ends[k]])
               for k in range(j - i))


def find(needle: str, haystack: str) -> tuple[int, int] | None:
    """Raw (start, end) in ``haystack`` of the first place whose normalised text is ``needle``'s, beginning
    and ending at word boundaries and with every number as written (the module's "Finding a quote")."""
    return next(find_all(needle, haystack), None)


def find_all(needle: str, haystack: str) -> Iterator[tuple[int, int]]:
    """Every place :func:`find` would take, in order (raw spans); for a caller that picks among a quote's
    places (a TextQuoteSelector's prefix and suffix) without ever taking one :func:`find` would refuse."""
    h, n, places = find_places(needle, haystack)
    for i in places:
        yield h.raw_span(i, i + len(n))


def find_places(needle: str, haystack: str, limit: int | None = None) -> tuple[Normalised, str, list[int]]:
    """The normalised haystack, the normalised needle and, in order, the offsets into the former of every place
    :func:`find` would take (word boundaries, numbers as written), at most ``limit`` of them."""
    n = normalise(needle)
    h = normalised(haystack)
    places: list[int] = []
    if not n:
        return h, n, places
    i = h.text.find(n)
    while i >= 0 and (limit is None or len(places) < limit):
        j = i + len(n)
        if _whole(h, haystack, i, j) and _same_numbers(needle, haystack, h, i, j):
            places.append(i)
        i = h.text.find(n, i + 1)
    return h, n, places


@dataclass(frozen=True, slots=True)
class Alignment:
    """The span of a text most like a quote. Offsets are raw offsets into that text."""

    text: str
    start: int
    end: int
    similarity: float  # Indel similarity (rapidfuzz ``fuzz.ratio`` / 100) of the normalised quote and span
    word_overlap: float  # share of the quote's words found, in order, in the span
    removed: tuple[str, ...]  # the quote's words not in the span (normalised)
    added: tuple[str, ...]  # the span's words not in the quote (normalised)

    def diff_json(self) -> dict[str, list[str]]:
        return {"removed": list(self.removed), "added": list(self.added)}


def _word_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def align(needle: str, haystack: str, *, slack: int | None = None) -> Alignment | None:
    """The best-matching span of ``haystack`` for ``needle``, or None when either has no text.

    The similarity of a span depends on the quote and the span only, never on the length of the
    paragraph or page around it: a one-word edit in a 2-sentence quote scores the same inside a
    7-sentence paragraph as on its own.
    """
    n = normalise(needle)
    h = normalised(haystack)
    if not n or not h.text:
        return None
    words = _word_spans(h.text)
    if len(n) >= len(h.text):
        lo, hi = 0, len(words) - 1
    else:
        a = fuzz.partial_ratio_alignment(n, h.text)
        lo = next((k for k, (_, e) in enumerate(words) if e > a.dest_start), len(words) - 1)
        hi = next((k for k in range(len(words) - 1, -1, -1) if words[k][0] < a.dest_end), lo)
    # widen or narrow by a few words: an insertion or deletion makes the right span longer or
    # shorter than the quote, which the fixed-width window cannot see
    k = slack if slack is not None else max(3, len(n.split()) // 4)
    best = (-1.0, lo, hi)
    for i in range(max(0, lo - k), min(len(words) - 1, lo + k) + 1):
        for j in range(max(i, hi - k), min(len(words) - 1, hi + k) + 1):
            r = fuzz.ratio(n, h.text[words[i][0]:words[j][1]])
            if r > best[0]:
                best = (r, i, j)
    score, i, j = best
    a0, b0 = words[i][0], words[j][1]
    qw, sw = n.split(), h.text[a0:b0].split()
    sm = SequenceMatcher(None, qw, sw, autojunk=False)
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(qw[i1:i2])
        if tag in ("replace", "insert"):
            added.extend(sw[j1:j2])
    kept = sum(blk.size for blk in sm.get_matching_blocks())
    rs, re_ = h.raw_span(a0, b0)
    return Alignment(haystack[rs:re_], rs, re_, round(score / 100, 4), round(kept / len(qw), 4),
                     tuple(removed), tuple(added))
