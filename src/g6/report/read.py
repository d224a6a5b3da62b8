"""The front door of the readers: a report's bytes, in any format the field produces, to a ``Report``.

``read_report(data, format=None, name="REPORT", base=None)`` decodes (``g6.report.decode``), tells the format
(``g6.report.detect``) unless one is named, and hands the report to its reader (``g6.report.formats``). Every
refusal is a ``ReportError`` (exit 2 at the command line) whose message starts with ``name``; any bytes give a
``Report`` or a ``ReportError``, never another exception (a property test holds it). A report is read whole or
not at all: one bad offset refuses it, while a citation whose source cannot be read (``javascript:``, a
relative link with no base) is kept in ``Report.unusable`` beside the others.

Limits (each refused with ``ReportTooLarge``): ``MAX_REPORT_BYTES`` of input, ``MAX_QUOTE`` characters in one
quote, ``MAX_CITATIONS`` citations. Reading is linear in the report's size: claims are shared slices of the text,
offsets are looked up by binary search.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from g6.errors import ReportFormatError, ReportMalformed, ReportTooLarge
from g6.report.build import MAX_CITATIONS, MAX_QUOTE
from g6.report.decode import decode, parse_json
from g6.report.detect import json_format, looks_like_json
from g6.report.formats import annotation, anthropic, gemini, manifest, markdown, openai, perplexity
from g6.report.model import Report

__all__ = ["FORMATS", "MAX_CITATIONS", "MAX_QUOTE", "MAX_REPORT_BYTES", "detect_format", "read_report",
           "read_report_file"]

MAX_REPORT_BYTES = 64 * 1024 * 1024
_JSON_READERS: dict[str, Callable[[object, str, str | None], Report]] = {
    "openai-responses": openai.read_responses,
    "openai-chat": openai.read_chat,
    "anthropic": anthropic.read,
    "gemini": gemini.read,
    "perplexity": perplexity.read,
    "annotation": annotation.read,
    "g6-manifest": manifest.read,
}
# every format name --format takes, in the order the docs list them
FORMATS: tuple[str, ...] = ("openai-responses", "openai-chat", "anthropic", "gemini", "perplexity", "markdown",
                            "annotation", "g6-manifest")


def _checked(data: bytes, fmt: str | None, name: str) -> str:
    if fmt is not None and fmt not in FORMATS:
        raise ReportFormatError(f"{name}: unknown format {fmt[:40]!r}; the formats are {', '.join(FORMATS)}, and "
                                "g6-report-model (the model's own JSON)", FORMATS)
    if len(data) > MAX_REPORT_BYTES:
        raise ReportTooLarge(f"{name}: {len(data):,} bytes, over the {MAX_REPORT_BYTES:,}-byte limit of a report")
    text = decode(data, name)
    if not text.strip():  # read as Markdown it would be a report with nothing in it, which checks nothing
        raise ReportMalformed(f"{name}: empty ({len(data):,} bytes" + (", only white space" if data else "")
                              + "): no text and no citation to check")
    return text


def detect_format(data: bytes, *, name: str = "REPORT") -> str:
    """The format ``read_report`` would read ``data`` as (a ``ReportError`` when it cannot tell)."""
    text = _checked(data, None, name)
    kind = looks_like_json(text)
    if kind is False:
        return "markdown"
    try:
        value = parse_json(text, name)
    except ReportMalformed:
        if kind is None:
            return "markdown"
        raise
    return json_format(value, name)


def read_report(data: bytes, *, format: str | None = None, name: str = "REPORT",
                base: str | None = None) -> Report:
    """The report in ``data``. ``format``: one of ``FORMATS``, or None to tell it from the content. ``name``
    starts every error message (the file's name). ``base``: the URL relative links are resolved on (a Markdown
    report's own address); without it they are unusable citations."""
    text = _checked(data, format, name)
    if format == "markdown":
        return markdown.read(text, name, base)
    kind = looks_like_json(text) if format is None else True
    if kind is False:
        return markdown.read(text, name, base)
    try:
        value = parse_json(text, name)
    except ReportMalformed:
        if kind is None:
            return markdown.read(text, name, base)
        raise
    fmt = format or json_format(value, name)
    return _JSON_READERS[fmt](value, name, base)


def read_report_file(path: str | os.PathLike[str], *, format: str | None = None,
                     base: str | None = None) -> Report:
    """``read_report`` of a file, read no further than the limit; the file's name starts every message."""
    p = Path(path)
    if p.exists() and not p.is_file():  # a FIFO or a device would block or never end
        raise ReportMalformed(f"{p}: not a regular file")
    try:
        with p.open("rb") as f:
            data = f.read(MAX_REPORT_BYTES + 1)
    except FileNotFoundError:
        raise ReportMalformed(f"{p}: no such file") from None
    except IsADirectoryError:
        raise ReportMalformed(f"{p}: a folder, not a report") from None
    except OSError as e:
        raise ReportMalformed(f"{p}: cannot be read: {e.strerror or e}") from None
    return read_report(data, format=format, name=str(p), base=base)
