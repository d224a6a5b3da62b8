"""HTML to the text a reader sees.

Dropped before any text is taken, and counted in ``unread``: ``script``, ``style``, ``template``
and hidden elements (the ``hidden`` attribute, ``aria-hidden="true"``, inline ``display:none`` or
``visibility:hidden``). ``noscript`` is kept: a reader without scripts sees it. The ``<title>`` is
kept apart from the text. trafilatura gives the main text and metadata; where it finds no main
text (very short pages), the whole visible text from lxml is used and ``text_source`` says so.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import trafilatura
from lxml import etree
from lxml import html as lxml_html

_DROP_TAGS = ("script", "style", "template")
_STYLE_HIDDEN = re.compile(r"(?:^|;)\s*(display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)",
                           re.IGNORECASE)
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:-]+)", re.IGNORECASE)


class HTMLParseError(ValueError):
    """The bytes could not be read as HTML at all."""


@dataclass(frozen=True, slots=True)
class HtmlText:
    title: str | None
    text: str
    text_source: str  # "trafilatura" | "visible_text"
    unread: dict[str, int]
    links: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    had_scripts: bool = False


def charset_of(content_type: str | None) -> str | None:
    if not content_type:
        return None
    m = _CHARSET.search(content_type)
    return m.group(1).lower() if m else None


def _tidy(text: str) -> str:
    """Collapse whitespace inside lines, keep at most one blank line between paragraphs."""
    out: list[str] = []
    blank = False
    for line in text.splitlines():
        t = " ".join(line.split())
        if not t:
            blank = True
            continue
        if blank and out:
            out.append("")
        out.append(t)
        blank = False
    return "\n".join(out)


def _hidden_reason(el: etree._Element) -> str | None:
    if el.get("hidden") is not None:
        return "hidden_attribute"
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return "aria_hidden"
    style = el.get("style")
    if style:
        m = _STYLE_HIDDEN.search(style)
        if m:
            return "display_none" if "display" in m.group(1).lower() else "visibility_hidden"
    return None


def parse_html(body: bytes, content_type: str | None = None) -> lxml_html.HtmlElement:
    charset = charset_of(content_type)
    parser = lxml_html.HTMLParser()
    if charset:
        try:
            parser = lxml_html.HTMLParser(encoding=charset)
        except LookupError:
            pass  # an unknown charset name: let lxml detect the encoding
    try:
        root = lxml_html.document_fromstring(body, parser=parser)
    except LookupError:
        root = lxml_html.document_fromstring(body)
    except etree.ParserError as e:
        if "empty" in str(e).lower():
            return lxml_html.document_fromstring(b"<html></html>")  # only comments or blanks
        raise HTMLParseError(str(e)) from None
    except ValueError as e:
        raise HTMLParseError(str(e)) from None
    if root is None:
        raise HTMLParseError("no document")
    return root


def canonical_url(root: lxml_html.HtmlElement, base_url: str) -> str | None:
    for link in root.iterfind(".//link[@href]"):
        if "canonical" in (link.get("rel") or "").lower().split():
            try:
                return urljoin(base_url, link.get("href", "").strip())
            except ValueError:
                return None
    return None


def strip_unseen(root: lxml_html.HtmlElement) -> tuple[dict[str, int], bool]:
    """Remove what a reader does not see; return what was removed (by reason) and if scripts were there."""
    unread: dict[str, int] = {"elements": 0, "characters": 0}
    had_scripts = False
    doomed: list[tuple[etree._Element, str]] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            if isinstance(el, etree._Comment):
                continue
            continue
        tag = el.tag.lower()
        reason = tag if tag in _DROP_TAGS else _hidden_reason(el)
        if reason:
            doomed.append((el, reason))
            had_scripts = had_scripts or tag == "script"
    removed: set[int] = set()
    for el, reason in doomed:
        if any(id(a) in removed for a in el.iterancestors()):
            continue  # already gone with an ancestor
        removed.add(id(el))
        chars = len((el.text_content() if hasattr(el, "text_content") else "") or "")
        unread["elements"] += 1
        unread["characters"] += chars
        unread[reason] = unread.get(reason, 0) + chars
        _drop(el)
    return unread, had_scripts


_CTRL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _drop(el: etree._Element) -> None:
    """Remove ``el`` but keep its tail text (lxml refuses to join text holding control characters)."""
    try:
        el.drop_tree()
        return
    except ValueError:
        pass
    parent, prev = el.getparent(), el.getprevious()
    tail = _CTRL.sub(" ", el.tail or "")
    el.tail = None
    if parent is None:
        return
    parent.remove(el)
    if tail:
        if prev is not None:
            prev.tail = _CTRL.sub(" ", prev.tail or "") + tail
        else:
            parent.text = _CTRL.sub(" ", parent.text or "") + tail


def visible_text(root: lxml_html.HtmlElement) -> str:
    body = root.find("body")
    target = body if body is not None else root
    parts: list[str] = []
    block = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article",
             "header", "footer", "blockquote", "pre", "table", "ul", "ol", "dd", "dt", "noscript"}
    for event, el in etree.iterwalk(target, events=("start", "end")):
        if not isinstance(el.tag, str):
            if event == "end" and el.tail:
                parts.append(el.tail)
            continue
        tag = el.tag.lower()
        if event == "start":
            if tag in block:
                parts.append("\n")
            if el.text:
                parts.append(el.text)
        else:
            if tag in block:
                parts.append("\n")
            if el.tail and el is not target:
                parts.append(el.tail)
    return _tidy("".join(parts))


def extract_links(root: lxml_html.HtmlElement, base_url: str) -> tuple[str, ...]:
    base_el = root.find(".//base[@href]")
    base = urljoin(base_url, base_el.get("href", "")) if base_el is not None else base_url
    seen: dict[str, None] = {}
    for a in root.iterfind(".//a[@href]"):
        href = (a.get("href") or "").strip()
        if not href or href.lower().startswith(("javascript:", "data:", "#")):
            continue
        try:
            absolute = urljoin(base, href)
        except ValueError:
            continue
        seen.setdefault(absolute.split("#", 1)[0] if "#" in absolute else absolute)
    return tuple(seen)


def _meta_content(root: lxml_html.HtmlElement, *names: str) -> str | None:
    for meta in root.iterfind(".//meta"):
        key = (meta.get("name") or meta.get("property") or "").strip().lower()
        if key in names:
            value = _tidy(meta.get("content") or "")
            if value:
                return value
    return None


def extract_html(body: bytes, url: str, content_type: str | None = None, *, full_metadata: bool = False) -> HtmlText:
    """The reader's text of an HTML page. ``full_metadata`` adds trafilatura's author, date and site
    name (its date search costs more than the text extraction itself, so it runs only when asked)."""
    root = parse_html(body, content_type)
    title_el = root.find(".//title")
    title = _tidy(title_el.text_content()) if title_el is not None else None
    metadata: dict[str, Any] = {}
    canonical = canonical_url(root, url)
    description = _meta_content(root, "description", "og:description")
    unread, had_scripts = strip_unseen(root)
    if title_el is not None and title_el.getparent() is not None:
        title_el.getparent().remove(title_el)  # the title is kept apart, not in the text
    for ns in root.iter("noscript"):
        ns.tag = "div"  # a reader without scripts sees it; trafilatura would drop the tag
    links = extract_links(root, url)
    fallback = visible_text(root)
    text, source = fallback, "visible_text"
    try:
        if full_metadata:
            meta = trafilatura.extract_metadata(copy.deepcopy(root), default_url=url)
            if meta is not None:
                md = meta.as_dict()
                metadata = {k: md.get(k) for k in ("title", "author", "date", "sitename") if md.get(k)}
        # the tree is not used after this, so trafilatura may prune it in place (no copy)
        main = trafilatura.extract(root, url=url, favor_recall=True, include_comments=False, include_tables=True,
                                   deduplicate=False)
        if main and main.strip():
            text, source = _tidy(main), "trafilatura"
    except (RecursionError, ValueError, TypeError, AttributeError):
        pass  # trafilatura's own failure: the lxml visible text stands
    if title:
        metadata.setdefault("title", title)
    if description:
        metadata["description"] = description
    if canonical:
        metadata["canonical"] = canonical
    lang = root.get("lang")
    if lang:
        metadata["language"] = lang
    return HtmlText(title or None, text, source, unread, links, metadata, had_scripts)
