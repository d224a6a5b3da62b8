"""``g6.cite.passages.find`` and ``quote_too_short``: the rules a quote is found by (red-team findings 1-3).

Pure functions over strings; the same rules seen through ``g6 report check`` are in
``tests/attack/test_report_attacks.py`` and through ``g6 cite`` in ``test_cite_quote_rules.py``."""

from __future__ import annotations

import pytest

from g6.cite.passages import MIN_QUOTE_WEIGHT, find, find_all, quote_too_short

PAGE = "The treatment was ineffective in trials. Household bills rose by 12% over the quarter."


# -- finding 1: word boundaries at both ends ------------------------------------------------------------
@pytest.mark.parametrize("quote", ["effective in trials", "2% over the quarter", "bills rose by 1",
                                   "treatment was ineffective in tri", "he treatment was"])
def test_a_quote_that_begins_or_ends_inside_a_word_is_not_found(quote: str) -> None:
    assert find(quote, PAGE) is None


@pytest.mark.parametrize("quote", ["ineffective in trials", "12% over the quarter", "bills rose by 12%",
                                   "The treatment was", "trials. Household bills", "the quarter."])
def test_a_quote_of_whole_words_is_found_at_its_raw_offsets(quote: str) -> None:
    got = find(quote, PAGE)
    assert got is not None
    assert PAGE[got[0]:got[1]].lower() == quote.lower()


def test_a_later_whole_word_place_is_found_after_an_inner_one() -> None:
    """The first substring place is inside a word; the search goes on to the next place."""
    text = "an ineffective drug; an effective drug"
    got = find("effective drug", text)
    assert got == (text.index("an effective") + 3, len(text))


def test_a_combining_mark_belongs_to_the_letter_before_it() -> None:
    """"Rene" is not found in "Rene\u0301e" (Renée in NFD); the whole name is."""
    text = "said Rene\u0301e Dubois, who led the study"
    assert find("said Rene", text) is None
    assert find("said Renée Dubois", text) is not None


def test_scripts_without_spaces_have_a_boundary_at_every_character() -> None:
    text = "研究人员在四个地区联系了家庭。"
    assert find("在四个地区联系", text) is not None


def test_a_quote_may_not_end_inside_what_one_page_character_normalised_to() -> None:
    """"½" is "1⁄2" after NFKC: a quote may not take its "1" alone."""
    assert find("rose by 1", "bills rose by ½ a point") is None


# -- finding 3: numbers kept as written ------------------------------------------------------------------
@pytest.mark.parametrize(("quote", "page"), [
    ("About 106 people were affected", "About 10⁶ people were affected"),
    ("About 10⁶ people were affected", "About 106 people were affected"),
    ("water is H2O in the formula", "water is H₂O in the formula"),
    ("see note 1 for the method", "see note ① for the method"),
    ("a share of 12 of the vote", "a share of ½ of the vote"),
])
def test_a_superscript_subscript_circled_or_fraction_number_is_not_a_plain_one(quote: str, page: str) -> None:
    assert find(quote, page) is None


def test_the_same_superscript_on_both_sides_is_found() -> None:
    page = "About 10⁶ people were affected"
    got = find("about 10⁶ people", page)
    assert got is not None and page[got[0]:got[1]] == "About 10⁶ people"


def test_fullwidth_and_ligatures_still_fold() -> None:
    """The other NFKC folds stay: fullwidth digits and letters, the ﬁ ligature."""
    assert find("rose by 12% in the final quarter", "rose by １２% in the ﬁnal quarter") is not None


# -- finding 2: too short to be evidence -----------------------------------------------------------------
@pytest.mark.parametrize("quote", ["e", "the", ".", "of the", "to do so", "12%", "2020", "— … —", "a b c d e"])
def test_a_quote_with_too_few_letters_or_digits_is_too_short(quote: str) -> None:
    why = quote_too_short(quote)
    assert why is not None and f"at least {MIN_QUOTE_WEIGHT} letters or digits" in why


@pytest.mark.parametrize("quote", ["bills rose", "Household bills rose by 12%", "ineffective", "研究人员联系"])
def test_a_quote_with_enough_letters_or_digits_is_looked_for(quote: str) -> None:
    assert quote_too_short(quote) is None


def test_an_empty_quote_is_the_callers_case() -> None:
    assert quote_too_short("") is None and quote_too_short(" \u200b ") is None


def test_find_all_gives_every_whole_word_place_and_none_inside_words() -> None:
    text = "ineffective; effective. Effective! noneffective effective"
    spans = list(find_all("effective", text))
    assert [text[a:b] for a, b in spans] == ["effective", "Effective", "effective"]
    assert spans[0] == find("effective", text)
