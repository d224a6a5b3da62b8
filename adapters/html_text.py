"""HTML to the text a reader sees.

Dropped before any text is taken, and counted in ``unread``: ``script``, ``style``, ``template``; the
elements a browser never renders (``NEVER_RENDERED``: ``datalist``, ``noembed``, ``noframes``, ``rp``, a
``dialog`` without ``open``, SVG's ``desc``, ``title`` and ``metadata``, MathML's ``annotation``); and
hidden elements: the ``hidden`` attribute, ``aria-hidden="true"``, and ``display:none`` or
``visibility:hidden`` from an inline ``style`` or from the page's own ``<style>`` rules. Style sheets are
read with tinycss2 and their selectors matched with cssselect; the cascade between the rules that set
``display``/``visibility`` is applied (``!important``, inline style, specificity, order). Not applied:
external style sheets (never fetched), ``@media`` blocks other than ``screen``/``all`` (a query on width or
colour scheme depends on the device), ``@supports``, ``<style media=print>``, pseudo-elements, and
``visibility:visible`` inside a hidden element (the whole element counts as hidden). The work style sheets
can cause is bounded (``MAX_STYLE_CHARS``, ``MAX_STYLE_VISITS``) and what the bounds leave out is counted in
``unread``. A JSON-LD ``<script type="application/ld+json">`` is ``structured_data``: its JSON strings are
kept as the hidden text, so a quote found only in a machine copy of the article says so. Every dropped
piece is kept in ``hidden`` with the reason in words, so a quote that cannot be cited can say why.

**Fallback content** (``FALLBACKS``: ``noscript``, the text inside an ``iframe``) is shown only by a browser
without scripts (or frames). A fetch's documents keep it (a reader without scripts sees it: the fetcher's
contract); the texts a quote is cited from drop it (``extract_html(…, fallbacks=False)``), since g6 cites
what a browser with scripts on shows, as its rendered capture does.

The bytes are decoded as a browser decodes them (``g6.adapters.html_encoding``); comments and
processing instructions are removed, the text after each kept where it was.

The ``<title>`` is kept apart from the text. Two texts come out: ``visible`` is all the reader-visible
text of the body (navigation, sidebars, captions, table cells); ``text`` is trafilatura's main content,
or the visible text where it finds none (very short pages; ``text_source`` says which).

A page is parsed once: another reading of the same bytes (the wall check,
``g6.adapters.interstitial.WallCheck``) is a ``TreeReader`` handed to ``extract_html``, which shows
it the tree as parsed and again as a reader sees it, before trafilatura prunes it (fallback content
still in: a wall's "enable JavaScript" and its consent frame are evidence of the wall).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urljoin

import cssselect
import tinycss2
import trafilatura
from lxml import etree
from lxml import html as lxml_html

from g6.adapters.html_encoding import decode

_DROP_TAGS = ("script", "style", "template")
# Elements a browser never renders (the HTML standard's UA style sheet gives them display:none, or they are
# not rendered content): tag -> (reason, how). ``noscript``: g6 reads a page as a browser with scripts on does
# (its rendered capture too), and such a browser does not show it. SVG's and MathML's are so only inside
# <svg> or <math> (``_IN_SVG``, ``_IN_MATH``); a dialog only without ``open``.
NEVER_RENDERED = {
    "noscript": ("noscript", "inside a <noscript> element, which a browser with scripts on does not show"),
    "datalist": ("datalist", "inside a <datalist> element (suggestions for a field, not shown as text)"),
    "noembed": ("noembed", "inside a <noembed> element, which browsers do not show"),
    "noframes": ("noframes", "inside a <noframes> element, which browsers do not show"),
    "rp": ("rp", "inside an <rp> element (ruby's fallback parentheses, not shown where ruby is)"),
    "iframe": ("iframe", "inside an <iframe> element (fallback text: the frame shows another document)"),
    "dialog": ("dialog_closed", "inside a <dialog> element that is not open"),
    "desc": ("svg_desc", "in an SVG <desc> (a description for machines, not drawn)"),
    "metadata": ("svg_metadata", "in an SVG <metadata> element (not drawn)"),
    "title": ("svg_title", "in an SVG <title> (a tooltip, not drawn)"),
    "annotation": ("math_annotation", "in a MathML <annotation> (not rendered)"),
    "annotation-xml": ("math_annotation", "in a MathML <annotation-xml> (not rendered)"),
}
FALLBACKS = ("noscript", "iframe")  # fallback content: kept in a fetch's documents, not in cited texts
_IN_SVG = ("desc", "metadata", "title")
_IN_MATH = ("annotation", "annotation-xml")
NEVER_SEEN = frozenset({*_DROP_TAGS, *(r for r, _ in NEVER_RENDERED.values())})  # reasons: never shown at all


class HTMLParseError(ValueError):
    """The bytes could not be read as HTML at all."""


class TreeReader(Protocol):
    """Another reading of the tree ``extract_html`` parses, so that a page is parsed once. Neither
    call may change the tree: ``parsed`` sees it as parsed from ``body`` (scripts and hidden
    elements still in), ``stripped`` as a reader sees it (what ``strip_unseen`` drops and the
    ``<title>`` taken out), before the main-text pass prunes it."""

    def parsed(self, root: lxml_html.HtmlElement, body: bytes) -> None: ...

    def stripped(self, root: lxml_html.HtmlElement) -> None: ...


@dataclass(frozen=True, slots=True)
class HiddenText:
    """Text a reader does not see, and why (``how`` is for people, ``reason`` is the ``unread`` key)."""

    reason: str
    how: str
    text: str


@dataclass(frozen=True, slots=True)
class HtmlText:
    title: str | None
    text: str
    text_source: str  # "trafilatura" | "visible_text"
    unread: dict[str, int]
    links: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    had_scripts: bool = False
    visible: str = ""
    hidden: tuple[HiddenText, ...] = ()


def decode_text(body: bytes, content_type: str | None) -> str:
    """A text body that is not HTML, decoded as a browser would: BOM, then the header's charset
    mapped through the WHATWG table, else UTF-8."""
    return decode(body, content_type, html=False).text


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


_Key = tuple[bool, bool, tuple[int, int, int], int]  # (!important, inline, specificity, order)
_HIDING = {"display": ("none",), "visibility": ("hidden", "collapse")}
_INLINE = (1 << 30, 0, 0)


def _declarations(tokens: Any) -> dict[str, tuple[str, bool]]:
    """``display``/``visibility`` values (lower-cased) of a declaration list, with their !important."""
    out: dict[str, tuple[str, bool]] = {}
    for d in tinycss2.parse_declaration_list(tokens, skip_comments=True, skip_whitespace=True):
        if d.type == "declaration" and d.lower_name in _HIDING:
            out[d.lower_name] = (tinycss2.serialize(d.value).strip().lower(), bool(d.important))
    return out


_Rule = tuple[str, str, tuple[int, int, int], dict[str, tuple[str, bool]]]
# Bounds on the work a page's own CSS can cause. Parsing is linear in the sheet; matching costs one
# walk of the tree per selector, so selectors are matched until ``MAX_STYLE_VISITS`` (selectors x
# elements) is spent. What is not applied is counted in ``unread`` (``style_rules_not_applied``,
# ``style_chars_not_read``), so a page that hides text past the bounds says so.
MAX_STYLE_CHARS = 512 * 1024
MAX_STYLE_VISITS = 2_500_000


def _required(tree: Any, classes: set[str], ids: set[str]) -> None:
    """Class names and ids every element a selector matches (or an ancestor or sibling it names)
    must carry: a selector naming one the page never uses cannot match and is not walked."""
    while tree is not None:
        if isinstance(tree, cssselect.parser.CombinedSelector):
            _required(tree.subselector, classes, ids)
        elif isinstance(tree, cssselect.parser.Class):
            classes.add(tree.class_name)
        elif isinstance(tree, cssselect.parser.Hash):
            ids.add(tree.id)
        tree = getattr(tree, "selector", None)  # Negation's .selector is the base, not the negated part


_SCREEN = {"all", "screen", "only all", "only screen"}


def _screen_rules(rules: list[Any], depth: int = 0) -> Iterator[Any]:
    """The style rules a screen of any size applies: top-level ones and those inside ``@media
    screen``/``@media all`` (nested up to a few levels). A media query with a feature (a width, a
    colour scheme) depends on the reader's device and is not applied, nor @supports, @layer…"""
    for rule in rules:
        if rule.type == "qualified-rule":
            yield rule
        elif (rule.type == "at-rule" and rule.lower_at_keyword == "media" and rule.content is not None
              and depth < 4):
            queries = [" ".join(q.split()).lower() for q in tinycss2.serialize(rule.prelude).split(",")]
            if any(q in _SCREEN for q in queries):
                yield from _screen_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True,
                                                                  skip_whitespace=True), depth + 1)


