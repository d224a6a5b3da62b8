"""HTML to the text a reader sees.

Dropped before any text is taken, and counted in ``unread``: ``script``, ``style``, ``template``; the
elements a browser never renders (``NEVER_RENDERED``: ``datalist``, ``noembed``, ``noframes``, ``rp``, a
``dialog`` without ``open``, SVG's ``desc``, ``title`` and ``metadata``, MathML's ``annotation``); and
hidden elements: the ``hidden`` attribute, ``aria-hidden="true"``, and what the page's own CSS hides
(:mod:`g6.adapters.html.css`: ``<style>`` and ``data:`` style sheets and inline styles, with ``@media``,
``@supports``, cascade layers, nesting and custom properties applied; ``display: none``, ``visibility:
hidden``, ``content-visibility: hidden``, and text laid out but invisible, :mod:`g6.adapters.html.css_invisible`:
``font-size: 0``, ``opacity: 0``, a transparent colour…; where only an element's own text is so, its children
setting a size or colour again, that text alone is removed); external style sheets are never fetched. The work style
sheets can cause is bounded (``MAX_STYLE_CHARS``, ``MAX_STYLE_VISITS``) and what the bounds leave out is
counted in ``unread`` (``style_chars_not_read``, ``style_rules_not_applied``; ``g6.cite.page_text`` then
cites nothing of the page). A JSON-LD ``<script type="application/ld+json">`` is ``structured_data``:
its JSON strings are kept as the hidden text, so a quote found only in a machine copy of the article says
so. Every dropped piece is kept in ``hidden`` with the reason in words, so a quote that cannot be cited
can say why.

**Kept in a fetch's documents, not cited.** Fallback content (``FALLBACKS``: ``noscript``, the text inside an
``iframe``) is shown only by a browser without scripts (or frames); what a closed ``<details>`` holds beyond its
``<summary>`` is shown only once a reader opens it (``DETAILS_CLOSED``); an element the page's CSS may hide
where g6 cannot tell (``@container``, a selector or value it cannot evaluate: ``CSS_UNDECIDED``) may or may
not be shown. A fetch's documents keep all three (a reader may see them; the fetcher's contract keeps
``noscript``); the texts a quote is cited from drop them (``extract_html(…, cited=True)``), kept in ``hidden``
with why: g6 cites only what a browser with scripts on shows as the page loads, as its rendered capture does.

The bytes are decoded as a browser decodes them (``g6.adapters.html.encoding``); comments and
processing instructions are removed, the text after each kept where it was.

The ``<title>`` is kept apart from the text. Two texts come out: ``visible`` is all the reader-visible
text of the body (navigation, sidebars, captions, table cells); ``text`` is trafilatura's main content,
or the visible text where it finds none (very short pages; ``text_source`` says which).

A page is parsed once: another reading of the same bytes (the wall check,
``g6.adapters.html.interstitial.WallCheck``) is a ``TreeReader`` handed to ``extract_html``, which shows
it the tree as parsed and again as a reader sees it, before trafilatura prunes it (fallback content
still in: a wall's "enable JavaScript" and its consent frame are evidence of the wall).
"""

from __future__ import annotations

import copy
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urljoin

import trafilatura
import trafilatura.external
import trafilatura.settings
from lxml import etree
from lxml import html as lxml_html

from g6.adapters.html.css import MAX_STYLE_CHARS as MAX_STYLE_CHARS  # the bounds, named where they were
from g6.adapters.html.css import MAX_STYLE_VISITS as MAX_STYLE_VISITS
from g6.adapters.html.css import CssEffects, css_effects
from g6.adapters.html.encoding import decode
from g6.adapters.html.refresh import Refresh, meta_refresh

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
DETAILS_CLOSED = "details_closed"  # in a closed <details>: shown once a reader opens it, not cited
CSS_UNDECIDED = "css_undecided"  # an element the page's CSS may hide, where g6 cannot tell (g6.adapters.html.css)
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
    refresh: Refresh | None = None  # the page's <meta http-equiv=refresh>, if a browser acts on one


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


def _hidden_reason(el: etree._Element, css: dict[etree._Element, tuple[str, str]]) -> tuple[str, str] | None:
    if el.get("hidden") is not None:
        return "hidden_attribute", "the hidden attribute"
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return "aria_hidden", 'aria-hidden="true"'
    return css.get(el)


