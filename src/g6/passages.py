"""Passages of a stored document: normalisation, stable ids, the chunker, finding cited text.

**Normalised text** (what passage ids and text hashes are computed over), in this order:
Unicode NFKC; case folding (``str.casefold``); typographic quotes, dashes and the ellipsis mapped
to ASCII (‘’‚‛ → ', “”„‟ → ", ‐‑‒–—― → -, … → ...); zero-width characters (U+200B–U+200D,
U+2060, U+FEFF) and soft hyphens removed; every run of whitespace collapsed to one space; ends
stripped. ``text_hash`` is ``sha256:`` + sha256 of the UTF-8 of that string; a passage id is
``p_`` + its first 16 hex digits. So ids survive re-flowed whitespace, case and quote styles, and
do not depend on where the passage sits in the page.

**Chunker**: the extracted text is split at line breaks (paragraphs, headings, list items); a
paragraph longer than ``MAX_PASSAGE`` characters is split at sentence ends. Offsets are character
offsets into the extracted text.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher

MAX_PASSAGE = 1200
_MAP = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"',
                      "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "…": "...",
                      "\u200b": "", "\u200c": "", "\u200d": "", "\u2060": "", "\ufeff": "", "\u00ad": ""})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def normalise(text: str) -> str:
    return normalise_with_map(text)[0]


_TOKEN = re.compile(r"\S+")


@functools.lru_cache(maxsize=16)
def normalise_with_map(text: str) -> tuple[str, list[int]]:
    """The normalised text and, for each of its characters, the index of the raw character it came from.

    Cached: a re-check looks for several citations in the same page text.
    """
    if text.isascii():
        # ASCII: NFKC and the quote map change nothing, case folding is lower(); only whitespace moves
        parts: list[str] = []
        where_ascii: list[int] = []
        for m in _TOKEN.finditer(text):
            if parts:
                parts.append(" ")
                where_ascii.append(m.start())
            parts.append(m.group().lower())
            where_ascii.extend(range(m.start(), m.end()))
        return "".join(parts), where_ascii
    out: list[str] = []
    where: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        folded = unicodedata.normalize("NFKC", ch).casefold().translate(_MAP)
        for c in folded:
            if c.isspace():
                pending_space = bool(out)
                continue
            if pending_space:
                out.append(" ")
                where.append(i)
                pending_space = False
            out.append(c)
            where.append(i)
    return "".join(out), where


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


def find(needle: str, haystack: str) -> tuple[int, int] | None:
    """Raw (start, end) in ``haystack`` of the first place whose normalised text is ``needle``'s."""
    n = normalise(needle)
    if not n:
        return None
    h, where = normalise_with_map(haystack)
    i = h.find(n)
    if i < 0:
        return None
    return where[i], where[i + len(n) - 1] + 1


@dataclass(frozen=True, slots=True)
class Closest:
    text: str
    start: int
    end: int
    similarity: float


def closest(needle: str, haystack: str) -> Closest | None:
    """The passage of ``haystack`` most like ``needle`` (difflib ratio over normalised text)."""
    n = normalise(needle)
    best: Closest | None = None
    for p in chunk(haystack):
        m = SequenceMatcher(None, n, normalise(p.text), autojunk=False)
        if m.real_quick_ratio() < (best.similarity if best else 0.0):
            continue
        if m.quick_ratio() < (best.similarity if best else 0.0):
            continue
        r = m.ratio()
        if best is None or r > best.similarity:
            best = Closest(p.text, p.start, p.end, round(r, 4))
    return best
