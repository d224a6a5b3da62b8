"""The browser-pages fixtures (fixtures/browser-pages): served on loopback, read by Chromium and by g6.

``python tests/recheck/browser_pages.py`` prints the figures: findability (the share of the sentences
Chromium's ``innerText`` shows that ``g6 cite`` accepts), sentences g6 shows that Chromium does not,
and the re-check verdicts of every cited sentence against the same pages re-encoded, re-wrapped and
with comments inserted between words, and with one word of each sentence edited.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "browser-pages"
_TOKENS = re.compile(r"(<!--.*?-->|<[^>]*>)", re.DOTALL)
_RAW = ("script", "style", "title", "textarea")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+")
ENCODINGS = {"utf-8": "text/html; charset=utf-8", "windows-1252": "text/html; charset=windows-1252",
             "iso-8859-1": "text/html; charset=iso-8859-1", "latin1 meta": "text/html", "utf-8 bom": "text/html"}
_META_CHARSET = re.compile(r"<meta\s[^>]*charset[^>]*>", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    name: str
    body: bytes
    content_type: str

    @property
    def path(self) -> str:
        return "/" + self.name


def pages() -> list[Page]:
    listing = json.loads((FIXTURES / "pages.json").read_text(encoding="utf-8"))
    return [Page(p["file"], (FIXTURES / "pages" / p["file"]).read_bytes(), p["content_type"]) for p in listing]


def sentences(text: str, min_words: int = 1) -> list[str]:
    """The sentences of a text: its lines, cut after . ! ? or …; at least ``min_words`` words each, and long
    enough to be a quote (``quote_too_short``: a one-word heading is not)."""
    from g6.cite.passages import quote_too_short

    out = []
    for line in text.splitlines():
        for s in _SENTENCE_END.split(line.strip()):
            if len(s.split()) >= min_words and quote_too_short(s) is None:
                out.append(s)
    return out


def transform(source: str, *, wrap: list[str] | None = None, comments: list[bool] | None = None) -> str:
    """``source`` with the spaces between words of its text (not in tags, comments, scripts, styles,
    titles or text areas) replaced, in turn, by the whitespace in ``wrap``, and a ``<!-- -->`` after
    the ones ``comments`` marks: what a re-wrapping editor or a server renderer does to the same words."""
    out: list[str] = []
    raw: str | None = None
    k = 0
    for part in _TOKENS.split(source):
        if part.startswith("<"):
            m = re.match(r"<(/?)([A-Za-z][A-Za-z0-9]*)", part)
            if m and raw is None and not m.group(1) and m.group(2).lower() in _RAW and not part.endswith("/>"):
                raw = m.group(2).lower()
            elif m and raw is not None and m.group(1) and m.group(2).lower() == raw:
                raw = None
            out.append(part)
            continue
        if raw is not None or not part.strip():
            out.append(part)
            continue
        pieces = re.split(r"(?<=\S) (?=\S)", part)
        text = pieces[0]
        for piece in pieces[1:]:
            space = wrap[k % len(wrap)] if wrap else " "
            mark = "<!-- -->" if comments and comments[k % len(comments)] else ""
            text += space + mark + piece
            k += 1
        out.append(text)
    return "".join(out)


def encode(text: str, encoding: str) -> tuple[bytes, str]:
    """``text`` in ``encoding`` with the header label a server would send (``utf-8 bom``: a BOM, no label;
    ``latin1 meta``: windows-1252 labelled ``latin1`` by a ``<meta charset>`` in place of the page's
    own); characters windows-1252 lacks become numeric references, which read back as the same text."""
    if encoding == "utf-8 bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8"), ENCODINGS[encoding]
    if encoding == "latin1 meta":
        text = _META_CHARSET.sub("", text)
        head = re.search(r"<head[^>]*>", text, re.IGNORECASE)
        at = head.end() if head else 0
        text = text[:at] + '<meta charset="latin1">' + text[at:]
    codec = "cp1252" if encoding in ("windows-1252", "iso-8859-1", "latin1 meta") else encoding
    return text.encode(codec, "xmlcharrefreplace"), ENCODINGS[encoding]


def decoded(page: Page) -> str:
    from g6.adapters.html.encoding import decode

    return decode(page.body, page.content_type).text


def edit_one_word(source: str, sentence: str) -> str | None:
    """``source`` with the longest word of ``sentence`` replaced wherever the sentence's words appear
    together in the HTML (None when they do not: markup between them)."""
    words = sentence.split()
    longest = max(words, key=len)
    if sentence not in source or len(words) < 4:
        return None
    return source.replace(sentence, sentence.replace(longest, "zanzibar" if longest != "zanzibar" else "x", 1))


# pages served on loopback name outside hosts (a theme's style sheet, a CDN script): no name resolves
# but loopback's, so the browser sends nothing beyond it
LOOPBACK_ONLY = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",)


def chromium_evaluate(browser: Any, url: str, expression: str) -> Any:
    """``expression`` evaluated in ``url`` once Chromium has loaded it, in a tab of its own."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    browser.session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    browser.events.clear()
    browser.send("Page.enable")
    browser.send("Page.navigate", {"url": url})
    browser.wait_event("Page.loadEventFired")
    value = browser.evaluate(expression)
    browser.session = None
    browser.send("Target.closeTarget", {"targetId": target})
    return value


