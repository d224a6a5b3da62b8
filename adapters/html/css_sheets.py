"""A page's own style sheets read into the rules that can hide text: what :mod:`g6.adapters.html.css` applies.

Read: every ``<style>`` element and every ``data:`` style sheet (a ``<link rel=stylesheet>`` or an
``@import`` whose URL is ``data:``, decoded in place, nothing fetched), in document order, and the inline
``style`` attributes; external style sheets are never fetched. Parsed with tinycss2. A sheet that names
none of ``display``, ``visibility`` or ``@import`` cannot hide anything and is not parsed, unless it sets a
custom property or a keyframes animation that a hiding declaration reads (read in a second pass).

``@media`` (the ``media`` of a ``<style>``, ``<link>`` or ``@import`` too) and ``@supports`` are evaluated
for the reference reader (:mod:`g6.adapters.html.css_conditions`); a rule under a false condition is left out,
one under a condition g6 cannot decide (``@container``, ``@scope``, a feature it does not know) is kept
and marked uncertain (``Rule.unsure``). Cascade layers (``@layer``, ``@import … layer(…)``) give each
rule its layer's place; CSS nesting (``&``, relative selectors, conditional rules inside style rules) is
resolved to whole selectors with their specificity. Declarations a browser drops as invalid are dropped.

Bounded: the first ``MAX_STYLE_CHARS`` of style text are read (a ``data:`` sheet counts), at most
``MAX_NESTING`` levels; what is past the bound is counted (``Sheets.chars_not_read``).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

import cssselect
import tinycss2
from lxml import etree
from lxml import html as lxml_html

from g6.adapters.html.css_conditions import (
    CONTENT_VISIBILITY,
    CSS_WIDE,
    VISIBILITY,
    Tri,
    display_ok,
    media_matches,
    supports_matches,
)
from g6.adapters.html.css_invisible import PROPS as INVISIBLE
from g6.adapters.html.css_invisible import WORDS as INVISIBLE_WORDS

MAX_STYLE_CHARS = 512 * 1024
MAX_STYLE_VISITS = 2_500_000
MAX_NESTING = 8
HIDING = {"display": ("none",), "visibility": ("hidden", "collapse"), "content-visibility": ("hidden",)}
_VALID = {"display": display_ok, "visibility": lambda v: v in VISIBILITY or v in CSS_WIDE,
          "content-visibility": lambda v: v in CONTENT_VISIBILITY or v in CSS_WIDE}
ANIMATION = ("animation", "animation-name")
_LAST = 1 << 30  # the layer index of "not in a layer" (and of a layer's own rules beside its sub-layers)
_UNSURE_AT = {"container", "scope"}

class _Translator(cssselect.HTMLTranslator):
    """cssselect's HTML translator with the pseudo-classes a browser at rest answers the same way."""

    def _never(self, xpath: Any) -> Any:
        return xpath.add_condition("0")

    xpath_focus_within_pseudo = xpath_focus_visible_pseudo = xpath_popover_open_pseudo = _never
    xpath_modal_pseudo = xpath_fullscreen_pseudo = xpath_target_within_pseudo = _never

    def xpath_defined_pseudo(self, xpath: Any) -> Any:
        return xpath  # scripts on: every element, custom ones too, is defined

    def xpath_open_pseudo(self, xpath: Any) -> Any:
        return xpath.add_condition("@open")

    def xpath_any_link_pseudo(self, xpath: Any) -> Any:
        return self.xpath_link_pseudo(xpath)


TRANSLATOR = _Translator()


@dataclass(frozen=True, slots=True)
class Decl:
    prop: str
    value: str  # trimmed; lower-cased for a hiding property without var(), else as written
    important: bool


Spec = tuple[int, int, int]
Selector = tuple[str, "Spec | None"]  # one complex selector, nesting resolved; its specificity when nested


@dataclass(slots=True)
class Rule:
    selectors: tuple[Selector, ...]
    decls: tuple[Decl, ...]
    layer: tuple[int, ...]
    order: tuple[int, ...]
    data: bool  # from a data: style sheet (else a <style>)
    unsure: str | None  # the condition g6 could not evaluate, if any


def _declarations(items: Any) -> tuple[Decl, ...]:
    """The declarations that matter of a block's contents: hiding properties with a value a browser keeps
    (or a ``var()``, decided per element), custom properties, animations."""
    out: list[Decl] = []
    for d in items:
        if d.type != "declaration":
            continue
        if d.name.startswith("--"):
            out.append(Decl(d.name, tinycss2.serialize(d.value).strip(), bool(d.important)))
        elif d.lower_name in HIDING or d.lower_name in ANIMATION or d.lower_name in INVISIBLE:
            written = " ".join(tinycss2.serialize(d.value).split())
            value = written.lower()
            if "var(" in value or d.lower_name in ANIMATION:
                value = written  # custom property and keyframes names are case-sensitive
            elif d.lower_name in HIDING and not _VALID[d.lower_name](value):
                continue  # invalid: a browser drops it, so it hides nothing and overrides nothing
            out.append(Decl(d.lower_name, value, bool(d.important)))
    return tuple(out)


