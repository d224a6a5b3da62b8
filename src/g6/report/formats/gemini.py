"""Google Gemini with grounding (``gemini``): a ``GenerateContentResponse`` with one candidate whose
``groundingMetadata`` holds ``groundingChunks[]`` (``web: {uri, title}``; ``retrievedContext: {uri, title,
text}``; ``maps: {uri, title}``) and ``groundingSupports[]`` (``segment: {partIndex, startIndex, endIndex,
text}`` and ``groundingChunkIndices[]``). The Python SDK's snake_case dump (``grounding_metadata``,
``start_index``…) is read the same.

``Report.text`` is the candidate's text parts joined (thought parts left out). The segment offsets are UTF-8
**bytes** into the part's text, as the API reference says ("Start index in the given Part, measured in
bytes"): they are converted to string indices, and an offset past the part's bytes or inside a character's
byte sequence is refused. Proto3 JSON leaves out zero values, so a missing ``startIndex`` or ``partIndex`` is 0.
When the segment gives its ``text`` too, it must be the text at those offsets.

One citation per (support, chunk index): the claim is the segment itself, as the provider drew it (not widened
to a sentence); a ``retrievedContext`` chunk's ``text`` (the passage retrieved) is its quote; a web chunk has
none. A chunk index with no chunk behind it is an unusable citation. A response with more than one candidate is
refused: a report is one answer.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

from g6.errors import ReportOffsetError
from g6.report.build import ReportBuilder
from g6.report.formats.shape import Shape, at
from g6.report.model import Report

NAME = "gemini"


def fits(obj: object) -> str | None:
    if isinstance(obj, Mapping) and isinstance(obj.get("candidates"), list):
        return None
    return "no candidates[] array"


def _utf8_len(ch: str) -> int:
    c = ord(ch)
    return 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4


class _Bytes:
    """Byte offset -> string index for one part's text (identity for ASCII)."""

    def __init__(self, text: str) -> None:
        self.chars = len(text)
        self.ascii = text.isascii()
        self.ends = [] if self.ascii else list(accumulate(map(_utf8_len, text)))
        self.size = self.chars if self.ascii else (self.ends[-1] if self.ends else 0)

    def char(self, byte: int) -> int | None:
        if byte > self.size:
            return None
        if self.ascii or byte == 0:
            return byte
        i = bisect.bisect_left(self.ends, byte)
        return i + 1 if self.ends[i] == byte else None


def _parts(shape: Shape, cand: Mapping[str, Any]) -> tuple[list[str | None], str]:
    content = shape.get(cand, "candidates[0]", "content", required=False)
    if content is None:
        return [], ""
    content = shape.obj(content, "candidates[0].content")
    texts: list[str | None] = []
    for i, part in enumerate(shape.arr(content.get("parts", []), "candidates[0].content.parts")):
        w = at("candidates[0].content.parts", i)
        p = shape.obj(part, w)
        texts.append(None if "text" not in p or p.get("thought") is True else shape.text(p["text"], at(w, "text")))
    return texts, "".join(t for t in texts if t is not None)


def _segment(shape: Shape, seg: Mapping[str, Any], where: str, texts: list[str | None], maps: dict[int, _Bytes],
             bases: list[int]) -> tuple[int, int]:
    """The segment's ``[start, end)`` in Report.text."""
    part = shape.index(shape.get(seg, where, "partIndex", "part_index", required=False), at(where, "partIndex"),
                       default=0)
    if part >= len(texts) or texts[part] is None:
        raise ReportOffsetError(f"{shape.name}: at {where}: partIndex {part} is not a text part of the answer", where)
    text = texts[part]
    assert text is not None
    given = shape.text(seg.get("text"), at(where, "text"), optional=True)
    start = shape.index(shape.get(seg, where, "startIndex", "start_index", required=False), at(where, "startIndex"),
                        default=0)
    end_raw = shape.get(seg, where, "endIndex", "end_index", required=given is None)
    end = start + len(given.encode("utf-8")) if end_raw is None and given is not None else \
        shape.index(end_raw, at(where, "endIndex"))
    bmap = maps.setdefault(part, _Bytes(text))
    a, e = bmap.char(start), bmap.char(end)
    if a is None or e is None or e < a:
        raise ReportOffsetError(
            f"{shape.name}: at {where}: byte offsets {start}-{end} do not fit part {part} ({bmap.size:,} bytes of "
            "UTF-8): past its end, before its start, or inside a character", where)
    if given is not None and text[a:e] != given:
        raise ReportOffsetError(f"{shape.name}: at {where}: the segment's text is not the text at its byte offsets "
                                f"{start}-{end}", where)
    return bases[part] + a, bases[part] + e


