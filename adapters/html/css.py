"""What a page's own CSS hides from a reader, and what it may hide where g6 cannot tell.

The page's style sheets and inline styles are read into rules (:mod:`g6.adapters.html.css_sheets`: ``<style>``,
``data:`` sheets, ``@import`` of a ``data:`` URL; ``@media`` and ``@supports`` evaluated for the reference
reader of :mod:`g6.adapters.html.css_conditions`; cascade layers; CSS nesting); external style sheets are never
fetched. Selectors are matched with cssselect, with the pseudo-classes of a browser at rest (``:hover``,
``:focus``, ``:focus-within``, ``:popover-open`` never match, ``:defined`` always does, ``:open`` is the
``open`` attribute). Then the cascade is applied, per element, between the declarations that hide:
``!important`` (which reverses the layer order), inline style, cascade layers (unlayered rules over layered
ones, later layers over earlier ones), specificity, order. Custom properties are worked out per element as
a browser does (each element's own cascade, inherited, ``var()`` with its fallbacks, cycles and unknown
names invalid at computed-value time), so ``display: var(--d)`` hides where ``--d`` is ``none``.

Properties that hide: ``display: none``, ``visibility: hidden|collapse``, ``content-visibility: hidden``; and
those that leave text laid out but invisible (``font-size: 0``, ``opacity: 0``, ``color: transparent``,
``clip``/``clip-path``, the visually-hidden box, ``max-height: 0``, ``width: 0``, ``scale(0)``, an off-screen
``text-indent``, off-screen positioning (``left: -9999px``): :mod:`g6.adapters.html.css_invisible`, the reasons
the rendered capture drops such text for). Not applied: ``visibility: visible`` inside a hidden element (the whole
element counts as hidden).

**Uncertain.** Where the page's CSS could hide an element but g6 cannot evaluate it, the element is
*uncertain* (``CssEffects.unsure``), never counted as certainly visible: a rule under a condition g6 cannot
decide (``@container``, ``@scope``, a media feature or ``@supports`` test it does not know), a selector
cssselect cannot match as written (matched without its pseudo-classes, or by its last compound's type,
classes and ids: a superset), a ``var()`` whose value g6 cannot work out (a registered ``@property``, a value
past the bounds), ``revert-layer``, an animation whose keyframes set a hiding property. An uncertain
declaration decides nothing alone: the element is uncertain only when the outcome with it differs from the
outcome without it.

Bounded: the first ``MAX_STYLE_CHARS`` of style text are read; a selector that names a class or id the page
never uses is not matched, and the others are matched until ``MAX_STYLE_VISITS`` are spent (each selector
costs the page's elements, and one that walks siblings, ``:nth-child`` or ``+``/``~``, the sum over each
parent of its children squared, halved, on top). What the bounds leave out is counted
(``style_chars_not_read``, ``style_rules_not_applied``): then any text may be hidden by what was not applied,
and the caller treats the whole page as undecided.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import cssselect
import tinycss2
from lxml import etree
from lxml import html as lxml_html

from g6.adapters.html.css_conditions import CONTENT_VISIBILITY, CSS_WIDE, VISIBILITY, display_ok
from g6.adapters.html.css_invisible import MAYBE, Invisible, Picks, live_properties
from g6.adapters.html.css_invisible import PROPS as INVISIBLE
from g6.adapters.html.css_sheets import (
    ANIMATION,
    HIDING,
    MAX_STYLE_CHARS,
    MAX_STYLE_VISITS,
    TRANSLATOR,
    Decl,
    Rule,
    Sheets,
    Spec,
    inline_styles,
    needed_properties,
    read_sheets,
    specificity,
    strip_pseudo_classes,
)

__all__ = ["MAX_STYLE_CHARS", "MAX_STYLE_VISITS", "CssEffects", "css_effects"]

REASONS = {"display": "display_none", "visibility": "visibility_hidden",
           "content-visibility": "content_visibility_hidden"}
MAX_VALUE = 4096  # characters of a value after var() substitution; past it, the value is not worked out
MAX_VAR_DEPTH = 32
_VALID = {"display": display_ok, "visibility": lambda v: v in VISIBILITY or v in CSS_WIDE,
          "content-visibility": lambda v: v in CONTENT_VISIBILITY or v in CSS_WIDE}
_UNSURE = "\0unsure"  # a custom property whose value g6 cannot work out
_INVALID = "\0invalid"  # the guaranteed-invalid value (an unknown name without a fallback, a cycle)
_HIDE, _SHOW, _MAYBE = "hide", "show", "maybe"
_NO_SPEC: Spec = (0, 0, 0)


@dataclass(slots=True)
class CssEffects:
    """``hidden``: element -> (reason, how) the CSS certainly hides; ``unsure``: element -> how it may hide
    it; ``own_text``: element -> (reason, how) of its own text alone (``font-size: 0`` on a list whose items set
    a size again: the items are shown); ``skipped``: what the bounds left out (``style_chars_not_read``,
    ``style_rules_not_applied``)."""

    hidden: dict[etree._Element, tuple[str, str]] = field(default_factory=dict)
    unsure: dict[etree._Element, str] = field(default_factory=dict)
    own_text: dict[etree._Element, tuple[str, str]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Offer:
    """One declaration offered to one element: its cascade key, where it came from, and why it applies
    only perhaps (None: it applies)."""

    key: tuple[Any, ...]
    decl: Decl
    where: str
    unsure: str | None


def css_effects(root: lxml_html.HtmlElement) -> CssEffects:
    """What the page's CSS hides (certainly), may hide (``unsure``), and what its bounds left out."""
    sheets, done = read_sheets(root)
    inline = inline_styles(root)
    every = [d for r in sheets.rules for d in r.decls] + [d for _, ds in inline for d in ds]
    # the sheets that set a custom property some property g6 reads may read (whether it can hide is known
    # once its value is read: ``live_properties``)
    need = needed_properties(every, INVISIBLE)
    while need or sheets.hiding_keyframes:  # custom properties and animations set in sheets not read yet
        wanted = tuple(n.lower() for n in need) + (("animation",) if sheets.hiding_keyframes else ())
        before = len(done)
        sheets, done = read_sheets(root, wanted, done, sheets)
        if len(done) == before:
            break
        every = [d for r in sheets.rules for d in r.decls] + [d for _, ds in inline for d in ds]
        need = needed_properties(every, INVISIBLE)
    live = live_properties(every)
    need = needed_properties(every, live)
    sheets.rules.sort(key=lambda r: r.order)
    cascade = _Cascade(root, sheets, need, live)
    cascade.offer_rules()
    for n, (el, decls) in enumerate(inline):
        cascade.offer_inline(el, decls, n)
    return cascade.effects()


