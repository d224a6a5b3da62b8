"""Text moved off the page by its position, for :mod:`g6.adapters.html.css_invisible` (``positioned_offscreen``).

A reader scrolls over the page, never left of it or above it (in a left-to-right page), so a box placed wholly
left of the page's left edge, or above its top, is drawn where no one sees it (Chromium's rendered capture drops
it alike). The classic pattern: ``position: absolute; left: -9999px`` (the "offscreen" skip link, with or without
a 1px box). What moves an element, each read as CSS pixels: ``left`` and ``top`` (or ``inset``) on an
``absolute``, ``fixed`` or ``relative`` element, ``margin-left`` and ``margin-top`` (or ``margin``) on such an
element, and ``translate`` lengths of a ``transform`` or the ``translate`` property on any element.

Conservative both ways, because g6 does not lay out the page:

* Only an amount of -1000px or less on one of those properties makes the element a candidate at all.
* Where the box starts is bounded above: at the page's left edge (0) for ``left`` on an absolute or fixed box
  with no containing block above it (no positioned or transformed ancestor); anywhere up to ``SLACK`` (twice the
  reference viewport's width) otherwise (the static position, a positioned ancestor, a relative box's place in
  the flow). Vertically, only ``top`` on an absolute or fixed box with no containing block above counts: a
  positioned ancestor may sit anywhere down a long page.
* The text's extent is bounded by ``PX_PER_CHAR_EM`` font sizes a character (a heading's size, wide glyphs, one
  character a line): a box hides only when that much text still ends left of (above) the page. Longer text, a
  box stretched by ``right`` (``bottom``) as well, a page or ancestor that may run right-to-left (``dir``,
  ``direction``: the page then scrolls left), a value g6 cannot work out (a percentage, an unknown unit, a
  ``var()``): *may be hidden* (``css_undecided``), never shown and never hidden.

Not read: ``right: -9999px`` and ``bottom`` (the page grows and scrolls to the box: shown), logical properties
(``inset-inline-start``), ``writing-mode``, a transform other than translations (a rotation, a matrix: may be
hidden when the rest would hide), ``translate(-100%)`` alone (a percentage of the element's own box, wherever it
stands: shown).
"""

from __future__ import annotations

from collections.abc import Callable

import tinycss2

from g6.adapters.html.css_conditions import HEIGHT, WIDTH
from g6.adapters.html.css_values import Units, length, tokens

OFFSCREEN_PX = -1000.0  # an amount this far or farther is what makes an element a candidate
SLACK = 2 * WIDTH  # how far right of the page's edge a containing block or static position may start
PX_PER_CHAR_EM = 2.5  # the width (or line height) a character may take, in font sizes
AUTO = "auto"
UNKNOWN = None
_SIDES = ("left", "top")
_INSET = ("inset", "left", "top", "right", "bottom")
_MARGIN = ("margin", "margin-left", "margin-top")
_TRANSLATE = ("transform", "translate")
# properties of an ancestor that make it the containing block of an absolutely positioned (or fixed) element
CB_PROPS = ("transform", "translate", "rotate", "scale", "filter", "backdrop-filter", "perspective", "will-change",
            "contain", "container-type")
PROPS = ("position", *_INSET, *_MARGIN, *CB_PROPS, "direction")
_TRANSLATIONS = {"translate": (0, 1), "translatex": (0, None), "translatey": (None, 0), "translate3d": (0, 1),
                 "translatez": (None, None)}
Value = float | str | None  # px, AUTO, or UNKNOWN


def candidate(prop: str, value: str) -> bool:
    """Whether ``prop: value`` may move an element off the page (the group is then read for the whole page)."""
    if prop in _TRANSLATE:
        x, y = translation(value, prop, Units(16.0, 16.0, None))
        return any(isinstance(v, float) and v <= OFFSCREEN_PX for v in (x, y))
    if prop in ("inset", "margin"):
        return any(_far(t) for t in _box_sides(value))
    return prop in (*_SIDES, "margin-left", "margin-top") and _far(value)


def _far(value: str) -> bool:
    n = length(value, Units(16.0, 16.0, WIDTH))  # -100% of the viewport's width is a candidate too
    return n is not None and n <= OFFSCREEN_PX


def _box_sides(value: str) -> list[str]:
    """top, right, bottom, left of a four-value shorthand (``margin``, ``inset``); [] when it is not one."""
    parts = [tinycss2.serialize([t]) for t in tokens(value)]
    if not 1 <= len(parts) <= 4:
        return []
    t = parts[0]
    r = parts[1] if len(parts) > 1 else t
    b = parts[2] if len(parts) > 2 else t
    return [t, r, b, parts[3] if len(parts) > 3 else r]


def side(picks: dict[str, str | None], longhand: str, shorthand: str, index: int, units: Units) -> Value:
    """One side's value from its longhand or its shorthand (``left`` or ``inset``'s fourth): px, AUTO, or
    UNKNOWN (a value g6 cannot work out, or both written and disagreeing: the cascade between them is not
    kept)."""
    got = [_one(picks.get(longhand), units)]
    short = picks.get(shorthand)
    if short is not None:
        sides = _box_sides(short) if short != "\0maybe" else []
        got.append(_one(sides[index], units) if sides else UNKNOWN)
    declared = [g for g in got if g != "unset"]
    if not declared:
        return AUTO
    return declared[0] if all(g == declared[0] for g in declared) else UNKNOWN


def _one(value: str | None, units: Units) -> Value | str:
    if value is None:
        return "unset"
    if value in ("auto", "initial", "unset"):
        return AUTO
    if value in ("inherit", "revert", "revert-layer", "\0maybe"):
        return UNKNOWN
    n = length(value, units)
    return UNKNOWN if n is None else n


