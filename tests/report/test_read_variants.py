"""Each reader's variants beyond its fixture, the sentence splitter and the source rules, as pure functions."""

from __future__ import annotations

import json

import pytest

from g6.report.model import Report
from g6.report.read import read_report
from g6.report.sentences import MAX_SENTENCE, Sentences, is_claim, sentence_spans
from g6.report.sources import Source, Unusable, normalise_source


def read(value: object, fmt: str | None = None) -> Report:
    r = read_report(json.dumps(value, ensure_ascii=False).encode(), format=fmt)
    for c in r.citations:
        assert c.claim_start is None or r.text[c.claim_start:c.claim_end] == c.claim
    return r


def responses(text: str, *notes: dict[str, object]) -> dict[str, object]:
    return {"object": "response", "output": [{"type": "message", "content": [
        {"type": "output_text", "text": text, "annotations": list(notes)}]}]}


def url_citation(start: int, end: int, url: str = "http://a.example/") -> dict[str, object]:
    return {"type": "url_citation", "start_index": start, "end_index": end, "url": url, "title": "t"}


def test_openai_a_span_over_prose_claims_the_sentences_it_overlaps() -> None:
    text = "The capital of France is Paris. It has two million people. Rivers run."
    r = read(responses(text, url_citation(4, 11), url_citation(26, 45)))
    assert [c.claim for c in r.citations] == ["The capital of France is Paris.",
                                              "The capital of France is Paris. It has two million people."]
    assert r.text == text and r.uncited_claims == ()  # "Rivers run." is two words


def test_openai_a_link_span_without_its_parentheses_takes_them_along() -> None:
    text = "Bills rose 12% ([gazette](http://a.example/g)). Next sentence here."
    start = text.index("[")
    r = read(responses(text, url_citation(start, text.index(")") + 1)))
    assert r.text == "Bills rose 12%. Next sentence here."
    assert r.citations[0].claim == "Bills rose 12%."


def test_openai_several_parts_and_messages_are_paragraphs() -> None:
    value = {"output": [
        {"type": "reasoning", "summary": []},
        {"type": "message", "content": [{"type": "output_text", "text": "One part here.", "annotations": [
            url_citation(0, 3)]}, {"type": "refusal", "refusal": "no"},
            {"type": "output_text", "text": "Two part here.", "annotations": [url_citation(4, 8)]}]},
        {"type": "message", "content": [{"type": "output_text", "text": "Three part here.", "annotations": []}]}]}
    r = read(value)
    assert r.text == "One part here.\n\nTwo part here.\n\nThree part here."
    assert [(c.claim, c.claim_start, c.where) for c in r.citations] == [
        ("One part here.", 0, "output[1].content[0].annotations[0]"),
        ("Two part here.", 16, "output[1].content[2].annotations[0]")]
    assert r.uncited_claims == ("Three part here.",)


def test_perplexity_think_block_search_results_only_and_links_that_are_not_markers() -> None:
    value = {"choices": [{"message": {"content": "<think>I should cite [1] here.</think>\nBills rose 12% [1]. "
                                                 "See [2](http://x.example/) and [1, 2]."}}],
             "citations": None,
             "search_results": [{"title": "One", "url": "http://a.example/1"},
                                {"title": "Two", "url": "http://b.example/2", "date": None}]}
    r = read(value)
    assert r.text == "Bills rose 12%. See [2](http://x.example/) and."
    assert [(c.source, c.claim, c.title) for c in r.citations] == [
        ("http://a.example/1", "Bills rose 12%.", "One"),
        ("http://a.example/1", "See [2](http://x.example/) and.", "One"),
        ("http://b.example/2", "See [2](http://x.example/) and.", "Two")]