def _required(tree: Any, classes: set[str], ids: set[str]) -> None:
    """Class names and ids every element a selector matches (or an ancestor or sibling it names) must carry:
    a selector naming one the page never uses cannot match and is not walked."""
    while tree is not None:
        if isinstance(tree, cssselect.parser.CombinedSelector):
            _required(tree.subselector, classes, ids)
        elif isinstance(tree, cssselect.parser.Class):
            classes.add(tree.class_name)
        elif isinstance(tree, cssselect.parser.Hash):
            ids.add(tree.id)
        tree = getattr(tree, "selector", None)  # Negation's .selector is the base, not the negated part


def _xpaths(text: str) -> list[tuple[str, set[str], set[str]]] | None:
    """(xpath, classes, ids it needs) of each selector in ``text``; None when cssselect cannot match it as
    written; [] for a rule for generated content (a pseudo-element), which hides no element's text."""
    try:
        out = []
        for sel in cssselect.parse(text):
            if sel.pseudo_element:
                continue
            classes: set[str] = set()
            ids: set[str] = set()
            _required(sel.parsed_tree, classes, ids)
            out.append((TRANSLATOR.selector_to_xpath(sel), classes, ids))
        return out
    except (cssselect.SelectorError, cssselect.xpath.ExpressionError):
        return None


_LEGACY_PSEUDO_ELEMENTS = (":before", ":after", ":first-line", ":first-letter")


