"""HTML read as a browser reads it (issue 30): comments, WHATWG encoding labels, structured data,
bounded style-sheet work."""

from __future__ import annotations

import pytest
from lxml import html as lxml_html

from g6.adapters.html.encoding import decode, prescan
from g6.adapters.html.page import read_document
from g6.adapters.html.text import MAX_STYLE_VISITS, extract_html, visible_text
from g6.adapters.outcomes import Outcome

SENTENCE = "The council approved twelve new cycle lanes on Monday after a long debate."
FILLER = "".join(f"<p>Filler paragraph number {i} says something about the city and its many streets.</p>"
                 for i in range(6))


def _page(inner: str, head: str = "") -> str:
    return (f"<html><head><title>T</title>{head}</head><body><main><article><h1>Title here</h1>{FILLER}{inner}"
            f"{FILLER}</article></main></body></html>")


# -- comments -------------------------------------------------------------------------------
@pytest.mark.parametrize("inner", [
    "<p>The council approved <!-- -->twelve<!-- --> new cycle lanes on Monday after a long debate.</p>",
    "<p><!-- -->The council approved twelve new cycle lanes on Monday after a long debate.</p>",
    "<p><span>The council approved </span><!-- -->twelve new cycle lanes on Monday after a long debate.</p>",
    "<p>The council approved <?php echo 1 ?>twelve new cycle lanes on Monday after a long debate.</p>",
    "<ul><li>The council approved <!--$-->twelve new cycle lanes<!--/$--> on Monday after a long debate.</li></ul>",
])
def test_text_after_a_comment_is_in_both_texts(inner: str) -> None:
    page = extract_html(_page(inner).encode(), "https://e.org/", "text/html; charset=utf-8")
    assert SENTENCE in page.visible
    assert page.text_source == "trafilatura" and SENTENCE in page.text


def test_visible_text_walks_past_comments_left_in_a_tree() -> None:
    root = lxml_html.document_fromstring("<p>Hello <!-- a -->world<!-- b --> and more <?pi x?>text.</p>")
    assert visible_text(root) == "Hello world and more text."


# -- encodings ------------------------------------------------------------------------------
CURLY = b"\x93We expected people to stay put,\x94 said Ren\xe9e \x96 who led the study."
CURLY_TEXT = "“We expected people to stay put,” said Renée – who led the study."


@pytest.mark.parametrize("label", ["iso-8859-1", "ISO-8859-1", "latin1", "l1", "ascii", "us-ascii",
                                   "iso_8859-1:1987", "cp819", "windows-1252", '"iso-8859-1"'])
def test_latin1_labels_are_windows_1252_in_the_header(label: str) -> None:
    body = b"<html><body><p>" + CURLY + b"</p></body></html>"
    page = extract_html(body, "https://e.org/", f"text/html; charset={label}")
    assert CURLY_TEXT in page.visible


@pytest.mark.parametrize("meta", ['<meta charset="iso-8859-1">', "<meta charset=latin1>",
                                  '<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">',
                                  "<meta content='text/html;charset=us-ascii' http-equiv=content-type>"])
def test_latin1_labels_are_windows_1252_in_a_meta(meta: str) -> None:
    body = b"<html><head>" + meta.encode() + b"</head><body><p>" + CURLY + b"</p></body></html>"
    assert CURLY_TEXT in extract_html(body, "https://e.org/", "text/html").visible


def test_the_order_is_bom_then_header_then_meta() -> None:
    text = "<html><head><meta charset=windows-1252></head><body><p>Grüße “aus” Köln</p></body></html>"
    # a BOM beats the header and the meta
    assert decode(b"\xef\xbb\xbf" + text.encode(), "text/html; charset=iso-8859-1").encoding == "utf-8"
    assert decode(b"\xff\xfe" + text.encode("utf-16-le"), "text/html; charset=utf-8").encoding == "utf-16le"
    # the header beats the meta
    d = decode(text.encode("utf-8"), "text/html; charset=utf-8")
    assert (d.encoding, d.source) == ("utf-8", "http") and "Grüße “aus” Köln" in d.text
    # an unknown header label is ignored: the meta decides
    d = decode(text.encode("cp1252"), "text/html; charset=no-such-charset")
    assert (d.encoding, d.source) == ("windows-1252", "meta") and "Grüße “aus” Köln" in d.text
    # no label: windows-1252, as browsers read unlabelled bytes over HTTP, UTF-8 or not
    assert decode("<p>Grüße</p>".encode("cp1252"), "text/html").text == "<p>Grüße</p>"
    assert decode("<p>Grüße</p>".encode(), None).text == "<p>GrÃ¼ÃŸe</p>"
    # XHTML is XML: its declaration, else UTF-8
    xhtml = "<?xml version='1.0' encoding='iso-8859-1'?><html><body><p>“x”</p></body></html>"
    assert decode(xhtml.encode("cp1252"), "application/xhtml+xml", xml=True).text == xhtml
    assert decode("<p>Grüße</p>".encode(), "application/xhtml+xml", xml=True).encoding == "utf-8"