def translation(value: str | None, prop: str, units: Units) -> tuple[Value, Value]:
    """The x and y a ``transform`` (or the ``translate`` property) moves the element by, each at most (a
    negative percentage only moves it further: 0); UNKNOWN where g6 cannot bound it."""
    if value is None or value in ("none", "initial", "unset"):
        return 0.0, 0.0
    toks = tokens(value)
    if prop == "translate":
        return _bounded(toks[0:1], units), _bounded(toks[1:2], units) if len(toks) > 1 else 0.0
    x: Value = 0.0
    y: Value = 0.0
    for t in toks:
        if t.type != "function" or t.lower_name not in _TRANSLATIONS:
            return UNKNOWN, UNKNOWN  # a rotation, a matrix, a keyword: g6 does not bound where it moves to
        args = [a for a in t.arguments if a.type not in ("whitespace", "comment", "literal")]
        ix, iy = _TRANSLATIONS[t.lower_name]
        dx = _bounded(args[ix:ix + 1], units) if ix is not None else 0.0
        dy = _bounded(args[iy:iy + 1], units) if iy is not None else 0.0
        x = UNKNOWN if x is UNKNOWN or dx is UNKNOWN else x + dx  # type: ignore[operator]
        y = UNKNOWN if y is UNKNOWN or dy is UNKNOWN else y + dy  # type: ignore[operator]
    return x, y


def _bounded(toks: list[object], units: Units) -> Value:
    if not toks:
        return 0.0
    t = toks[0]
    if getattr(t, "type", "") == "percentage":
        return 0.0 if getattr(t, "value", 0) <= 0 else UNKNOWN  # of the element's own box: left only further
    n = length([t], units)
    return UNKNOWN if n is None else n


def decide(picks: dict[str, str | None], cb_above: bool | None, rtl_above: bool | None, font: float | None,
           chars: Callable[[], int]) -> tuple[bool, str] | None:
    """(hidden, how) for an element g6 can decide: True: moved wholly off the page; False: a candidate g6 cannot
    decide (*may be hidden*). None: not moved off (shown). ``cb_above``: a containing block above it (None: may
    be); ``rtl_above``: the element or an ancestor may run right-to-left; ``font``: its font size (None: unknown);
    ``chars``: the characters of its text (counted only for a candidate)."""
    units = Units(font, 16.0, None)
    pos = picks.get("position")
    x, y = translation(picks.get("transform"), "transform", units)
    tx, ty = translation(picks.get("translate"), "translate", units)
    moved = {"x": [("translate", _plus(x, tx))], "y": [("translate", _plus(y, ty))]}
    positioned = pos in ("absolute", "fixed", "relative")
    if positioned or pos == "\0maybe":
        # a percentage is of the containing block: the viewport's when none is above (else unknown)
        top_level = pos in ("absolute", "fixed") and cb_above is False
        wide = Units(font, 16.0, WIDTH if top_level else None)
        high = Units(font, 16.0, HEIGHT if top_level else None)
        left, top = side(picks, "left", "inset", 3, wide), side(picks, "top", "inset", 0, high)
        right, bottom = side(picks, "right", "inset", 1, wide), side(picks, "bottom", "inset", 2, high)
        ml, mt = side(picks, "margin-left", "margin", 3, wide), side(picks, "margin-top", "margin", 0, wide)
        moved["x"] += [("left", left), ("margin-left", 0.0 if ml == AUTO else ml)]
        moved["y"] += [("top", top), ("margin-top", 0.0 if mt == AUTO else mt)]
    else:
        right = bottom = AUTO
    far = {axis: [(n, v) for n, v in terms if (isinstance(v, float) and v <= OFFSCREEN_PX) or (
        v is UNKNOWN and n != "translate" and _raw_far(picks, n))] for axis, terms in moved.items()}
    if not far["x"] and not far["y"]:
        return None
    how = "; ".join(f"{n}:{v:g}px" if isinstance(v, float) else f"{n}:{picks.get(n)}"
                    for terms in far.values() for n, v in terms) + (f" (position:{pos})" if pos else "")
    extent = None if font is None else chars() * PX_PER_CHAR_EM * max(font, 16.0)
    if pos == "\0maybe" or extent is None:
        return False, how
    absolute = pos in ("absolute", "fixed")
    sure = False
    if far["x"]:
        left = dict(moved["x"]).get("left", AUTO)
        base = 0.0 if absolute and left != AUTO and cb_above is False else SLACK
        stretched = absolute and left != AUTO and right != AUTO
        sure |= rtl_above is False and not stretched and _ends_before(base, moved["x"], extent)
    if far["y"] and not sure:
        top = dict(moved["y"]).get("top", AUTO)
        if absolute and top != AUTO and cb_above is False and bottom == AUTO:
            sure |= _ends_before(0.0, moved["y"], extent)
    return sure, how


def _plus(a: Value, b: Value) -> Value:
    return a + b if isinstance(a, float) and isinstance(b, float) else UNKNOWN


def _ends_before(base: float, terms: list[tuple[str, Value]], extent: float) -> bool:
    """Whether the box, starting at most at ``base`` moved by ``terms``, ends (``extent`` later) before 0."""
    total = base
    for _, v in terms:
        if v is UNKNOWN:
            return False
        total += v if isinstance(v, float) else 0.0  # auto: where it stands (the base)
    return total + extent <= 0


def _raw_far(picks: dict[str, str | None], prop: str) -> bool:
    """Whether the value as written moves the element off (a value g6 cannot work out here: may be hidden)."""
    value = picks.get(prop)
    short = picks.get("margin" if prop.startswith("margin") else "inset")
    return (value is not None and candidate(prop, value)) or (short is not None and candidate("inset", short))
