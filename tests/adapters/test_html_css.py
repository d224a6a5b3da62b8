"""The page's own CSS as a browser applies it (red-team finding 8): ``g6.adapters.html.css``.

Each case is a piece of a page that shows or hides one sentence. ``CERTAIN`` cases are decided by the static
reader, and the same page rendered in Chromium (``/usr/bin/chromium``, through ``g6 fetch --render`` on a
loopback site) must agree: a sentence the reader calls hidden is not in the browser's text, one it calls
shown is. ``UNDECIDED`` cases are those g6 cannot decide from the bytes: their text is never cited (kept in a
fetch's documents), whatever a browser would do. One rendered page holds every case (each its own class)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.adapters.html.css import MAX_VALUE
from g6.adapters.html.css_conditions import media_matches
from g6.adapters.html.text import CSS_UNDECIDED, extract_html
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import capture_text, fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]

# name -> (style text, body html); {c} is the case's class, {s} its sentence
HIDDEN = {
    "custom_property": (".{c}{{--d:none; display:var(--d)}}", "<div class={c}>{s}</div>"),
    "custom_property_inherited": (".{c}-p{{--d:none}} .{c}{{display:var(--d)}}",
                                  "<div class={c}-p><div class={c}>{s}</div></div>"),
    "custom_property_fallback": (".{c}{{display:var(--{c}-unset, none)}}", "<div class={c}>{s}</div>"),
    "custom_property_chain": (":root{{--{c}-a:var(--{c}-b)}} :root{{--{c}-b:none}} .{c}{{display:var(--{c}-a)}}",
                              "<div class={c}>{s}</div>"),
    "custom_property_case": (".{c}{{--D:none; display:var(--D)}}", "<div class={c}>{s}</div>"),
    "cascade_layer": ("@layer base {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "layer_important_beats_unlayered": (".{c}{{display:block !important}} "
                                        "@layer a {{ .{c} {{display:none !important}} }}", "<div class={c}>{s}</div>"),
    "later_layer_wins": ("@layer a, b; @layer b {{ .{c} {{display:none}} }} @layer a {{ .{c} {{display:block}} }}",
                         "<div class={c}>{s}</div>"),
    "supports": ("@supports (display:block) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "supports_not": ("@supports not (display:no-such-value) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "media_min_width_0": ("@media (min-width:0px) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "media_desktop": ("@media screen and (min-width: 1024px) {{ .{c} {{display:none}} }}",
                      "<div class={c}>{s}</div>"),
    "media_range": ("@media (900px <= width <= 1400px) {{ .{c} {{visibility:hidden}} }}", "<div class={c}>{s}</div>"),
    "nesting": (".{c}-p {{ & .{c} {{display:none}} }}", "<div class={c}-p><div class={c}>{s}</div></div>"),
    "nesting_relative": (".{c}-p {{ > .{c} {{display:none}} }}", "<div class={c}-p><p class={c}>{s}</p></div>"),
    "content_visibility": ("", '<div style="content-visibility:hidden"><p class={c}>{s}</p></div>'),
    "import_data_url": ("", '<style>@import url("data:text/css,.{c}%7Bdisplay:none%7D");</style>'
                            "<div class={c}>{s}</div>"),
    "link_data_url": ("", '<link rel=stylesheet href="data:text/css,.{c}%7Bdisplay:none%7D"><div class={c}>{s}</div>'),
    "visibility_collapse": (".{c}{{visibility:collapse}}", "<div class={c}>{s}</div>"),
    "where_selector": (":where(.{c}) {{display:none}}", "<div class={c}>{s}</div>"),
    "not_hover": (".{c}:not(:hover) {{display:none}}", "<div class={c}>{s}</div>"),
    # a sheet a browser with scripts on never applies cannot show what another hides
    "style_in_noscript": (".{c}{{display:none}}", "<noscript><style>.{c}{{display:block !important}}</style>"
                                                  "</noscript><div class={c}>{s}</div>"),
    "style_of_another_type": (".{c}{{display:none}}", '<style type="text/plain">.{c}{{display:block !important}}'
                                                      "</style><div class={c}>{s}</div>"),
    # text moved off the page's left or top edge (css_offscreen) or a zero-width clipping box
    "offscreen_left": (".{c}{{position:absolute;left:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_pattern": (".{c}{{position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden}}",
                          "<a class={c} href=#x>{s}</a>"),
    "offscreen_in_positioned": (".{c}{{position:absolute;left:-9999px}}",
                                "<div style='position:relative'><span class={c}>{s}</span></div>"),
    "offscreen_top": (".{c}{{position:absolute;top:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_fixed": (".{c}{{position:fixed;top:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_relative": (".{c}{{position:relative;left:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_margin": (".{c}{{position:absolute;margin-left:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_em": (".{c}{{position:absolute;left:-999em}}", "<ul><li><ul class={c}><li>{s}</li></ul></li></ul>"),
    "offscreen_translate": (".{c}{{transform:translateX(-9999px)}}", "<p class={c}>{s}</p>"),
    "offscreen_percent": (".{c}{{position:absolute;left:-200%}}", "<span class={c}>{s}</span>"),
    "width_zero": (".{c}{{width:0;overflow:hidden}}", "<div class={c}><p>{s}</p></div>"),
    "max_width_zero": (".{c}{{max-width:0;overflow-x:hidden}}", "<div class={c}>{s}</div>"),
}
SHOWN = {
    "unlayered_beats_layer": (".{c}{{display:block}} @layer a {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "earlier_layer_loses": ("@layer a, b; @layer a {{ .{c} {{display:none}} }} @layer b {{ .{c} {{display:block}} }}",
                            "<div class={c}>{s}</div>"),
    "unknown_custom_property": (".{c}{{display:var(--{c}-nowhere)}}", "<div class={c}>{s}</div>"),
    "custom_property_cycle": (".{c}{{--a:var(--b); --b:var(--a); display:var(--a)}}", "<div class={c}>{s}</div>"),
    "invalid_after_substitution": (".{c}{{--d:nonsense; display:var(--d)}}", "<div class={c}>{s}</div>"),
    "media_phone": ("@media (max-width: 600px) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "media_print": ("@media print {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "media_dark": ("@media (prefers-color-scheme: dark) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "supports_false": ("@supports (display:no-such-value) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "hover_only": (".{c}:hover {{display:none}}", "<div class={c}>{s}</div>"),
    "invalid_display": (".{c}{{display:nonsense}}", "<div class={c}>{s}</div>"),
    "pseudo_element": (".{c}::before {{display:none}} .{c}:after {{display:none}}", "<div class={c}>{s}</div>"),
    "import_after_a_rule": ("", '<style>.x{{color:red}} @import url("data:text/css,.{c}%7Bdisplay:none%7D");</style>'
                                '<div class={c}>{s}</div>'),
    "inline_beats_sheet": (".{c}{{display:none}}", '<div class={c} style="display:block">{s}</div>'),
    "content_visibility_auto": ("", '<div style="content-visibility:auto"><p class={c}>{s}</p></div>'),
    "offscreen_right": (".{c}{{position:absolute;right:-9999px}}", "<p class={c}>{s}</p>"),  # the page scrolls
    "offscreen_bottom": (".{c}{{position:absolute;bottom:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_static": (".{c}{{left:-9999px}}", "<p class={c}>{s}</p>"),
    "offscreen_small": (".{c}{{position:absolute;left:-10px}}", "<p class={c}>{s}</p>"),
    "translate_centre": (".{c}{{position:absolute;left:50%;top:50%;transform:translate(-50%,-50%)}}",
                         "<p class={c}>{s}</p>"),
    "width_zero_inline": (".{c}{{width:0;overflow:hidden}}", "<span class={c}>{s}</span>"),
    "width_zero_visible": (".{c}{{width:0}}", "<div class={c}>{s}</div>"),
}
UNDECIDED = {
    "container_query": ("@container (min-width: 10px) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "unknown_pseudo_class": (".{c}:-moz-window-inactive {{display:none}}", "<div class={c}>{s}</div>"),
    "unknown_media_feature": ("@media (color-gamut: p3) {{ .{c} {{display:none}} }}", "<div class={c}>{s}</div>"),
    "hiding_animation": ("@keyframes {c}k {{ to {{ visibility: hidden }} }} .{c}{{animation: {c}k 1ms forwards}}",
                         "<div class={c}>{s}</div>"),
    "revert_layer": ("@layer a {{ .{c}{{display:none}} }} .{c}{{display:revert-layer}}", "<div class={c}>{s}</div>"),
    "registered_property": ("@property --{c}-d {{ syntax: '*'; inherits: false }} .{c}-p{{--{c}-d:none}} "
                            ".{c}{{display:var(--{c}-d)}}", "<div class={c}-p><div class={c}>{s}</div></div>"),
}


def sentence(name: str) -> str:
    return f"The sentence of case {name.replace('_', ' ')} ends here."


def page(cases: dict[str, tuple[str, str]]) -> bytes:
    css = "\n".join(style.format(c=f"k{i}", s="") for i, (style, _) in enumerate(cases.values()))
    body = "\n".join(f"<section>{html.format(c=f'k{i}', s=sentence(name))}</section>"
                     for i, (name, (_, html)) in enumerate(cases.items()))
    return (f"<!doctype html><html><head><title>Cases</title><style>{css}</style></head><body><main>"
            f"<p>The page's lead paragraph is always shown to every reader.</p>{body}</main></body></html>").encode()


ALL = {**HIDDEN, **SHOWN, **UNDECIDED}


def test_the_static_reader_decides_each_case() -> None:
    got = extract_html(page(ALL), "https://e.org/", "text/html", cited=True)
    fetched = extract_html(page(ALL), "https://e.org/", "text/html")
    for name in ALL:
        s = sentence(name)
        where = [h.reason for h in got.hidden if s in h.text]
        if name in SHOWN:
            assert s in got.visible and not where, name
        elif name in HIDDEN:
            assert s not in got.visible and where and where[0] != CSS_UNDECIDED, (name, where)
        else:  # never cited, but a fetch's documents keep it
            assert s not in got.visible and where == [CSS_UNDECIDED], (name, where)
            assert s in fetched.visible, name
    assert "style_rules_not_applied" not in got.unread


def test_chromium_agrees_with_every_decided_case(home: EvidenceHome, client: CheckedClient, site: Site,
                                                 pool: BrowserPool) -> None:
    """The reference: Chromium at g6's render viewport (1280×800, light scheme) shows exactly the SHOWN cases'
    sentences and none of the HIDDEN ones."""
    cases = {**HIDDEN, **SHOWN}
    s = site({"/p": Reply(body=page(cases)), "/robots.txt": Reply(404)})
    captured = fetch_rendered(home, client, pool, s.url("/p"), limits=RenderLimits(deadline=30))
    shown = capture_text(home.store, home.ledger.get(captured.receipt_id))
    assert shown is not None and "lead paragraph" in shown.text
    text = " ".join(shown.text.split())
    wrong = [n for n in cases if (sentence(n) in text) != (n in SHOWN)]
    assert not wrong, wrong


def test_bounds_past_which_a_value_is_not_worked_out() -> None:
    """A custom property that doubles at each step is not expanded past ``MAX_VALUE``: undecided."""
    chain = "".join(f"--v{i}:var(--v{i + 1}) var(--v{i + 1});" for i in range(20)) + "--v20:none;"
    body = f"<html><body><p>Lead.</p><div style='{chain} display:var(--v0)'>Doubled words here.</div></body></html>"
    page_ = extract_html(body.encode(), "https://e.org/", "text/html", cited=True)
    assert "Doubled words" not in page_.visible
    assert [h.reason for h in page_.hidden if "Doubled" in h.text] == [CSS_UNDECIDED]
    assert MAX_VALUE < 2 ** 20


@pytest.mark.parametrize(("query", "holds"), [
    ("", True), ("screen", True), ("print", False), ("all and (min-width: 0)", True), ("(max-width: 600px)", False),
    ("not print", True), ("only screen and (min-width: 80em)", True), ("(min-width: 81em)", False),
    ("(orientation: landscape)", True), ("(hover: hover) and (pointer: fine)", True), ("tv", False),
    ("(min-resolution: 2dppx)", False), ("(prefers-reduced-motion: reduce)", False), ("(color-gamut: p3)", None),
    ("(min-width: 10furlongs)", None), ("print, (min-width: 0)", True)])
def test_media_queries_for_the_reference_screen(query: str, holds: bool | None) -> None:
    assert media_matches(query) is holds