def test_the_prescan_follows_the_html_standard() -> None:
    assert prescan(b"<!-- <meta charset=koi8-r> --><meta charset=utf-16>").name == "utf-8"  # type: ignore[union-attr]
    assert prescan(b"<meta charset=x-user-defined>").name == "windows-1252"  # type: ignore[union-attr]
    assert prescan(b'<meta content="text/html; charset=koi8-r">') is None  # content without http-equiv
    assert prescan(b"<div title='<meta charset=koi8-r>'><meta charset=shift_jis>").name == "shift_jis"  # type: ignore[union-attr]
    assert prescan(b"<meta charset=bogus><meta charset=gb2312>").name == "gbk"  # type: ignore[union-attr]
    assert decode(b"<p>\x1b$)C</p>", "text/html; charset=iso-2022-kr").text == "\ufffd"  # the replacement encoding


def test_windows_1252_unmapped_bytes_are_c1_code_points() -> None:
    assert decode(b"a\x81b\x9dc", "text/html; charset=windows-1252").text == "a\x81b\x9dc"


def test_plain_text_labels_map_the_same_way() -> None:
    outcome, _, docs, _ = read_document(CURLY, "https://e.org/t.txt", "text/plain; charset=latin1", "blake3:x")
    assert outcome is Outcome.OK and docs[0].text == CURLY_TEXT


# -- structured data ------------------------------------------------------------------------
def test_json_ld_is_structured_data_with_its_strings_as_written() -> None:
    body = ('<html><head><script type="application/ld+json">{"@type": "NewsArticle", '
            '"articleBody": "The mayor\\u2019s plan \\"works\\", she said.\\nSecond line."}</script></head>'
            "<body><p>A short teaser a reader sees on this page.</p><script>var x = 1;</script></body></html>")
    page = extract_html(body.encode(), "https://e.org/", "text/html")
    ld = [h for h in page.hidden if h.reason == "structured_data"]
    assert len(ld) == 1 and "The mayor’s plan \"works\", she said." in ld[0].text
    assert "JSON-LD" in ld[0].how
    assert page.unread["structured_data"] > 0 and page.unread["script"] == len("var x = 1;")


# -- style sheets: bounded ------------------------------------------------------------------
def test_rules_for_classes_the_page_does_not_use_cost_nothing() -> None:
    css = "\n".join(f".absent{i} {{ display: none }}" for i in range(10_000)) + "\n.promo { display: none }"
    body = (f"<html><head><style>{css}</style></head><body><p>Shown words.</p><p class=promo>Sold words.</p>"
            "</body></html>")
    page = extract_html(body.encode(), "https://e.org/", "text/html")
    assert "Sold words" not in page.visible and page.unread["display_none"] == len("Sold words.")
    assert "style_rules_not_applied" not in page.unread


def test_a_page_with_more_rules_than_the_bound_says_so() -> None:
    n_el = 500
    rules = 2 * MAX_STYLE_VISITS // n_el
    css = "\n".join(f"p:nth-child({i + 1}) {{ display: none }}" for i in range(rules))
    paras = "".join(f"<p>Paragraph {i} of the page.</p>" for i in range(n_el - 10))
    page = extract_html(f"<html><head><style>{css}</style></head><body>{paras}</body></html>".encode(),
                        "https://e.org/", "text/html")
    assert page.unread["style_rules_not_applied"] > 0
    assert "Paragraph 0 of the page" not in page.visible  # the first rules are applied


def test_a_huge_style_sheet_is_read_up_to_the_bound() -> None:
    css = ".promo { display: none }\n" + "\n".join(f".x{i} {{ color: red; display: block }}" for i in range(40_000))
    body = f"<html><head><style>{css}</style></head><body><p>Shown.</p><p class=promo>Sold.</p></body></html>"
    page = extract_html(body.encode(), "https://e.org/", "text/html")
    assert page.unread["style_chars_not_read"] > 0 and "Sold" not in page.visible


def test_media_blocks_for_every_screen_apply_and_device_queries_do_not() -> None:
    css = ("@media screen { .a { display: none } } @media only screen, print { .b { visibility: hidden } }"
           "@media (max-width: 600px) { .c { display: none } } @media print { .d { display: none } }"
           "@media screen { @media all { .e { display: none } } }")
    body = (f"<html><head><style>{css}</style></head><body><p class=a>Alpha words.</p><p class=b>Bravo words.</p>"
            "<p class=c>Charlie words.</p><p class=d>Delta words.</p><p class=e>Echo words.</p></body></html>")
    page = extract_html(body.encode(), "https://e.org/", "text/html")
    assert page.visible.split("\n") == ["Charlie words.", "", "Delta words."]
    assert {h.how for h in page.hidden if h.reason != "style"} == {'display:none from the <style> rule ".a"',
                                          'visibility:hidden from the <style> rule ".b"',
                                          'display:none from the <style> rule ".e"'}
