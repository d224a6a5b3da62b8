"""Text the page's CSS leaves laid out but no reader can see: what :mod:`g6.adapters.html.css` applies beside
``display``, ``visibility`` and ``content-visibility``.

Each is a hidden reason of its own:

* ``font_size_zero``: a computed font size under one pixel (``font-size: 0``, ``0px``, ``0em``, ``0%``, the
  ``font: 0/0 a`` of image replacement). Inherited: a child that sets its own size again (``ul {font-size:0}
  li {font-size:16px}``, a form control's own size) is shown; relative sizes (``em``, ``%``, ``larger``) of a
  zero size stay zero.
* ``opacity_zero``: the opacity the element is painted with, its own times its ancestors', under 0.05 (the
  rendered capture's threshold); a child cannot undo it.
* ``color_transparent``: text drawn in a colour whose alpha is 0 (``transparent``, ``#0000``, ``rgba(…, 0)``, a
  ``-webkit-text-fill-color`` so), with no ``text-shadow``, no ``-webkit-text-stroke`` and no ``background-clip:
  text`` (gradient text shows through such letters). Inherited; a child that sets a colour is shown, and so are
  links, form controls and ``<mark>``, which the browser's own sheet colours.
* ``clip_hidden`` (``clip: rect(0 0 0 0)`` on an absolutely positioned element), ``clip_path_hidden``
  (``clip-path: inset(50%)``, ``circle(0)``), ``visually_hidden`` (the "sr-only" pattern: absolutely positioned,
  width and height of at most 1px, overflow hidden), ``max_height_zero`` (a block of ``max-height: 0`` or
  ``height: 0`` with overflow hidden and no padding below), ``transform_scale_zero`` (``scale(0)``): the whole
  element. A positioned descendant that escapes the overflow clip makes the element *may be hidden*.
* ``text_indent_offscreen``: a ``text-indent`` of -9999px or less, left-aligned, left-to-right, on an element of
  at most 200 characters with no line break (the first line holds them all, off the page to the left).
* ``width_zero``: ``width: 0`` or ``max-width: 0`` with overflow hidden on a block (not a table, no padding, no
  ``min-width``, not a growing flex item): the twin of ``max_height_zero`` across.
* ``positioned_offscreen``: moved wholly left of the page or above it (``position: absolute; left: -9999px``,
  ``top: -9999px``, ``margin-left``, ``translateX()``), read by :mod:`g6.adapters.html.css_offscreen`, whose
  docstring says what it bounds; ``right``/``bottom`` far out are shown (the page scrolls to them).

``line-height: 0`` alone hides nothing (the text overflows its line, shown); nor do ``opacity`` above 0.05, a
font size of a pixel or more, a colour g6 reads as opaque. What g6 cannot evaluate where it matters (a
``calc()`` of units it does not convert, a ``var()`` it cannot work out, a percentage of a box it does not lay
out, ``revert-layer``) makes the element *may be hidden* (``css_undecided``).

Only what can hide is applied: a group of properties is read only when the page declares a value that could
hide (a custom property with such a value, for one read through ``var()``), so a page without them costs no
more than before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lxml import etree

from g6.adapters.html.css_offscreen import CB_PROPS, decide
from g6.adapters.html.css_offscreen import PROPS as OFFSCREEN_PROPS
from g6.adapters.html.css_offscreen import candidate as offscreen_candidate
from g6.adapters.html.css_values import (
    FONT_KEYWORDS,
    Units,
    clip_path_empty,
    clip_rect_empty,
    color_alpha,
    font_size_of_font,
    length,
    opacity,
    scale_zero,
    tokens,
)

MAYBE = "\0maybe"  # a value g6 cannot work out for this element
_OVERFLOW = ("overflow", "overflow-x", "overflow-y")
_PADDING = ("padding", "padding-top", "padding-right", "padding-bottom", "padding-left")
GROUPS: dict[str, tuple[str, ...]] = {
    "font": ("font-size", "font"),
    "opacity": ("opacity",),
    "color": ("color", "-webkit-text-fill-color", "text-shadow", "background-clip", "-webkit-background-clip",
              "-webkit-text-stroke", "-webkit-text-stroke-width"),
    "clip": ("clip", "clip-path", "position"),
    "box": ("width", "height", "max-height", "min-height", "max-width", "min-width", *_OVERFLOW, "position",
            *_PADDING, "flex", "flex-grow", "flex-basis", "float", "display"),
    "indent": ("text-indent", "text-align", "direction"),
    "scale": ("transform", "scale"),
    "offscreen": OFFSCREEN_PROPS,
}
PROPS = frozenset(p for ps in GROUPS.values() for p in ps)
WORDS = ("font", "opacity", "color", "clip", "height", "width", "text-indent", "transform", "scale", "position",
         "translate")  # a sheet or inline style without one of them is not read
MIN_FONT_PX, MIN_ALPHA, OFFSCREEN_INDENT, MAX_INDENT_CHARS = 1.0, 0.05, -9999.0, 200
_FONT_CONTROLS = {"button", "input", "select", "textarea"}  # the browser's sheet gives them a size of their own
_COLOURED = {"button", "input", "select", "textarea", "mark"}  # and a colour of their own (links too: a[href])
_BLOCK = {"div", "p", "section", "article", "aside", "header", "footer", "main", "nav", "ul", "ol", "li", "dl", "dd",
          "dt", "figure", "figcaption", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "form", "fieldset",
          "table", "address", "details", "summary", "hgroup", "menu", "body", "html", "center", "dialog",
          "caption", "legend", "search"}
# whole-element reasons a positioned descendant may escape (shown outside the clip, or placed back on the page)
_CLIPS = ("visually_hidden", "max_height_zero", "width_zero", "positioned_offscreen")
_NOT_BOXED = {"inline", "contents", "table-row", "table-row-group", "table-header-group", "table-footer-group",
              "table-column", "table-column-group", "ruby", "ruby-text"}


def _px(value: str, em: float | None = 16.0, percent: float | None = None) -> float | None:
    return length(value, Units(em, 16.0, percent))


def _candidate(group: str, prop: str, value: str) -> bool:
    """Whether ``prop: value`` could hide text (the group is then read for the whole page)."""
    v = value.lower()
    if group == "font":
        size = font_size_of_font(v) if prop == "font" else v
        return size is not None and _px(size, 16.0, 16.0) is not None and (_px(size, 16.0, 16.0) or 0) < MIN_FONT_PX
    if group == "opacity":
        o = opacity(v)
        return o is not None and o < 1  # opacities multiply down the tree: 0.2 inside 0.2 is 0.04
    if group == "color":
        return prop in ("color", "-webkit-text-fill-color") and color_alpha(v) == 0
    if group == "clip":
        return (prop == "clip" and clip_rect_empty(v) is True) or (prop == "clip-path" and clip_path_empty(v) is True)
    if group == "box":
        n = _px(v) if prop in ("height", "max-height", "width", "max-width") else None
        return n is not None and n <= 1
    if group == "offscreen":
        return offscreen_candidate(prop, v)
    if group == "indent":
        n = _px(v) if prop == "text-indent" else None
        return n is not None and n <= OFFSCREEN_INDENT
    return prop in ("transform", "scale") and scale_zero(v, prop) is True


def live_properties(decls: list[Any]) -> set[str]:
    """The properties to read on this page: those of each group some declaration (or custom property) of the
    page could hide with."""
    live: set[str] = set()
    customs = [d.value for d in decls if d.prop.startswith("--")]
    for group, props in GROUPS.items():
        var = any(d.prop in props and "var(" in d.value.lower() for d in decls)
        if any(d.prop in props and _candidate(group, d.prop, d.value) for d in decls) or (
                var and any(_candidate(group, p, c) for c in customs for p in props)):
            live.update(props)
    return live


@dataclass(frozen=True, slots=True)
class _State:
    """What an element passes down (its computed values of the inherited properties), and where they came from."""

    font: float | None = 16.0
    font_how: str = ""
    color: float | None = 1.0  # the alpha of ``color``
    color_how: str = ""
    fill: float | None | str = "unset"  # ``-webkit-text-fill-color``'s alpha; "unset": the colour's
    rescued: bool | None = False  # a text-shadow, a text stroke, or background-clip: text above
    indent: float | None = 0.0
    indent_how: str = ""
    ltr_left: bool | None = True  # left-to-right, left-aligned (start, left, justify)
    alpha: float | None = 1.0
    cb_above: bool | None = False  # a containing block for absolute and fixed boxes (positioned, transformed)
    rtl_above: bool | None = False  # it or an ancestor may run right-to-left (a page scrolls left then)


Picks = dict[str, tuple[str | None, str]]  # property -> (its value on the element, or None: not declared; where)
Decision = tuple[str, str] | str | None  # (reason, how), MAYBE, or None: shown


@dataclass(slots=True)
class Invisible:
    """Each element visited in document order (``visit``), then the outcome (``finish``)."""

    live: set[str]
    states: dict[etree._Element, _State]
    whole: dict[etree._Element, Decision]  # the element and all it holds
    own: dict[etree._Element, Decision]  # the element's own text (inherited properties)
    escapes: dict[etree._Element, str]  # element -> "absolute" | "fixed" (positioned: escapes an overflow clip)

    @classmethod
    def of(cls, live: set[str]) -> Invisible:
        return cls(live, {}, {}, {}, {})

    def visit(self, el: etree._Element, picks_options: list[Picks]) -> None:
        """``picks_options``: the element's values, then the same with each value a rule g6 cannot be sure of
        would give; the element's outcome is sure only when they all agree."""
        parent = el.getparent()
        inherited = self.states.get(parent, _State()) if parent is not None else _State()
        results = [self._one(el, inherited, p) for p in picks_options]
        state, whole, own = results[0]
        for s, w, o in results[1:]:
            state = _merge(state, s)
            whole = whole if w == whole else MAYBE
            own = own if o == own else MAYBE
        self.states[el] = state
        if whole is not None:
            self.whole[el] = whole
        if own is not None:
            self.own[el] = own
        pos = picks_options[0].get("position", (None, ""))[0]
        if pos in ("absolute", "fixed"):
            self.escapes[el] = pos

    def _one(self, el: etree._Element, up: _State, p: Picks) -> tuple[_State, Decision, Decision]:
        tag = el.tag.lower() if isinstance(el.tag, str) else ""
        root = self.states.get(el.getroottree().getroot())
        rem = root.font if root is not None else 16.0
        s = up
        if "font-size" in self.live:
            s = _font(s, tag, p, rem)
        if "color" in self.live:
            s = _colour(s, tag, el, p)
        if "text-indent" in self.live:
            s = _indent(s, p, rem)
        whole: Decision = None
        if "opacity" in self.live:
            s, whole = _opacity(s, p)
        for step in (_scale, _clip, _box):
            if whole is None:
                whole = step(self.live, tag, p, s, rem)
        if "left" in self.live:
            s, moved = _offscreen(el, s, p)
            whole = whole if whole is not None else moved
        return s, whole, _own_text(s)

    def finish(self, root: etree._Element) -> tuple[dict[etree._Element, tuple[str, str]],
                                                    dict[etree._Element, str], dict[etree._Element, tuple[str, str]]]:
        """(elements hidden whole, elements that may be hidden, elements whose own text alone is hidden)."""
        hidden: dict[etree._Element, tuple[str, str]] = {}
        unsure: dict[etree._Element, str] = {}
        own_hidden: dict[etree._Element, tuple[str, str]] = {}
        gone: dict[etree._Element, bool] = {}
        order = [el for el in root.iter() if isinstance(el.tag, str)]
        for el in reversed(order):  # children before parents: an element is gone when it and all it holds are
            own = self.own.get(el)
            kids = [c for c in el if isinstance(c.tag, str)]
            all_gone = all(gone.get(c, False) for c in kids)
            gone[el] = isinstance(own, tuple) and all_gone
            if isinstance(own, tuple) and not all_gone and _own_text(el):
                own_hidden[el] = own
            elif own == MAYBE and _own_text(el):
                unsure[el] = "the computed font size, colour or text-indent of its text"
            if isinstance(own, tuple) and own[0] == "text_indent_offscreen" and gone[el]:
                text = " ".join("".join(el.itertext()).split())
                if len(text) > MAX_INDENT_CHARS or el.find(".//br") is not None or el.find(".//pre") is not None:
                    gone[el] = False  # more than one line: the lines after the first are shown
                    own_hidden.pop(el, None)
                    unsure[el] = f"{own[1]}, on text that may take more than one line"
        for el in order:
            parent = el.getparent()
            if gone[el] and not (parent is not None and gone.get(parent)) and "".join(el.itertext()).strip():
                own = self.own[el]
                assert isinstance(own, tuple)
                hidden[el] = own
            w = self.whole.get(el)
            if isinstance(w, tuple):
                if w[0] in _CLIPS and self._escaping(el, w[0]):
                    unsure[el] = f"{w[1]}, with a positioned element inside that may show outside it"
                else:
                    hidden[el] = w
            elif w == MAYBE:
                unsure[el] = "a property that may hide it (opacity, transform, clip, clip-path, overflow)"
        return hidden, unsure, own_hidden

    def _escaping(self, el: etree._Element, reason: str) -> bool:
        for d in el.iterdescendants():
            pos = self.escapes.get(d)
            if pos == "fixed" or (pos is not None and reason == "positioned_offscreen") or (
                    pos == "absolute" and reason in ("max_height_zero", "width_zero") and self.escapes.get(el) is None):
                return True
        return False


