"""CSS values read for :mod:`g6.adapters.html.css_invisible`: lengths (with ``calc()``, ``min()``, ``max()``,
``clamp()``), colours' alpha, opacity, the zero scales of a transform, the rectangles of ``clip`` and
``clip-path``, and the size in ``font``.

Each reader answers a number, or None where g6 cannot tell (an unknown unit, a percentage of a box g6 does not
lay out, a value it does not read). Nothing here guesses: None is "may be anything" to the caller.
"""

from __future__ import annotations

import re
from typing import Any

import tinycss2

from g6.adapters.html.css_conditions import HEIGHT, WIDTH

_ABS = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4, "q": 96 / 101.6,
        "vw": WIDTH / 100, "vh": HEIGHT / 100, "vmin": HEIGHT / 100, "vmax": WIDTH / 100, "svw": WIDTH / 100,
        "svh": HEIGHT / 100, "lvw": WIDTH / 100, "lvh": HEIGHT / 100, "dvw": WIDTH / 100, "dvh": HEIGHT / 100}
# font-relative units as a multiple of the font size (ex and ch: half an em, the usual approximation; a zero font
# makes them zero whatever the ratio)
_FONT_REL = {"em": 1.0, "ex": 0.5, "ch": 0.5, "cap": 0.7, "ic": 1.0}
_ROOT_REL = {"rem": 1.0, "rex": 0.5, "rch": 0.5, "rcap": 0.7, "ric": 1.0}
FONT_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0, "x-large": 24.0,
                 "xx-large": 32.0, "xxx-large": 48.0}
_MATH = ("calc", "min", "max", "clamp", "-webkit-calc")


def tokens(value: str) -> list[Any]:
    return [t for t in tinycss2.parse_component_value_list(value, skip_comments=True) if t.type != "whitespace"]


class Units:
    """What relative units are worth where a length is read: the font size (em), the root's (rem), and what
    100% is (None: a box g6 does not lay out)."""

    def __init__(self, em: float | None, rem: float | None, percent: float | None) -> None:
        self.em, self.rem, self.percent = em, rem, percent


def length(value: str | list[Any], units: Units) -> float | None:
    """A length (or a math function of lengths) in CSS pixels; None when g6 cannot tell."""
    toks = tokens(value) if isinstance(value, str) else [t for t in value if t.type != "whitespace"]
    if len(toks) != 1:
        return None
    return _term(toks[0], units)


def _term(t: Any, units: Units) -> float | None:
    if t.type == "number":
        return float(t.value) if t.value == 0 else None  # only 0 may be written without a unit
    if t.type == "percentage":
        return None if units.percent is None else float(t.value) * units.percent / 100
    if t.type == "dimension":
        unit = t.lower_unit
        if unit in _ABS:
            return float(t.value) * _ABS[unit]
        base = units.em if unit in _FONT_REL else units.rem if unit in _ROOT_REL else None
        scale = _FONT_REL.get(unit) or _ROOT_REL.get(unit)
        if t.value == 0 and scale is not None:
            return 0.0
        return None if base is None or scale is None else float(t.value) * scale * base
    if t.type == "function" and t.lower_name in _MATH:
        return _math(t, units)
    if t.type == "() block":
        return _sum([a for a in t.content if a.type != "whitespace"], units)
    return None


def _math(t: Any, units: Units) -> float | None:
    args: list[list[Any]] = [[]]
    for a in t.arguments:
        if a.type == "literal" and a.value == ",":
            args.append([])
        elif a.type not in ("whitespace", "comment"):
            args[-1].append(a)
    vals = [_sum(a, units) for a in args]
    if any(v is None for v in vals) or not vals:
        return None
    nums = [v for v in vals if v is not None]
    name = t.lower_name
    if name in ("calc", "-webkit-calc"):
        return nums[0] if len(nums) == 1 else None
    if name == "min":
        return min(nums)
    if name == "max":
        return max(nums)
    return max(nums[0], min(nums[1], nums[2])) if len(nums) == 3 else None


