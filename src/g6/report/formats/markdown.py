"""Markdown as people and agents write it (``markdown``), parsed with markdown-it-py (CommonMark, tables, bare
URLs through linkify-it-py, footnotes through mdit-py-plugins).

``Report.text`` is the document's plain text: each paragraph, heading, list item and quotation on its own
(blank line between), table rows as ``cell | cell``, code blocks and HTML left out, citation markers cut out
(``markdown_inline``). A citation's claim is the sentence it is in (for a marker: the sentence it follows); a
link that is a whole paragraph on its own (a bibliography entry) makes no claim.

**Quotes** (the passage the author says the source holds), in this order:

1. *A quotation attributed to a link*: a ``>`` blockquote whose last paragraph is an attribution (it starts
   with a dash, ``Source:``, ``From:`` or ``Via``, or holds nothing but its links), or that is directly followed
   by such a paragraph: the quote is the blockquote's text and goes to each link of the attribution; their
   claim is the last sentence of the paragraph just before the blockquote ("" when there is none).
2. *A quotation introduced by a link*: a paragraph ending in ``:`` with exactly one citation, directly
   followed by a blockquote: the quote is the blockquote's text; the claim is that citation's sentence.
3. *A footnote* (``[^1]`` with ``[^1]: …``): its sources are the links and paper ids in its definition; its
   quote is a blockquote inside the definition, else the one quoted passage (``"…"``, ``“…”``, ``«…»``, ``»…«``,
   three words or more) in it. Each reference to the footnote cites each of its sources.
4. *A quoted sentence*: a sentence holding exactly one citation and exactly one quoted passage of three words
   or more: the passage is that citation's quote. A passage of several sentences is one sentence
   (``g6.report.sentences`` does not end a sentence inside a quotation that closes in its paragraph).

A quote given to several sources (rule 1 with two links, a footnote with two URLs) is given to each. Sentences
in headings and quotations are not claims, so they are never counted as claims without a citation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from mdit_py_plugins.footnote import footnote_plugin

from g6.errors import ReportMalformed
from g6.report.build import ReportBuilder
from g6.report.formats.markdown_inline import Cite, inline
from g6.report.model import Report

NAME = "markdown"
_ATTRIBUTION = re.compile(r"\s*(?:[-–—―~]|sources?:|from:|via\b)", re.I)
_PUNCT = re.compile(r"[\s\-–—―~:,;.()\[\]]*")
_QUOTED = re.compile(r'"([^"\n]+)"|“([^”\n]+)”|„([^“”\n]+)[“”]|«\s?([^»\n]+?)\s?»|»([^«»\n]+)«')
Claim = tuple[str, int | None, int | None]
# How deep blocks (a list is two levels: the list and its item; a blockquote one) and inline spans (a link, an
# emphasis) are read. markdown-it stops at its maxNesting (CommonMark's preset: 20, a list 10 deep) and drops
# everything deeper without a word, citations included; here it runs one level past MAX_NESTING and the first
# rule of each chain refuses the report at MAX_NESTING, so nothing is ever dropped: a report nested deeper is
# refused whole (the depth also bounds markdown-it's recursion, a few frames a level).
MAX_NESTING = 100


class _TooDeep(Exception):
    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


def _depth_block(state: Any, start: int, end: int, silent: bool) -> bool:
    if state.level >= MAX_NESTING:
        raise _TooDeep(f"line {start + 1}")
    return False


def _depth_inline(state: Any, silent: bool) -> bool:
    if state.level >= MAX_NESTING:
        raise _TooDeep(f"character {state.pos:,} of a paragraph")
    return False


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"linkify": True, "maxNesting": MAX_NESTING + 1}).enable(["linkify", "table"])
    md.use(footnote_plugin)
    md.block.ruler.before(md.block.ruler.get_all_rules()[0], "g6_depth", _depth_block)
    md.inline.ruler.before(md.inline.ruler.get_all_rules()[0], "g6_depth", _depth_inline)
    md.validateLink = lambda url: True  # javascript:, data: links are kept, to be reported as unusable
    return md


@dataclass
class _Unit:
    kind: str  # "p" (paragraph, list item), "h" (heading), "cell", "th" (a table cell, a header cell)
    start: int
    end: int
    line: int
    group: int | None  # the top-level blockquote it is in
    cites: list[Cite]
    attribution: bool = False


@dataclass
class _Footnote:
    sources: list[Cite] = field(default_factory=list)
    quote: str | None = None


class _Text:
    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.n = 0

    def add(self, s: str) -> int:
        at = self.n
        self.pieces.append(s)
        self.n += len(s)
        return at

    def text(self) -> str:
        return "".join(self.pieces)


def _units(tokens: Sequence[Any], out: _Text) -> list[_Unit]:
    units: list[_Unit] = []
    depth, group, groups, kind, cells = 0, None, 0, "p", 0
    for t in tokens:
        if t.type == "blockquote_open":
            depth += 1
            if depth == 1:
                groups += 1
                group = groups
        elif t.type == "blockquote_close":
            depth -= 1
            group = group if depth else None
        elif t.type == "heading_open":
            kind = "h"
        elif t.type in ("th_open", "td_open"):
            kind = "th" if t.type == "th_open" else "cell"
        elif t.type in ("heading_close", "th_close", "td_close"):
            kind = "p"
        elif t.type == "tr_open":
            cells = 0
        elif t.type in ("tr_close", "table_close"):
            out.add("\n")
        elif t.type == "inline":
            text, cites = inline(t.children or [])
            cell = kind in ("cell", "th")
            if cell and cells and text:
                out.add(" | ")
            start = out.add(text)
            cells += cell and bool(text)
            if not cell:
                out.add("\n\n")
            for c in cites:
                c.a += start
                c.b += start
            units.append(_Unit(kind, start, start + len(text), (t.map or [0])[0] + 1, group, cites))
    return units


def _split_footnotes(tokens: Sequence[Any]) -> tuple[list[Any], dict[str, list[Any]]]:
    main: list[Any] = []
    notes: dict[str, list[Any]] = {}
    current: list[Any] | None = None
    inside = False
    for t in tokens:
        if t.type == "footnote_block_open":
            inside = True
        elif t.type == "footnote_block_close":
            inside = False
        elif t.type == "footnote_open":
            current = notes.setdefault(str(t.meta.get("id", "")), [])
        elif t.type == "footnote_close":
            current = None
        elif inside:
            if current is not None:
                current.append(t)
        else:
            main.append(t)
    return main, notes


def _quoted(text: str) -> list[str]:
    """The quoted passages of three words or more in ``text``."""
    found = (next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(text))
    return [q.strip() for q in found if len(q.split()) >= 3]


def _footnote(tokens: list[Any]) -> _Footnote:
    buf = _Text()
    units = _units(tokens, buf)
    text = buf.text()
    note = _Footnote([c for u in units for c in u.cites if c.kind != "fnref"])
    quoted = [text[u.start:u.end] for u in units if u.group == 1]
    if quoted:
        note.quote = "\n".join(quoted)
    else:
        passages = [q for u in units for q in _quoted(text[u.start:u.end])]
        note.quote = passages[0] if len(passages) == 1 else None
    return note


def _is_attribution(u: _Unit, text: str) -> bool:
    """A paragraph that names where a quotation comes from: it has a citation, and starts with a dash,
    ``Source:``, ``From:`` or ``Via``, or holds nothing but its citations and punctuation."""
    if not u.cites:
        return False
    if _ATTRIBUTION.match(text, u.start):
        return True
    pieces, at = [], u.start
    for c in u.cites:
        pieces.append(text[at:c.a])
        at = max(at, c.b)
    pieces.append(text[at:u.end])
    return bool(_PUNCT.fullmatch("".join(pieces)))


def _last_sentence(b: ReportBuilder, u: _Unit | None) -> Claim:
    if u is None or u.group is not None or u.kind in ("h", "th") or u.end <= u.start:
        return "", None, None
    lo, hi = b.sentences.covering(u.start, u.end)
    return b.span_claim(*b.sentences.spans[hi - 1]) if hi > lo else ("", None, None)


class _Reader:
    def __init__(self, text: str, units: list[_Unit], notes: dict[str, _Footnote], name: str,
                 base: str | None) -> None:
        self.text = text
        self.units = units
        self.notes = notes
        self.b = ReportBuilder(NAME, text, name, base=base)
        self.quotes: dict[int, str] = {}  # id(cite) -> quote, from the blockquote rules
        self.claims: dict[int, Claim] = {}  # id(cite) -> claim, where the rules say other than its sentence

    def blockquotes(self) -> None:
        """Rules 1 and 2 of the module: quotations attributed to or introduced by a citation."""
        units, i = self.units, 0
        while i < len(units):
            g = units[i].group
            if g is None:
                i += 1
                continue
            j = i
            while j < len(units) and units[j].group == g:
                j += 1
            before = units[i - 1] if i > 0 and units[i - 1].group is None else None
            after = units[j] if j < len(units) and units[j].group is None else None
            body = units[i:j]
            if len(body) > 1 and _is_attribution(body[-1], self.text):
                self._attribute(body[:-1], body[-1], before)
            elif after is not None and _is_attribution(after, self.text):
                self._attribute(body, after, before)
            elif before is not None and self.text[before.start:before.end].rstrip().endswith(":") and \
                    len(before.cites) == 1:
                self.quotes[id(before.cites[0])] = self._joined(body)
            i = j

    def _joined(self, units: list[_Unit]) -> str:
        return "\n".join(self.text[u.start:u.end] for u in units if u.end > u.start)

    def _attribute(self, quoted: list[_Unit], attribution: _Unit, before: _Unit | None) -> None:
        attribution.attribution = True
        quote, claim = self._joined(quoted), _last_sentence(self.b, before)
        for c in attribution.cites:
            if c.title is None and c.b > c.a and c.kind == "link":  # "— [Harbour Gazette](…)" names the source
                c.title = self.text[c.a:c.b].strip() or None
            self.quotes[id(c)] = quote
            self.claims[id(c)] = claim

    def claim_of(self, u: _Unit, c: Cite) -> Claim:
        if id(c) in self.claims:
            return self.claims[id(c)]
        if c.marker:
            return self.b.sentence_claim(c.a)
        claim = self.b.sentence_claim(c.a, c.b)
        if claim[1] is not None and _PUNCT.fullmatch(self.text[claim[1]:c.a] + self.text[c.b:claim[2]]):
            return "", None, None  # a link alone (a bibliography entry) claims nothing
        return claim

    def citations(self) -> Report:
        self.blockquotes()
        claims = [[self.claim_of(u, c) for c in u.cites] for u in self.units]
        per_sentence: dict[tuple[int | None, int | None], int] = {}
        for row in claims:
            for _, a, e in row:
                per_sentence[(a, e)] = per_sentence.get((a, e), 0) + 1
        for u, row in zip(self.units, claims, strict=True):
            for k, (c, claim) in enumerate(zip(u.cites, row, strict=True)):
                quote = self.quotes.get(id(c))
                if quote is None and claim[1] is not None and per_sentence[(claim[1], claim[2])] == 1:
                    passages = _quoted(claim[0])
                    quote = passages[0] if len(passages) == 1 else None
                self._cite(u, k, c, claim, quote)
        skip = [(u.start, u.end) for u in self.units
                if u.kind in ("h", "th") or u.group is not None or u.attribution]
        return self.b.build(skip=skip)

    def _cite(self, u: _Unit, k: int, c: Cite, claim: Claim, quote: str | None) -> None:
        where = f"line {u.line + c.line}, " + (f"footnote [^{c.label}]" if c.kind == "fnref" else
                                      f"{c.written[:60]}" if c.kind == "paper" else f"citation {k + 1}")
        if c.kind != "fnref":
            self.b.cite(c.written, where, claim=claim, quote=quote, title=c.title)
            return
        note = self.notes.get(c.written)
        if note is None or not note.sources:
            self.b.unusable_citation(f"[^{c.label}]", f"footnote [^{c.label}] names no link, DOI, arXiv or "
                                     "OpenAlex id", where, claim)
            return
        for j, src in enumerate(note.sources):
            w = where + (f", source {j + 1}" if len(note.sources) > 1 else "")
            self.b.cite(src.written, w, claim=claim, quote=note.quote or quote, title=src.title)


def read(text: str, name: str, base: str | None = None) -> Report:
    nul = text.find("\x00")
    if nul >= 0:
        raise ReportMalformed(f"{name}: not Markdown: a NUL character at character {nul:,} (a binary file?)",
                              f"character {nul}")
    try:
        tokens = _parser().parse(text)
    except _TooDeep as e:
        raise ReportMalformed(f"{name}: Markdown nested more than {MAX_NESTING} levels deep at {e.where} (a list "
                              "is two levels, a quotation or a link one): deeper than the reader reads",
                              e.where) from None
    except RecursionError:
        raise ReportMalformed(f"{name}: Markdown nested too deeply to read") from None
    main, note_tokens = _split_footnotes(tokens)
    out = _Text()
    units = _units(main, out)
    notes = {k: _footnote(v) for k, v in note_tokens.items()}
    return _Reader(out.text().rstrip("\n"), units, notes, name, base).citations()