def _merge(a: _State, b: _State) -> _State:
    return _State(**{f: (getattr(a, f) if getattr(a, f) == getattr(b, f) else None)
                     for f in a.__slots__})  # type: ignore[attr-defined]


def _own_text(x: Any) -> Any:
    if isinstance(x, _State):
        return _own_decision(x)
    return "".join(t for t in (x.text, *(c.tail for c in x)) if t).strip()


def _own_decision(s: _State) -> Decision:
    if s.font is None:
        return MAYBE
    if s.font < MIN_FONT_PX:
        return "font_size_zero", s.font_how
    fill = s.color if s.fill == "unset" else s.fill
    if fill is None or not isinstance(fill, float):
        return MAYBE if s.rescued is not True else None
    if fill < MIN_ALPHA:
        if s.rescued is None:
            return MAYBE
        if not s.rescued:
            return "color_transparent", s.color_how
    if s.indent is None or s.ltr_left is None:
        return MAYBE if s.indent is None or s.indent <= OFFSCREEN_INDENT else None
    if s.indent <= OFFSCREEN_INDENT and s.ltr_left:
        return "text_indent_offscreen", s.indent_how
    return None


def _how(prop: str, p: Picks) -> str:
    value, where = p.get(prop, (None, ""))
    return f"{prop}:{value} from {where}"


