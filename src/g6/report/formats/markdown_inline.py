"""One Markdown paragraph's inline tokens (markdown-it-py) -> its plain text and the citations in it.

Links (inline, reference, autolinks and bare URLs), footnote references and paper ids written in prose
(``doi:10.…``, ``arXiv:2401.01234``, ``OpenAlex W…``) are citations. A citation is a *marker* when its text says
nothing of its own: a bare URL, a site name (``reuters.com``), a number (``[1]``), a footnote reference, or any
link or paper id standing alone in parentheses (``([Harbour Gazette](…))``, ``([A](…); [B](…))``,
``(doi:10.1000/xyz)``); a paper id in the sentence's grammar ("see doi:10.1000/xyz") keeps its text. A
marker's text is cut out of the report's text, with the parentheses around it and the spaces before it when
punctuation follows, so the sentence reads as the author meant it ("rose 12%."); a prose link keeps its text
("a [survey](…) found"). In-page links (``#…``), ``mailto:`` and ``tel:`` links are not citations: their text stays
as text. Images are not citations and their alt text is not the report's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from g6.report.sources import IN_PROSE, strip_trailing

_DOMAIN = re.compile(r"(?:https?://)?(?:www\.)?[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\.?(?:/\S*)?", re.I)
_NUMBER = re.compile(r"\[?\^?\d{1,3}\]?")
_SEPARATOR = re.compile(r"[\s,;]*")
_NOT_CITATIONS = ("#", "mailto:", "tel:")


@dataclass
class Cite:
    kind: str  # "link", "paper" or "fnref"
    written: str  # the href, the paper id as written, or the footnote's id
    a: int  # its span in the paragraph's text ([a, a) for a marker: where it was)
    b: int
    marker: bool
    title: str | None
    label: str = ""  # a footnote reference's label
    line: int = 0  # line breaks before it in the paragraph (its line is the paragraph's first plus this)


@dataclass
class _Item:
    kind: str  # "text", "link", "paper", "fnref"
    text: str = ""
    href: str = ""
    title: str | None = None
    markup: str = ""
    marker: bool = False
    label: str = ""
    line: int = 0


def _items(children: Sequence[Any]) -> list[_Item]:
    items: list[_Item] = []
    i = line = 0
    while i < len(children):
        t = children[i]
        if t.type == "text" or t.type == "code_inline":
            items.extend(_papers(t.content, line))
        elif t.type == "softbreak":
            items.append(_Item("text", " "))
            line += 1
        elif t.type == "hardbreak":
            items.append(_Item("text", "\n"))
            line += 1
        elif t.type == "footnote_ref":
            items.append(_Item("fnref", href=str(t.meta.get("id", "")), label=str(t.meta.get("label", "")),
                               marker=True, line=line))
        elif t.type == "link_open":
            j, words, at_line = i + 1, [], line
            while j < len(children) and children[j].type != "link_close":
                if children[j].type in ("text", "code_inline"):
                    words.append(children[j].content)
                elif children[j].type in ("softbreak", "hardbreak"):
                    words.append(" ")
                    line += 1
                j += 1
            href = str(t.attrGet("href") or "")
            text = "".join(words)
            if href.lower().startswith(_NOT_CITATIONS):
                items.append(_Item("text", text))
            else:
                title = t.attrGet("title")
                items.append(_Item("link", text, href, str(title) if title else None, t.markup, line=at_line))
            i = j
        elif t.type == "image":  # not a citation, and its alt text is not the report's words
            nxt = children[i + 1] if i + 1 < len(children) else None
            if items and items[-1].kind == "text" and items[-1].text[-1:] == " " and nxt is not None and \
                    nxt.type == "text" and nxt.content[:1] == " ":
                items[-1].text = items[-1].text[:-1]  # "see ![chart](…) and" reads "see and"
        i += 1
    return items


def _papers(text: str, line: int) -> list[_Item]:
    """Text with the paper ids written in it split out."""
    out: list[_Item] = []
    at = 0
    for m in IN_PROSE.finditer(text):
        written = strip_trailing(m.group())
        out.append(_Item("text", text[at:m.start()]))
        out.append(_Item("paper", written, written, line=line))
        at = m.start() + len(written)
    out.append(_Item("text", text[at:]))
    return [x for x in out if x.kind != "text" or x.text]


def _is_separator(x: _Item) -> bool:
    return x.kind == "text" and bool(_SEPARATOR.fullmatch(x.text))


def _classify(items: list[_Item]) -> None:
    """Which links are markers (see the module)."""
    for x in items:
        if x.kind == "link":
            t = x.text.strip()
            bare = x.href.split("://", 1)[-1].rstrip("/")
            x.marker = (x.markup in ("linkify", "autolink") or not t or t.rstrip("/") in (x.href.rstrip("/"), bare)
                        or bool(_DOMAIN.fullmatch(t)) or bool(_NUMBER.fullmatch(t)))
    i = 0
    while i < len(items):  # runs of links standing alone in parentheses
        if items[i].kind in ("link", "paper"):
            j = i
            while j + 2 < len(items) and _is_separator(items[j + 1]) and items[j + 2].kind in ("link", "paper"):
                j += 2
            before = items[i - 1].text.rstrip() if i > 0 and items[i - 1].kind == "text" else ""
            after = items[j + 1].text.lstrip() if j + 1 < len(items) and items[j + 1].kind == "text" else ""
            if before.endswith("(") and after.startswith(")"):
                for x in items[i:j + 1:2]:  # the links and ids, not the separators between them
                    x.marker = True
            i = j + 1
        else:
            i += 1


def _run(items: list[_Item], k: int) -> tuple[list[int], int]:
    """The markers from ``k`` on (separators between them dropped) and the index after them."""
    run: list[int] = []
    while k < len(items):
        if items[k].marker:
            run.append(k)
            k += 1
        elif run and _is_separator(items[k]) and k + 1 < len(items) and items[k + 1].marker:
            k += 1
        else:
            break
    return run, k


def inline(children: Sequence[Any]) -> tuple[str, list[Cite]]:
    """The paragraph's text and its citations, offsets into that text."""
    items = _items(children)
    _classify(items)
    out: list[str] = []
    n = 0
    cites: list[Cite] = []
    i = 0
    while i < len(items):
        x = items[i]
        if x.kind == "text" or not x.marker:
            s = x.text
            run, j = _run(items, i + 1) if x.kind == "text" else ([], i + 1)  # markers after a prose link stay
            if run:
                after = items[j].text if j < len(items) and items[j].kind == "text" else ""
                opened = s.rstrip(" \t")
                closer = {"(": ")", "[": "]"}.get(opened[-1:], "")
                if closer and after.lstrip(" \t").startswith(closer):
                    s = opened[:-1].rstrip(" \t")
                    items[j].text = after.lstrip(" \t")[1:]
                elif not after.strip(" \t") or after.lstrip(" \t")[:1] in ".,;:!?)]\n" or after[:1] in " \t":
                    s = opened  # "rose 12% [1]." -> "rose 12%."; "three [1] and" -> "three and"
            if x.kind in ("link", "paper"):
                cites.append(Cite(x.kind, x.href, n, n + len(s), False, x.title, line=x.line))
            out.append(s)
            n += len(s)
            for k in run:
                cites.append(_marker(items[k], n))
            i = j if run else i + 1
        else:
            run, j = _run(items, i)
            for k in run:
                cites.append(_marker(items[k], n))
            i = j
    return "".join(out), cites


def _marker(x: _Item, at: int) -> Cite:
    if x.kind == "fnref":
        return Cite("fnref", x.href, at, at, True, None, x.label, x.line)
    title = x.title
    if title is None and x.kind == "link" and not (_DOMAIN.fullmatch(x.text.strip()) or _NUMBER.fullmatch(
            x.text.strip()) or x.text.strip() in ("", x.href)):
        title = x.text.strip()
    return Cite(x.kind, x.href, at, at, True, title, line=x.line)