@dataclass(slots=True)
class _Sheets:
    rules: list[_Rule] = field(default_factory=list)
    chars_not_read: int = 0
    rules_not_applied: int = 0


def _sheet_rules(root: lxml_html.HtmlElement) -> _Sheets:
    """(xpath, selector text, specificity, declarations) of the page's own <style> rules that set
    display or visibility and could match this page, in document order, within the bounds."""
    out = _Sheets()
    translator = cssselect.HTMLTranslator()
    classes = {c for el in root.iter() if isinstance(el.tag, str) for c in (el.get("class") or "").split()}
    ids = {el.get("id") for el in root.iter() if isinstance(el.tag, str) and el.get("id")}
    size = sum(1 for _ in root.iter())
    budget, read = MAX_STYLE_VISITS, 0
    for st in root.iter("style"):
        media = (st.get("media") or "all").strip().lower()
        if not any(m.strip() in ("all", "screen", "") for m in media.split(",")):
            continue
        css = st.text_content() or ""
        low = css.lower()
        if "display" not in low and "visibility" not in low:
            continue  # nothing that could hide: skip parsing (most sheets of most pages)
        if read + len(css) > MAX_STYLE_CHARS:  # the part past the bound is not read (a rule cut there is lost)
            out.chars_not_read += read + len(css) - MAX_STYLE_CHARS
            css = css[:MAX_STYLE_CHARS - read]
        read += len(css)
        for rule in _screen_rules(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)):
            decls = _declarations(rule.content)
            if not decls:
                continue
            try:
                selectors = cssselect.parse(tinycss2.serialize(rule.prelude))
            except cssselect.SelectorError:
                continue
            for sel in selectors:
                need_classes: set[str] = set()
                need_ids: set[str] = set()
                _required(sel.parsed_tree, need_classes, need_ids)
                if sel.pseudo_element or not need_classes <= classes or not need_ids <= ids:
                    continue
                if budget < size:
                    out.rules_not_applied += 1
                    continue
                try:
                    xpath = translator.selector_to_xpath(sel)
                except (cssselect.SelectorError, cssselect.xpath.ExpressionError):
                    continue
                budget -= size
                out.rules.append((xpath, sel.canonical(), sel.specificity(), decls))
    return out