def _data_css(url: str, room: int) -> str | None:
    """The text of a ``data:`` URL (percent-encoded or base64), at most ``room`` characters; None for
    any other URL."""
    url = url.strip()
    if url[:5].lower() != "data:":
        return None
    head, sep, data = url[5:].partition(",")
    if not sep:
        return ""
    raw = unquote_to_bytes(data[: max(0, room) * 12 + 16])  # a character is at most 12 bytes percent-encoded
    if head.lower().replace(" ", "").endswith(";base64"):
        try:
            raw = base64.b64decode(raw + b"=" * (-len(raw) % 4), validate=False)
        except (binascii.Error, ValueError):
            return ""
    return raw.decode("utf-8", "replace")[:max(0, room)]


def _split_commas(tokens: list[Any]) -> list[str]:
    parts: list[list[Any]] = [[]]
    for t in tokens:
        if t.type == "literal" and t.value == ",":
            parts.append([])
        else:
            parts[-1].append(t)
    return [s for s in (tinycss2.serialize(p).strip() for p in parts) if s]


class Sheets:
    """The page's style rules in cascade order (``order``), conditions evaluated, nesting resolved."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self.read = 0
        self.chars_not_read = 0
        self.layers: dict[tuple[str, ...], int] = {}
        self.anonymous = 0
        self.hiding_keyframes: set[str] = set()
        self.registered: set[str] = set()  # custom properties with an @property rule (may not inherit)
        self.unsure_nesting = 0
        # the @import rules in place (at the top of their sheet), by id; the rule is kept so its id is not reused
        self.imports: dict[int, Any] = {}

    def take(self, css: str) -> str:
        """``css`` within what is left of the ``MAX_STYLE_CHARS`` bound (the part past it is not read)."""
        if self.read + len(css) > MAX_STYLE_CHARS:
            self.chars_not_read += self.read + len(css) - MAX_STYLE_CHARS
            css = css[:max(0, MAX_STYLE_CHARS - self.read)]
        self.read += len(css)
        return css

    def sheet(self, css: str, data: bool, order: tuple[int, ...], layer: tuple[str, ...] = (),
              unsure: str | None = None, depth: int = 0) -> None:
        items = tinycss2.parse_stylesheet(self.take(css), skip_comments=True, skip_whitespace=True)
        for item in items:  # @import counts only before every other rule but @charset and @layer a, b;
            if item.type == "at-rule" and item.lower_at_keyword == "import":
                self.imports[id(item)] = item
            elif not (item.type == "at-rule" and (item.lower_at_keyword == "charset" or (
                    item.lower_at_keyword == "layer" and item.content is None))):
                break
        self._block(items, None, data, order, layer, unsure, depth)

    def _layer(self, path: tuple[str, ...]) -> tuple[int, ...]:
        """The cascade position of layer ``path``: each name's index among its siblings, in order of first
        appearance; the layer's own rules come after its sub-layers (``_LAST``)."""
        key: list[int] = []
        for i in range(1, len(path) + 1):
            if path[:i] not in self.layers:
                self.layers[path[:i]] = sum(1 for p in self.layers if len(p) == i and p[:i - 1] == path[:i - 1])
            key.append(self.layers[path[:i]])
        return (*key, _LAST)

    def _block(self, items: list[Any], parents: list[Selector] | None, data: bool, order: tuple[int, ...],
               layer: tuple[str, ...], unsure: str | None, depth: int) -> None:
        if parents is not None:
            decls = _declarations(items)
            if decls:
                self.rules.append(Rule(tuple(parents), decls, self._layer(layer), (*order, 0), data, unsure))
        for n, item in enumerate(items, 1):
            at = (*order, n)
            if item.type == "qualified-rule" and item.content is not None:
                self._style_rule(item, parents, data, at, layer, unsure, depth)
            elif item.type == "at-rule" and depth < MAX_NESTING:
                self._at_rule(item, parents, data, at, layer, unsure, depth)

    def _style_rule(self, rule: Any, parents: list[Selector] | None, data: bool, order: tuple[int, ...],
                    layer: tuple[str, ...], unsure: str | None, depth: int) -> None:
        selectors: list[Selector] = [(t, None) for t in _split_commas(rule.prelude)]
        if parents is not None:
            selectors, approximate = _nest(parents, [t for t, _ in selectors])
            if not selectors:
                self.unsure_nesting += 1  # past the bound on nested selectors: not applied
            if approximate and unsure is None:
                unsure = "a nested selector g6 reads only approximately"
        if not selectors or depth >= MAX_NESTING:
            return
        items = tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
        self._block(items, selectors, data, order, layer, unsure, depth + 1)

    def _at_rule(self, rule: Any, parents: list[Selector] | None, data: bool, order: tuple[int, ...],
                 layer: tuple[str, ...], unsure: str | None, depth: int) -> None:
        name = rule.lower_at_keyword
        prelude = " ".join(tinycss2.serialize(rule.prelude).split())
        if name in ("keyframes", "-webkit-keyframes"):
            low = tinycss2.serialize(rule.content or []).lower()
            if any(p in low for p in HIDING):
                self.hiding_keyframes.add(prelude.strip("\"'"))
            return
        if name == "property":
            self.registered.add(prelude)
            return
        if name == "import":
            if id(rule) in self.imports:
                self._import(rule, order, layer, unsure, depth)
            return
        if name == "layer":
            names = [tuple(n.strip().split(".")) for n in prelude.split(",") if n.strip()]
            if rule.content is None:  # @layer a, b; declares the order
                for n in names:
                    self._layer((*layer, *n))
                return
            if not names:
                self.anonymous += 1
                names = [(f"\0anonymous {self.anonymous}",)]
            inner = (*layer, *names[0])
        elif name in ("media", "supports") or name in _UNSURE_AT:
            inner = layer
            if name == "media":
                holds = media_matches(rule.prelude)
            elif name == "supports":
                holds = supports_matches(rule.prelude, _selector_ok)
            else:
                holds = None
            if holds is False:
                return
            if holds is None and unsure is None:
                unsure = f"@{name} {prelude}"[:200]
        else:
            return  # @font-face, @page…, @starting-style, and at-rules a browser does not know: no rules for elements
        if rule.content is None:
            return
        if parents is None:
            items = tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True)
        else:
            items = tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True)
        self._block(items, parents, data, order, inner, unsure, depth + 1)

    def _import(self, rule: Any, order: tuple[int, ...], layer: tuple[str, ...], unsure: str | None,
                depth: int) -> None:
        """``@import url("data:…") [layer|layer(x)] [supports(…)] [media]``: the data: sheet read in place."""
        toks = [t for t in rule.prelude if t.type not in ("whitespace", "comment")]
        if not toks:
            return
        first, rest = toks[0], toks[1:]
        url = first.value if first.type in ("url", "string") else (
            tinycss2.serialize(first.arguments).strip().strip("\"'") if first.type == "function"
            and first.lower_name == "url" else None)
        css = _data_css(url, MAX_STYLE_CHARS - self.read) if isinstance(url, str) else None
        if css is None:
            return  # an external sheet: never fetched
        inner = layer
        if rest and rest[0].type == "ident" and rest[0].lower_value == "layer":
            self.anonymous += 1
            inner, rest = (*layer, f"\0anonymous {self.anonymous}"), rest[1:]
        elif rest and rest[0].type == "function" and rest[0].lower_name == "layer":
            inner, rest = (*layer, *tinycss2.serialize(rest[0].arguments).strip().split(".")), rest[1:]
        if rest and rest[0].type == "function" and rest[0].lower_name == "supports":
            holds = supports_matches(rest[0].arguments, _selector_ok)
            if holds is False:
                return
            unsure = unsure or (None if holds else "@import supports(…)")
            rest = rest[1:]
        holds = media_matches(rest)
        if holds is False:
            return
        unsure = unsure or (None if holds else f"@import … {tinycss2.serialize(rest).strip()}"[:200])
        self.sheet(css, True, order, inner, unsure, depth + 1)