def _font(s: _State, tag: str, p: Picks, rem: float | None) -> _State:
    size, where = p.get("font-size", (None, ""))
    how = _how("font-size", p)
    if size is None and p.get("font", (None, ""))[0] is not None:
        shorthand, where = p["font"]
        size = MAYBE if shorthand == MAYBE else (font_size_of_font(shorthand or "") or "medium")
        how = f"font:{shorthand} from {where}"
    if size is None:
        return replace(s, font=13.333, font_how="") if tag in _FONT_CONTROLS else s
    if size == MAYBE or size == "revert-layer":
        return replace(s, font=None, font_how=how)
    if size in ("inherit", "unset", "revert"):
        return s
    px: float | None
    if size == "initial":
        px = 16.0
    elif size in FONT_KEYWORDS:
        px = FONT_KEYWORDS[size]
    elif size in ("larger", "smaller"):
        px = None if s.font is None else s.font * (1.2 if size == "larger" else 1 / 1.2)
    else:
        px = length(size, Units(s.font, rem, s.font))
    return replace(s, font=px, font_how=how)


def _colour(s: _State, tag: str, el: etree._Element, p: Picks) -> _State:
    value = p.get("color", (None, ""))[0]
    if value is None and (tag in _COLOURED or (tag == "a" and el.get("href") is not None)):
        s = replace(s, color=1.0, color_how="")
    elif value == MAYBE or value == "revert-layer":
        s = replace(s, color=None, color_how=_how("color", p))
    elif value == "initial":
        s = replace(s, color=1.0, color_how="")
    elif value is not None and value not in ("inherit", "unset", "revert", "currentcolor"):
        s = replace(s, color=color_alpha(value), color_how=_how("color", p))
    fill = p.get("-webkit-text-fill-color", (None, ""))[0]
    if fill == MAYBE:
        s = replace(s, fill=None)
    elif fill in ("initial", "currentcolor"):
        s = replace(s, fill="unset")
    elif fill is not None and fill not in ("inherit", "unset", "revert"):
        s = replace(s, fill=color_alpha(fill), color_how=_how("-webkit-text-fill-color", p))
    return replace(s, rescued=_rescued(s.rescued, p))


