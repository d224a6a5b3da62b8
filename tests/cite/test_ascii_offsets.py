"""``normalised`` a stretch at a time (``g6.cite.passages._normalised_by_words``: the ASCII stretches at once, only
those holding a character past ASCII piece by piece, the offset map kept as runs) gives exactly what the whole-text
way gives (``_whole_normalised``, NFKC pieces of the whole text, character by character): the text and the raw
offsets of every character, whatever the text holds (combining marks, Hangul jamo, no-break and other spaces,
compatibility characters, characters that fold to two, zero-width ones)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.cite.passages import _whole_normalised, find_all, normalised

TRICKY = ("a", "B", "z", "1", "é", "e\u0301", "\u0301", "\u0327", " ", "  ", "\t", "\n", "\xa0", "\u2003", "\u3000",
          "\u2028", "\x1c", "½", "ß", "ﬁ", "Ａ", "’", "“", "—", "…", "\u200b", "\ufeff", "\u00ad", "´", "¨", "İ",
          "\u1100", "\u1161", "\u11a8", "한", "⁶", "①", "ﷺ", "\u0640", "Ω", "ǅ", ".", "-", "'", "x" * 5)
TEXTS = st.lists(st.sampled_from(TRICKY), max_size=40).map("".join)
ANY = st.text(max_size=60)


def same_as_whole(text: str) -> None:
    got, want = normalised.__wrapped__(text), _whole_normalised(text)
    assert got.text == want.text, text
    assert len(got.starts) == len(got.ends) == len(want.starts), text
    assert [got.starts[i] for i in range(len(got.starts))] == list(want.starts), text
    assert [got.ends[i] for i in range(len(got.ends))] == list(want.ends), text
    if want.starts:
        assert (got.starts[-1], got.ends[-1]) == (want.starts[-1], want.ends[-1])


@settings(max_examples=400)
@given(TEXTS)
def test_the_same_map_as_the_whole_text_way_on_tricky_texts(text: str) -> None:
    same_as_whole(text)


@settings(max_examples=300)
@given(ANY)
def test_the_same_map_as_the_whole_text_way_on_any_text(text: str) -> None:
    same_as_whole(text)


@pytest.mark.parametrize("text", ["", " ", "plain ascii words", "  lead and trail  ", "a\xa0b", "\u0301a", "a \u0301b",
                                  "x ´ y", "\xa0\xa0", "e\u0301 t\u0301", "한\u11a8 x", "Ａ１ ½", "end\xa0"])
def test_the_same_map_as_the_whole_text_way_on_edges(text: str) -> None:
    same_as_whole(text)


def test_out_of_range_and_slices_are_refused() -> None:
    h = normalised.__wrapped__("  Two\t\twords \n")
    assert h.text == "two words" and (h.starts[3], h.ends[3]) == (5, 6)  # the space: the first tab after "two"
    with pytest.raises(IndexError):
        h.starts[9]
    with pytest.raises(IndexError):
        h.ends[-10]
    with pytest.raises(TypeError):
        h.starts[0:2]  # type: ignore[index]


def test_a_quote_across_a_run_of_whitespace_maps_back_to_its_raw_span() -> None:
    page = "Intro.\n\n  The Quoted   sentence\tends here.  Outro \u2019s \xa0 the end."
    (start, end), = find_all("the quoted sentence ends here.", page)
    assert page[start:end] == "The Quoted   sentence\tends here."
    (start, end), = find_all("outro 's the end", page)
    assert page[start:end] == "Outro \u2019s \xa0 the end"
