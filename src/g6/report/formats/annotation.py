"""W3C Web Annotations (``annotation``): JSON-LD of the Web Annotation Data Model, as Hypothesis and other
annotation tools export it: one ``Annotation``, an array of them, an ``AnnotationPage`` (``items``) or an
``AnnotationCollection`` whose ``first`` page is embedded (a page given only by its IRI is refused: g6 does not
fetch a report's pages). Hypothesis's own API shapes are read too: a search reply (``rows[]``) and its client's
export (``annotations[]``), where the claim is ``text``.

Each target of each annotation is one citation:

* the source is the target's ``source`` (a ``SpecificResource``), or the target itself when it is an IRI;
* the quote is the first ``TextQuoteSelector``'s ``exact``, with its ``prefix`` and ``suffix`` (the check finds the
  quote only where they surround it);
* a ``TimeState`` gives ``read_at`` (``sourceDate``, which must be an ISO 8601 date-time) and ``cached`` (an
  archived copy, a hint);
* the claim is the annotation's body: the ``value`` of its ``TextualBody`` bodies (tags left out) or its
  ``bodyValue``. ``Report.text`` is the claims, one paragraph each; there are no uncited claims.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from g6.report.build import ReportBuilder
from g6.report.formats.shape import Shape, at, type_of
from g6.report.model import Report

NAME = "annotation"
_CONTEXT = "www.w3.org/ns/anno.jsonld"
_NOT_CLAIMS = ("tagging", "classifying", "identifying", "linking", "moderating")


def _is_annotation(x: object) -> bool:
    return isinstance(x, Mapping) and (type_of(x) in ("Annotation", "oa:Annotation") or "target" in x)


def fits(obj: object) -> str | None:
    if isinstance(obj, list):
        return None if obj and all(_is_annotation(x) for x in obj) else "not an array of annotations"
    if not isinstance(obj, Mapping):
        return "not an annotation"
    ctx = [c for c in _listed(obj.get("@context"))[:20] if isinstance(c, str)]
    if any(_CONTEXT in c for c in ctx) or type_of(obj) in ("Annotation", "AnnotationCollection", "AnnotationPage"):
        return None
    for key in ("rows", "annotations"):  # Hypothesis's API reply and its client's export
        if isinstance(obj.get(key), list) and obj[key] and all(_is_annotation(x) for x in obj[key]):
            return None
    return "no W3C annotation context or type, nor Hypothesis rows[]/annotations[]"


def _annotations(shape: Shape, obj: object) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(obj, list):
        for i, x in enumerate(obj):
            yield at("", i), shape.obj(x, at("", i))
        return
    top = shape.obj(obj, "")
    kind = type_of(top)
    if kind == "AnnotationCollection" and "items" not in top:
        first = shape.get(top, "", "first")
        if not isinstance(first, Mapping):
            raise shape.fail("first", "the collection's first page is not embedded (g6 does not fetch it); export "
                                      "the annotations themselves")
        top, prefix = first, "first"
    else:
        prefix = ""
    for key in ("items", "rows", "annotations"):
        if key in top and kind != "Annotation":
            for i, x in enumerate(shape.arr(top[key], at(prefix, key))):
                yield at(at(prefix, key), i), shape.obj(x, at(at(prefix, key), i))
            return
    yield "", top


def _listed(value: object) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]


def _claim(shape: Shape, a: Mapping[str, Any], where: str) -> str:
    if "bodyValue" in a:
        return shape.text(a["bodyValue"], at(where, "bodyValue")) or ""
    if "body" not in a and isinstance(a.get("text"), str):  # Hypothesis's API
        return a["text"]
    values = []
    for k, body in enumerate(_listed(a.get("body"))):
        if isinstance(body, Mapping) and body.get("purpose") not in _NOT_CLAIMS and "value" in body:
            values.append(shape.text(body["value"], at(at(where, "body"), k)) or "")
    return "\n".join(v.strip() for v in values if v.strip())


def _first(shape: Shape, value: object, where: str, kind: str) -> Mapping[str, Any] | None:
    for k, x in enumerate(_listed(value)):
        if type_of(x) == kind:
            return shape.obj(x, at(where, k))
    return None


def _date(shape: Shape, value: object, where: str) -> str | None:
    listed = _listed(value)
    if not listed:
        return None
    text = shape.text(listed[0], where) or ""
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise shape.fail(where, f"sourceDate {text[:40]!r} is not an ISO 8601 date-time") from None
    return text


def _target(shape: Shape, b: ReportBuilder, target: object, where: str, a: Mapping[str, Any],
            claim: tuple[str, int | None, int | None]) -> None:
    if isinstance(target, str):
        b.cite(target, where, claim=claim)
        return
    t = shape.obj(target, where)
    source = t.get("source", a.get("uri") if "uri" in a else t.get("id"))
    source = shape.text(source, at(where, "source")) or ""
    sel = _first(shape, t.get("selector"), at(where, "selector"), "TextQuoteSelector")
    state = _first(shape, t.get("state"), at(where, "state"), "TimeState")
    fields: dict[str, str | None] = {}
    quote = None
    if sel is not None:
        quote = shape.text(sel.get("exact"), at(where, "selector.exact"), optional=True)
        fields["prefix"] = shape.text(sel.get("prefix"), at(where, "selector.prefix"), optional=True)
        fields["suffix"] = shape.text(sel.get("suffix"), at(where, "selector.suffix"), optional=True)
    if state is not None:
        fields["read_at"] = _date(shape, state.get("sourceDate"), at(where, "state.sourceDate"))
        cached = _listed(state.get("cached"))
        fields["cached"] = shape.text(cached[0], at(where, "state.cached")) if cached else None
    doc = a.get("document")
    if isinstance(doc, Mapping) and isinstance(doc.get("title"), list) and doc["title"]:  # Hypothesis's API
        fields["title"] = shape.text(doc["title"][0], at(where, "document.title[0]"))
    b.cite(source, where, claim=claim, quote=quote, **fields)


def read(obj: object, name: str, base: str | None = None) -> Report:
    shape = Shape(name, NAME)
    found = [(w, a, _claim(shape, a, w)) for w, a in _annotations(shape, obj)]
    pieces, offsets, at_ = [], [], 0
    for _, _, claim in found:
        offsets.append(at_)
        pieces.append(claim)
        at_ += len(claim) + 2
    b = ReportBuilder(NAME, "\n\n".join(pieces), name, base=base)
    for (w, a, claim), off in zip(found, offsets, strict=True):
        span = b.span_claim(off, off + len(claim))
        targets = _listed(shape.get(a, w, "target"))
        if not targets:
            raise shape.fail(at(w, "target"), "an annotation with no target")
        for k, t in enumerate(targets):
            _target(shape, b, t, at(at(w, "target"), k) if isinstance(a["target"], list) else at(w, "target"),
                    a, span)
    return b.build(count_uncited=False)