def _sum(toks: list[Any], units: Units) -> float | None:
    """``a + b - c`` of products ``x * n / n``; a bare number is a factor (calc(2 * 1em))."""
    total, sign, product, op = 0.0, 1.0, None, "*"
    has_length = False
    for t in toks:
        if t.type == "literal" and t.value in "*/":
            op = t.value
            continue
        if t.type == "literal" and t.value in "+-":
            if product is None:
                return None
            total += sign * product
            sign, product, op = (1.0 if t.value == "+" else -1.0), None, "*"
            continue
        if t.type == "number":
            v: float | None = float(t.value)
        else:
            v = _term(t, units)
            has_length = True
        if v is None:
            return None
        if product is None:
            product = v
        elif op == "*":
            product *= v
        elif v == 0:
            return None
        else:
            product /= v
    if product is None:
        return None
    if not has_length and total == 0 and sign == 1.0 and product != 0:
        return None  # a bare number where a length is needed: invalid
    return total + sign * product


_COLOR_FUNCTIONS = {"rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color"}
_HEX = re.compile(r"^[0-9a-f]+$")


def color_alpha(value: str) -> float | None:
    """The alpha of a colour: 0 for ``transparent``, ``#rgb0``, ``#rrggbb00``, ``rgba(…, 0)``, ``hsl(… / 0%)``;
    1 for any other colour g6 reads; None for ``currentcolor`` and the CSS-wide keywords (the caller inherits)
    and for what g6 cannot read."""
    toks = tokens(value)
    if len(toks) != 1:
        return None
    t = toks[0]
    if t.type == "ident":
        return 0.0 if t.lower_value == "transparent" else None if t.lower_value == "currentcolor" else 1.0
    if t.type == "hash":
        h = t.value.lower()
        if not _HEX.match(h):
            return None
        return (0.0 if int(h[3], 16) == 0 else 1.0) if len(h) == 4 else \
            (0.0 if int(h[6:], 16) == 0 else 1.0) if len(h) == 8 else 1.0
    if t.type == "function":
        args = [a for a in t.arguments if a.type not in ("whitespace", "comment")]
        if t.lower_name not in _COLOR_FUNCTIONS or any(a.type == "function" for a in args):
            return None  # color-mix(), light-dark(), var() left over, relative colours: not read
        parts = [a for a in args if not (a.type == "literal" and a.value == ",")]
        slash = next((i for i, a in enumerate(args) if a.type == "literal" and a.value == "/"), None)
        alpha = args[slash + 1] if slash is not None and slash + 1 < len(args) else (
            parts[3] if t.lower_name in ("rgba", "hsla", "rgb", "hsl") and len(parts) == 4 else None)
        if alpha is None:
            return 1.0
        return _fraction(alpha)
    return None


def _fraction(t: Any) -> float | None:
    if t.type == "number":
        return max(0.0, min(1.0, float(t.value)))
    if t.type == "percentage":
        return max(0.0, min(1.0, float(t.value) / 100))
    return None


def opacity(value: str) -> float | None:
    toks = tokens(value)
    return _fraction(toks[0]) if len(toks) == 1 else None


_SCALES = {"scale": (0, 1), "scale3d": (0, 1), "scalex": (0,), "scaley": (0,)}


def scale_zero(value: str, prop: str) -> bool | None:
    """Whether a ``transform`` (or the ``scale`` property) squashes the element to nothing: a scale with a zero
    factor on either axis; a ``matrix()`` g6 does not read is not zero. None for what g6 cannot read."""
    toks = tokens(value)
    if prop == "scale":
        nums = [_fraction_or_number(t) for t in toks]
        if not nums or any(n is None for n in nums):
            return None if toks and not (len(toks) == 1 and toks[0].type == "ident") else False
        return any(n == 0 for n in nums[:2])
    for t in toks:
        if t.type != "function":
            continue
        name = t.lower_name
        args = [a for a in t.arguments if a.type not in ("whitespace", "comment", "literal")]
        if name in _SCALES:
            nums = [_fraction_or_number(a) for a in args]
            if any(n is None for n in nums):
                return None
            axes = nums if name != "scale" or len(nums) > 1 else nums * 2
            if any(axes[i] == 0 for i in _SCALES[name] if i < len(axes)):
                return True
        elif name == "matrix" and len(args) == 6:
            m = [_fraction_or_number(a) for a in args]
            if all(x is not None for x in m[:4]) and m[0] * m[3] - m[1] * m[2] == 0:  # type: ignore[operator]
                return True
    return False