def _selector_ok(text: str) -> Tri:
    try:
        for sel in cssselect.parse(text):
            TRANSLATOR.selector_to_xpath(sel)
    except (cssselect.SelectorError, cssselect.xpath.ExpressionError):
        return None
    return True


def _nest(parents: list[Selector], children: list[str]) -> tuple[list[Selector], bool]:
    """Nested selectors made whole: ``&`` replaced by each parent, a relative selector put after it. The
    specificity is the child's own plus the highest of the parents' (``&`` is ``:is(parents)``). Textual
    replacement reads ``.x &`` under a parent with a combinator more narrowly than ``:is()``: such a rule
    is approximate (uncertain). More than 256 selectors from one nesting: none (not applied, counted)."""
    top = max((specificity(t, s) for t, s in parents), default=(0, 0, 0))
    out: list[Selector] = []
    approximate = False
    for c in children:
        own = specificity(c.replace("&", "*") if "&" in c else c, None)
        spec = (own[0] + top[0], own[1] + top[1], own[2] + top[2])
        for p, _ in parents:
            if "&" in c:
                approximate = approximate or (not c.lstrip().startswith("&") and any(ch in p for ch in " >+~"))
                out.append((c.replace("&", p), spec))
            else:
                out.append((f"{p} {c}", spec))
            if len(out) > 256:
                return [], False
    return out, approximate


