"""HTML of the pages of ``g6 serve``, rendered from the views' dicts (:mod:`g6.serve.views`).

Safety: no page has a script, an inline style or an event attribute, and the Content-Security-Policy
(:data:`CSP`) forbids them anyway: only the stylesheet at :data:`STYLE_PATH` and frames of this origin load.
Every value from a view goes through :func:`esc` into element text or a double-quoted attribute value;
links are built only from paths of this server (``/capture/…``, ``/web/…``) with their variable parts
percent-encoded, never from a captured URL as given (a ``javascript:`` URL stays text). A captured page is
shown as its escaped text, or inside an ``<iframe sandbox>`` (no ``allow-scripts``, no
``allow-same-origin``: no script runs in it and it is of no origin) whose source is its memento.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from g6 import __version__
from g6.serve.views import search_link, verdict_counts

STYLE_PATH = "/static/g6-serve.css"
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; frame-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
GOOD = ("ok", "unchanged", "current")
WARN = ("changed", "running", "never", "never re-checked")

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:12px 28px;display:flex;gap:24px;align-items:center;flex-wrap:wrap}
header a{color:#fff;font-weight:700;text-decoration:none}
header form{display:flex;gap:6px;flex:1}
header input[type=text]{flex:1;min-width:260px;padding:4px 8px}
main{padding:18px 28px;max-width:1100px}
section{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:12px 18px;margin:0 0 14px}
h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:0 0 8px}
table{border-collapse:collapse}
td,th{padding:3px 14px 3px 0;text-align:left;vertical-align:top;font-size:13px}
th{color:#566079;font-weight:600}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:700;font-size:12px;color:#fff;
text-transform:uppercase;background:#6b7385}
.badge.good{background:#1f8a4c}.badge.warn{background:#c77700}.badge.bad{background:#c0262d}
pre.text{white-space:pre-wrap;word-wrap:break-word;font:14px/1.5 Georgia,serif;background:#fbfbfd;
border:1px solid #e4e7ee;padding:12px 16px;max-height:40em;overflow:auto}
mark{background:#ffe27a;padding:0 1px}
iframe{width:100%;height:32em;border:1px solid #c9d1e0;background:#fff}
img.shot{display:block;max-width:100%;max-height:60em;object-fit:contain;object-position:top;border:1px solid #c9d1e0}
.why{color:#8a1c1c}
footer{color:#6b7385;font-size:12px;padding:0 28px 24px}
"""


# bidirectional controls would reorder what follows them on screen (a URL or a quote made to read otherwise):
# shown as their code points instead; offsets into the text are unchanged (this runs on each escaped piece)
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def esc(value: object) -> str:
    """Element text or a double-quoted attribute value; None is empty, anything else its str."""
    if value is None:
        return ""
    return BIDI.sub(lambda m: f"[U+{ord(m.group()):04X}]", html.escape(str(value), quote=True))


def path_link(path: str, label: object, *, cls: str = "", rel: str = "") -> str:
    """A link to a path of this server. Only called with paths the views built; the scheme-relative
    ``//`` and anything not starting with ``/`` are refused, so no view can link elsewhere."""
    if not path.startswith("/") or path.startswith("//"):
        return esc(label)
    href = quote(path, safe="/:?=&%~@+,;_-.!*'()#")
    attrs = "".join(f' {k}="{esc(v)}"' for k, v in (("class", cls), ("rel", rel)) if v)
    return f'<a href="{esc(href)}"{attrs}>{esc(label)}</a>'


def badge(word: object) -> str:
    w = str(word)
    kind = "good" if w in GOOD else "warn" if w in WARN else "bad"
    return f'<span class="badge {kind}">{esc(w)}</span>'


def rows(pairs: Iterable[tuple[str, str]]) -> str:
    """A two-column table; the values are HTML already (each built with :func:`esc`)."""
    return "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in pairs) + "</table>"


def page(title: str, body: str, *, query: str = "") -> str:
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            '<meta name=viewport content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)} · g6 serve</title>"
            f'<link rel=stylesheet href="{STYLE_PATH}"></head><body>'
            '<header><a href="/">g6 evidence</a>'
            '<form method=get action="/search"><input type=text name=q aria-label="URL, digest or receipt id" '
            f'placeholder="URL, digest or receipt id" value="{esc(query)}"><button>Search</button></form></header>'
            f"<main>{body}</main><footer>g6-evidence {esc(__version__)} · read only · "
            '<a href="/api/home">JSON</a></footer></body></html>')


