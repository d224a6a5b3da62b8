"""OpenAI: the Responses API (``openai-responses``) and Chat Completions (``openai-chat``) with web search.

Responses: ``output[]`` items of ``type: message`` hold ``content[]`` parts of ``type: output_text`` with
``text`` and ``annotations[]``; an annotation of ``type: url_citation`` has ``url``, ``title``, ``start_index``,
``end_index``. Chat Completions: ``choices[0].message.content`` with ``message.annotations[]`` of
``{type: url_citation, url_citation: {url, title, start_index, end_index}}``.

Offsets are Python string indices (code points) into the part's text (OpenAI does not document the unit;
its SDKs slice Python strings with them); an offset past the text, or an end before its start, is refused.

**Markers and claims.** OpenAI's web search writes its citations into the text as Markdown links, e.g.
``… rose 12% ([gazette.example](https://…?utm_source=openai)).``, and the annotation's span is that link. A span
that is only such a link (with its parentheses) is a *marker*: it is cut out of ``Report.text`` (with the
spaces before it) and the claim is the sentence it follows. A span over prose (what some other services
behind the same API return, e.g. "The capital of France is Paris.") is a claim in itself: the claim is the
sentences it overlaps, widened to whole sentences. The Responses text of several parts and messages is
joined with a blank line. Annotations of other types (``file_citation``, ``container_file_citation``,
``file_path``) cite files g6 cannot read: each is kept as an unusable citation. A response with more than one
choice is refused: a report is one answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from g6.errors import ReportOffsetError
from g6.report.build import Cut, ReportBuilder
from g6.report.formats.shape import Shape, at, type_of
from g6.report.model import Report
from g6.report.sentences import Sentences

RESPONSES = "openai-responses"
CHAT = "openai-chat"
_MARKER = re.compile(r"\s*\(?\s*\[[^\]\n]*\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*\)\s*\)?\s*")


@dataclass
class _Note:
    kind: str  # the annotation's type
    where: str
    url: str = ""
    title: str | None = None
    start: int = 0
    end: int = 0
    marker: bool = False


@dataclass
class _Part:
    text: str
    where: str
    notes: list[_Note] = field(default_factory=list)
    cut: Cut | None = None


def fits_responses(obj: object) -> str | None:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("output"), list):
        return "no output[] array"
    if obj.get("object") == "response" or any(type_of(i) == "message" for i in obj["output"]):
        return None
    return "no output[] item of type message"


def fits_chat(obj: object) -> str | None:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("choices"), list) or not obj["choices"]:
        return "no choices[] array"
    msg = obj["choices"][0].get("message") if isinstance(obj["choices"][0], Mapping) else None
    if not isinstance(msg, Mapping) or not isinstance(msg.get("content"), str):
        return "no choices[0].message.content text"
    if ("citations" in obj or "search_results" in obj) and not msg.get("annotations"):
        return "top-level citations/search_results and no annotations: a Perplexity answer"
    return None


def _note(shape: Shape, raw: object, where: str, text: str, nested: bool) -> _Note:
    a = shape.obj(raw, where)
    kind = type_of(a) or ""
    if kind != "url_citation":
        return _Note(kind or "untyped", where)
    body = shape.obj(shape.get(a, where, "url_citation"), at(where, "url_citation")) if nested else a
    bw = at(where, "url_citation") if nested else where
    url = shape.text(shape.get(body, bw, "url"), at(bw, "url")) or ""
    title = shape.text(body.get("title"), at(bw, "title"), optional=True)
    start = shape.index(shape.get(body, bw, "start_index"), at(bw, "start_index"))
    end = shape.index(shape.get(body, bw, "end_index"), at(bw, "end_index"))
    if end < start or end > len(text):
        raise ReportOffsetError(f"{shape.name}: at {bw}: start_index {start}, end_index {end} do not fit the text "
                                f"of {len(text):,} characters", bw)
    return _Note(kind, where, url, title, start, end, bool(_MARKER.fullmatch(text, start, end)))


def _cut(part: _Part) -> None:
    spans = []
    for n in part.notes:
        if n.marker and n.end > n.start:
            a, e, t = n.start, n.end, part.text
            if a > 0 and t[a - 1] == "(" and t[e:e + 1] == ")":  # the span is the link, the parentheses around it
                a, e = a - 1, e + 1
            while a > 0 and t[a - 1] in " \t":
                a -= 1
            spans.append((a, e))
    part.cut = Cut(part.text, spans)


def _report(fmt: str, parts: list[_Part], name: str, base: str | None) -> Report:
    for p in parts:
        _cut(p)
    bases, texts, at_ = [], [], 0
    for p in parts:
        assert p.cut is not None
        bases.append(at_)
        texts.append(p.cut.text)
        at_ += len(p.cut.text) + 2
    text = "\n\n".join(texts)
    b = ReportBuilder(fmt, text, name, base=base, sentences=Sentences(text))
    for p, off in zip(parts, bases, strict=True):
        assert p.cut is not None
        for n in p.notes:
            if n.kind != "url_citation":
                b.unusable_citation(n.kind, f"a {n.kind} annotation: it cites a file, not a source g6 reads", n.where)
                continue
            a, e = off + p.cut.pos(n.start), off + p.cut.pos(n.end)
            claim = b.sentence_claim(a) if n.marker or e <= a else b.sentence_claim(a, e)
            b.cite(n.url, n.where, claim=claim, title=n.title)
    return b.build()


def read_responses(obj: object, name: str, base: str | None = None) -> Report:
    shape = Shape(name, RESPONSES)
    top = shape.obj(obj, "")
    parts: list[_Part] = []
    for i, item in enumerate(shape.arr(shape.get(top, "", "output"), "output")):
        w = at("output", i)
        if type_of(item) != "message":
            continue  # web_search_call, reasoning, tool calls: not the answer's text
        for j, part in enumerate(shape.arr(shape.get(shape.obj(item, w), w, "content"), at(w, "content"))):
            pw = at(at(w, "content"), j)
            if type_of(part) != "output_text":
                continue  # refusal parts hold no citations
            po = shape.obj(part, pw)
            text = shape.text(shape.get(po, pw, "text"), at(pw, "text")) or ""
            notes = shape.arr(po.get("annotations", []), at(pw, "annotations"))
            p = _Part(text, pw)
            p.notes = [_note(shape, a, at(at(pw, "annotations"), k), text, nested=False) for k, a in enumerate(notes)]
            parts.append(p)
    return _report(RESPONSES, parts, name, base)


def read_chat(obj: object, name: str, base: str | None = None) -> Report:
    shape = Shape(name, CHAT)
    top = shape.obj(obj, "")
    choices = shape.arr(shape.get(top, "", "choices"), "choices")
    if len(choices) != 1:
        raise shape.fail("choices", f"{len(choices)} choices: a report is one answer; keep the one to check")
    msg: Mapping[str, Any] = shape.obj(shape.get(shape.obj(choices[0], "choices[0]"), "choices[0]", "message"),
                                       "choices[0].message")
    w = "choices[0].message"
    text = shape.text(shape.get(msg, w, "content"), at(w, "content")) or ""
    p = _Part(text, at(w, "content"))
    notes = shape.arr(msg.get("annotations") or [], at(w, "annotations"))
    p.notes = [_note(shape, a, at(at(w, "annotations"), k), text, nested=True) for k, a in enumerate(notes)]
    return _report(CHAT, [p], name, base)