def specificity(text: str, known: Spec | None) -> Spec:
    if known is not None:
        return known
    try:
        return max((s.specificity() for s in cssselect.parse(text)), default=(0, 0, 0))
    except cssselect.SelectorError:
        return (0, 0, 0)


def strip_pseudo_classes(text: str) -> str | None:
    """``text`` with every pseudo-class replaced by one that always holds: a selector matching at least
    what ``text`` matches; None when it names a pseudo-element (a rule for generated content)."""
    toks = tinycss2.parse_component_value_list(text)
    out: list[Any] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.type == "literal" and t.value == ":":
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt is not None and nxt.type == "literal" and nxt.value == ":":
                return None
            if nxt is not None and nxt.type in ("ident", "function"):
                out.append(tinycss2.parse_component_value_list(":not(#g6-no-such-id)"))
                i += 2
                continue
        out.append([t])
        i += 1
    return "".join(tinycss2.serialize(x) for x in out)


# -- the page's sheets and inline styles ------------------------------------------------------------
_WORDS = ("display", "visibility", "@import", *INVISIBLE_WORDS)


def _applies(el: lxml_html.HtmlElement) -> bool:
    """Whether a browser with scripts on applies this ``<style>`` or ``<link>``: not one inside ``<noscript>`` or
    ``<template>`` (never parsed as elements there), not one whose ``type`` is another language than CSS."""
    kind = (el.get("type") or "").split(";")[0].strip().lower()
    if kind not in ("", "text/css"):
        return False
    return not any(isinstance(a.tag, str) and a.tag.lower() in ("noscript", "template") for a in el.iterancestors())


def _sheet_sources(root: lxml_html.HtmlElement) -> Iterator[tuple[int, str, bool, str | None]]:
    """(document position, css, from a data: URL, media) of each ``<style>`` and ``<link rel=stylesheet
    href="data:…">`` (not ``alternate``, not ``disabled``) a browser applies (``_applies``), in document order."""
    for n, el in enumerate(root.iter("style", "link")):
        if not _applies(el):
            continue
        if el.tag == "style":
            yield n, el.text_content() or "", False, el.get("media")
            continue
        rel = (el.get("rel") or "").lower().split()
        if "stylesheet" in rel and "alternate" not in rel and el.get("disabled") is None:
            css = _data_css(el.get("href") or "", MAX_STYLE_CHARS)
            if css is not None:
                yield n, css, True, el.get("media")


def read_sheets(root: lxml_html.HtmlElement, wanted: tuple[str, ...] = _WORDS,
                done: set[int] | None = None, sheets: Sheets | None = None) -> tuple[Sheets, set[int]]:
    """The rules of every sheet holding one of ``wanted`` (a sheet without them cannot hide anything and
    is not parsed) and not in ``done``; and the positions of the sheets read."""
    sheets = sheets or Sheets()
    done = set() if done is None else done
    for n, css, data, media in _sheet_sources(root):
        if n in done:
            continue
        low = css.lower()
        if not any(w in low for w in wanted):
            continue
        done.add(n)
        holds = media_matches(media or "")
        if holds is not False:
            sheets.sheet(css, data, (n,), unsure=None if holds else f'media="{media}"'[:200])
    return sheets, done


def _var_names(value: str) -> set[str]:
    out: set[str] = set()
    for t in tinycss2.parse_component_value_list(value):
        if t.type == "function":
            if t.lower_name == "var":
                args = [a for a in t.arguments if a.type not in ("whitespace", "comment")]
                if args and args[0].type == "ident":
                    out.add(args[0].value)
            out |= _var_names(tinycss2.serialize(t.arguments))
    return out


def needed_properties(decls: list[Decl], read: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The custom properties the hiding declarations (and those of ``read``) read, and those they read in turn."""
    need: set[str] = set()
    for d in decls:
        if (d.prop in HIDING or d.prop in read) and "var(" in d.value:
            need |= _var_names(d.value)
    custom = [d for d in decls if d.prop.startswith("--") and "var(" in d.value]
    grew = True
    while grew:
        grew = False
        for d in custom:
            if d.prop in need:
                more = _var_names(d.value) - need
                if more:
                    need |= more
                    grew = True
    return need


def inline_styles(root: lxml_html.HtmlElement) -> list[tuple[etree._Element, tuple[Decl, ...]]]:
    out = []
    for el in root.iter():
        style = el.get("style") if isinstance(el.tag, str) else None
        if style and any(w in style.lower() for w in ("display", "visibility", "--", "animation", *INVISIBLE_WORDS)):
            decls = _declarations(tinycss2.parse_blocks_contents(style, skip_comments=True, skip_whitespace=True))
            if decls:
                out.append((el, decls))
    return out