def _code(v: object) -> str:
    return f"<code>{esc(v)}</code>" if v not in (None, "") else "—"


# -- home ------------------------------------------------------------------------------------------------------
def render_home(v: Mapping[str, Any]) -> str:
    c = v["counts"]
    counts = rows([("receipts", esc(v["receipts"])),
                   ("web reads", f"{esc(c['captures'])} ({esc(c['ok'])} read, {esc(c['failed'])} failed)"),
                   ("by outcome", esc(", ".join(f"{k} {n}" for k, n in c["outcomes"].items()) or "—")),
                   ("distinct URLs", esc(c["urls"]))])
    cp = v["latest_checkpoint"]
    checkpoint = "<p>No checkpoint has been issued (<code>g6 ledger checkpoint</code>).</p>" if cp is None else rows([
        ("origin", _code(cp["origin"])), ("size", esc(cp["size"]) + (f" ({esc(cp['behind'])} receipts since)"
                                                                     if cp["behind"] else " (the whole ledger)")),
        ("root", _code(cp["root"]))])
    caps, mans = v["newest_captures"], v["newest_manifests"]
    body = (f"<h1>Evidence home</h1><p class=mono>{esc(v['home'])}</p>"
            f"<section><h2>What it holds</h2>{counts}</section>"
            f"<section><h2>Latest checkpoint</h2>{checkpoint}</section>"
            f"<section><h2>Verification</h2>{render_verify_status(v['verify'])}</section>"
            "<section id=captures><h2>Newest captures</h2>"
            + (pager(caps, "web read", "web reads") + capture_rows(caps["items"]) if caps["total"] else
               "<p>Nothing has been captured yet (<code>g6 fetch URL</code>).</p>")
            + "</section><section id=manifests><h2>Manifests</h2>"
            + (pager(mans, "manifest", "manifests") + _manifest_rows(mans["items"])
               if mans["total"] else
               "<p>None given (<code>g6 serve --manifest FILE</code>) and none re-checked.</p>")
            + "</section>")
    return page("Evidence home", body)


def pager(p: Mapping[str, Any], one: str, many: str) -> str:
    """How long a list is and where this page of it stands, with links to its newest, newer, older and
    oldest pages (``rel`` first, prev, next, last)."""
    links = " · ".join(path_link(p[key], label, rel=key) if p[key] and p["page"] != target else esc(label)
                       for key, label, target in (("first", "« newest", 1), ("prev", "‹ newer", 1),
                                                  ("next", "older ›", p["pages"]), ("last", "oldest »", p["pages"])))
    what = one if p["total"] == 1 else many
    where = f"{esc(p['total'])} {esc(what)}, newest first; page {esc(p['page'])} of {esc(p['pages'])}"
    return f"<p>{where}" + (f" · {links}" if p["pages"] > 1 else "") + "</p>"


def _manifest_rows(ms: Sequence[Mapping[str, Any]]) -> str:
    head = ("<tr><th>manifest</th><th>citations</th><th>created</th><th>re-checks</th><th>last re-check</th>"
            "<th>file</th></tr>")
    body = "".join(
        f"<tr><td>{path_link('/manifest/' + m['manifest_id'], m['manifest_id'], cls='mono')}</td>"
        f"<td>{esc(m['citations']) if m['citations'] is not None else '—'}</td><td>{esc(m['created_at'] or '—')}</td>"
        f"<td>{esc(m['rechecks'])}</td><td>{esc(m['last_recheck_at'] or '—')}</td>"
        f"<td class=mono>{esc(m['file'] or 'not given: known from its re-checks')}</td></tr>" for m in ms)
    return f"<table>{head}{body}</table>"