def _css_hidden(root: lxml_html.HtmlElement) -> tuple[dict[etree._Element, tuple[str, str]], dict[str, int]]:
    """Elements the page's CSS (style sheets and inline styles) hides: element -> (reason, how); and
    what of the page's CSS was not applied (the bounds above), for ``unread``."""
    won: dict[tuple[etree._Element, str], tuple[_Key, str, str]] = {}  # (el, prop) -> (key, value, where)
    order = 0

    def offer(el: etree._Element, decls: dict[str, tuple[str, bool]], inline: bool,
              spec: tuple[int, int, int], where: str) -> None:
        nonlocal order
        order += 1
        for prop, (value, important) in decls.items():
            key: _Key = (important, inline, spec, order)
            cur = won.get((el, prop))
            if cur is None or key > cur[0]:
                won[(el, prop)] = (key, value, where)

    sheets = _sheet_rules(root)
    for xpath, selector, spec, decls in sheets.rules:
        try:
            matched = root.xpath(xpath)
        except etree.XPathError:
            continue
        for el in matched:
            if isinstance(el, etree._Element) and isinstance(el.tag, str):
                offer(el, decls, False, spec, f'the <style> rule "{selector}"')
    for el in root.iter():
        if isinstance(el.tag, str) and el.get("style"):
            decls = _declarations(el.get("style"))
            if decls:
                offer(el, decls, True, _INLINE, "an inline style")
    hidden: dict[etree._Element, tuple[str, str]] = {}
    for (el, prop), (_, value, where) in won.items():
        if value in _HIDING[prop] and el not in hidden:
            reason = "display_none" if prop == "display" else "visibility_hidden"
            hidden[el] = (reason, f"{prop}:{value} from {where}")
    skipped = {k: v for k, v in (("style_rules_not_applied", sheets.rules_not_applied),
                                 ("style_chars_not_read", sheets.chars_not_read)) if v}
    return hidden, skipped


def _hidden_reason(el: etree._Element, css: dict[etree._Element, tuple[str, str]]) -> tuple[str, str] | None:
    if el.get("hidden") is not None:
        return "hidden_attribute", "the hidden attribute"
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return "aria_hidden", 'aria-hidden="true"'
    return css.get(el)