def parse_html(body: bytes, content_type: str | None = None) -> lxml_html.HtmlElement:
    """The element tree of an HTML body decoded as a browser decodes it (g6.adapters.html.encoding),
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
    if tag not in NEVER_RENDERED or tag in FALLBACKS:  # _drop_uncited, later
        return None
    if tag == "dialog" and el.get("open") is not None:
        return None
    if tag in _IN_SVG or tag in _IN_MATH:
        inside = "svg" if tag in _IN_SVG else "math"
        if not any(isinstance(a.tag, str) and a.tag.lower() == inside for a in el.iterancestors()):
            return None
    return NEVER_RENDERED[tag]


def _unseen(el: etree._Element, tag: str, css: CssEffects) -> tuple[str, str] | None:
    if tag == "script" and (el.get("type") or "").strip().lower() == "application/ld+json":
        return STRUCTURED_DATA, _JSON_LD_HOW
    if tag in _DROP_TAGS:
        return tag, f"inside a <{tag}> element"
    return _never_rendered(el, tag) or _hidden_reason(el, css.hidden)


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
    """Remove what a reader does not see (fallback content and what the page's CSS may hide are left in:
    ``extract_html(…, cited=True)`` drops them); return what was removed (by reason), if scripts were there,
    and the removed text with how it was hidden."""
    unread, had_scripts, hidden, _ = _strip(root)
    return unread, had_scripts, hidden


_Undecided = list[tuple[etree._Element, str]]


def _strip(root: lxml_html.HtmlElement) -> tuple[dict[str, int], bool, tuple[HiddenText, ...], _Undecided]:
    """``strip_unseen``, and the elements the page's CSS may hide (g6 cannot tell), with how."""
    unread: dict[str, int] = {"elements": 0, "characters": 0}
    had_scripts = False
    css = css_effects(root)
    doomed: list[tuple[etree._Element, str, str]] = []
    undecided: _Undecided = []
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        found = _unseen(el, tag, css)
        if found:
            doomed.append((el, *found))
            had_scripts = had_scripts or tag == "script"
        elif el in css.unsure:
            undecided.append((el, css.unsure[el]))
    hidden = _blank_own_text(css.own_text, {id(el) for el, _, _ in doomed}, unread) + _remove(doomed, unread)
    unread.update(css.skipped)
    return unread, had_scripts, hidden, undecided


def _blank_own_text(own: dict[etree._Element, tuple[str, str]], doomed: set[int],
                    unread: dict[str, int]) -> tuple[HiddenText, ...]:
    """Remove an element's own text (its text and its children's tails) where the CSS hides that alone (a font
    size of 0 its children set again); not inside an element removed whole, whose hidden text keeps it."""
    hidden: list[HiddenText] = []
    for el, (reason, how) in own.items():
        if id(el) in doomed or any(id(a) in doomed for a in el.iterancestors()):
            continue
        text = "".join(t for t in (el.text, *(c.tail for c in el)) if t)
        el.text = None
        for c in el:
            c.tail = None
        unread["characters"] += len(text)
        unread[reason] = unread.get(reason, 0) + len(text)
        if text.strip():
            hidden.append(HiddenText(reason, how, text))
    return tuple(hidden)


def _drop_uncited(root: lxml_html.HtmlElement, undecided: _Undecided, unread: dict[str, int]) -> tuple[HiddenText, ...]:
    """Remove what is not cited though a fetch's documents keep it: fallback content (``FALLBACKS``: a browser
    with scripts on and frames does not show it), what the page's CSS may hide where g6 cannot tell
    (``CSS_UNDECIDED``) and a closed ``<details>``'s body; the removed text, counted in ``unread``. After a
    ``TreeReader`` has seen the tree."""
    doomed = [(el, *NEVER_RENDERED[el.tag.lower()]) for el in root.iter(*FALLBACKS) if isinstance(el.tag, str)]
    doomed += [(el, CSS_UNDECIDED, f"where the page's CSS may hide it and g6 cannot tell from its bytes ({how})")
               for el, how in undecided if el is root or any(a is root for a in el.iterancestors())]
    hidden = list(_remove(doomed, unread))
    for d in list(root.iter("details")):
        if d.get("open") is None and any(a is root for a in d.iterancestors()):
            hidden += _close(d, unread)
    return tuple(hidden)


_CLOSED_HOW = "inside a closed <details> (shown only once a reader opens it)"


def _close(details: etree._Element, unread: dict[str, int]) -> list[HiddenText]:
    """Remove what a closed ``<details>`` does not show: all but its first ``<summary>`` child."""
    summary = next((c for c in details if isinstance(c.tag, str) and c.tag.lower() == "summary"), None)
    loose = "".join(t for t in (details.text, *(c.tail for c in details)) if t)
    details.text = None
    for c in details:
        c.tail = None
    hidden = list(_remove([(c, DETAILS_CLOSED, _CLOSED_HOW) for c in details if c is not summary], unread))
    if loose.strip():
        unread["characters"] += len(loose)
        unread[DETAILS_CLOSED] = unread.get(DETAILS_CLOSED, 0) + len(loose)
        hidden.append(HiddenText(DETAILS_CLOSED, _CLOSED_HOW, loose))
    return hidden