def render_verify_status(s: Mapping[str, Any]) -> str:
    status = s["status"]
    if status == "never":
        head = "<p>" + badge("never") + " not verified since the server started. "
    elif status == "running":
        head = f"<p>{badge('running')} a verify started at {esc(s['running_since'])} is under way. "
    else:
        grown = s["grown_since"]
        head = (f"<p>{badge(status)} <code>ledger verify</code> of {esc(s['receipts'])} receipts, finished at "
                f"<time>{esc(s['checked_at'])}</time> in {esc(s['took_seconds'])} s"
                + (f"; {esc(grown)} receipts appended since" if grown else "") + ". ")
        if s["running_since"]:
            head += f"Another started at {esc(s['running_since'])}. "
    head += path_link("/verify", "Verify now") + "</p>"
    checks = "".join(f"<tr><th>{esc(c['name'])}</th><td>{badge('ok' if c['ok'] else 'failed')}</td>"
                     f"<td>checked {esc(c['checked'])}, failed {esc(c['failed'])}</td></tr>" for c in s["checks"])
    error = f"<p class=why>{esc(s['error'])}</p>" if s.get("error") else ""
    return head + error + (f"<table>{checks}</table>" if checks else "")


def render_verify(v: Mapping[str, Any]) -> str:
    return page("Verify", f"<h1>Ledger verify</h1><section>{render_verify_status(v)}</section>")


# -- search ----------------------------------------------------------------------------------------------------
def render_captures(v: Mapping[str, Any] | None, query: str, error: str | None = None) -> str:
    if error is not None:
        body = f"<h1>Search</h1><p class=why>{esc(error)}</p>"
        return page("Search", body, query=query)
    assert v is not None
    what = ("URL " + esc(v["query"]["url"])) if "url" in v["query"] else ("digest " + esc(v["query"]["digest"]))
    shown = len(v["captures"])
    body = (f"<h1>Captures of {what}</h1><p>{esc(v['total'])} captures"
            + (f", the newest {shown} shown" if shown < v["total"] else "") + ".</p>"
            + capture_table(v["captures"]))
    if v["urls_starting"]:
        body += ("<section><h2>Captured URLs beginning with it</h2><ul>"
                 + "".join(f"<li>{path_link(search_link(u), u, cls='mono')}</li>" for u in v["urls_starting"])
                 + "</ul></section>")
    return page("Search", body, query=query)


def capture_table(caps: Sequence[Mapping[str, Any]]) -> str:
    if not caps:
        return "<p>Nothing was captured under it.</p>"
    return f"<section>{capture_rows(caps)}</section>"


def capture_rows(caps: Sequence[Mapping[str, Any]]) -> str:
    head = "<tr><th>read at</th><th>outcome</th><th>URL</th><th>type</th><th>bytes</th><th>receipt</th></tr>"
    body = "".join(
        f"<tr><td>{esc(c['fetched_at'])}</td><td>{badge(c['outcome'])} {esc(c['http_status'] or '')}</td>"
        f"<td class=mono>{esc(c['requested_url'])}</td><td>{esc(c['content_type'] or '')}</td>"
        f"<td>{esc(c['size'] if c['size'] is not None else '')}</td>"
        f"<td>{path_link('/capture/' + c['receipt_id'], c['receipt_id'], cls='mono')}</td></tr>" for c in caps)
    return f"<table>{head}{body}</table>"


# -- one capture -----------------------------------------------------------------------------------------------
def marked_text(text: str, citations: Sequence[Mapping[str, Any]]) -> str:
    """The text, escaped, with each found citation's span in a ``<mark>`` (overlaps cut at the earlier end)."""
    spans = sorted((c["start"], c["end"], c["citation_id"]) for c in citations if c["found"])
    out, at = [], 0
    for start, end, cid in spans:
        start = max(start, at)
        if end <= start:
            continue
        out.append(esc(text[at:start]))
        out.append(f'<mark id="{esc(cid)}" title="{esc(cid)}">{esc(text[start:end])}</mark>')
        at = end
    out.append(esc(text[at:]))
    return "".join(out)


