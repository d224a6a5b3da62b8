"""Is this 2xx page the page, or a wall in front of it? A login, challenge or consent page.

A server that wants a login, a bot check or a consent click often answers ``200 OK`` with a page of
its own. The read succeeded (the bytes are what the server sent, and they are kept and receipted),
but the words are the wall's, not the page's. ``detect`` says so, with what gave it away:

* ``login``: a visible ``<input type=password>`` inside a form that is not in the page's header,
  navigation, footer or a sidebar;
* ``challenge``: a known bot-check title (Cloudflare's "Just a moment...", "Attention Required! |
  Cloudflare", "Checking your browser", DDoS-Guard, Akamai's "Access Denied" with its reference
  number, Imperva's "Pardon Our Interruption"…), a known challenge marker in a script or an attribute
  (``_cf_chl_opt``, Cloudflare's challenge form, DDoS-Guard, Imperva, PerimeterX, DataDome), or a
  form that holds nothing but a captcha (reCAPTCHA, hCaptcha, Turnstile);
* ``consent``: a final address on a consent host (``consent.google.com``…), the title "Before you
  continue", or a consent dialog (an IAB TCF CMP, a consent form or a cookie dialog) on a page that
  holds little else.

Each needs the rest of the page to be small: fewer than ``LITTLE_TEXT`` characters (whitespace not
counted) of reader-visible text outside the wall itself and outside the header, navigation, footer
and sidebars. So an article with a small login box in its header, or a cookie banner beside the
whole article, is not a wall. (A consent host is the one exception: the whole host is the wall.) A
cookie dialog must also say more than the rest of the page, so a banner beside a short article is not
one either.
That first look goes by the page's markup, and markup misleads: a publisher's layout may call the
column that holds the article a "sidebar" (Vox Media's ``l-sidebar-fixed``), or wrap the whole page
in an element named for consent. So a page that looks like a wall is then judged by its own main
text, the text ``g6.adapters.html.text.main_text`` (trafilatura) finds once the wall's elements are
taken out: a wall is a page whose own content is missing or cut short and replaced by the wall, so
``LITTLE_TEXT`` characters of main text or more, or (for a consent dialog) more main text than the
dialog says, and it is not a wall. A consent manager's message frame (Sourcepoint's) holds its words
in a document of its own, so it is taken to say ``FRAME_SAYS`` characters.
Markers are looked for in scripts and attributes, never in the text, so a page *about* Cloudflare's
challenge is not one.

Pure: bytes, status, final URL and content type in, a verdict out; no network. Bounded: only the
first ``MAX_INSPECT`` bytes are read, and a page none of whose bytes could belong to a wall is not
parsed at all. ``WallCheck`` gives the same verdict from the tree the page's text extraction parses
(``g6.adapters.html.text.TreeReader``), so a fetch parses a page once. The ``evidence`` words come
from a fixed vocabulary (never the page's own text), so they can stand in a signed receipt, which
never holds body text.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from lxml import etree
from lxml import html as lxml_html

from g6.adapters.html.text import HTMLParseError, main_text, parse_html, strip_unseen

KINDS = ("login", "challenge", "consent")
MAX_INSPECT = 512 * 1024  # bytes of a body looked at; walls are small, and the head holds their marks
LITTLE_TEXT = 1200  # characters (no whitespace) of other text a wall's page may hold: about 200 words
FRAME_SAYS = 300  # characters (no whitespace) a consent manager's message frame is taken to say: about 50 words

# Bytes one of which every wall we know holds somewhere (lower-cased): without any, nothing is parsed.
_TRIGGERS = (b"password", b"captcha", b"turnstile", b"_chl", b"just a moment", b"attention required",
             b"checking your browser", b"ddos-guard", b"access denied", b"consent", b"before you continue",
             b"tcfapi", b"cmp", b"cookie", b"incapsula", b"pardon our interruption", b"robot check",
             b"please wait")

CONSENT_HOSTS = ("consent.google.com", "consent.youtube.com", "consent.yahoo.com", "guce.yahoo.com",
                 "consent.aol.com", "guce.aol.com")

# Exact titles (lower-cased, whitespace collapsed) and title prefixes of known bot checks.
_CHALLENGE_TITLES = {
    "just a moment...": "Cloudflare", "just a moment…": "Cloudflare", "just a moment": "Cloudflare",
    "attention required! | cloudflare": "Cloudflare", "please wait... | cloudflare": "Cloudflare",
    "ddos-guard": "DDoS-Guard", "ddos-guard check": "DDoS-Guard",
    "pardon our interruption": "Imperva", "robot check": "Amazon",
}
_CHALLENGE_TITLE_PREFIXES = {"checking your browser": "Cloudflare", "ddos-guard": "DDoS-Guard"}
_AKAMAI_DENIED = re.compile(r"you don.t have permission to access .{0,300}reference\s*#\s*[0-9a-f]+\.",
                            re.IGNORECASE | re.DOTALL)

# Markers in a script's text or an attribute value (id, class, src, action), with whose they are.
_SCRIPT_MARKERS = (("_cf_chl_opt", "Cloudflare"), ("__cf_chl_", "Cloudflare"), ("cf_chl_prog", "Cloudflare"),
                   ("ddos-guard", "DDoS-Guard"), ("_incapsula_resource", "Imperva"),
                   ("captcha-delivery.com", "DataDome"), ("px-captcha", "PerimeterX"))
_ATTR_MARKERS = (("challenge-form", "Cloudflare"), ("cf-challenge", "Cloudflare"),
                 ("cf-browser-verification", "Cloudflare"), ("challenge-running", "Cloudflare"),
                 ("__cf_chl", "Cloudflare"), ("ddos-guard", "DDoS-Guard"), ("_incapsula_resource", "Imperva"),
                 ("captcha-delivery.com", "DataDome"), ("px-captcha", "PerimeterX"))
_CAPTCHAS = (("g-recaptcha", "reCAPTCHA"), ("recaptcha", "reCAPTCHA"), ("h-captcha", "hCaptcha"),
             ("hcaptcha", "hCaptcha"), ("cf-turnstile", "Turnstile"), ("turnstile", "Turnstile"))

# A consent dialog's element: an id or class naming a consent manager, or a cookie/consent dialog.
_CONSENT_ATTR = re.compile(r"onetrust|cookiebot|didomi|qc-cmp|sp_message|fc-consent|truste|usercentrics|cmpbox|"
                           r"cmp-container|consent|gdpr|cookie[-_]?(banner|notice|wall|dialog|modal|overlay|popup|"
                           r"layer|bar|prompt|law)", re.IGNORECASE)
_ACTIONS = ("button", "input", "a")
_CONSENT_WORDS = re.compile(r"cookie|consent|privacy|partners|personali[sz]e|zustimm|einwillig|datenschutz",
                            re.IGNORECASE)
_USER_FIELDS = ("text", "email", "tel", "url", "search", "number", "password")

# Page furniture a small login box lives in; its text is not the page's either.
# (Found by XPath, so a page of many thousand elements costs a few C-level passes, not a Python call each.)
_RE = {"re": "http://exslt.org/regular-expressions"}
_CHROME = etree.XPath(
    "descendant::*[self::header or self::nav or self::footer or self::aside or @role='banner' or "
    "@role='navigation' or @role='contentinfo' or @role='complementary' or "
    "re:test(concat(@id, ' ', @class), '(^|[\\s_-])(header|masthead|navbar|topbar|top-bar|site-nav|sidebar|"
    "dropdown)($|[\\s_-])', 'i')]", namespaces=_RE)
_CONSENT_CANDIDATES = etree.XPath(
    "descendant::*[self::dialog or @role='dialog' or @role='alertdialog' or "
    "re:test(concat(@id, ' ', @class), $p, 'i')]", namespaces=_RE)
_HOLDS_CONTENT = etree.XPath("boolean(descendant-or-self::*[self::main or self::article or @role='main'])")
_ATTR_VALUES = etree.XPath("//@id | //@class | //@src | //@action | //@name")
_SCRIPT_TEXTS = etree.XPath("//script/text()")


@dataclass(frozen=True, slots=True)
class Interstitial:
    """A wall in front of the page: ``kind`` (login, challenge, consent) and the ``evidence``."""

    kind: str
    evidence: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "evidence": self.evidence}

    @classmethod
    def from_json(cls, d: Any) -> Interstitial | None:
        if isinstance(d, dict) and d.get("kind") in KINDS and isinstance(d.get("evidence"), str):
            return cls(d["kind"], d["evidence"])
        return None

    def words(self) -> str:
        """``a login page (password form)``: for messages."""
        return f"a {self.kind} page ({self.evidence})"


def detect(body: bytes, *, status: int | None = 200, final_url: str | None = None,
           content_type: str | None = None) -> Interstitial | None:
    """The wall ``body`` is, or None for a page that is (as far as its bytes tell) the page itself.
    Only a successful (2xx) HTML reply is judged: a failed one is already typed as its failure."""
    decided, wall = _before_parse(body, status, final_url)
    if decided:
        return wall
    try:
        root = parse_html(body[:MAX_INSPECT], content_type)
        marks = _Marks.of(root)
        strip_unseen(root)
        title_el = root.find(".//title")
        if title_el is not None and title_el.getparent() is not None:
            title_el.getparent().remove(title_el)
        return _judge(root, marks, final_url)
    except (HTMLParseError, RecursionError, ValueError):
        return None  # not readable as HTML: nothing to tell a wall by


class WallCheck:
    """``detect`` over the tree someone else parses: a ``TreeReader`` for ``extract_html`` (or any
    reading that parses the body, strips what a reader does not see and takes the title out), so a
    page is parsed once. ``verdict(body)`` is ``detect``'s verdict on ``body``: from that tree when it
    was shown one of those bytes, else by ``detect`` itself (the body was not read as HTML, or is
    longer than ``MAX_INSPECT``, of which ``detect`` reads only the start)."""

    def __init__(self, *, status: int | None = 200, final_url: str | None = None,
                 content_type: str | None = None) -> None:
        self._status, self._url, self._ctype = status, final_url, content_type
        self._body: bytes | None = None
        self._marks: _Marks | None = None
        self._settled = False
        self._wall: Interstitial | None = None

    def parsed(self, root: lxml_html.HtmlElement, body: bytes) -> None:
        if self._body is not None:
            return  # the first tree shown is the one judged
        self._body = body
        decided, wall = _before_parse(body, self._status, self._url)
        if decided:
            self._settle(wall)
        elif len(body) <= MAX_INSPECT:  # else detect reads the first MAX_INSPECT bytes, not this tree
            try:
                self._marks = _Marks.of(root)
            except (RecursionError, ValueError):
                self._settle(None)

    def stripped(self, root: lxml_html.HtmlElement) -> None:
        if self._settled or self._marks is None:
            return
        try:
            self._settle(_judge(root, self._marks, self._url))
        except (RecursionError, ValueError):
            self._settle(None)

    def _settle(self, wall: Interstitial | None) -> None:
        self._settled, self._wall, self._marks = True, wall, None

    def verdict(self, body: bytes) -> Interstitial | None:
        if self._settled and (body is self._body or body == self._body):
            return self._wall
        return detect(body, status=self._status, final_url=self._url, content_type=self._ctype)


def _before_parse(body: bytes, status: int | None, final_url: str | None) -> tuple[bool, Interstitial | None]:
    """(decided, the wall) from what is known before the body is parsed: the status, the final
    address, and whether its first ``MAX_INSPECT`` bytes hold anything a wall holds."""
    if status is not None and not 200 <= status < 300:
        return True, None
    host = _host(final_url)
    if host in CONSENT_HOSTS:
        return True, Interstitial("consent", f"consent host {host}")
    low = body[:MAX_INSPECT].lower()
    return (False, None) if any(t in low for t in _TRIGGERS) else (True, None)


def _host(url: str | None) -> str | None:
    try:
        return (urlsplit(url or "").hostname or "").lower() or None
    except ValueError:
        return None


def _norm(text: str | None) -> str:
    return " ".join((text or "").split())


@dataclass(frozen=True, slots=True)
class _Marks:
    """What the wall check reads off the tree before the hidden parts (scripts…) are stripped."""

    title: str
    markers: tuple[str, ...]
    consent_tcf: bool
    consent_form: bool

    @classmethod
    def of(cls, root: lxml_html.HtmlElement) -> _Marks:
        title_el = root.find(".//title")
        return cls(_norm(title_el.text_content() if title_el is not None else "").lower(), tuple(_markers(root)),
                   any(s in (el.text or "") for el in root.iter("script") for s in ("__tcfapi", "__cmp(")),
                   any(_host(f.get("action")) in CONSENT_HOSTS for f in root.iter("form")))


@dataclass(frozen=True, slots=True)
class _Suspect:
    """A wall the markup suggests: the verdict, the wall's own elements, and, for a consent dialog,
    how much it says (the page's own main text must say less)."""

    wall: Interstitial
    parts: tuple[etree._Element, ...] = ()
    says: int | None = None


def _judge(root: lxml_html.HtmlElement, marks: _Marks, url: str | None) -> Interstitial | None:
    """The wall a stripped tree (hidden parts and title out) is: the first the markup suggests whose
    page's own main text is missing or cut short (it is left unchanged)."""
    for suspect in _suspects(root, marks):
        own = _own_text(root, suspect.parts, url)
        if own < LITTLE_TEXT and (suspect.says is None or own <= suspect.says):
            return suspect.wall
    return None


def _own_text(root: lxml_html.HtmlElement, parts: tuple[etree._Element, ...], url: str | None) -> int:
    """Characters (whitespace not counted) of the page's main text once the wall's ``parts`` are out,
    on a copy (``root`` stays as it is: it may be the tree the page's own text is read from)."""
    if parts:
        paths = [root.getroottree().getpath(p) for p in parts]
        tree = copy.deepcopy(root)
        for found in [tree.getroottree().xpath(path) for path in paths]:
            for el in found:
                if el.getparent() is not None:
                    el.getparent().remove(el)
    else:
        tree = copy.deepcopy(root)
    return len("".join((main_text(tree, url) or "").split()))


def _suspects(root: lxml_html.HtmlElement, marks: _Marks) -> Iterator[_Suspect]:
    """The walls the markup suggests, in the order they are told apart: each needs little text
    outside itself and the page's furniture."""
    body = root.find("body")
    if body is None:
        body = root
    chrome = list(_CHROME(body))

    def little(*walls: etree._Element) -> bool:
        return _text_len(body, [*chrome, *walls]) < LITTLE_TEXT

    title = marks.title
    who = _CHALLENGE_TITLES.get(title) or next(
        (w for p, w in _CHALLENGE_TITLE_PREFIXES.items() if title.startswith(p)), None)
    if who is not None and little():
        yield _Suspect(Interstitial("challenge", f"{who} challenge title"))
    if title == "access denied" and _AKAMAI_DENIED.search(_norm(body.text_content())) and little():
        yield _Suspect(Interstitial("challenge", "Akamai access denied page"))
    if marks.markers and little():
        yield _Suspect(Interstitial("challenge", f"{marks.markers[0]} challenge marker"))
    captcha = _captcha_form(body)
    if captcha is not None and little(captcha[0]):
        yield _Suspect(Interstitial("challenge", f"captcha form ({captcha[1]}) and little else"), (captcha[0],))
    login = _password_forms(body, chrome)
    if login and little(*login):
        yield _Suspect(Interstitial("login", "password form"), tuple(login))
    if title.startswith("before you continue") and little():
        yield _Suspect(Interstitial("consent", "consent title (Before you continue)"))
    dialogs = _consent_dialogs(body)
    if (dialogs or marks.consent_form) and little(*dialogs):
        if marks.consent_form:
            yield _Suspect(Interstitial("consent", "consent form"), tuple(dialogs))
            return
        said = _norm(" ".join(d.text_content() for d in dialogs))
        frames = sum(1 for d in dialogs for _ in d.iter("iframe"))
        says = sum(_solid(d) for d in dialogs) + FRAME_SAYS * frames
        # A banner beside a short article is not a wall: the dialog must say more than the rest of the page.
        if (frames or _CONSENT_WORDS.search(said)) and says >= _text_len(body, [*chrome, *dialogs]):
            yield _Suspect(Interstitial("consent", "consent dialog (IAB TCF CMP)" if marks.consent_tcf
                                        else "consent dialog"), tuple(dialogs), says)


def _markers(root: lxml_html.HtmlElement) -> list[str]:
    """Whose challenge marks the page carries in its scripts and attributes (never its text)."""
    attrs = " ".join(str(v) for v in _ATTR_VALUES(root)).lower()  # no marker holds a space: none spans two
    scripts = " ".join(str(t) for t in _SCRIPT_TEXTS(root)).lower()
    return [who for mark, who in _ATTR_MARKERS if mark in attrs] + \
        [who for mark, who in _SCRIPT_MARKERS if mark in scripts]


def _text_len(body: etree._Element, skip: list[etree._Element]) -> int:
    """Characters (whitespace not counted) of the text under ``body`` outside the ``skip`` subtrees."""
    chosen = set(skip)
    outermost = [s for s in chosen if not any(a in chosen for a in s.iterancestors())]
    return _solid(body) - sum(_solid(s) for s in outermost)


def _solid(el: etree._Element) -> int:
    return len("".join(el.text_content().split()))


def _fields(form: etree._Element) -> list[str]:
    """The kinds of field a person fills in on ``form`` (text, email, password, textarea…)."""
    out = []
    for el in form.iter("input", "textarea", "select"):
        kind = "textarea" if el.tag != "input" else (el.get("type") or "text").strip().lower()
        if kind in _USER_FIELDS or el.tag != "input":
            out.append(kind)
    return out


def _password_forms(body: etree._Element, chrome: list[etree._Element]) -> list[etree._Element]:
    """Forms holding a visible password field, outside the page's furniture."""
    inside = {d for c in chrome for d in c.iter()}
    return [f for f in body.iter("form") if f not in inside and "password" in _fields(f)]


def _captcha_form(body: etree._Element) -> tuple[etree._Element, str] | None:
    """A form whose only part a person acts on is a captcha (no text to type), and whose captcha."""
    for form in body.iter("form"):
        if _fields(form):
            continue  # a contact or comment form with a captcha is a form, not a wall
        for el in form.iter():
            if not isinstance(el.tag, str):
                continue
            hay = f"{el.get('class') or ''} {el.get('id') or ''} {el.get('src') or ''}".lower()
            who = next((w for mark, w in _CAPTCHAS if mark in hay), None)
            if who is not None:
                return form, who
    return None


def _consent_dialogs(body: etree._Element) -> list[etree._Element]:
    """The outermost elements named as a consent manager's or a cookie/consent dialog. An element
    that holds the page's main content (``main``, ``article``) is a wrapper, not a dialog: the
    dialogs inside it are looked for instead."""
    found: list[etree._Element] = []
    seen: set[etree._Element] = set()
    for el in _CONSENT_CANDIDATES(body, p=_CONSENT_ATTR.pattern):  # in document order: outer ones first
        if any(a in seen for a in el.iterancestors()) or _HOLDS_CONTENT(el):
            continue
        named = _CONSENT_ATTR.search(f"{el.get('id') or ''} {el.get('class') or ''}")
        if not (named or _CONSENT_WORDS.search(_norm(el.text_content())[:2000])):
            continue
        # a dialog asks for a click (accept, reject, settings); a consent manager's element may hold
        # the frame its message is drawn in (Sourcepoint), whose buttons are in that frame's document
        if next(el.iter(*_ACTIONS), None) is not None or (named and next(el.iter("iframe"), None) is not None):
            found.append(el)
            seen.add(el)
    return found
