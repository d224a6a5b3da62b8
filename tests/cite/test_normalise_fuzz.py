"""Fuzzing ``normalised`` a stretch at a time (``_normalised_by_words``) against the whole-text way
(``_whole_normalised``): the text and every raw offset, and what ``find_all`` / ``find_places`` / ``align`` answer
with each, on texts from every Unicode category (marks, Hangul jamo and compatibility jamo, compatibility and
fullwidth characters, ligatures, characters that fold to several or NFKC to a space, zero-width and format
characters, every whitespace character, lone surrogates), on quotes cut from those texts, and on the page texts of
the HTML fixtures (with every passage's normalised text, which its id and hash are computed over)."""

from __future__ import annotations

import contextlib
import random
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import g6.cite.passages as passages
from g6.cite.page_text import read_texts

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
WHITESPACE = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
SPECIAL = ["ß", "ŉ", "ǰ", "ΐ", "ΰ", "ﬅ", "ﬆ", "İ", "´", "¨", "︙", "㎒", "ǆ", "ǅ", "ﬁ", "Ａ", "½", "⁶", "₂", "①", "ﷺ",
           "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f", "\u180e", "\u2061", "’", "“", "…", "—",
           "\u0301", "\u0308", "\u0345", "\u20dd", "\u0903", "e\u0301", "\u1100", "\u1161", "\u11a8", "\ud7b0",
           "가", "한", "ㄱ", "ㅏ", "\u0cc6", "\u0cc2", "\u1025", "\u102e", "\u0b47", "\u0b3e", "\ud800",
           "\udfff", "\U000e0100"]
ATOM = st.one_of(
    st.characters(),  # every category
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
    st.characters(categories=["Mn", "Mc", "Me"]),
    st.characters(min_codepoint=0x1100, max_codepoint=0x11FF),  # conjoining jamo
    st.characters(min_codepoint=0x3131, max_codepoint=0x318E),  # compatibility jamo (NFKC: conjoining ones)
    st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3),  # Hangul syllables
    st.characters(min_codepoint=0xFB00, max_codepoint=0xFFEF),  # ligatures, presentation forms, fullwidth
    st.characters(min_codepoint=0x3300, max_codepoint=0x33FF),  # CJK compatibility (㎒)
    st.sampled_from(WHITESPACE),
    st.sampled_from(SPECIAL),
    st.text(alphabet="abcXYZ019 .,'-_%\t\n", min_size=1, max_size=8),
)
TEXTS = st.lists(ATOM, max_size=40).map("".join)


def same_as_whole(text: str) -> None:
    got, want = passages.normalised.__wrapped__(text), passages._whole_normalised(text)
    assert got.text == want.text, ascii(text)
    assert len(got.starts) == len(got.ends) == len(want.starts) == len(want.ends), ascii(text)
    assert [got.starts[i] for i in range(len(got.starts))] == list(want.starts), ascii(text)
    assert [got.ends[i] for i in range(len(got.ends))] == list(want.ends), ascii(text)
    assert passages.normalise(text) == want.text, ascii(text)


@contextlib.contextmanager
def whole_text_way() -> Iterator[None]:
    """``normalised`` (and ``normalise``) the whole-text way, as before the change."""
    real = passages._normalised_by_words
    passages._normalised_by_words = lambda text: None
    passages.normalised.cache_clear()
    try:
        yield
    finally:
        passages._normalised_by_words = real
        passages.normalised.cache_clear()


def answers(quote: str, text: str, with_align: bool = True) -> tuple[object, ...]:
    passages.normalised.cache_clear()
    h, n, places = passages.find_places(quote, text)
    got = (list(passages.find_all(quote, text)), h.text, n, places)
    return got + ((passages.align(quote, text),) if with_align else ())


def same_answers(quote: str, text: str, with_align: bool = True) -> None:
    new = answers(quote, text, with_align)
    with whole_text_way():
        old = answers(quote, text, with_align)
    assert new == old, (ascii(quote), ascii(text))


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(TEXTS)
def test_every_category_the_same_map_as_the_whole_text_way(text: str) -> None:
    same_as_whole(text)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(TEXTS, st.data())
def test_a_quote_cut_from_the_text_is_found_and_aligned_as_the_whole_text_way(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    quote = text[i:j]
    if data.draw(st.booleans()):
        quote = passages.normalise(quote)
    same_answers(quote, text)


@pytest.mark.parametrize("c", WHITESPACE + SPECIAL)
def test_each_whitespace_and_tricky_character_in_every_place_of_a_word(c: str) -> None:
    for text in (c, f" {c}", f"{c} ", f"x {c}y z", f"x{c} y", f"A{c}\u0301 {c}", f"{c}\xa0{c}b", f"{c}{c}",
                 f"ab \u3000{c}\u0301cd  {c}", f"{c}\u1161 x\u11a8{c}"):
        same_as_whole(text)


def test_every_code_point_that_is_not_a_plain_letter_between_ascii_words() -> None:
    # every assigned character but the plain ones of category Lo (ideographs, syllables: a sample of those), in 3
    # places; the whole of Unicode in 4 places took 5 minutes and found nothing either
    cps = [c for c in range(sys.maxunicode + 1) if c % 97 == 0 or unicodedata.decomposition(chr(c))
           or unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs", "Lo")]
    for lo in range(0, len(cps), 400):
        chars = [chr(c) for c in cps[lo:lo + 400]]
        same_as_whole("".join(chars))
        same_as_whole(" w ".join(chars))
        same_as_whole(" ".join(f"a{c}" for c in chars) + " e\u0301")
    assert unicodedata.normalize("NFKC", "ㄱㅏ") == "가"  # compatibility jamo compose: the fallback is taken
    same_as_whole("ㄱㅏ x ㄱ ㅏ")


def _fixture_texts() -> list[tuple[str, str]]:
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix.lower() in (".html", ".htm", ".xhtml"):
            texts = read_texts(path.read_bytes(), "https://example.org/" + path.name, "text/html; charset=utf-8")
            for source in ("main", "visible"):
                if text := texts.text(source):
                    out.append((f"{path.relative_to(FIXTURES)}:{source}", text))
    return out


def test_the_fixture_pages_texts_passages_and_quotes_as_the_whole_text_way() -> None:
    texts = _fixture_texts()
    assert len(texts) > 100 and sum(not t.isascii() for _, t in texts) > 50
    rng = random.Random(9)
    for name, text in texts:
        same_as_whole(text)
        for p in passages.chunk(text):  # passage ids and text hashes: normalise() is the whole-text way's text
            assert passages.normalise(p.text) == passages._whole_normalised(p.text).text, name
        if text.isascii():
            continue
        words = [m.span() for m in passages._TOKEN.finditer(text)]
        for k in range(6):
            a = rng.randrange(len(words))
            quote = text[words[a][0]:words[min(len(words) - 1, a + rng.randint(0, 12))][1]]
            if k % 2:
                quote = passages.normalise(quote)
            same_answers(quote, text, with_align=k == 0)