def _last_compound(text: str) -> str:
    """The type, classes and ids of the last compound of a selector: a selector that matches at least what
    ``text`` matches (``*`` when it has none of them)."""
    toks = tinycss2.parse_component_value_list(text)
    start = 0
    for i, t in enumerate(toks):
        if t.type == "whitespace" or (t.type == "literal" and t.value in (">", "+", "~")):
            start = i + 1
    toks = toks[start:]
    out: list[str] = []
    for i, t in enumerate(toks):
        prev = toks[i - 1] if i else None
        if t.type == "ident" and prev is None:
            out.append(t.value)
        elif t.type == "ident" and prev is not None and prev.type == "literal" and prev.value == ".":
            out.append("." + t.value)
        elif t.type == "hash" and t.is_identifier:
            out.append("#" + t.value)
    return tinycss2.serialize(tinycss2.parse_component_value_list("".join(out))) if out else "*"


def _approximate(text: str) -> tuple[list[tuple[str, set[str], set[str]]], str]:
    """Selectors matching at least what ``text`` matches, and why they are only that."""
    low = text.lower()
    if any(low.rstrip().endswith(p) for p in _LEGACY_PSEUDO_ELEMENTS):
        return [], ""
    stripped = strip_pseudo_classes(text)
    if stripped is None:
        return [], ""  # a pseudo-element: generated content
    got = _xpaths(stripped)
    if got is not None:
        return got, f'the selector "{text[:120]}", matched without its pseudo-classes'
    got = _xpaths(_last_compound(text))
    return got or [], f'the selector "{text[:120]}", which g6 cannot match as written'


def _layer_ranks(rules: Iterable[Rule]) -> dict[tuple[int, ...], int]:
    return {layer: i for i, layer in enumerate(sorted({r.layer for r in rules}))}