def test_gemini_snake_case_retrieved_context_and_no_grounding() -> None:
    value = {"candidates": [{"content": {"parts": [{"text": "Thinking…", "thought": True},
                                                   {"text": "Bills rose."}]},
                             "grounding_metadata": {
                                 "grounding_chunks": [{"retrieved_context": {"uri": "http://a.example/doc",
                                                                             "title": "Doc", "text": "bills rose"}}],
                                 "grounding_supports": [{"segment": {"part_index": 1, "end_index": 11},
                                                         "grounding_chunk_indices": [0]}]}}]}
    r = read(value)
    assert r.text == "Bills rose."
    assert [(c.source, c.claim, c.quote, c.title) for c in r.citations] == [
        ("http://a.example/doc", "Bills rose.", "bills rose", "Doc")]
    bare = read({"candidates": [{"content": {"parts": [{"text": "Nothing grounded here at all."}]}}]})
    assert bare.citations == () and bare.uncited_claims == ("Nothing grounded here at all.",)


def test_anthropic_search_result_location_and_a_message_without_citations() -> None:
    value = {"type": "message", "role": "assistant", "content": [
        {"type": "text", "text": "Rates held steady.", "citations": [
            {"type": "search_result_location", "source": "http://a.example/kb/7", "title": "KB 7",
             "cited_text": "Rates held.", "search_result_index": 0, "start_block_index": 2,
             "end_block_index": 3}]}]}
    c = read(value).citations[0]
    assert (c.source, c.quote, c.title, c.locator) == ("http://a.example/kb/7", "Rates held.", "KB 7", "block 2")
    plain = read({"type": "message", "content": [{"type": "text", "text": "No sources were used here."}]})
    assert plain.citations == () and plain.uncited_claims == ("No sources were used here.",)


def test_sentences_end_where_a_reader_would_end_them() -> None:
    text = ("Dr. Smith met J. Doe, e.g. at noon. Prices rose 3.5% in 2024! Did they? “Yes.” (Twelve.) "
            "et al. report it.\nA new line\n\n  ")
    got = [text[a:b] for a, b in sentence_spans(text)]
    assert got == ["Dr. Smith met J. Doe, e.g. at noon.", "Prices rose 3.5% in 2024!", "Did they?", "“Yes.”",
                   "(Twelve.) et al. report it.", "A new line"]
    long = "word " * 1000
    spans = sentence_spans(long)
    assert all(b - a <= MAX_SENTENCE for a, b in spans) and len(spans) >= 3
    s = Sentences("One two three. Four five six.")
    assert s.index_before(14) == 0 and s.index_at(14) is None and s.covering(5, 20) == (0, 2)
    assert not is_claim("Is it? ") and not is_claim("# Heading words here") and not is_claim("Two words")
    assert is_claim("Three whole words")


@pytest.mark.parametrize(("written", "base", "want"), [
    ("https://a.example/x?q=1#f", None, Source("https://a.example/x?q=1#f")),
    ("  http://a.example/  ", None, Source("http://a.example/")),
    ("HTTP://A.EXAMPLE/", None, Source("HTTP://A.EXAMPLE/")),
    ("doi:10.1000/xyz.", None, Source("doi:10.1000/xyz", "doi:10.1000/xyz.")),
    ("DOI: 10.1000/XYZ", None, Source("doi:10.1000/XYZ", "DOI: 10.1000/XYZ")),
    ("https://doi.org/10.1000/a%2Fb", None, Source("doi:10.1000/a/b", "https://doi.org/10.1000/a%2Fb")),
    ("https://export.arxiv.org/abs/2401.01234v3", None, Source("arxiv:2401.01234v3",
                                                               "https://export.arxiv.org/abs/2401.01234v3")),
    ("https://arxiv.org/list/cs.CL/new", None, Source("https://arxiv.org/list/cs.CL/new")),
    ("https://api.openalex.org/works/w123456", None, Source("openalex:W123456",
                                                            "https://api.openalex.org/works/w123456")),
    ("page.html", "http://a.example/dir/r.md", Source("http://a.example/dir/page.html", "page.html")),
    ("//b.example/x", "https://a.example/", Source("https://b.example/x", "//b.example/x")),
    ("//b.example/x", None, Unusable("")),
    ("javascript:alert(1)", "http://a.example/", Unusable("")),
    ("http://[::1/", None, Unusable("")),
])
def test_sources(written: str, base: str | None, want: Source | Unusable) -> None:
    got = normalise_source(written, base)
    if isinstance(want, Unusable):
        assert isinstance(got, Unusable) and got.reason
    else:
        assert got == want
