"""Text the page's CSS leaves laid out but invisible (``g6.adapters.html.css_invisible``): a new user planted
``<p style="font-size:0">`` words and ``g6 report check`` called them found. Each case is one sentence hidden,
shown, or undecided (not cited, kept in a fetch's documents)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.adapters.html.text import CSS_UNDECIDED, extract_html
from g6.cite.page_text import read_texts
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from tests.report.check_helpers import QUOTE, article, check, cite, report_of

Site = Callable[..., LocalSite]
S = "Planted words the page hides from its reader."

# name -> (style text, body html with {s} the sentence, the hidden reason)
HIDDEN = {
    "font_size_0": ("", '<p style="font-size:0">{s}</p>', "font_size_zero"),
    "font_size_0px_rule": ("p.x{{font-size:0px}}", '<p class=x>{s}</p>', "font_size_zero"),
    "font_size_0em": ("", '<p style="font-size:0em">{s}</p>', "font_size_zero"),
    "font_size_0rem": ("", '<p style="font-size:0rem">{s}</p>', "font_size_zero"),
    "font_size_0_percent": ("", '<p style="font-size:0%">{s}</p>', "font_size_zero"),
    "font_size_inherited": ("", '<div style="font-size:0"><p><b>{s}</b></p></div>', "font_size_zero"),
    "font_size_em_of_zero": ("", '<div style="font-size:0"><p style="font-size:2em">{s}</p></div>', "font_size_zero"),
    "font_size_var": (":root{{--z:0}}", '<p style="font-size:var(--z)">{s}</p>', "font_size_zero"),
    "font_size_calc": ("", '<p style="font-size:calc(1rem - 16px)">{s}</p>', "font_size_zero"),
    "font_shorthand": ("", '<p style="font:0/0 a">{s}</p>', "font_size_zero"),
    "font_size_important": (".x{{font-size:0 !important}}", '<p class=x style="font-size:16px">{s}</p>',
                            "font_size_zero"),
    "line_height_and_font_0": ("", '<p style="line-height:0;font-size:0">{s}</p>', "font_size_zero"),
    "opacity_0": ("", '<p style="opacity:0">{s}</p>', "opacity_zero"),
    "opacity_0_0": (".x{{opacity:0.0}}", '<p class=x>{s}</p>', "opacity_zero"),
    "opacity_0_percent": ("", '<p style="opacity:0%">{s}</p>', "opacity_zero"),
    "opacity_not_undone": ("", '<div style="opacity:0"><p style="opacity:1">{s}</p></div>', "opacity_zero"),
    "opacity_multiplied": ("", '<div style="opacity:.2"><p style="opacity:.2">{s}</p></div>', "opacity_zero"),
    "color_transparent": ("", '<p style="color:transparent">{s}</p>', "color_transparent"),
    "color_alpha_0": (".x{{color:rgba(0,0,0,0)}}", '<p class=x>{s}</p>', "color_transparent"),
    "color_hex_alpha_0": ("", '<p style="color:#ffffff00">{s}</p>', "color_transparent"),
    "color_slash_0": ("", '<p style="color:rgb(0 0 0 / 0%)">{s}</p>', "color_transparent"),
    "color_inherited": ("", '<div style="color:transparent"><p><i>{s}</i></p></div>', "color_transparent"),
    "text_fill_transparent": ("", '<p style="color:red;-webkit-text-fill-color:transparent">{s}</p>',
                              "color_transparent"),
    "clip_rect": ("", '<p style="position:absolute;clip:rect(0 0 0 0)">{s}</p>', "clip_hidden"),
    "clip_rect_1px": (".sr{{position:absolute;clip:rect(1px, 1px, 1px, 1px)}}", "<span class=sr>{s}</span>",
                      "clip_hidden"),
    "clip_path_inset": ("", '<p style="clip-path:inset(50%)">{s}</p>', "clip_path_hidden"),
    "sr_only": (".sr-only{{position:absolute;width:1px;height:1px;padding:0;overflow:hidden;white-space:nowrap}}",
                "<span class=sr-only>{s}</span>", "visually_hidden"),
    "text_indent": ("", '<h1 style="text-indent:-9999px">{s}</h1>', "text_indent_offscreen"),
    "text_indent_em": ("h1{{text-indent:-999em}}", "<h1><a>{s}</a></h1>", "text_indent_offscreen"),
    "scale_0": ("", '<p style="transform:scale(0)">{s}</p>', "transform_scale_zero"),
    "scale_x_0": ("", '<p style="transform:translate(1px) scaleX(0)">{s}</p>', "transform_scale_zero"),
    "max_height_0": (".acc{{max-height:0;overflow:hidden}}", "<div class=acc><p>{s}</p></div>", "max_height_zero"),
    "height_0": ("", '<div style="height:0;overflow:hidden"><p>{s}</p></div>', "max_height_zero"),
    "height_0_no_padding": ("", '<div style="height:0;overflow:hidden;padding:0">{s}</div>', "max_height_zero"),
    "width_0": ("", '<div style="width:0;overflow:hidden"><p>{s}</p></div>', "width_zero"),
    "max_width_0": (".w{{max-width:0;overflow-x:hidden}}", "<div class=w>{s}</div>", "width_zero"),
    "offscreen_left": ("", '<p style="position:absolute;left:-9999px">{s}</p>', "positioned_offscreen"),
    "offscreen_left_top_auto": (".o{{position:absolute;left:-10000px;top:auto}}", "<a class=o>{s}</a>",
                                "positioned_offscreen"),
    "offscreen_in_positioned": ("", '<div style="position:relative"><span style="position:absolute;'
                                    'left:-9999px">{s}</span></div>', "positioned_offscreen"),
    "offscreen_top": ("", '<p style="position:absolute;top:-9999px">{s}</p>', "positioned_offscreen"),
    "offscreen_fixed": ("", '<p style="position:fixed;left:-9999px">{s}</p>', "positioned_offscreen"),
    "offscreen_relative": ("", '<p style="position:relative;left:-9999px">{s}</p>', "positioned_offscreen"),
    "offscreen_margin": ("", '<p style="position:absolute;margin-left:-9999px">{s}</p>', "positioned_offscreen"),
    "offscreen_margin_shorthand": ("", '<p style="position:absolute;margin:0 0 0 -9999px">{s}</p>',
                                   "positioned_offscreen"),
    "offscreen_inset": ("", '<p style="position:absolute;inset:auto auto auto -9999px">{s}</p>',
                        "positioned_offscreen"),
    "offscreen_em": ("ul ul{{position:absolute;left:-999em}}", "<ul><li><ul><li>{s}</li></ul></li></ul>",
                     "positioned_offscreen"),
    "offscreen_translate": ("", '<p style="transform:translateX(-9999px)">{s}</p>', "positioned_offscreen"),
    "offscreen_var": (":root{{--off:-9999px}}", '<p style="position:absolute;left:var(--off)">{s}</p>',
                      "positioned_offscreen"),
}

# name -> (style text, body html): the sentence is shown
SHOWN = {
    "child_sets_font_size": ("ul{{font-size:0}} li{{font-size:16px;display:inline-block}}", "<ul><li>{s}</li></ul>"),
    "child_sets_rem": ("", '<div style="font-size:0"><p style="font-size:1rem">{s}</p></div>'),
    "form_control_own_size": ("", '<div style="font-size:0"><button>{s}</button></div>'),
    "line_height_0_alone": ("", '<p style="line-height:0">{s}</p>'),
    "small_font": ("", '<p style="font-size:10px">{s}</p>'),
    "clamp_font": ("p{{font-size:0}} .x{{font-size:clamp(1rem, 2vw, 2rem)}}", "<p class=x>{s}</p>"),
    "opacity_half": (".x{{opacity:0}}", '<p style="opacity:.5">{s}</p>'),
    "opacity_overridden": (".x{{opacity:0}} .x.in{{opacity:1}}", "<p class='x in'>{s}</p>"),
    "child_sets_colour": ("", '<div style="color:transparent"><p style="color:#333">{s}</p></div>'),
    "link_in_transparent": ("", '<div style="color:transparent"><a href="/x">{s}</a></div>'),
    "gradient_text": ("", '<h1 style="color:transparent;background:linear-gradient(red,blue);'
                          '-webkit-background-clip:text">{s}</h1>'),
    "text_shadow": ("", '<p style="color:transparent;text-shadow:0 0 2px #000">{s}</p>'),
    "clip_not_positioned": ("", '<p style="clip:rect(0 0 0 0)">{s}</p>'),
    "clip_path_partial": ("", '<p style="clip-path:inset(10%)">{s}</p>'),
    "inline_max_height": ("", '<span style="max-height:0;overflow:hidden">{s}</span>'),
    "max_height_scrolls": ("", '<div style="max-height:0;overflow:auto">{s}</div>'),
    "min_height_wins": ("", '<div style="max-height:0;min-height:3em;overflow:hidden">{s}</div>'),
    "small_indent": ("", '<p style="text-indent:-2em">{s}</p>'),
    "indent_right_aligned": ("", '<h1 style="text-indent:-9999px;text-align:right">{s}</h1>'),
    "scale_half": ("", '<p style="transform:scale(.5)">{s}</p>'),
    "opacity_in_media_print": ("@media print {{ .x {{opacity:0}} }}", "<p class=x>{s}</p>"),
    "width_0_inline": ("", '<span style="width:0;overflow:hidden">{s}</span>'),
    "width_0_overflow_visible": ("", '<div style="width:0">{s}</div>'),
    "width_0_min_width_wins": ("", '<div style="width:0;min-width:20em;overflow:hidden">{s}</div>'),
    "width_0_table": ("", '<table style="width:0;overflow:hidden"><tr><td>{s}</td></tr></table>'),
    "offscreen_right": ("", '<p style="position:absolute;right:-9999px">{s}</p>'),  # the page scrolls to it
    "offscreen_bottom": ("", '<p style="position:absolute;bottom:-9999px">{s}</p>'),
    "offscreen_static": ("", '<p style="left:-9999px">{s}</p>'),  # left does not move a static box
    "offscreen_small": ("", '<p style="position:absolute;left:-200px">{s}</p>'),
    "translate_centre": ("", '<p style="position:absolute;left:50%;transform:translate(-50%,-50%)">{s}</p>'),
    "left_overridden": (".o{{position:absolute;left:-9999px}} .o.in{{left:0}}", "<p class='o in'>{s}</p>"),
}

# name -> (style text, body html): g6 cannot tell, never cited
UNDECIDED = {
    "font_size_unknown_unit": ("", '<div style="font-size:0"><p style="font-size:2cqw">{s}</p></div>'),
    "opacity_container": ("@container (min-width: 10px) {{ .x {{opacity:0}} }}", "<p class=x>{s}</p>"),
    "sr_only_with_padding": ("", '<div style="position:absolute;width:1px;height:1px;overflow:hidden;'
                                 'padding:10px">{s}</div>'),
    "max_height_fixed_child": ("", '<div style="max-height:0;overflow:hidden"><p style="position:fixed">{s}</p>'
                                   "</div>"),
    "indent_long_text": ("", '<div style="text-indent:-9999px">{s}<br>{s}</div>'),
    "color_unknown": ("", '<div style="color:transparent">'
                          '<p style="color:color-mix(in srgb, red, transparent 90%)">{s}</p></div>'),
    "width_0_flex": ("", '<div style="display:flex"><div style="width:0;flex-grow:1;overflow:hidden">{s}</div></div>'),
    "offscreen_stretched": ("", '<p style="position:absolute;left:-9999px;right:0">{s}</p>'),
    "offscreen_long_text": ("", '<p style="position:absolute;left:-9999px">{s} ' + "More words. " * 400 + "</p>"),
    "offscreen_rtl_page": ("", '<div dir=rtl><p style="position:absolute;left:-9999px">{s}</p></div>'),
    "offscreen_percent_of_unknown_box": ("", '<div style="position:relative"><p style="position:absolute;'
                                             'left:-200%">{s}</p></div>'),
    "offscreen_top_in_positioned": ("", '<div style="position:relative"><p style="position:absolute;'
                                        'top:-9999px">{s}</p></div>'),  # the ancestor may be far down the page
    "offscreen_rotated": ("", '<p style="position:absolute;left:-9999px;transform:rotate(180deg)">{s}</p>'),
    "offscreen_fixed_child": ("", '<div style="position:absolute;left:-9999px"><p style="position:fixed;left:0">'
                                  "{s}</p></div>"),
}


def _page(style: str, body: str) -> bytes:
    return (f"<html><head><style>{style}</style></head><body><p>The lead paragraph, shown.</p>{body}"
            "<p>The last paragraph, shown.</p></body></html>").encode()


@pytest.mark.parametrize("name", sorted(HIDDEN))
def test_invisible_text_is_hidden_with_its_reason(name: str) -> None:
    style, body, reason = HIDDEN[name]
    page = _page(style.format(), body.format(s=S))
    for cited in (False, True):
        got = extract_html(page, "http://example.test/", cited=cited)
        assert S not in got.visible and S not in got.text and "The last paragraph, shown." in got.visible
        assert [h.reason for h in got.hidden if S in h.text] == [reason], (cited, got.hidden)
        assert got.unread[reason] >= len(S)
    texts = read_texts(page, "http://example.test/", "text/html")
    hit = texts.hidden_match(S)
    assert hit is not None and hit.reason == reason and texts.visible is not None and S not in texts.visible


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_text_laid_out_and_shown_stays_visible(name: str) -> None:
    style, body = SHOWN[name]
    got = extract_html(_page(style.format(), body.format(s=S)), "http://example.test/", cited=True)
    assert S in got.visible and not [h for h in got.hidden if S in h.text]


@pytest.mark.parametrize("name", sorted(UNDECIDED))
def test_what_g6_cannot_decide_is_kept_in_documents_and_not_cited(name: str) -> None:
    style, body = UNDECIDED[name]
    page = _page(style.format(), body.format(s=S))
    kept = extract_html(page, "http://example.test/")
    assert S in kept.visible
    cited = extract_html(page, "http://example.test/", cited=True)
    assert S not in cited.visible and "The last paragraph, shown." in cited.visible
    assert [h.reason for h in cited.hidden if S in h.text] == [CSS_UNDECIDED]


def test_a_zero_font_list_hides_its_own_words_and_shows_the_items_that_set_a_size() -> None:
    page = _page("", '<ul style="font-size:0">stray <li style="font-size:16px">Item one shown.</li> gap '
                     "<li>Item two unseen.</li></ul>")
    got = extract_html(page, "http://example.test/", cited=True)
    assert "Item one shown." in got.visible and "Item two unseen." not in got.visible
    assert "stray" not in got.visible and "gap" not in got.visible
    assert {h.reason for h in got.hidden if "stray" in h.text or "unseen" in h.text} == {"font_size_zero"}


def test_report_check_calls_a_zero_font_quote_not_found_and_names_the_reason(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE, f'<span style="font-size:0">{S}</span>')),
              "/b": Reply(body=article(QUOTE, extra="<style>.o{opacity:0}</style>").replace(
                  b"</article>", f"<p class=o>{S}</p></article>".encode()))})
    run = check(home, report_of(cite(s.url("/a"), S), cite(s.url("/b"), S), cite(s.url("/a"), QUOTE)), client)
    font, faded, shown = run.verdicts
    assert (font.verdict, font.detail["hidden_in"]) == ("quote_not_found", "font_size_zero")
    assert (faded.verdict, faded.detail["hidden_in"]) == ("quote_not_found", "opacity_zero")
    assert "hidden" in font.reason and font.citation is None and faded.citation is None
    assert shown.verdict == "quote_found"