def parse_html(body: bytes, content_type: str | None = None) -> lxml_html.HtmlElement:
    """The element tree of an HTML body decoded as a browser decodes it (g6.adapters.html_encoding),
    without comments or processing instructions (their tails, the text after them, are kept)."""
    xml = (content_type or "").split(";")[0].strip().lower() == "application/xhtml+xml"
    text = decode(body, content_type, xml=xml).text
    # the decoded text goes to libxml2 as UTF-8 under that label, which overrides any <meta> or XML
    # declaration in it (libxml2 refuses a str that holds an XML declaration)
    parser = lxml_html.HTMLParser(encoding="utf-8")
    try:
        root = lxml_html.document_fromstring(text.encode("utf-8"), parser=parser)
    except etree.ParserError as e:
        if "empty" in str(e).lower():
            return lxml_html.document_fromstring(b"<html></html>")  # only comments or blanks
        raise HTMLParseError(str(e)) from None
    except ValueError as e:
        raise HTMLParseError(str(e)) from None
    if root is None:
        raise HTMLParseError("no document")
    # React and other server renderers put <!-- --> between pieces of one sentence: the comment is
    # not text, the words after it are (strip_tags keeps each comment's tail where it was)
    etree.strip_tags(root, etree.Comment, etree.ProcessingInstruction)
    return root


def canonical_url(root: lxml_html.HtmlElement, base_url: str) -> str | None:
    for link in root.iterfind(".//link[@href]"):
        if "canonical" in (link.get("rel") or "").lower().split():
            try:
                return urljoin(base_url, link.get("href", "").strip())
            except ValueError:
                return None
    return None


STRUCTURED_DATA = "structured_data"
_JSON_LD_HOW = 'in the page\'s structured data (a JSON-LD <script type="application/ld+json">), a copy for machines'


def _json_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _json_strings(v)]
    return []


def _never_rendered(el: etree._Element, tag: str) -> tuple[str, str] | None:
    if tag not in NEVER_RENDERED or tag in FALLBACKS:  # drop_fallbacks, later
        return None
    if tag == "dialog" and el.get("open") is not None:
        return None
    if tag in _IN_SVG or tag in _IN_MATH:
        inside = "svg" if tag in _IN_SVG else "math"
        if not any(isinstance(a.tag, str) and a.tag.lower() == inside for a in el.iterancestors()):
            return None
    return NEVER_RENDERED[tag]


def _unseen(el: etree._Element, tag: str, css: dict[etree._Element, tuple[str, str]]) -> tuple[str, str] | None:
    if tag == "script" and (el.get("type") or "").strip().lower() == "application/ld+json":
        return STRUCTURED_DATA, _JSON_LD_HOW
    if tag in _DROP_TAGS:
        return tag, f"inside a <{tag}> element"
    return _never_rendered(el, tag) or _hidden_reason(el, css)


def _hidden_text(el: etree._Element, reason: str) -> str:
    """The text of a removed element; for structured data, its JSON strings as written (escapes
    read), so a quote of the article copied into JSON-LD is found there."""
    content = (el.text_content() if hasattr(el, "text_content") else "") or ""
    if reason == STRUCTURED_DATA:
        try:
            return "\n".join(_json_strings(json.loads(content)))
        except (ValueError, RecursionError):
            pass  # not JSON after all: its raw text
    return content


def strip_unseen(root: lxml_html.HtmlElement) -> tuple[dict[str, int], bool, tuple[HiddenText, ...]]:
    """Remove what a reader does not see, fallback content left in (``drop_fallbacks``); return what was
    removed (by reason), if scripts were there, and the removed text with how it was hidden."""
    unread: dict[str, int] = {"elements": 0, "characters": 0}
    had_scripts = False
    css, skipped = _css_hidden(root)
    doomed: list[tuple[etree._Element, str, str]] = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        found = _unseen(el, tag, css)
        if found:
            doomed.append((el, *found))
            had_scripts = had_scripts or tag == "script"
    hidden = _remove(doomed, unread)
    unread.update(skipped)
    return unread, had_scripts, hidden


def drop_fallbacks(root: lxml_html.HtmlElement, unread: dict[str, int] | None = None) -> tuple[HiddenText, ...]:
    """Remove the fallback content a browser with scripts on and frames does not show (``FALLBACKS``:
    ``noscript``, an ``iframe``'s inner text), counting it in ``unread``; the removed text. After
    ``strip_unseen``, and after a ``TreeReader`` was shown the tree (a wall's iframe and "enable JavaScript"
    are evidence of the wall)."""
    doomed = [(el, *NEVER_RENDERED[el.tag.lower()]) for el in root.iter(*FALLBACKS)
              if isinstance(el.tag, str) and len(el) + len((el.text or "").strip()) > 0]
    return _remove(doomed, {"elements": 0, "characters": 0} if unread is None else unread)