def render_capture(v: Mapping[str, Any]) -> str:
    hops = "".join(f"<li><span class=mono>{esc(h['url'])}</span> → {esc(h['status'])} "
                   f"<span class=mono>{esc(h['connected_address'] or '')}</span></li>" for h in v["hops"])
    what = rows([
        ("requested", f"<span class=mono>{esc(v['requested_url'])}</span> "
                      f"({path_link(search_link(v['requested_url']), 'every capture of it')})"),
        ("final URL", _code(v["final_url"])),
        ("redirects", f"<ol>{hops}</ol>" if len(v["hops"]) > 1 else "none"),
        ("read at", f"<time>{esc(v['fetched_at'])}</time>"),
        ("outcome", f"{badge(v['outcome'])} <code>{esc(v['outcome_code'])}</code> HTTP {esc(v['http_status'])}"
                    + (f" <span class=why>failed read: {esc(v['failed_read'])}</span>" if v["failed_read"] else "")
                    + (f" <span class=why>{esc(v['reason'])}</span>" if v["reason"] else "")),
        ("body", (f"{esc(v['size'])} bytes, {esc(v['content_type'] or 'no type')}"
                  + (" (truncated at the byte cap)" if v["truncated"] else "")
                  + f"<br>blake3 <code>{esc(v['content'].get('blake3'))}</code>"
                  f"<br>sha256 <code>{esc(v['content'].get('sha256'))}</code>") if v["content"] else "none kept"),
        ("kind", esc(v["kind"]) + ("" if not v["rechecked"] else " of " + ", ".join(
            path_link("/capture/" + r, r) for r in v["rechecked"]))),
        *([("part of", "the rendered capture " + path_link("/capture/" + v["part_of"], v["part_of"], cls="mono")
            + " (one request its page made)")] if v["part_of"] else []),
    ])
    receipt = rows([("receipt", path_link(v["receipt"], v["receipt_id"]) + " (signed JSON)"),
                    ("proof", path_link(v["proof"], "inclusion proof") + " against the latest checkpoint"),
                    ("signed by", _code(v["signed_by"])),
                    ("in log", esc(f"{v['log']['origin']} #{v['log']['seq']}") if v["log"] else "—")])
    body = (f"<h1>Capture {esc(v['receipt_id'])}</h1>"
            f"<section><h2>What was read</h2>{what}</section>"
            f"<section><h2>Receipt</h2>{receipt}</section>"
            f"<section><h2>Citations</h2>{_citations(v['citations'])}</section>"
            f"<section><h2>{'Text the reader saw' if v['rendered'] else 'Visible text'}</h2>{_text(v)}</section>"
            + (_rendered(v["receipt_id"], v["rendered"]) if v["rendered"] else "")
            + _frame(v)
            + f"<section><h2>Re-checks</h2>{_rechecks(v['rechecks'])}</section>")
    return page(f"Capture {v['receipt_id']}", body)


def _citations(cited: Sequence[Mapping[str, Any]]) -> str:
    if not cited:
        return "<p>No manifest given to the server cites this capture.</p>"
    items = "".join(
        f"<li><code>{esc(c['citation_id'])}</code> in {path_link('/manifest/' + c['manifest_id'], c['manifest_id'])}: "
        f"“{esc(c['quote'])}”" + ("" if c["found"] else " <span class=why>(not found in the visible text)</span>")
        + "</li>" for c in cited)
    return f"<ul>{items}</ul>"


def _text(v: Mapping[str, Any]) -> str:
    if v["text"] is None:
        return f"<p class=why>{esc(v['text_status'])}</p>"
    return f'<pre class="text">{marked_text(v["text"], v["citations"])}</pre>'


def _frame(v: Mapping[str, Any]) -> str:
    """The captured page itself, from its memento, in a frame where nothing of it can run."""
    if not v["memento"]:
        return ""
    return ("<section><h2>The page as captured</h2><p>Its stored bytes, served by "
            f"{path_link(v['memento'], 'its memento')}, in a sandboxed frame where none of its scripts run.</p>"
            f'<iframe sandbox src="{esc(quote(v["memento"], safe="/:?=&%~@+,;_-.!*()"))}" '
            f'title="captured page" referrerpolicy="no-referrer"></iframe></section>')


