"""Anthropic Messages (``anthropic``): a message's ``content[]`` text blocks with ``citations[]``.

``Report.text`` is the text blocks joined as Claude's answer shows them (one after another, nothing between),
with a blank line where tool calls and their results stood between two text blocks.
The claim of a citation is the text block it is on (its span in the text, trimmed); the quote is its
``cited_text``. Citation types:

* ``web_search_result_location`` (the web search tool): ``url``, ``title``, ``cited_text``;
* ``search_result_location`` (search results the caller supplied): ``source`` (read as the URL), ``title``,
  ``cited_text``, ``search_result_index``, ``start_block_index``/``end_block_index``;
* ``char_location`` (plain-text documents): ``document_index``, ``document_title``, ``cited_text``,
  ``start_char_index``/``end_char_index`` (0-based, end exclusive);
* ``page_location`` (PDF documents): ``start_page_number``/``end_page_number`` (1-based, end exclusive);
* ``content_block_location`` (custom-content documents): ``start_block_index``/``end_block_index``.

A document citation's source is ``document:N`` (``N`` its ``document_index``: a document the caller sent,
which has no address); its location in that document is kept, for people, in ``locator``. A citation of
another type is kept as unusable. Thinking, tool-use and tool-result blocks hold none of the answer's text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from g6.report.build import ReportBuilder
from g6.report.formats.shape import Shape, at, type_of
from g6.report.model import Report

NAME = "anthropic"
_DOCUMENT_TYPES = {"char_location": ("start_char_index", "end_char_index", "characters"),
                   "page_location": ("start_page_number", "end_page_number", "page"),
                   "content_block_location": ("start_block_index", "end_block_index", "block")}


def fits(obj: object) -> str | None:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("content"), list):
        return "no content[] array"
    if obj.get("type") == "message" or obj.get("role") == "assistant":
        return None
    return "not a message (type: message or role: assistant)"


def _range(first: int, end: int, unit: str) -> str:
    """"characters 0-20" (end exclusive as the format counts), "page 3", "pages 3-5", "block 0"."""
    if unit == "characters":
        return f"characters {first}-{end}"
    last = end - 1 if end > first else first
    return f"{unit} {first}" if last == first else f"{unit}s {first}-{last}"


def _citation(shape: Shape, b: ReportBuilder, raw: object, where: str,
              claim: tuple[str, int | None, int | None]) -> None:
    c = shape.obj(raw, where)
    kind = type_of(c) or "untyped"
    cited = shape.text(c.get("cited_text"), at(where, "cited_text"), optional=True)
    if kind == "web_search_result_location":
        url = shape.text(shape.get(c, where, "url"), at(where, "url")) or ""
        title = shape.text(c.get("title"), at(where, "title"), optional=True)
        b.cite(url, where, claim=claim, quote=cited, title=title)
    elif kind == "search_result_location":
        source = shape.text(shape.get(c, where, "source"), at(where, "source")) or ""
        title = shape.text(c.get("title"), at(where, "title"), optional=True)
        first = shape.index(c.get("start_block_index"), at(where, "start_block_index"), default=0)
        end = shape.index(c.get("end_block_index"), at(where, "end_block_index"), default=first + 1)
        b.cite(source, where, claim=claim, quote=cited, title=title, locator=_range(first, end, "block"))
    elif kind in _DOCUMENT_TYPES:
        k_start, k_end, unit = _DOCUMENT_TYPES[kind]
        doc = shape.index(shape.get(c, where, "document_index"), at(where, "document_index"))
        first = shape.index(shape.get(c, where, k_start), at(where, k_start))
        end = shape.index(shape.get(c, where, k_end), at(where, k_end))
        if end < first:
            raise shape.fail(at(where, k_end), f"{k_end} {end} is before {k_start} {first}")
        title = shape.text(c.get("document_title"), at(where, "document_title"), optional=True)
        b.cite(f"document:{doc}", where, claim=claim, quote=cited, source=f"document:{doc}", title=title,
               locator=_range(first, end, unit))
    else:
        b.unusable_citation(kind, f"a {kind} citation, not one g6 reads", where, claim)


def read(obj: object, name: str, base: str | None = None) -> Report:
    shape = Shape(name, NAME)
    top = shape.obj(obj, "")
    blocks: list[tuple[int, str, Mapping[str, Any]]] = []  # (offset in the text, where, block)
    pieces: list[str] = []
    at_ = 0
    apart = False  # a tool call between two text blocks: what follows is a new paragraph
    for i, raw in enumerate(shape.arr(shape.get(top, "", "content"), "content")):
        w = at("content", i)
        if type_of(raw) != "text":
            apart = bool(pieces)
            continue
        block = shape.obj(raw, w)
        text = shape.text(shape.get(block, w, "text"), at(w, "text")) or ""
        if apart:
            pieces.append("\n\n")
            at_ += 2
            apart = False
        blocks.append((at_, w, block))
        pieces.append(text)
        at_ += len(text)
    b = ReportBuilder(NAME, "".join(pieces), name, base=base)
    for off, w, block in blocks:
        cites = block.get("citations")
        if not cites:
            continue
        claim = b.span_claim(off, off + len(block["text"]))
        for k, c in enumerate(shape.arr(cites, at(w, "citations"))):
            _citation(shape, b, c, at(at(w, "citations"), k), claim)
    return b.build()