def _rescued(up: bool | None, p: Picks) -> bool | None:
    """Whether the letters are drawn some other way than their fill: a text-shadow, a stroke (both inherited), a
    background clipped to the text (on this element or one above)."""
    if up is True:
        return True
    out: bool | None = up
    for prop in ("text-shadow", "-webkit-text-stroke", "-webkit-text-stroke-width", "background-clip",
                 "-webkit-background-clip"):
        value = p.get(prop, (None, ""))[0]
        if value is None or value in ("inherit", "unset", "revert"):
            continue
        if value == MAYBE:
            out = None
        elif prop.endswith("background-clip"):
            if "text" in value.split():
                return True
        elif prop == "text-shadow":
            if value not in ("none", "initial"):
                return True
        elif value not in ("initial", "0", "0px", "none") and not value.startswith("0px ") and \
                not value.startswith("0 "):
            return True
    return out


def _indent(s: _State, p: Picks, rem: float | None) -> _State:
    value = p.get("text-indent", (None, ""))[0]
    if value == MAYBE:
        s = replace(s, indent=None, indent_how=_how("text-indent", p))
    elif value is not None and value not in ("inherit", "unset", "revert"):
        toks = tokens(value)
        if value == "initial" or (len(toks) == 1 and toks[0].type == "percentage" and toks[0].value >= 0):
            n: float | None = 0.0
        else:
            n = length(toks[:1], Units(s.font, rem, None))  # "hanging", "each-line" after it change nothing here
        s = replace(s, indent=n, indent_how=_how("text-indent", p))
    align = p.get("text-align", (None, ""))[0]
    direction = p.get("direction", (None, ""))[0]
    ltr = s.ltr_left
    if align == MAYBE or direction == MAYBE:
        ltr = None
    else:
        if align is not None and align not in ("inherit", "unset", "revert"):
            ltr = align in ("left", "start", "justify", "initial", "-webkit-left")
        if direction is not None and direction not in ("inherit", "unset", "revert", "ltr", "initial"):
            ltr = False
    return replace(s, ltr_left=ltr)


