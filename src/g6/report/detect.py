"""Which format a report is in, told from its content.

Text whose first non-blank character is ``{`` is JSON (malformed JSON is refused as such, never read as
Markdown); text starting with ``[`` is JSON when it parses (an array of annotations) or when ``[`` is followed by
``{``, ``"``, ``[``, ``]`` or a digit, else Markdown (``[a link](…)`` starting a paragraph); anything else is Markdown.
A JSON value is matched against every JSON format's shape (each format's ``fits``): exactly one must fit.
None fitting, or several, is a ``ReportFormatError`` that lists each format tried and why it did or did not fit,
and says to name one with ``--format``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from g6.errors import ReportFormatError
from g6.report.formats import annotation, anthropic, gemini, manifest, openai, perplexity

# the JSON formats, each with the test of its shape (None: it fits; else why not)
JSON_FITS: dict[str, Callable[[object], str | None]] = {
    "openai-responses": openai.fits_responses,
    "openai-chat": openai.fits_chat,
    "anthropic": anthropic.fits,
    "gemini": gemini.fits,
    "perplexity": perplexity.fits,
    "annotation": annotation.fits,
    "g6-manifest": manifest.fits,
}
_JSON_ARRAY = re.compile(r"\[\s*[{\"\[\]\d-]")


def looks_like_json(text: str) -> bool | None:
    """True: JSON (refuse it if it does not parse); None: JSON if it parses, else Markdown; False: Markdown."""
    head = text.lstrip(" \t\r\n")[:64]
    if head.startswith("{"):
        return True
    if head.startswith("["):
        return True if _JSON_ARRAY.match(head) else None
    return False


def json_format(value: object, name: str) -> str:
    """The one JSON format ``value`` fits (see the module)."""
    why = {fmt: fits(value) for fmt, fits in JSON_FITS.items()}
    fitting = [fmt for fmt, reason in why.items() if reason is None]
    if len(fitting) == 1:
        return fitting[0]
    tried = tuple(f"{fmt} ({reason or 'fits'})" for fmt, reason in why.items())
    if not fitting:
        raise ReportFormatError(f"{name}: JSON in none of the formats g6 reads; tried: {'; '.join(tried)}. Name the "
                                "format with --format to see what it lacks", tried)
    raise ReportFormatError(f"{name}: JSON that fits more than one format ({', '.join(fitting)}); name the one "
                            "meant with --format", tuple(fitting))
