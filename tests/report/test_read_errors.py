"""Bad reports: each is one typed ReportError (an InputError: exit 2 at the command line) with a message that
says where, or, for a citation whose source cannot be read, an UnusableCitation kept beside the others."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

import pytest

from g6.errors import (
    InputError,
    ReportEncodingError,
    ReportError,
    ReportFormatError,
    ReportMalformed,
    ReportOffsetError,
    ReportTooLarge,
)
from g6.report import build, read
from g6.report.read import FORMATS, MAX_QUOTE, read_report, read_report_file

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reports"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def as_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode()


def test_every_report_error_is_an_input_error_with_its_code() -> None:
    codes = {ReportError: "G6_E_REPORT", ReportFormatError: "G6_E_REPORT_FORMAT",
             ReportMalformed: "G6_E_REPORT_MALFORMED", ReportEncodingError: "G6_E_REPORT_ENCODING",
             ReportOffsetError: "G6_E_REPORT_OFFSET", ReportTooLarge: "G6_E_REPORT_TOO_LARGE"}
    for cls, code in codes.items():
        assert issubclass(cls, InputError) and cls.code == code


# -- malformed input ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("data", "says"), [
    (b'{"output": [', "malformed JSON: .* at line 1"),
    (b'{\n  "a": 1,\n  "b": ,\n}', "at line 3"),
    (b"[" * 3000 + b"]" * 3000, "malformed JSON"),  # deeper than orjson's 1,024 levels: refused, not a crash
    (b'[{"type": "Annotation"', "malformed JSON"),
    (b'{"a": NaN}', "malformed JSON"),
])
def test_malformed_json_names_the_line(data: bytes, says: str) -> None:
    with pytest.raises(ReportMalformed, match=says):
        read_report(data, name="r.json")


def test_markdown_with_a_nul_is_not_markdown() -> None:
    with pytest.raises(ReportMalformed, match=r"r.md: not Markdown: a NUL character at character 3"):
        read_report(b"abc\x00def", name="r.md")
    # UTF-16 without a byte order mark decodes as UTF-8 full of NULs: refused, never read as text
    with pytest.raises(ReportMalformed, match="NUL"):
        read_report("# Report\n".encode("utf-16-le"))


def test_a_markdown_link_at_the_start_is_markdown_not_broken_json() -> None:
    r = read_report(b"[Gazette](http://a.example/g) says bills rose by twelve percent.")
    assert r.format == "markdown" and r.citations[0].source == "http://a.example/g"


def test_a_json_shape_of_the_wrong_type_names_the_path() -> None:
    d = fixture("openai-responses.json")
    d["output"][1]["content"][0]["annotations"][2]["url"] = 12
    with pytest.raises(ReportMalformed, match=r"at output\[1\]\.content\[0\]\.annotations\[2\]\.url: expected a "
                                              r"string, found a number"):
        read_report(as_bytes(d))
    g = fixture("gemini.json")
    del g["candidates"][0]["groundingMetadata"]["groundingSupports"][0]["segment"]
    with pytest.raises(ReportMalformed, match=r"groundingSupports\[0\]\.segment: missing"):
        read_report(as_bytes(g))


@pytest.mark.parametrize("name", ["openai-chat.json", "perplexity.json", "gemini.json"])
def test_several_answers_are_refused(name: str) -> None:
    d = fixture(name)
    key = "candidates" if "candidates" in d else "choices"
    d[key] = d[key] * 2
    with pytest.raises(ReportMalformed, match=f"2 {key}: a report is one answer"):
        read_report(as_bytes(d))


# -- formats -----------------------------------------------------------------------------------------------------
def test_an_unknown_format_lists_the_formats() -> None:
    with pytest.raises(ReportFormatError, match="unknown format 'openai'; the formats are openai-responses, ") as e:
        read_report(b"{}", format="openai")
    assert e.value.tried == FORMATS


def test_detection_that_fails_says_what_each_format_lacks() -> None:
    with pytest.raises(ReportFormatError) as e:
        read_report(b'{"hello": "world"}', name="r.json")
    msg = str(e.value)
    assert msg.startswith("r.json: JSON in none of the formats g6 reads; tried: openai-responses (no output[] array)")
    for fmt in FORMATS:
        if fmt != "markdown":
            assert f"{fmt} (" in msg
    assert "--format" in msg


def test_ambiguous_detection_names_the_candidates_and_the_named_format_reads() -> None:
    both = {**fixture("openai-responses.json"), **fixture("gemini.json")}
    with pytest.raises(ReportFormatError, match=r"fits more than one format \(openai-responses, gemini\); name the "
                                                r"one meant with --format") as e:
        read_report(as_bytes(both))
    assert e.value.tried == ("openai-responses", "gemini")
    assert read_report(as_bytes(both), format="gemini").format == "gemini"


def test_a_report_read_as_the_wrong_format_is_malformed() -> None:
    with pytest.raises(ReportMalformed, match="not a gemini report: at candidates: missing"):
        read_report((FIXTURES / "openai-chat.json").read_bytes(), format="gemini")
    with pytest.raises(ReportMalformed, match="malformed JSON"):
        read_report((FIXTURES / "report.md").read_bytes(), format="anthropic")


# -- offsets -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("start", "end", "error", "says"), [
    (0, 10_000, ReportOffsetError, "do not fit the text of 424 characters"),  # the text with its markers
    (50, 40, ReportOffsetError, "start_index 50, end_index 40 do not fit"),
    (-1, 10, ReportMalformed, "a whole number of 0 or more, found -1"),
    (1.5, 10, ReportMalformed, "expected a whole number, found a number"),
    (True, 10, ReportMalformed, "found a boolean"),
])
def test_openai_offsets_outside_the_text(start: object, end: object, error: type[Exception], says: str) -> None:
    d = fixture("openai-chat.json")
    d["choices"][0]["message"]["annotations"][1]["url_citation"].update(start_index=start, end_index=end)
    with pytest.raises(error, match=says) as e:
        read_report(as_bytes(d), name="chat.json")
    assert "choices[0].message.annotations[1].url_citation" in str(e.value)


@pytest.mark.parametrize(("start", "end", "says"), [
    (4, 95, "inside a character"),  # "Ren" is bytes 0-2 and "é" bytes 3-4: 4 is inside it
    (0, 4, "inside a character"),
    (0, 10_000, "past its end"),
    (100, 96, "before its start"),
])
def test_gemini_byte_offsets_outside_the_part_or_inside_a_character(start: int, end: int, says: str) -> None:
    d = fixture("gemini.json")
    seg = d["candidates"][0]["groundingMetadata"]["groundingSupports"][0]["segment"]
    seg.pop("text")
    seg.update(startIndex=start, endIndex=end)
    with pytest.raises(ReportOffsetError, match=says) as e:
        read_report(as_bytes(d))
    assert "groundingSupports[0].segment" in str(e.value)


def test_gemini_segment_text_must_be_the_text_at_its_offsets() -> None:
    d = fixture("gemini.json")
    d["candidates"][0]["groundingMetadata"]["groundingSupports"][1]["segment"]["text"] = "Something else."
    with pytest.raises(ReportOffsetError, match="the segment's text is not the text at its byte offsets 96-193"):
        read_report(as_bytes(d))
    d = fixture("gemini.json")
    d["candidates"][0]["groundingMetadata"]["groundingSupports"][1]["segment"]["partIndex"] = 3
    with pytest.raises(ReportOffsetError, match="partIndex 3 is not a text part"):
        read_report(as_bytes(d))


def test_anthropic_document_range_that_ends_before_it_starts() -> None:
    d = fixture("anthropic-documents.json")
    d["content"][1]["citations"][0].update(start_char_index=30, end_char_index=10)
    with pytest.raises(ReportMalformed, match="end_char_index 10 is before start_char_index 30"):
        read_report(as_bytes(d))


# -- sources -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("url", "reason"), [
    ("javascript:alert(1)", "a javascript: address"),
    ("data:text/html,<p>hi</p>", "a data: address"),
    ("file:///etc/passwd", "a file: address"),
    ("mailto:someone@example.org", "a mailto: address"),
    ("/relative/page", "a relative link with no base"),
    ("http:///no-host", "a URL with no host"),
    ("http://a.example:port/x", "host or port does not parse"),
    ("http://a.example/with space", "white space or a control character"),
    ("", "the source is empty"),
    ("http://a.example/" + "x" * 9000, "over the 8,192-character limit"),
])
def test_a_source_that_cannot_be_read_is_kept_as_unusable(url: str, reason: str) -> None:
    d = fixture("perplexity.json")
    d["citations"][2] = url
    r = read_report(as_bytes(d))
    assert [c.n for c in r.citations] == [1, 2, 3, 5]  # the others are read, numbered as in the report
    (u,) = r.unusable
    assert (u.n, u.written, u.claim) == (4, url[:300], "A research report is only as good as the sources it cites.")
    assert reason in u.reason and u.where == "choices[0].message.content marker 4 [3]"


def test_a_relative_source_resolves_on_the_base() -> None:
    d = fixture("perplexity.json")
    d["citations"][2] = "../article"
    r = read_report(as_bytes(d), base="http://127.0.0.1:8421/news/report.json")
    assert (r.citations[3].source, r.citations[3].address) == ("http://127.0.0.1:8421/article", "../article")
    bad = read_report(as_bytes(d), base="javascript:void(0)")
    assert "the base 'javascript:void(0)' is not an http(s) URL" in bad.unusable[0].reason


def test_markers_and_chunks_with_nothing_behind_them_and_file_citations_are_unusable() -> None:
    p = fixture("perplexity.json")
    p["choices"][0]["message"]["content"] += " Finally, rates held [9]."
    assert [(u.written, u.reason) for u in read_report(as_bytes(p)).unusable] == [
        ("[9]", "marker [9], and the answer lists 4 sources")]
    g = fixture("gemini.json")
    g["candidates"][0]["groundingMetadata"]["groundingSupports"][2]["groundingChunkIndices"] = [2, 7]
    assert [(u.written, u.reason) for u in read_report(as_bytes(g)).unusable] == [
        ("chunk 7", "groundingChunkIndices names chunk 7; the answer has 4")]
    o = fixture("openai-responses.json")
    o["output"][1]["content"][0]["annotations"].append({"type": "file_citation", "file_id": "file-1", "index": 3})
    assert [u.written for u in read_report(as_bytes(o)).unusable] == ["file_citation"]
    a = fixture("anthropic.json")
    a["content"][4]["citations"].append({"type": "some_future_location", "cited_text": "x"})
    assert [u.written for u in read_report(as_bytes(a)).unusable] == ["some_future_location"]


# -- sizes -------------------------------------------------------------------------------------------------------
def test_a_quote_of_a_megabyte_is_refused_and_one_at_the_limit_is_read() -> None:
    d = fixture("anthropic.json")
    d["content"][4]["citations"][0]["cited_text"] = "word " * 200_000
    with pytest.raises(ReportTooLarge, match=r"the quote at content\[4\]\.citations\[0\] is 999,999 characters, "
                                             r"over the 32,768-character limit"):
        read_report(as_bytes(d))
    d["content"][4]["citations"][0]["cited_text"] = "q" * MAX_QUOTE
    assert len(read_report(as_bytes(d)).citations[0].quote or "") == MAX_QUOTE
    big = "> " + "word " * 200_000 + "\n>\n> — [A](http://a.example/)\n"
    with pytest.raises(ReportTooLarge, match="line 3, citation 1"):
        read_report(big.encode())


def test_a_report_over_the_byte_limit_and_too_many_citations(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(read, "MAX_REPORT_BYTES", 1000)
        with pytest.raises(ReportTooLarge, match="1,001 bytes, over the 1,000-byte limit"):
            read_report(b"x" * 1001)
    monkeypatch.setattr(build, "MAX_CITATIONS", 3)
    with pytest.raises(ReportTooLarge, match=r"more than 3 citations \(at choices\[0\]\.message\.content marker 4"):
        read_report((FIXTURES / "perplexity.json").read_bytes())


def test_read_report_file_reads_no_further_than_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read, "MAX_REPORT_BYTES", 100)
    (tmp_path / "big.md").write_bytes(b"x" * 10_000)
    with pytest.raises(ReportTooLarge, match="101 bytes, over the 100-byte limit"):  # it stopped reading at 101
        read_report_file(tmp_path / "big.md")
    with pytest.raises(ReportMalformed, match="no such file"):
        read_report_file(tmp_path / "none.md")
    with pytest.raises(ReportMalformed, match="not a regular file"):
        read_report_file(tmp_path)


# -- encodings ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_utf8_with_bom_and_utf16_utf32_with_bom_read_the_same(encoding: str) -> None:
    text = (FIXTURES / "gemini.json").read_text(encoding="utf-8")
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}.get(encoding, b"")
    data = bom + text.encode(encoding)
    assert read_report(data) == read_report(text.encode("utf-8"))
    md = (FIXTURES / "report.md").read_text(encoding="utf-8")
    assert read_report(md.encode(encoding) if not bom else bom + md.encode(encoding)) == read_report(md.encode())


def test_latin1_bytes_are_refused_naming_the_byte() -> None:
    data = "# Café\n\nPrices rose.".encode("latin-1")
    with pytest.raises(ReportEncodingError, match=r"r.md: not UTF-8: byte 5 \(0xe9\) does not decode") as e:
        read_report(data, name="r.md")
    assert e.value.offset == 5
    with pytest.raises(ReportEncodingError, match="byte order mark says utf-16-le, and byte 4"):
        read_report(codecs.BOM_UTF16_LE + b"a\x00\x00\xdc")  # a lone low surrogate