def _opacity(s: _State, p: Picks) -> tuple[_State, Decision]:
    value = p.get("opacity", (None, ""))[0]
    if value is None or value in ("initial", "unset", "revert"):
        return s, None
    own = None if value == MAYBE or value == "inherit" else opacity(value)
    alpha = None if own is None or s.alpha is None else s.alpha * own
    if alpha is None:
        return replace(s, alpha=None), MAYBE
    if alpha < MIN_ALPHA:
        return replace(s, alpha=alpha), ("opacity_zero", _how("opacity", p) +
                                         (f" (painted at {alpha:g} with its ancestors')" if own != alpha else ""))
    return replace(s, alpha=alpha), None


def _scale(live: set[str], tag: str, p: Picks, s: _State, rem: float | None) -> Decision:
    if "transform" not in live:
        return None
    for prop in ("transform", "scale"):
        value = p.get(prop, (None, ""))[0]
        if value is None:
            continue
        zero = None if value == MAYBE else scale_zero(value, prop)
        if zero is None:
            return MAYBE
        if zero:
            return "transform_scale_zero", _how(prop, p)
    return None


def _clip(live: set[str], tag: str, p: Picks, s: _State, rem: float | None) -> Decision:
    if "clip" not in live:
        return None
    path = p.get("clip-path", (None, ""))[0]
    if path is not None:
        empty = None if path == MAYBE else clip_path_empty(path)
        if empty is None:
            return MAYBE
        if empty:
            return "clip_path_hidden", _how("clip-path", p)
    rect = p.get("clip", (None, ""))[0]
    if rect is None:
        return None
    empty = None if rect == MAYBE else clip_rect_empty(rect)
    if empty is False:
        return None
    pos = p.get("position", (None, ""))[0]
    if pos not in ("absolute", "fixed"):  # clip applies only to an absolutely positioned element
        return MAYBE if pos == MAYBE or (pos is not None and pos in ("inherit", "revert-layer")) else None
    return MAYBE if empty is None else ("clip_hidden", f"{_how('clip', p)} (position:{pos})")


def _overflow(p: Picks, axis: str) -> str | None:
    longhand = p.get(f"overflow-{axis}", (None, ""))[0]
    if longhand is not None:
        return longhand
    short = p.get("overflow", (None, ""))[0]
    if short is None or short == MAYBE:
        return short
    words = short.split()
    return words[0] if axis == "x" or len(words) == 1 else words[1]