def _remove(doomed: list[tuple[etree._Element, str, str]], unread: dict[str, int]) -> tuple[HiddenText, ...]:
    removed: set[int] = set()
    hidden: list[HiddenText] = []
    for el, reason, how in doomed:
        if any(id(a) in removed for a in el.iterancestors()):
            continue  # already gone with an ancestor
        removed.add(id(el))
        content = (el.text_content() if hasattr(el, "text_content") else "") or ""
        unread["elements"] += 1
        unread["characters"] += len(content)
        unread[reason] = unread.get(reason, 0) + len(content)
        if content.strip():
            hidden.append(HiddenText(reason, how, _hidden_text(el, reason)))
        _drop(el)
    return tuple(hidden)


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
    block = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "td", "th", "caption", "section",
             "article", "header", "footer", "nav", "aside", "main", "figure", "figcaption", "blockquote", "pre",
             "table", "ul", "ol", "dl", "dd", "dt", "noscript", "form", "fieldset", "legend", "details", "summary",
             "address", "hr"}
    # "comment" and "pi" events too: a tree with comments left in still gives the text after each
    for event, el in etree.iterwalk(target, events=("start", "end", "comment", "pi")):
        if not isinstance(el.tag, str):
            if el.tail:
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


def _noscript_as_text(root: lxml_html.HtmlElement) -> None:
    for ns in root.iter("noscript"):
        ns.tag = "div"  # a reader without scripts sees it; trafilatura would drop the tag


def main_text(root: lxml_html.HtmlElement, url: str | None) -> str | None:
    """trafilatura's main content of a tree ``strip_unseen`` has been through (``noscript`` read as
    text), or None where it finds none or fails. It prunes ``root`` in place: pass a copy to keep it."""
    _noscript_as_text(root)
    try:
        main = trafilatura.extract(root, url=url, favor_recall=True, include_comments=False, include_tables=True,
                                   deduplicate=False)
    except (RecursionError, ValueError, TypeError, AttributeError):
        return None  # trafilatura's own failure
    return _tidy(main) if main and main.strip() else None


def extract_html(body: bytes, url: str, content_type: str | None = None, *, full_metadata: bool = False,
                 reader: TreeReader | None = None, fallbacks: bool = True) -> HtmlText:
    """The reader's text of an HTML page. ``full_metadata`` adds trafilatura's author, date and site
    name (its date search costs more than the text extraction itself, so it runs only when asked).
    ``reader`` is shown the same tree (``TreeReader``), so the page is not parsed again for it.
    ``fallbacks``: keep the text of ``noscript`` (and an ``iframe``'s fallback text), as a fetch's documents
    do (a reader without scripts sees it); False drops it (``drop_fallbacks``), as a browser with scripts on
    shows the page: the texts a quote is cited from (``g6.cite.page_text``)."""
    root = parse_html(body, content_type)
    if reader is not None:
        reader.parsed(root, body)
    title_el = root.find(".//title")
    title = _tidy(title_el.text_content()) if title_el is not None else None
    metadata: dict[str, Any] = {}
    canonical = canonical_url(root, url)
    description = _meta_content(root, "description", "og:description")
    unread, had_scripts, hidden = strip_unseen(root)
    if title_el is not None and title_el.getparent() is not None:
        title_el.getparent().remove(title_el)  # the title is kept apart, not in the text
    if reader is not None:
        reader.stripped(root)
    if not fallbacks:
        hidden += drop_fallbacks(root, unread)
    _noscript_as_text(root)
    links = extract_links(root, url)
    fallback = visible_text(root)
    text, source = fallback, "visible_text"
    try:
        if full_metadata:
            meta = trafilatura.extract_metadata(copy.deepcopy(root), default_url=url)
            if meta is not None:
                md = meta.as_dict()
                metadata = {k: md.get(k) for k in ("title", "author", "date", "sitename") if md.get(k)}
    except (RecursionError, ValueError, TypeError, AttributeError):
        pass  # trafilatura's own failure: no metadata
    # the tree is not used after this, so trafilatura may prune it in place (no copy)
    main = main_text(root, url)
    if main is not None:
        text, source = main, "trafilatura"
    if title:
        metadata.setdefault("title", title)
    if description:
        metadata["description"] = description
    if canonical:
        metadata["canonical"] = canonical
    lang = root.get("lang")
    if lang:
        metadata["language"] = lang
    return HtmlText(title or None, text, source, unread, links, metadata, had_scripts, fallback, hidden)