def _chunk(shape: Shape, raw: object, where: str) -> tuple[str, str | None, str | None]:
    """(uri, title, quote) of a grounding chunk."""
    chunk = shape.obj(raw, where)
    for key, quoted in (("web", False), ("retrievedContext", True), ("retrieved_context", True), ("maps", False)):
        if key in chunk:
            body = shape.obj(chunk[key], at(where, key))
            w = at(where, key)
            uri = shape.text(shape.get(body, w, "uri"), at(w, "uri")) or ""
            title = shape.text(body.get("title"), at(w, "title"), optional=True)
            quote = shape.text(body.get("text"), at(w, "text"), optional=True) if quoted else None
            return uri, title, quote
    raise shape.fail(where, "a chunk with none of web, retrievedContext, maps")


def read(obj: object, name: str, base: str | None = None) -> Report:
    shape = Shape(name, NAME)
    top = shape.obj(obj, "")
    cands = shape.arr(shape.get(top, "", "candidates"), "candidates")
    if len(cands) != 1:
        raise shape.fail("candidates", f"{len(cands)} candidates: a report is one answer; keep the one to check")
    cand = shape.obj(cands[0], "candidates[0]")
    texts, text = _parts(shape, cand)
    bases, at_ = [], 0
    for t in texts:
        bases.append(at_)
        at_ += len(t or "")
    b = ReportBuilder(NAME, text, name, base=base)
    meta_w = "candidates[0].groundingMetadata"
    meta = shape.get(cand, "candidates[0]", "groundingMetadata", "grounding_metadata", required=False)
    if meta is None:
        return b.build()
    meta = shape.obj(meta, meta_w)
    chunks = shape.arr(shape.get(meta, meta_w, "groundingChunks", "grounding_chunks", required=False) or [],
                       at(meta_w, "groundingChunks"))
    supports = shape.arr(shape.get(meta, meta_w, "groundingSupports", "grounding_supports", required=False) or [],
                         at(meta_w, "groundingSupports"))
    maps: dict[int, _Bytes] = {}
    for k, raw in enumerate(supports):
        w = at(at(meta_w, "groundingSupports"), k)
        support = shape.obj(raw, w)
        seg = shape.obj(shape.get(support, w, "segment"), at(w, "segment"))
        a, e = _segment(shape, seg, at(w, "segment"), texts, maps, bases)
        claim = b.span_claim(a, e)
        indices = shape.get(support, w, "groundingChunkIndices", "grounding_chunk_indices", required=False) or []
        for j, idx in enumerate(shape.arr(indices, at(w, "groundingChunkIndices"))):
            iw = at(at(w, "groundingChunkIndices"), j)
            i = shape.index(idx, iw)
            if i >= len(chunks):
                b.unusable_citation(f"chunk {i}", f"groundingChunkIndices names chunk {i}; the answer has "
                                    f"{len(chunks)}", iw, claim)
                continue
            uri, title, quote = _chunk(shape, chunks[i], at(at(meta_w, "groundingChunks"), i))
            b.cite(uri, iw, claim=claim, quote=quote, title=title)
    return b.build()