def _box(live: set[str], tag: str, p: Picks, s: _State, rem: float | None) -> Decision:
    if "max-height" not in live:
        return None
    ox, oy = _overflow(p, "x"), _overflow(p, "y")
    clips = ("hidden", "clip", MAYBE)
    if ox not in clips and oy not in clips:
        return None
    units = Units(s.font, rem, None)
    got = {k: p.get(k, (None, ""))[0] for k in ("width", "height", "max-height", "min-height", "max-width",
                                                "min-width", "position", "display", "float", "flex", "flex-grow",
                                                "flex-basis", *_PADDING)}
    px = {k: (None if v is None else length(v, units) if v != MAYBE else None) for k, v in got.items()}
    padded = any(got[k] is not None and px[k] != 0 for k in _PADDING)
    pos = got["position"]
    if pos in ("absolute", "fixed") and ox in clips and oy in clips and px["width"] is not None \
            and px["height"] is not None and px["width"] <= 1 and px["height"] <= 1:
        if MAYBE in (ox, oy) or padded:
            return MAYBE
        return "visually_hidden", f"position:{pos}; width:{got['width']}; height:{got['height']}; " \
                                  f"overflow:hidden from {p['width'][1]}"
    # a block of no height (or no width) that clips what overflows it: max_height_zero (width_zero)
    outcomes = [_flat(got, px, tag, p, axis, over, padded) for axis, over in (("height", oy), ("width", ox))]
    return next((o for o in outcomes if isinstance(o, tuple)), next((o for o in outcomes if o == MAYBE), None))


def _flat(got: dict[str, str | None], px: dict[str, float | None], tag: str, p: Picks, axis: str,
          over: str | None, padded: bool) -> Decision:
    """``max_height_zero`` (``axis`` "height") or ``width_zero``: the box is 0 along ``axis`` and clips."""
    if over not in ("hidden", "clip", MAYBE):
        return None
    flat = [k for k in (f"max-{axis}", axis) if px[k] is not None and px[k] <= 0]  # type: ignore[operator]
    if not flat:
        return MAYBE if any(got[k] == MAYBE for k in (f"max-{axis}", axis)) else None
    display, pos = got["display"], got["position"]
    boxed = pos in ("absolute", "fixed") or (got["float"] not in (None, "none")) or (
        display not in _NOT_BOXED if display is not None and display not in ("inherit", "unset", "revert", "initial")
        else tag in _BLOCK)
    if not boxed:
        return None  # an inline element: height, width and their maximums do not apply
    if axis == "width" and (tag in ("table", "caption") or (display or "").startswith(("table", "inline-table"))):
        return None  # a table is at least as wide as its content
    least = got[f"min-{axis}"]
    if least is not None and px[f"min-{axis}"] != 0:
        return MAYBE if least == MAYBE or px[f"min-{axis}"] is None else None  # the minimum wins: shown
    flexed = any(got[k] is not None for k in ("flex", "flex-grow", "flex-basis"))
    if MAYBE in (over, display, pos) or padded or flexed:
        return MAYBE
    reason = "max_height_zero" if axis == "height" else "width_zero"
    return reason, f"{flat[0]}:{got[flat[0]]}; overflow:hidden from {p[flat[0]][1]}"


_NOT_A_CB = (None, "none", "initial", "unset", "normal", "auto", "static")


def _offscreen(el: etree._Element, s: _State, p: Picks) -> tuple[_State, Decision]:
    """Whether the element is moved off the page (:mod:`g6.adapters.html.css_offscreen`); and the state its
    descendants see: a containing block above them, a right-to-left element above them."""
    values = {k: v for k, (v, _) in p.items()}
    direction = values.get("direction")
    own_dir = (el.get("dir") or "ltr").strip().lower()
    rtl = True if own_dir != "ltr" or direction not in (None, "ltr", "initial", "unset", "inherit") else s.rtl_above
    pos = values.get("position")
    cb: bool | None = pos not in _NOT_A_CB or any(values.get(k) not in _NOT_A_CB for k in CB_PROPS)
    if pos == MAYBE or any(values.get(k) in (MAYBE, "inherit", "revert", "revert-layer") for k in ("position",
                                                                                                  *CB_PROPS)):
        cb = None
    got = decide(values, s.cb_above, rtl, s.font, lambda: len(" ".join("".join(el.itertext()).split())))
    below = replace(s, cb_above=True if cb or s.cb_above else (None if cb is None or s.cb_above is None else False),
                    rtl_above=rtl)
    if got is None:
        return below, None
    hidden, how = got
    return below, ("positioned_offscreen", how) if hidden else MAYBE