def _rendered(rid: str, r: Mapping[str, Any]) -> str:
    """A rendered capture: its screenshot (served by this server from the blob its receipt names) and every
    request its page made, each linking to its own receipt's page."""
    shot = (f'<img class=shot src="{esc(quote(r["screenshot"], safe="/_-"))}" alt="full-page screenshot of the '
            f'rendered page (capture {esc(rid)})">' + ("<p class=why>The page was taller: the screenshot is cut at "
                                                       "its limit.</p>" if r["screenshot_clipped"] else "")
            if r["screenshot"] else "<p class=why>No screenshot was kept.</p>")
    how = rows([("render", f"ended <code>{esc(r['ended'])}</code> after {esc(r['render_ms'])} ms in "
                           f"{esc(r['browser'] or 'a browser')}"),
                ("requests", ", ".join(f"{esc(k)} {esc(n)}" for k, n in r["counts"].items()) or "—")])
    head = ("<tr><th>receipt</th><th>type</th><th>URL</th><th>outcome</th><th>content type</th><th>bytes</th></tr>")
    body = "".join(
        (f"<tr><td>{path_link('/capture/' + x['receipt_id'], x['receipt_id'], cls='mono')}</td>"
         f"<td>{esc(x['resource_type'] or '')} {esc(x['method'] if x['method'] != 'GET' else '')}</td>"
         f"<td class=mono>{esc(x['url'])}</td>"
         f"<td>{badge(x['outcome'])} {esc(x['http_status'] or '')} {esc(x['reason'] or '')}</td>"
         f"<td>{esc(x['content_type'] or '')}</td><td>{esc(x['size'] if x['size'] is not None else '')}</td></tr>")
        if not x["missing"] else
        f"<tr><td class=mono>{esc(x['receipt_id'])}</td><td colspan=5 class=why>not in this ledger</td></tr>"
        for x in r["resources"])
    return (f"<section><h2>What the browser showed</h2>{shot}</section>"
            f"<section><h2>Requests the page made</h2>{how}<p>{len(r['resources'])} requests, each with a receipt of "
            f"its own, in the order they were answered.</p><table>{head}{body}</table></section>")


def _rechecks(rs: Sequence[Mapping[str, Any]]) -> str:
    if not rs:
        return "<p>Never re-checked.</p>"
    items = "".join(
        f"<tr><td>{esc(r['fetched_at'])}</td><td>{path_link('/capture/' + r['receipt_id'], r['receipt_id'])}</td>"
        f"<td>{badge(r['outcome'])} {esc(r['http_status'] or '')}</td>"
        f"<td>{path_link('/manifest/' + r['manifest_id'], r['manifest_id']) if r['manifest_id'] else ''}</td>"
        f"<td>{' '.join(f'<code>{esc(k)}</code> {badge(x)}' for k, x in r['verdicts'].items())}</td></tr>"
        for r in rs)
    return ("<table><tr><th>re-read at</th><th>receipt</th><th>outcome</th><th>manifest</th><th>verdicts</th></tr>"
            f"{items}</table>")


# -- one manifest ----------------------------------------------------------------------------------------------
def render_manifest(v: Mapping[str, Any]) -> str:
    sig = v["signature"]
    about = rows([("file", _code(v["file"])), ("created", esc(v["created_at"] or "—")),
                  ("signature", (badge(sig["status"]) + " " + esc(sig["detail"])) if sig else
                   "unknown: the manifest was not given to the server; verdicts from the ledger's re-checks"),
                  ("re-checks", esc(v["rechecks"]) + " re-check receipts in the ledger"),
                  ("latest verdicts", " ".join(f"{badge(k)} {esc(n)}" for k, n in
                                               verdict_counts(v["citations"]).items()) or "—")])
    items = []
    for c in v["citations"]:
        latest = c["latest"]
        verdict = (f"{badge(latest['verdict'])} at {esc(latest['fetched_at'])} "
                   f"({path_link('/capture/' + latest['receipt_id'], latest['receipt_id'])})"
                   if latest else badge("never re-checked"))
        cited = (path_link("/capture/" + c["receipt_id"] + "#" + c["citation_id"], c["receipt_id"])
                 if c["receipt_id"] else "")
        items.append(f"<tr><td><code>{esc(c['citation_id'])}</code></td><td>{verdict}</td>"
                     f"<td>{'“' + esc(c['quote']) + '”' if c['quote'] is not None else ''}"
                     + (" <span class=why>cites a failed read</span>" if c["failed_read"] else "")
                     + f"<br><span class=mono>{esc(c['source_url'] or '')}</span></td><td>{cited}</td></tr>")
    table = ("<table><tr><th>citation</th><th>latest verdict</th><th>quote</th><th>capture</th></tr>"
             + "".join(items) + "</table>")
    return page(f"Manifest {v['manifest_id']}", f"<h1>Manifest {esc(v['manifest_id'])}</h1>"
                f"<section>{about}</section><section>{table}</section>")