def _remove(doomed: list[tuple[etree._Element, str, str]], unread: dict[str, int]) -> tuple[HiddenText, ...]:
    removed: set[int] = set()
    hidden: list[HiddenText] = []
    for el, reason, how in doomed:
        if id(el) in removed or any(id(a) in removed for a in el.iterancestors()):
            continue  # already gone, doomed twice (a fallback the CSS may hide too), or with an ancestor
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
    """Remove ``el`` but keep its tail text (lxml refuses to join text holding control characters). The root and
    the body (``<html hidden>``, ``body {display: none}``: a page that shows nothing) stay, emptied: a tree keeps
    its root, and without a body ``visible_text`` would read the whole document, the head's words too."""
    if el.getparent() is None or el.tag == "body":
        for child in list(el):
            el.remove(child)  # with its tail
        el.text = None
        if el.getparent() is not None:
            el.tail = None  # text after </body> is the body's to a browser
        return
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


_STOPLIST_LOCK = threading.Lock()
_build_stoplist = trafilatura.external.jt_stoplist_init  # trafilatura's own builder, called at most once a process


def _stoplist_once() -> tuple[str]:
    """trafilatura builds its fallback's (justext's) stoplist of every language, about 0.25 s of CPU, the first time a
    page falls back to justext, in whichever thread gets there, with no lock: a batch's eight threads meeting their
    first such pages (shells, say) built it eight times at once, holding each other up for a second. This takes the
    builder's place in trafilatura (the one name it calls it by): still built only when a page falls back (an article
    never needs it), and once, the other threads waiting for it; a build that raises does as trafilatura's did."""
    with _STOPLIST_LOCK:
        built = trafilatura.external.JT_STOPLIST
        return built if built is not None else _build_stoplist()


trafilatura.external.jt_stoplist_init = _stoplist_once


# trafilatura's options for the main text, as ``trafilatura.extract(url=…, favor_recall=True, include_comments=False,
# include_tables=True, deduplicate=False)`` builds them, built once: building them reads seven settings through
# ConfigParser, a fifth of a small page's extraction. trafilatura takes a shared Extractor (it copies one before
# changing it); each page gets a copy with its URL (``_main_options``; tests/adapters/test_main_options.py holds the
# copy equal to the one extract builds, slot by slot).
_MAIN_OPTIONS = trafilatura.settings.Extractor(recall=True, comments=False, tables=True, dedup=False)


def _main_options(url: str | None) -> trafilatura.settings.Extractor:
    options = copy.copy(_MAIN_OPTIONS)
    options.url = url
    source = url or None  # as Extractor(url=url) sets it
    options.source = source and source.encode("utf-8", "replace").decode("utf-8")
    return options


def main_text(root: lxml_html.HtmlElement, url: str | None) -> str | None:
    """trafilatura's main content of a tree ``strip_unseen`` has been through (``noscript`` read as
    text), or None where it finds none or fails. It prunes ``root`` in place: pass a copy to keep it."""
    _noscript_as_text(root)
    try:
        main = trafilatura.extract(root, options=_main_options(url))
    except (RecursionError, ValueError, TypeError, AttributeError):
        return None  # trafilatura's own failure
    return _tidy(main) if main and main.strip() else None


def extract_html(body: bytes, url: str, content_type: str | None = None, *, full_metadata: bool = False,
                 reader: TreeReader | None = None, cited: bool = False) -> HtmlText:
    """The reader's text of an HTML page. ``full_metadata`` adds trafilatura's author, date and site
    name (its date search costs more than the text extraction itself, so it runs only when asked).
    ``reader`` is shown the same tree (``TreeReader``), so the page is not parsed again for it.
    ``cited``: the texts a quote is cited from (``g6.cite.page_text``): fallback content (``noscript``), a
    closed ``<details>``'s body and what the page's CSS may hide where g6 cannot tell are dropped too, kept in
    ``hidden`` (a fetch's documents keep them: a reader may see them)."""
    root = parse_html(body, content_type)
    if reader is not None:
        reader.parsed(root, body)
    title_el = root.find(".//title")
    title = _tidy(title_el.text_content()) if title_el is not None else None
    metadata: dict[str, Any] = {}
    canonical = canonical_url(root, url)
    refresh = meta_refresh(root, url)
    description = _meta_content(root, "description", "og:description")
    unread, had_scripts, hidden, undecided = _strip(root)
    if title_el is not None and title_el.getparent() is not None:
        title_el.getparent().remove(title_el)  # the title is kept apart, not in the text
    if reader is not None:
        reader.stripped(root)
    if cited:
        hidden += _drop_uncited(root, undecided, unread)
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
    return HtmlText(title or None, text, source, unread, links, metadata, had_scripts, fallback, hidden, refresh)
