"""Attacks on `g6 report check` by a hostile web page: text a reader is never shown, found as the quote.

Issue 37: "a quote found only in hidden text or structured data is not `quote_found`, and says so". The static
reader (``g6.adapters.html.text``) drops ``display:none``, ``visibility:hidden``, ``hidden``, ``aria-hidden``,
``<script>``/``<style>``/``<template>`` and JSON-LD (defended below). The findings are text that Chromium
(``/usr/bin/chromium``, the browser g6's own ``fetch --render`` drives) does not show either, checked once per
case by rendering it with ``g6.fetch.render.fetch_rendered`` and reading the capture's text: the quote was
absent from every one of them, yet each is `quote_found`, exact, and goes into the signed manifest. A
cloaking page (one text for readers, another for machines) gets its hidden sentence certified.

Cases where Chromium *does* show the text (``opacity:0``, ``font-size:0``: laid out, invisible) are left out:
they are the same kind of cloaking, but not decidable from the rendered text either; see the report."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from tests.report.check_helpers import LEAD, check, cite, report_of

Site = Callable[..., LocalSite]
HID = "Water bills fell by three percent in the same quarter"


def page(inner: str, head: str = "") -> bytes:
    return (f"<html><head><title>Bills</title>{head}</head><body><article><h1>Bills</h1><p>{LEAD}</p>{inner}"
            f"<p>{LEAD}</p></article></body></html>").encode()


def verdict_on(home: EvidenceHome, client: CheckedClient, site: Site, body: bytes) -> tuple[str, dict]:
    s = site({"/a": Reply(body=body), "/robots.txt": Reply(404)})
    (v,) = check(home, report_of(cite(s.url("/a"), HID)), client).verdicts
    return v.verdict, dict(v.found or {})


# -- finding 7: elements a browser never renders --------------------------------------------------------------
NEVER_RENDERED = {
    "dialog_not_open": f"<dialog><p>{HID}</p></dialog>",  # dialog:not([open]) { display: none }
    "datalist": f"<datalist id=d><option>{HID}</option></datalist>",  # the UA sheet: display: none
    "noembed": f"<noembed>{HID}</noembed>",
    "noframes": f"<noframes>{HID}</noframes>",
    "ruby_rp": f"<ruby>bills<rp>{HID}</rp><rt>b</rt></ruby>",  # rp is not shown where ruby is supported
    "svg_desc": f"<svg width=10 height=10><desc>{HID}</desc></svg>",  # SVG descriptive elements are not rendered
    "svg_title": f"<svg width=10 height=10><title>{HID}</title></svg>",
    "mathml_annotation": f"<math><semantics><mi>x</mi><annotation>{HID}</annotation></semantics></math>",
    # g6's html_text keeps noscript as text ("a reader without scripts sees it"); every reader with scripts,
    # and g6's own rendered capture, does not: the one case here the module chose on purpose
    "noscript": f"<noscript>{HID}</noscript>",
}


@pytest.mark.parametrize("case", list(NEVER_RENDERED))
def test_a_quote_only_in_an_element_a_browser_never_renders_is_not_found(
        home: EvidenceHome, client: CheckedClient, site: Site, case: str) -> None:
    """The page hides its sentence in an element the HTML rendering rules never show (the UA style sheet's
    ``display: none`` for ``dialog:not([open])``, ``datalist``, ``noembed``, ``noframes``, ``rp``; SVG's
    ``desc``/``title`` and MathML's ``annotation`` are not rendered), or in ``noscript``. The static reader
    counts their text as visible, so the quote is `quote_found`. These elements belong with ``template`` in
    ``_DROP_TAGS`` (their text kept in ``hidden`` with the reason, so the verdict is `quote_not_found` with
    ``detail.hidden_in``)."""
    verdict, found = verdict_on(home, client, site, page(NEVER_RENDERED[case]))
    assert verdict != "quote_found", found


# -- finding 8: CSS the reader does not apply ---------------------------------------------------------------
NOT_APPLIED = {
    "custom_property": f"<style>.h{{--d:none; display:var(--d)}}</style><div class=h>{HID}</div>",
    "cascade_layer": f"<style>@layer base {{ .h {{display:none}} }}</style><div class=h>{HID}</div>",
    "supports_block": f"<style>@supports (display:block) {{ .h {{display:none}} }}</style><div class=h>{HID}</div>",
    "media_true_everywhere": f"<style>@media (min-width:0px) {{ .h {{display:none}} }}</style>"
                             f"<div class=h>{HID}</div>",
    "css_nesting": f"<style>.p {{ & .h {{display:none}} }}</style><div class=p><div class=h>{HID}</div></div>",
    "content_visibility": f'<div style="content-visibility:hidden">{HID}</div>',
    "import_data_url": f'<style>@import url("data:text/css,.h%7Bdisplay:none%7D");</style><div class=h>{HID}</div>',
    "link_data_url": f'<link rel=stylesheet href="data:text/css,.h%7Bdisplay:none%7D"><div class=h>{HID}</div>',
}


@pytest.mark.parametrize("case", list(NOT_APPLIED))
def test_a_quote_hidden_by_css_the_reader_does_not_apply_is_not_found(
        home: EvidenceHome, client: CheckedClient, site: Site, case: str) -> None:
    """The page's own CSS hides the sentence in ways every current browser applies and ``html_text`` does
    not: a custom property (``display: var(--d)``), a cascade layer, ``@supports``, a media query true on
    every screen, CSS nesting, ``content-visibility: hidden``, and a style sheet in a ``data:`` URL (inline,
    nothing fetched). The module's docstring lists some of these as not applied; the verdict does not say so:
    `quote_found`, exact. When a page has CSS the reader could not apply (a rule it skipped, a ``var()`` in
    ``display``/``visibility``, an at-rule it does not read, a ``data:`` sheet), a quote found only in text
    such CSS could reach must not be `quote_found` on the static text (render it, or say the page's CSS was
    not applied and fail closed)."""
    verdict, found = verdict_on(home, client, site, page(NOT_APPLIED[case]))
    assert verdict != "quote_found", found


# -- finding 16: a page that sends the reader on at once ------------------------------------------------------
def test_a_page_that_refreshes_at_once_to_another_address_is_not_the_page(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """The cited URL answers 200 with ``<meta http-equiv="refresh" content="0; url=/">`` (the redirect of sites
    that cannot send a 3xx, and of soft-404s): a browser goes to the home page before showing anything. Its
    body holds the sentence, which no reader ever sees, and the verdict is `quote_found` on it. A refresh of
    0 (or a few) seconds to another address is a redirect: the redirect rule applies to its target
    (here the home page: `redirected_elsewhere`), and the refresh page's own text is not the page's."""
    verdict, found = verdict_on(home, client, site,
                                page(f"<p>{HID}</p>", head='<meta http-equiv="refresh" content="0; url=/">'))
    assert verdict != "quote_found", found


# -- defended ---------------------------------------------------------------------------------------------
DEFENDED = {
    "inline_display_none": f'<div style="display:none">{HID}</div>',
    "inline_display_none_comment": f'<div style="display:/**/none">{HID}</div>',
    "inline_display_none_escaped": f'<div style="display:\\6e one">{HID}</div>',
    "sheet_display_none_after": f"<div class=h>{HID}</div><style>.h{{display:none}}</style>",
    "sheet_important_beats_inline": f'<style>.h{{display:none!important}}</style><div class=h style="display:block">'
                                    f"{HID}</div>",
    "is_selector": f"<style>:is(.h) {{display:none}}</style><div class=h>{HID}</div>",
    "visibility_hidden": f'<div style="visibility:hidden">{HID}</div>',
    "hidden_attribute": f"<div hidden>{HID}</div>",
    "aria_hidden": f'<div aria-hidden="true">{HID}</div>',
    "template": f"<template><p>{HID}</p></template>",
    "script": f"<script>var s = '{HID}';</script>",
    "style": f"<style>/* {HID} */</style>",
    "json_ld": '<script type="application/ld+json">' + json.dumps({"@type": "NewsArticle", "description": HID})
               + "</script>",
    "comment": f"<!-- {HID} -->",
    "img_alt": f'<img alt="{HID}">',
    "title_attribute": f'<span title="{HID}">x</span>',
    "input_value": f'<input type=hidden value="{HID}">',
    "iframe_srcdoc": f'<iframe srcdoc="{HID}"></iframe>',
}


@pytest.mark.parametrize("case", list(DEFENDED))
def test_a_quote_only_in_text_the_reader_knows_is_hidden_is_not_found(
        home: EvidenceHome, client: CheckedClient, site: Site, case: str) -> None:
    """Defended: hidden by inline or sheet CSS (comments and escapes in the value, the cascade with
    ``!important``, a rule after the element, ``:is()``), by ``hidden``/``aria-hidden``, inside
    ``template``/``script``/``style``, in JSON-LD, a comment or an attribute value: never `quote_found`."""
    verdict, found = verdict_on(home, client, site, page(DEFENDED[case]))
    assert verdict == "quote_not_found", found


def test_the_title_is_not_the_page_text(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """Defended: the ``<title>`` is kept apart from the text a quote is looked for in."""
    body = f"<html><head><title>{HID}</title></head><body><article><p>{LEAD}</p></article></body></html>".encode()
    verdict, found = verdict_on(home, client, site, body)
    assert verdict == "quote_not_found", found
