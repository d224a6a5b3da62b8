"""Parsing untrusted XML: no entities resolved, no network, no DTD, bounded depth."""

from __future__ import annotations

from lxml import etree

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                          remove_comments=True, remove_pis=True)


class XMLParseError(ValueError):
    pass


def parse_xml(body: bytes) -> etree._Element:
    try:
        root = etree.fromstring(body, parser=_PARSER)
    except (etree.XMLSyntaxError, ValueError) as e:
        raise XMLParseError(str(e)[:200]) from None
    if root is None:
        raise XMLParseError("empty document")
    return root


def text_of(el: etree._Element | None) -> str | None:
    if el is None:
        return None
    t = " ".join("".join(el.itertext()).split())
    return t or None
