"""Bytes to text as a browser decodes them: WHATWG encoding labels and the HTML standard's sniffing.

Every label (the HTTP ``Content-Type`` charset, ``<meta charset>``, ``<meta http-equiv=content-type>``)
is mapped through the WHATWG Encoding Standard's table (the ``webencodings`` package), so a page
labelled ``iso-8859-1``, ``latin1``, ``ascii`` or ``us-ascii`` is read as windows-1252, as every
browser reads it: 0x93 0x94 0x96 are “ ” –, not C1 control characters. An unknown label is ignored,
as a browser ignores it.

The order is the HTML standard's ("determining the character encoding"): a byte order mark first,
then the HTTP header's charset, then the ``<meta>`` prescan. The prescan reads the first
``PRESCAN_BYTES`` rather than the standard's 1,024: a browser that meets a ``<meta charset>`` later
while parsing changes to it ("change the encoding"), which a prescan over more bytes stands in for.
A meta label of UTF-16 means UTF-8 and ``x-user-defined`` means windows-1252 (the standard's rule).
With no label at all a page is read as windows-1252, the default of browsers in most locales:
neither Chromium nor Firefox takes unlabelled bytes over HTTP for UTF-8, however valid (so a
reader sees ``crÃªpes``, and so does a citation). Browsers may guess another legacy encoding from
the bytes (Shift_JIS, say); that guess is not made here. ``application/xhtml+xml`` is XML: its
``<?xml … encoding?>`` declaration stands in for the prescan and the default is UTF-8.

The ``replacement`` encoding (labels such as ``iso-2022-kr`` that browsers refuse to decode, because
they were used to smuggle script past filters) decodes a non-empty body to one U+FFFD, as the
standard says. Bytes a codec cannot map become U+FFFD.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

import webencodings

PRESCAN_BYTES = 256 * 1024
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16be"), (codecs.BOM_UTF16_LE, "utf-16le"))
_HEADER_CHARSET = re.compile(r";\s*charset\s*=\s*(\"[^\"]*\"|'[^']*'|[^;\s]*)", re.IGNORECASE)
_XML_DECL = re.compile(rb"^<\?xml[^>]*?encoding\s*=\s*[\"']([^\"']*)[\"']")
# one attribute of a tag, as the prescan's "get an attribute" reads it (name; value quoted or bare)
_ATTR = re.compile(rb"[\t\n\x0c\r /]*([^\t\n\x0c\r />][^\t\n\x0c\r /=>]*)"
                   rb"(?:[\t\n\x0c\r ]*=[\t\n\x0c\r ]*(\"[^\"]*\"?|'[^']*'?|[^\t\n\x0c\r >]*))?")
_SPACE = b"\t\n\x0c\r "
_META = re.compile(rb"<meta[\t\n\x0c\r /]", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Decoded:
    """A body's text, the WHATWG name of the encoding it was read as, and what said so
    (``bom``, ``http``, ``meta``, ``xml``, ``default``)."""

    text: str
    encoding: str
    source: str


def lookup(label: str | bytes | None) -> webencodings.Encoding | None:
    """The WHATWG encoding a label names, or None for a label the standard does not know."""
    if label is None:
        return None
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    return webencodings.lookup(label)


def header_charset(content_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header (unquoted), or None."""
    m = _HEADER_CHARSET.search(content_type or "")
    return m.group(1).strip("\"'") if m else None


def _bom(body: bytes) -> tuple[str, int] | None:
    return next(((name, len(bom)) for bom, name in _BOMS if body.startswith(bom)), None)


def _charset_in_content(value: bytes) -> bytes | None:
    """The standard's "extracting a character encoding from a meta element" over a content attribute."""
    low, pos = value.lower(), 0
    while True:
        i = low.find(b"charset", pos)
        if i < 0:
            return None
        j = i + 7
        while j < len(value) and value[j] in _SPACE:
            j += 1
        if j >= len(value) or value[j] != ord("="):
            pos = j
            continue
        j += 1
        while j < len(value) and value[j] in _SPACE:
            j += 1
        if j >= len(value):
            return None
        if value[j] in b"\"'":
            end = value.find(value[j:j + 1], j + 1)
            return value[j + 1:end] if end > 0 else None
        end = j
        while end < len(value) and value[end] not in _SPACE and value[end] != ord(";"):
            end += 1
        return value[j:end]