class _Cascade:
    """The declarations offered to each element, then each element's outcome (``effects``)."""

    def __init__(self, root: lxml_html.HtmlElement, sheets: Sheets, need: set[str], live: set[str]) -> None:
        self.root, self.sheets, self.need, self.live = root, sheets, need, live
        self.offers: dict[etree._Element, list[_Offer]] = {}
        self.not_applied = sheets.unsure_nesting
        self.ranks = _layer_ranks(sheets.rules)
        self.classes = {c for el in root.iter() if isinstance(el.tag, str) for c in (el.get("class") or "").split()}
        self.ids = {el.get("id") for el in root.iter() if isinstance(el.tag, str) and el.get("id")}
        self.size = sum(1 for _ in root.iter())
        # a selector that walks siblings (:nth-child, +, ~) costs each element its place among its siblings:
        # at most the sum over parents of n²/2, charged to the budget on top of the walk itself
        self.sibling_cost = sum(len(el) * len(el) // 2 for el in root.iter() if isinstance(el.tag, str))
        self.budget = MAX_STYLE_VISITS

    def _wanted(self, d: Decl) -> bool:
        return (d.prop in HIDING or d.prop in self.need or d.prop in self.live
                or (d.prop in ANIMATION and bool(self.sheets.hiding_keyframes)))

    def offer_rules(self) -> None:
        for rule in self.sheets.rules:
            decls = [(i, d) for i, d in enumerate(rule.decls) if self._wanted(d)]
            if not decls:
                continue
            rank = self.ranks[rule.layer]
            for text, known in rule.selectors:
                elements, unsure = self._match(text)
                if not elements:
                    continue
                spec = specificity(text, known)
                where = f'the {"data: style sheet" if rule.data else "<style>"} rule "{text[:120]}"'
                why = rule.unsure or unsure
                for i, d in decls:
                    key = (d.important, False, -rank if d.important else rank, spec, (*rule.order, i))
                    offer = _Offer(key, d, where, why)
                    for el in elements:
                        self.offers.setdefault(el, []).append(offer)

    def offer_inline(self, el: etree._Element, decls: tuple[Decl, ...], n: int) -> None:
        for i, d in enumerate(decls):
            if self._wanted(d):
                self.offers.setdefault(el, []).append(_Offer((d.important, True, 0, _NO_SPEC, (n, i)), d,
                                                             "an inline style", None))

    def _match(self, text: str) -> tuple[list[etree._Element], str | None]:
        """The elements ``text`` matches (within the budget), and why the match is only a superset."""
        unsure: str | None = None
        sels = _xpaths(text)
        if sels is None:
            sels, unsure = _approximate(text)
        out: list[etree._Element] = []
        for xpath, classes, ids in sels:
            if not classes <= self.classes or not ids <= self.ids:
                continue
            cost = self.size + (self.sibling_cost if "sibling::" in xpath else 0)
            if self.budget < cost:
                self.not_applied += 1
                continue
            self.budget -= cost
            try:
                found = self.root.xpath(xpath)
            except etree.XPathError:
                found, unsure = self.root.xpath("descendant-or-self::*"), f'the selector "{text[:120]}"'
            out.extend(el for el in found if isinstance(el, etree._Element) and isinstance(el.tag, str))
        return out, unsure

    # -- each element's outcome ------------------------------------------------------------------------
    def effects(self) -> CssEffects:
        out = CssEffects()
        envs: dict[etree._Element, dict[str, str]] = {}
        invisible = Invisible.of(self.live) if self.live else None
        for el in self.root.iter():
            if not isinstance(el.tag, str):
                continue
            parent = el.getparent()
            env = envs.get(parent, {}) if parent is not None else {}
            offers = self.offers.get(el)
            if offers:
                offers.sort(key=lambda o: o.key, reverse=True)
                if self.need:
                    env = self._custom(offers, env)
                self._decide(el, offers, env, out)
            if self.need:
                envs[el] = env
            if invisible is not None:
                invisible.visit(el, self._picks(offers or [], env))
        if invisible is not None:
            hidden, unsure, own = invisible.finish(self.root)
            for el, why in hidden.items():
                out.hidden.setdefault(el, why)
            for el, how in unsure.items():
                if el not in out.hidden:
                    out.unsure.setdefault(el, how)
            out.own_text = {el: why for el, why in own.items() if el not in out.hidden}
        skipped = {"style_chars_not_read": self.sheets.chars_not_read, "style_rules_not_applied": self.not_applied}
        out.skipped = {k: v for k, v in skipped.items() if v}
        return out

    def _custom(self, offers: list[_Offer], inherited: dict[str, str]) -> dict[str, str]:
        """The element's custom properties: each one's winning declaration, or the parent's value; var()
        worked out on this element (a child inherits the value, not the reference)."""
        raw: dict[str, str] = {}
        for name in {o.decl.prop for o in offers if o.decl.prop.startswith("--")}:
            values = []
            for o in offers:
                if o.decl.prop == name:
                    values.append(o.decl.value)
                    if o.unsure is None:
                        break
            else:
                values.append(inherited.get(name, _INVALID))
            raw[name] = values[0] if len(set(values)) == 1 else _UNSURE
        if not raw:
            return inherited
        env = dict(inherited)
        env.update(raw)
        for name, value in raw.items():
            if "var(" in value:
                env[name] = _substitute(value, {**env, name: _INVALID}, 0)
        for name in self.sheets.registered & set(env):
            env[name] = _UNSURE  # a registered property may not inherit, and has its own initial value
        return env

    def _picks(self, offers: list[_Offer], env: dict[str, str]) -> list[Picks]:
        """The element's value of each property ``Invisible`` reads (None: not declared), then the same with each
        value a declaration g6 is not sure applies would give instead (at most 8 of those)."""
        base: Picks = {}
        others: list[tuple[str, tuple[str | None, str]]] = []
        for prop in self.live:
            values: list[tuple[str | None, str]] = []
            for o in offers:
                if o.decl.prop == prop:
                    values.append((self._worked_out(o.decl.value, env), o.where))
                    if o.unsure is None:
                        break
            else:
                values.append((None, ""))
            base[prop] = values[-1]
            others += [(prop, v) for v in values[:-1]]
        return [base, *({**base, prop: v} for prop, v in others[:8])] + ([{**base, p: (MAYBE, "")} for p in base]
                                                                         if len(others) > 8 else [])

    @staticmethod
    def _worked_out(value: str, env: dict[str, str]) -> str:
        if "var(" not in value.lower():
            return MAYBE if value == "revert-layer" else value
        value = _substitute(value, env, 0)
        if value == _UNSURE:
            return MAYBE
        return "unset" if value == _INVALID else " ".join(value.lower().split())

    def _decide(self, el: etree._Element, offers: list[_Offer], env: dict[str, str], out: CssEffects) -> None:
        maybe: str | None = None
        for prop in HIDING:
            outcomes: list[tuple[str, _Offer | None, str]] = []
            for o in offers:
                if o.decl.prop == prop:
                    kind, value = self._effect(prop, o.decl.value, env)
                    outcomes.append((kind, o, value))
                    if o.unsure is None:
                        break
            else:
                outcomes.append((_SHOW, None, ""))
            kinds = {k for k, _, _ in outcomes}
            if kinds == {_HIDE}:
                _, o, value = outcomes[0]
                assert o is not None
                out.hidden[el] = (REASONS[prop], f"{prop}:{value} from {o.where}")
                return
            if kinds != {_SHOW} and maybe is None:
                o = next((o for k, o, _ in outcomes if o is not None and (o.unsure or k == _MAYBE)), None)
                maybe = (o.unsure if o is not None and o.unsure else
                         f"{prop}:{o.decl.value} from {o.where}" if o is not None else prop)
        if maybe is None and self.sheets.hiding_keyframes:
            maybe = self._animated(offers)
        if maybe is not None:
            out.unsure[el] = maybe

    def _effect(self, prop: str, value: str, env: dict[str, str]) -> tuple[str, str]:
        """(hide, show or maybe, the value as worked out) of one declaration on an element."""
        if "var(" in value.lower():
            value = _substitute(value, env, 0)
            if value == _UNSURE:
                return _MAYBE, value
            if value == _INVALID:
                return _SHOW, "unset"  # invalid at computed-value time: the property's unset value, shown
            value = " ".join(value.lower().split())
            if not _VALID[prop](value):
                return _SHOW, "unset"
        if value == "revert-layer":
            return _MAYBE, value
        return (_HIDE if value in HIDING[prop] else _SHOW), value

    def _animated(self, offers: list[_Offer]) -> str | None:
        names = self.sheets.hiding_keyframes
        for o in offers:
            if o.decl.prop in ANIMATION and any(t.type in ("ident", "string") and t.value in names
                                                for t in tinycss2.parse_component_value_list(o.decl.value)):
                return f"an animation whose keyframes set display or visibility ({o.where})"
        return None


def _substitute(value: str, env: dict[str, str], depth: int) -> str:
    """``value`` with each ``var(--x[, fallback])`` replaced from ``env``; ``_INVALID`` for an unknown name
    without a fallback or a cycle, ``_UNSURE`` for a value g6 cannot work out (or past the bounds)."""
    if depth > MAX_VAR_DEPTH or len(value) > MAX_VALUE:
        return _UNSURE
    parts: list[str] = []
    for t in tinycss2.parse_component_value_list(value):
        if t.type == "function" and t.lower_name == "var":
            args = list(t.arguments)
            while args and args[0].type in ("whitespace", "comment"):
                args.pop(0)
            if not args or args[0].type != "ident" or not args[0].value.startswith("--"):
                return _INVALID
            comma = next((i for i, a in enumerate(args) if a.type == "literal" and a.value == ","), None)
            got = env.get(args[0].value, _INVALID)
            if got == _UNSURE:
                return _UNSURE
            if got == _INVALID:
                if comma is None:
                    return _INVALID
                got = tinycss2.serialize(args[comma + 1:]).strip()
            if "var(" in got.lower():
                got = _substitute(got, {**env, args[0].value: _INVALID}, depth + 1)
                if got in (_UNSURE, _INVALID):
                    return got
            parts.append(got)
        elif t.type == "function":
            inner = tinycss2.serialize(t.arguments)
            if "var(" in inner.lower():
                inner = _substitute(inner, env, depth + 1)
                if inner in (_UNSURE, _INVALID):
                    return inner
            parts.append(f"{t.name}({inner})")
        else:
            parts.append(tinycss2.serialize([t]))
        if sum(len(p) for p in parts) > MAX_VALUE:
            return _UNSURE
    return "".join(parts).strip()
