"""A report's bytes to text, and text to JSON, each refusal naming where it stopped.

Encodings: UTF-8 (a byte order mark is dropped), and UTF-16 or UTF-32 when a byte order mark says so.
Anything else is refused with the offset of the first byte that is not UTF-8: a Latin-1 or Windows-1252 report
is never guessed at, because a guessed encoding changes the very characters a quote is matched on (a report
saved in Latin-1 is converted by its author: ``iconv -f latin1 -t utf-8``).
"""

from __future__ import annotations

import codecs
from typing import Any

import orjson

from g6.errors import ReportEncodingError, ReportMalformed

_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def decode(data: bytes, name: str) -> str:
    """The report's text (see the module)."""
    encoding, skip = "utf-8", 0
    for bom, enc in _BOMS:  # UTF-32 LE's mark starts with UTF-16 LE's: it is tried first
        if data.startswith(bom):
            encoding, skip = enc, len(bom)
            break
    try:
        return data[skip:].decode(encoding)
    except UnicodeDecodeError as e:
        offset = skip + e.start
        byte = data[offset:offset + 1].hex()
        if encoding == "utf-8" and data.startswith(b"PK\x03\x04"):
            raise ReportEncodingError(
                f"{name}: a zip archive, not a report: to check a report against a bundle's evidence, give the "
                "report as REPORT and the bundle with --bundle ZIP --key KEY", offset) from None
        if encoding == "utf-8":
            raise ReportEncodingError(
                f"{name}: not UTF-8: byte {offset:,} (0x{byte}) does not decode; save the report as UTF-8 (a Latin-1 "
                "or Windows-1252 report is not guessed at)", offset) from None
        raise ReportEncodingError(f"{name}: its byte order mark says {encoding}, and byte {offset:,} does not "
                                  f"decode as {encoding}", offset) from None


def parse_json(text: str, name: str) -> Any:
    """The JSON value of ``text``; malformed JSON (and nesting over 1,024 levels) is one ``ReportMalformed``
    naming the line and column."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ReportMalformed(f"{name}: malformed JSON: {e.msg} at line {e.lineno}, column {e.colno}",
                              f"line {e.lineno}") from None