def chromium_text(browser: Any, url: str) -> str:
    """``document.body.innerText`` of ``url`` in Chromium (what a reader of the rendered page sees)."""
    return str(chromium_evaluate(browser, url, "document.body.innerText"))


def measure(work: Path, browser: Any | None) -> dict[str, Any]:
    """The figures, over a real loopback site and a fresh evidence home in ``work``."""
    sys.path.insert(0, str(ROOT / "tests"))
    from g6.adapters import CheckedClient
    from g6.adapters.net.checked_client import FetchPolicy, FetchResponse
    from g6.adapters.outcomes import Outcome
    from g6.cite.cite import cite_web
    from g6.cite.page_text import read_texts
    from g6.cite.passages import find
    from g6.cite.recheck import judge
    from g6.demo.site import LocalSite, Reply
    from g6.errors import InputError
    from g6.fetch.capture import fetch
    from g6.home import EvidenceHome

    listing = pages()
    routes: dict[str, Reply] = {p.path: Reply(body=p.body, content_type=p.content_type) for p in listing}
    routes["/robots.txt"] = Reply(404)
    home = EvidenceHome(work / "home", fsync=False)
    home.keys.init()
    site = LocalSite(routes).start()
    figures: dict[str, Any] = {"pages": len(listing), "per_page": {}}
    try:
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
            shown = found = extra = 0
            cites = []
            for p in listing:
                rid = fetch(home, client, site.url(p.path)).receipt_id
                row: dict[str, Any] = {}
                if browser is not None:
                    seen = sentences(chromium_text(browser, site.url(p.path)), 3)
                    ok = []
                    for s in seen:
                        try:
                            cite_web(home, rid, quote=s)
                            ok.append(s)
                        except InputError:
                            row.setdefault("not_citable", []).append(s)
                    texts = read_texts(p.body, site.url(p.path), p.content_type)
                    ours = [s for s in sentences(texts.visible or "", 3)
                            if not any(find(s, c) for c in ["\n".join(seen)])]
                    row.update({"chromium_sentences": len(seen), "citable": len(ok), "g6_only": ours})
                    shown, found, extra = shown + len(seen), found + len(ok), extra + len(ours)
                own = read_texts(p.body, site.url(p.path), p.content_type)
                for s in sentences(own.visible or ""):
                    cites.append((p, cite_web(home, rid, quote=s)))
                row["g6_sentences_cited"] = len(sentences(own.visible or ""))
                figures["per_page"][p.name] = row
            if browser is not None:
                figures.update({"chromium_sentences": shown, "citable": found, "findability": round(found / shown, 4),
                                "g6_only_sentences": extra})
            figures["citations"] = len(cites)
            verdicts: Counter[str] = Counter()
            for enc in ENCODINGS:
                for wrap, comments in ((None, None), (["\n", " \n  ", "\t"], None), (None, [True, False]),
                                       (["\n  "], [True])):
                    for p, c in cites:
                        body, ctype = encode(transform(decoded(p), wrap=wrap, comments=comments), enc)
                        texts = read_texts(body, site.url(p.path), ctype)
                        r = FetchResponse(site.url(p.path), Outcome.OK, final_url=site.url(p.path))
                        verdicts[judge(c, r, texts).verdict] += 1
            figures["same_words_verdicts"] = dict(verdicts)
            edits: Counter[str] = Counter()
            for p, c in cites:
                edited = edit_one_word(decoded(p), c.text)
                if edited is None:
                    continue
                body, ctype = encode(transform(edited, comments=[True, False]), "utf-8")
                r = FetchResponse(site.url(p.path), Outcome.OK, final_url=site.url(p.path))
                edits[judge(c, r, read_texts(body, site.url(p.path), ctype)).verdict] += 1
            figures["one_word_edit_verdicts"] = dict(edits)
    finally:
        site.stop()
        home.close()
    return figures


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "tests"))
    from headless import Browser, chromium_path

    exe = chromium_path()
    with tempfile.TemporaryDirectory() as tmp:
        if exe is None:
            print(json.dumps(measure(Path(tmp), None), indent=2, ensure_ascii=False))
        else:
            with Browser(exe, extra_flags=LOOPBACK_ONLY) as b:
                print(json.dumps(measure(Path(tmp), b), indent=2, ensure_ascii=False))
