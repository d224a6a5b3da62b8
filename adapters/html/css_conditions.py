"""The conditions of a page's CSS (``@media`` queries, ``@supports``) answered for one reference reader.

The static reader (:mod:`g6.adapters.html.css`) applies a rule inside ``@media`` or ``@supports`` when its
condition holds for the reader g6 takes as the reference: the screen of its rendered capture (``g6 fetch
--render``: 1280×800 CSS pixels, one device pixel per CSS pixel), a desktop browser with scripts on, at
rest: a light colour scheme; no preference for reduced motion, transparency, contrast or data; no forced
or inverted colours; a fine pointer that can hover; sRGB, 8 bits a colour channel, standard dynamic range;
a browser tab (``display-mode: browser``). So ``(min-width: 0)``, ``screen`` and ``(hover)`` hold,
``print``, ``(max-width: 600px)`` and ``(prefers-color-scheme: dark)`` do not.

Every answer is three-valued: True, False, or None when g6 cannot tell (a feature whose value on a reader's
device it does not know, such as ``color-gamut: p3``; a length in a unit it does not convert; a syntax it
does not read; a property in ``@supports`` whose values it does not know). A rule under a None condition
is *uncertain*: the text it could hide is not cited from the static read (render the page instead).
Unknown media types (``tv``, ``speech``…) are False, as in browsers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import tinycss2

Tri = bool | None

WIDTH, HEIGHT = 1280.0, 800.0  # CSS pixels: the rendered capture's viewport (g6.adapters.browser.render)
_FONT = 16.0  # px of 1em / 1rem in a media query (the initial font size)
_PX = {"px": 1.0, "em": _FONT, "rem": _FONT, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54,
       "mm": 96 / 25.4, "q": 96 / 101.6, "vw": WIDTH / 100, "vh": HEIGHT / 100, "vmin": HEIGHT / 100,
       "vmax": WIDTH / 100}
_DPPX = {"dppx": 1.0, "x": 1.0, "dpi": 1 / 96, "dpcm": 2.54 / 96}
_TYPES = {"all": True, "screen": True}  # any other media type (print, speech, tv…) is False
# Discrete features: the reference reader's value. In a boolean context ``(feature)`` is true unless the
# value is "none" or "no-preference" (Media Queries 4).
_DISCRETE = {"orientation": "landscape", "prefers-color-scheme": "light", "prefers-reduced-motion": "no-preference",
             "prefers-reduced-transparency": "no-preference", "prefers-contrast": "no-preference",
             "prefers-reduced-data": "no-preference", "forced-colors": "none", "inverted-colors": "none",
             "hover": "hover", "any-hover": "hover", "pointer": "fine", "any-pointer": "fine", "scripting": "enabled",
             "update": "fast", "overflow-block": "scroll", "overflow-inline": "scroll", "display-mode": "browser",
             "dynamic-range": "standard", "video-dynamic-range": "standard"}
# Range features: the reference value, and how a value token is read for it.
_RANGE: dict[str, tuple[float, str]] = {
    "width": (WIDTH, "length"), "height": (HEIGHT, "length"), "device-width": (WIDTH, "length"),
    "device-height": (HEIGHT, "length"), "aspect-ratio": (WIDTH / HEIGHT, "ratio"),
    "device-aspect-ratio": (WIDTH / HEIGHT, "ratio"), "resolution": (1.0, "resolution"),
    "-webkit-device-pixel-ratio": (1.0, "number"), "color": (8.0, "number"), "color-index": (0.0, "number"),
    "monochrome": (0.0, "number"), "grid": (0.0, "number")}
_WEBKIT_RATIO = {"-webkit-min-device-pixel-ratio": "min--webkit-device-pixel-ratio",
                 "-webkit-max-device-pixel-ratio": "max--webkit-device-pixel-ratio"}


def _and(values: Iterable[Tri]) -> Tri:
    vals = list(values)
    return False if False in vals else (None if None in vals else True)


def _or(values: Iterable[Tri]) -> Tri:
    vals = list(values)
    return True if True in vals else (None if None in vals else False)


def _not(value: Tri) -> Tri:
    return None if value is None else not value


def _tokens(value: str | Sequence[Any]) -> list[Any]:
    toks = tinycss2.parse_component_value_list(value, skip_comments=True) if isinstance(value, str) else value
    return [t for t in toks if t.type not in ("whitespace", "comment")]


def _split(tokens: Sequence[Any], sep: str = ",") -> list[list[Any]]:
    parts: list[list[Any]] = [[]]
    for t in tokens:
        if t.type == "literal" and t.value == sep:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def _ident(t: Any, *words: str) -> bool:
    return t.type == "ident" and (not words or t.lower_value in words)


def media_matches(query_list: str | Sequence[Any]) -> Tri:
    """Whether a media query list (the text of a ``media`` attribute, or an ``@media`` prelude's tokens)
    holds for the reference reader. An empty list holds (it is ``all``)."""
    toks = _tokens(query_list)
    if not toks:
        return True
    return _or(_query(q) for q in _split(toks))


def _query(toks: list[Any]) -> Tri:
    if not toks:
        return None  # an empty query between commas: malformed, and g6 does not guess
    if _ident(toks[0]) and not _ident(toks[0], "not"):
        if _ident(toks[0], "only", "and", "or", "layer"):
            if _ident(toks[0], "only") and len(toks) > 1 and _ident(toks[1]):
                return _typed(toks[1].lower_value, toks[2:], False)
            return None
        return _typed(toks[0].lower_value, toks[1:], False)
    if _ident(toks[0], "not") and len(toks) > 1 and _ident(toks[1]):
        return _typed(toks[1].lower_value, toks[2:], True)
    return _condition(toks, allow_or=True)


def _typed(mtype: str, rest: list[Any], negate: bool) -> Tri:
    value: Tri = _TYPES.get(mtype, False)
    if rest:
        if not (_ident(rest[0], "and") and len(rest) > 1):
            return None
        value = _and([value, _condition(rest[1:], allow_or=False)])
    return _not(value) if negate else value


def _condition(toks: list[Any], *, allow_or: bool, feature: Callable[[list[Any]], Tri] | None = None) -> Tri:
    """``not (…)``, or ``(…) and (…)…``, or ``(…) or (…)…``; a part is a parenthesised condition or a feature
    (``feature`` reads one; the media feature reader by default)."""
    read = feature or _media_feature
    if _ident(toks[0], "not"):
        return _not(_in_parens(toks[1], read)) if len(toks) == 2 else None
    items, ops = toks[0::2], toks[1::2]
    if not ops:
        return _in_parens(items[0], read) if len(items) == 1 else None
    if not all(_ident(o) for o in ops) or len({o.lower_value for o in ops}) != 1 or len(items) != len(ops) + 1:
        return None
    op = ops[0].lower_value
    values = [_in_parens(t, read) for t in items]
    if op == "and":
        return _and(values)
    return _or(values) if op == "or" and allow_or else None


def _in_parens(t: Any, feature: Callable[[list[Any]], Tri]) -> Tri:
    if t.type != "() block":
        return feature([t]) if t.type == "function" else None
    inner = _tokens(t.content)
    if not inner:
        return None
    if inner[0].type == "() block" or _ident(inner[0], "not"):
        return _condition(inner, allow_or=True, feature=feature)
    return feature(inner)


def _media_feature(toks: list[Any]) -> Tri:
    if len(toks) == 1 and toks[0].type == "function":
        return None  # general-enclosed: not a feature g6 reads
    if len(toks) == 1 and _ident(toks[0]):
        return _boolean(toks[0].lower_value)
    if len(toks) >= 3 and _ident(toks[0]) and toks[1].type == "literal" and toks[1].value == ":":
        return _plain(toks[0].lower_value, toks[2:])
    return _range(toks)


def _boolean(name: str) -> Tri:
    if name in _DISCRETE:
        return _DISCRETE[name] not in ("none", "no-preference")
    if name in _RANGE:
        return _RANGE[name][0] != 0
    return None


def _plain(name: str, value: list[Any]) -> Tri:
    name = _WEBKIT_RATIO.get(name, name)
    if name in _DISCRETE:
        return value[0].lower_value == _DISCRETE[name] if len(value) == 1 and _ident(value[0]) else None
    if name == "color-gamut":
        return (True if value[0].lower_value == "srgb" else None) if len(value) == 1 and _ident(value[0]) else None
    for prefix, op in (("min-", ">="), ("max-", "<=")):
        if name.startswith(prefix) and name[len(prefix):] in _RANGE:
            return _compare(name[len(prefix):], op, value)
    return _compare(name, "=", value) if name in _RANGE else None


def _range(toks: list[Any]) -> Tri:
    """``(width >= 600px)``, ``(600px <= width)``, ``(400px < width <= 700px)``."""
    names = [i for i, t in enumerate(toks) if _ident(t) and t.lower_value in _RANGE]
    if len(names) != 1:
        return None
    i = names[0]
    name = toks[i].lower_value
    before, after = toks[:i], toks[i + 1:]
    parts: list[Tri] = []
    if before:
        op, value = _op_at_end(before)
        if op is None:
            return None
        parts.append(_compare(name, {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op], value))
    if after:
        op, value = _op_at_start(after)
        if op is None:
            return None
        parts.append(_compare(name, op, value))
    return _and(parts) if parts else None


def _op_at_start(toks: list[Any]) -> tuple[str | None, list[Any]]:
    ops = ""
    while toks and toks[0].type == "literal" and toks[0].value in "<>=" and len(ops) < 2:
        ops, toks = ops + toks[0].value, toks[1:]
    return (ops if ops in ("<", "<=", ">", ">=", "=") and toks else None), toks


def _op_at_end(toks: list[Any]) -> tuple[str | None, list[Any]]:
    ops = ""
    while toks and toks[-1].type == "literal" and toks[-1].value in "<>=" and len(ops) < 2:
        ops, toks = toks[-1].value + ops, toks[:-1]
    return (ops if ops in ("<", "<=", ">", ">=", "=") and toks else None), toks


def _value(kind: str, toks: list[Any]) -> float | None:
    if kind == "ratio":
        nums = [t.value for t in toks if t.type == "number"]
        slash = [t for t in toks if t.type == "literal" and t.value == "/"]
        if len(toks) == 1 and nums:
            return float(nums[0])
        if len(toks) == 3 and len(nums) == 2 and len(slash) == 1 and nums[1]:
            return float(nums[0]) / float(nums[1])
        return None
    if len(toks) != 1:
        return None
    t = toks[0]
    if kind == "length":
        if t.type == "number" and t.value == 0:
            return 0.0
        return float(t.value) * _PX[t.lower_unit] if t.type == "dimension" and t.lower_unit in _PX else None
    if kind == "resolution":
        return float(t.value) * _DPPX[t.lower_unit] if t.type == "dimension" and t.lower_unit in _DPPX else None
    return float(t.value) if t.type == "number" else None


def _compare(name: str, op: str, toks: list[Any]) -> Tri:
    actual, kind = _RANGE[name]
    v = _value(kind, toks)
    if v is None:
        return None
    return {"<": actual < v, "<=": actual <= v, ">": actual > v, ">=": actual >= v, "=": actual == v}[op]


# -- @supports ------------------------------------------------------------------------------------
def supports_matches(condition: str | Sequence[Any], selector_ok: Callable[[str], Tri]) -> Tri:
    """Whether an ``@supports`` condition holds in a current browser, as far as g6 can tell: a declaration
    of ``display``, ``visibility``, ``content-visibility`` or ``position`` (values g6 knows), a custom
    property (always), ``selector(…)`` (``selector_ok``: can g6 match it); anything else is None."""
    toks = _tokens(condition)
    if not toks:
        return None
    return _condition(toks, allow_or=True, feature=lambda inner: _supports_feature(inner, selector_ok))


def _supports_feature(toks: list[Any], selector_ok: Callable[[str], Tri]) -> Tri:
    if len(toks) == 1 and toks[0].type == "function":
        if toks[0].lower_name == "selector":
            return selector_ok(tinycss2.serialize(toks[0].arguments).strip())
        return None
    if len(toks) >= 3 and _ident(toks[0]) and toks[1].type == "literal" and toks[1].value == ":":
        name = toks[0].value
        if name.startswith("--"):
            return True
        value = " ".join(tinycss2.serialize(toks[2:]).lower().split()).removesuffix("!important").strip()
        return property_value_ok(name.lower(), value)
    return None


POSITION = frozenset({"static", "relative", "absolute", "fixed", "sticky", "-webkit-sticky"})
CSS_WIDE = frozenset({"inherit", "initial", "unset", "revert", "revert-layer"})
VISIBILITY = frozenset({"visible", "hidden", "collapse"})
CONTENT_VISIBILITY = frozenset({"visible", "auto", "hidden"})
_DISPLAY_ONE = frozenset({
    "none", "contents", "block", "inline", "inline-block", "flow", "flow-root", "table", "inline-table",
    "table-row-group", "table-header-group", "table-footer-group", "table-row", "table-cell",
    "table-column-group", "table-column", "table-caption", "flex", "inline-flex", "grid", "inline-grid",
    "list-item", "ruby", "ruby-text", "math", "-webkit-box", "-webkit-inline-box", "-webkit-flex",
    "-webkit-inline-flex"})
_DISPLAY_PARTS = frozenset({"block", "inline", "flow", "flow-root", "table", "flex", "grid", "ruby", "list-item",
                            "math"})


def display_ok(value: str) -> bool:
    """A ``display`` value a current Chromium accepts (one keyword, or two or three of the multi-keyword
    syntax); any other makes the declaration invalid, dropped as if it were not there."""
    words = value.split()
    if len(words) == 1:
        return words[0] in _DISPLAY_ONE or words[0] in CSS_WIDE
    return 2 <= len(words) <= 3 and len(set(words)) == len(words) and all(w in _DISPLAY_PARTS for w in words)


def property_value_ok(name: str, value: str) -> Tri:
    """Whether ``name: value`` is a valid declaration, for the properties g6 knows the values of; None
    for any other property."""
    known: dict[str, Callable[[str], bool]] = {
        "display": display_ok, "visibility": lambda v: v in VISIBILITY or v in CSS_WIDE,
        "content-visibility": lambda v: v in CONTENT_VISIBILITY or v in CSS_WIDE,
        "position": lambda v: v in POSITION or v in CSS_WIDE}
    check = known.get(name)
    return None if check is None else check(value)