def _fraction_or_number(t: Any) -> float | None:
    if t.type == "number":
        return float(t.value)
    if t.type == "percentage":
        return float(t.value) / 100
    return None


def clip_rect_empty(value: str) -> bool | None:
    """Whether ``clip: rect(top, right, bottom, left)`` leaves no area (``rect(0 0 0 0)``, ``rect(1px, 1px, 1px,
    1px)``); None when g6 cannot tell (``auto`` edges, units it does not read)."""
    toks = tokens(value)
    if len(toks) == 1 and toks[0].type == "ident":
        return False  # auto
    if len(toks) != 1 or toks[0].type != "function" or toks[0].lower_name != "rect":
        return None
    parts = [a for a in toks[0].arguments if a.type not in ("whitespace", "comment", "literal")]
    if len(parts) != 4:
        return None
    units = Units(None, None, None)
    top, right, bottom, left = (length([p], units) for p in parts)
    if top is not None and bottom is not None and bottom <= top:
        return True
    if left is not None and right is not None and right <= left:
        return True
    return None if None in (top, right, bottom, left) else False


def clip_path_empty(value: str) -> bool | None:
    """Whether a ``clip-path`` leaves nothing: ``inset()`` whose opposite sides meet (``inset(50%)``),
    ``circle(0)``, ``ellipse(0 …)``; any other shape or a box keeps something (False); None for what g6
    cannot read."""
    toks = tokens(value)
    if len(toks) == 1 and toks[0].type == "ident":
        return False  # none, a box
    fn = next((t for t in toks if t.type == "function"), None)
    if fn is None:
        return None
    args = [a for a in fn.arguments if a.type not in ("whitespace", "comment")]
    name = fn.lower_name
    if name == "inset":
        cut = next((i for i, a in enumerate(args) if a.type == "ident" and a.lower_value == "round"), len(args))
        sides = [_percent(a) for a in args[:cut]]
        if not 1 <= len(sides) <= 4:
            return None
        t, r = sides[0], sides[1] if len(sides) > 1 else sides[0]
        b = sides[2] if len(sides) > 2 else t
        left = sides[3] if len(sides) > 3 else r
        if (t is not None and b is not None and t + b >= 100) or (r is not None and left is not None
                                                                  and r + left >= 100):
            return True
        return False  # lengths or less than the whole: something is left (g6 does not lay out the box)
    if name in ("circle", "ellipse"):
        first = next((a for a in args if not (a.type == "ident" and a.lower_value == "at")), None)
        return first is not None and first.type in ("number", "dimension", "percentage") and first.value == 0
    return False


def _percent(t: Any) -> float | None:
    if t.type == "percentage":
        return float(t.value)
    return 0.0 if t.type in ("number", "dimension") and t.value == 0 else None


def font_size_of_font(value: str) -> str | None:
    """The size in a ``font`` shorthand, as a value for ``font-size`` (``font: 0/0 a`` gives ``0``); None when the
    shorthand is a system font or g6 cannot find the size."""
    toks = tokens(value)
    for i, t in enumerate(toks):
        if t.type in ("dimension", "percentage"):
            return tinycss2.serialize([t])
        if t.type == "number" and (t.value == 0 or (i + 1 < len(toks) and toks[i + 1].type == "literal"
                                                    and toks[i + 1].value == "/")) and t.value == 0:
            return "0"
        if t.type == "ident" and t.lower_value in (*FONT_KEYWORDS, "larger", "smaller"):
            return t.lower_value
        if t.type == "function" and t.lower_name in _MATH:
            return tinycss2.serialize([t])
    return None
