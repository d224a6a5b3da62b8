"""When a raw read is a shell: the rule ``--render auto`` renders by.

A raw read is a *shell* (its words arrive only once scripts run) when all of these hold:

1. it is a successful read of an HTML page (outcome ``ok`` or ``empty``, a 2xx status, media type
   ``text/html`` or ``application/xhtml+xml``, at most ``MAX_EXTRACT_BYTES``) that met no wall (a login,
   challenge or consent page is not rendered around);
2. the page has at least one ``<script>`` element (without one, rendering could not change its text);
3. and one of:

   a. the text a reader sees without scripts (``<noscript>`` included, as a fetch's documents keep it) has
      fewer than ``MIN_TEXT`` (200) characters once whitespace is collapsed;
   b. the page is at least ``BIG_PAGE`` (20,000) bytes and that text is under ``MIN_RATIO`` (1 %) of them;
   c. that text asks for scripts: "enable JavaScript", "JavaScript is required / disabled / off", "requires
      JavaScript", "turn on JavaScript", "without JavaScript", "JavaScript must be enabled" (any case).

Anything else is read as it is. The rule is cheap: one parse, no main-text extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from g6.adapters.html.page import MAX_EXTRACT_BYTES, media_type
from g6.adapters.html.text import HTMLParseError, parse_html, strip_unseen, visible_text
from g6.adapters.net.checked_client import FetchResponse
from g6.adapters.outcomes import Outcome

MIN_TEXT = 200
BIG_PAGE = 20_000
MIN_RATIO = 0.01
NOTICE = re.compile(
    r"enable\s+javascript|javascript\s+(?:is\s+|has\s+been\s+)?(?:required|disabled|needed|turned\s+off|off\b)"
    r"|requires?\s+javascript|turn\s+on\s+javascript|without\s+javascript|javascript\s+must\s+be\s+enabled"
    r"|activate\s+javascript|allow\s+javascript", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ShellVerdict:
    shell: bool
    why: str  # which part of the rule decided, in words

    def to_json(self) -> dict[str, object]:
        return {"shell": self.shell, "why": self.why}


PAGE_TYPES = ("text/html", "application/xhtml+xml")


def not_a_page(resp: FetchResponse, head: bytes | None) -> str | None:
    """Why the raw read ``resp`` (whose bytes start with ``head``) is not a page a browser would render, in words
    (``--render`` keeps such a read as it is: a PDF, an image, a 404, a refusal); None when it is one."""
    if resp.outcome not in (Outcome.OK, Outcome.EMPTY) or resp.status is None or not 200 <= resp.status < 300:
        return "not a successful read"
    if media_type(resp.content_type, head or b"") not in PAGE_TYPES:
        return "not HTML"
    return None


def shell_verdict(resp: FetchResponse, body: bytes | None, walled: bool = False) -> ShellVerdict:
    """Whether the raw read ``resp`` (whose bytes are ``body``) is a shell, by the rule above."""
    if not_a_page(resp, body) == "not a successful read":
        return ShellVerdict(False, "not a successful read")
    if walled:
        return ShellVerdict(False, "a wall (login, challenge or consent page), not the page")
    if body is None or len(body) > MAX_EXTRACT_BYTES:
        return ShellVerdict(False, "no body, or one too large to read as a page")
    if not_a_page(resp, body) is not None:
        return ShellVerdict(False, "not HTML")
    try:
        root = parse_html(body, resp.content_type)
        _, had_scripts, _ = strip_unseen(root)
        for title in root.iter("title"):
            title.text = ""  # the title is not the page's text
        for ns in root.iter("noscript"):
            ns.tag = "div"  # a reader without scripts sees it
        text = " ".join(visible_text(root).split())
    except (HTMLParseError, RecursionError, ValueError):
        return ShellVerdict(False, "HTML that could not be read")
    if not had_scripts:
        return ShellVerdict(False, "no script: rendering could not change the text")
    if NOTICE.search(text):
        return ShellVerdict(True, "the page asks for JavaScript")
    if len(text) < MIN_TEXT:
        return ShellVerdict(True, f"{len(text)} characters of text without scripts (fewer than {MIN_TEXT})")
    if len(body) >= BIG_PAGE and len(text) < MIN_RATIO * len(body):
        return ShellVerdict(True, f"{len(text)} characters of text in {len(body)} bytes of HTML (under 1 %)")
    return ShellVerdict(False, f"{len(text)} characters of text without scripts")