def _attributes(data: bytes, pos: int) -> tuple[list[tuple[bytes, bytes]], int]:
    """The attributes of a tag from ``pos`` (just after its name) to its ``>``; and where it ends."""
    attrs: list[tuple[bytes, bytes]] = []
    while pos < len(data):
        while pos < len(data) and (data[pos] in _SPACE or data[pos] == ord("/")):
            pos += 1
        if pos >= len(data) or data[pos] == ord(">"):
            return attrs, pos + 1
        m = _ATTR.match(data, pos)
        if m is None or m.end() == pos:
            pos += 1
            continue
        value = m.group(2) or b""
        if value[:1] in (b'"', b"'"):
            value = value[1:-1] if len(value) > 1 and value[-1:] == value[:1] else value[1:]
        attrs.append((m.group(1).lower(), value))
        pos = m.end()
    return attrs, pos


def _meta_label(attrs: list[tuple[bytes, bytes]]) -> bytes | None:
    seen: set[bytes] = set()
    got_pragma, need_pragma, charset = False, None, None
    for name, value in attrs:
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv" and value.strip().lower() == b"content-type":
            got_pragma = True
        elif name == b"content" and charset is None:
            found = _charset_in_content(value)
            if found is not None:
                charset, need_pragma = found, True
        elif name == b"charset":
            charset, need_pragma = value, False
    if need_pragma is None or (need_pragma and not got_pragma):
        return None
    return charset


def prescan(data: bytes) -> webencodings.Encoding | None:
    """The encoding a ``<meta>`` in ``data`` declares (the HTML standard's prescan), or None."""
    if _META.search(data) is None:
        return None  # no <meta> at all: nothing to scan for (most of a large page's bytes)
    pos, n = 0, len(data)
    while pos < n:
        lt = data.find(b"<", pos)
        if lt < 0:
            return None
        if data.startswith(b"<!--", lt):
            end = data.find(b"-->", lt + 2)
            if end < 0:
                return None
            pos = end + 3
            continue
        head = data[lt:lt + 6].lower()
        if head[:5] == b"<meta" and len(head) == 6 and (head[5] in _SPACE or head[5] == ord("/")):
            attrs, pos = _attributes(data, lt + 5)
            label = _meta_label(attrs)
            enc = lookup(label) if label is not None else None
            if enc is None:
                continue
            if enc.name in ("utf-16be", "utf-16le"):
                return lookup("utf-8")
            return lookup("windows-1252") if enc.name == "x-user-defined" else enc
        nxt = data[lt + 1:lt + 2]
        if nxt.isalpha() or (nxt == b"/" and data[lt + 2:lt + 3].isalpha()):
            k = lt + 1
            while k < n and data[k] not in _SPACE and data[k] != ord(">"):
                k += 1
            _, pos = _attributes(data, k)  # a tag's attributes are skipped whole: '>' in a value ends nothing
        elif nxt in (b"!", b"/", b"?"):
            end = data.find(b">", lt + 1)
            if end < 0:
                return None
            pos = end + 1
        else:
            pos = lt + 1
    return None


def _c1(err: UnicodeError) -> tuple[str, int]:
    """windows-1252's five bytes Python's cp1252 leaves unmapped (0x81 0x8D 0x8F 0x90 0x9D) are the C1
    code points of the same number in the WHATWG table."""
    assert isinstance(err, UnicodeDecodeError)
    return chr(err.object[err.start]), err.start + 1


codecs.register_error("g6-windows-1252", _c1)


def _decode(body: bytes, name: str) -> str:
    if name == "replacement":
        return "\ufffd" if body else ""
    enc = lookup(name)
    codec = enc.codec_info if enc is not None else codecs.lookup("utf-8")
    return codec.decode(body, "g6-windows-1252" if name == "windows-1252" else "replace")[0]


def decode(body: bytes, content_type: str | None, *, html: bool = True, xml: bool = False) -> Decoded:
    """``body`` decoded as a browser decodes it: BOM, then the header's charset, then (``html``) the
    meta prescan and windows-1252, or (``xml``) the XML declaration and UTF-8; any other text
    (``html=False``): UTF-8, with U+FFFD for what is not."""
    bom = _bom(body)
    if bom is not None:
        return Decoded(_decode(body[bom[1]:], bom[0]), bom[0], "bom")
    enc = lookup(header_charset(content_type))
    if enc is not None:
        return Decoded(_decode(body, enc.name), enc.name, "http")
    if xml:
        m = _XML_DECL.match(body.lstrip())
        enc = lookup(m.group(1)) if m else None
        if enc is not None:
            return Decoded(_decode(body, enc.name), enc.name, "xml")
    elif html:
        enc = prescan(body[:PRESCAN_BYTES])
        if enc is not None:
            return Decoded(_decode(body, enc.name), enc.name, "meta")
    if html and not xml:
        return Decoded(_decode(body, "windows-1252"), "windows-1252", "default")
    return Decoded(body.decode("utf-8", "replace"), "utf-8", "default")
