"""``g6 report check --html``: the report's own text with each citation marked where its claim is, each mark a link
to that citation's evidence further down the page (its verdict, the read it rests on, where the quote was found,
the hints, the judge's opinion beside the verdict).

The same rules as the other reports (:mod:`g6.export.html_report`): every string from outside (the report's
text, quotes, page text, URLs, reasons, a judge's answer) is escaped and only ever element text or a quoted
attribute value; no URL from outside is a link target (the marks link to anchors of this page only); the page
carries the Content Security Policy that forbids scripts and every network load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from g6.export.html_report import esc, page
from g6.report.verdicts import VERDICTS

VERDICT_CLASS = {"quote_found": "good", "quote_not_found": "bad", "redirected_elsewhere": "bad",
                 "source_failed": "warn", "no_quote": "unchecked"}
# which verdict colours a span several citations cover: the worst one
_RANK = {"quote_not_found": 0, "redirected_elsewhere": 1, "source_failed": 2, "no_quote": 3, "quote_found": 4}

STYLE = """
.report{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:14px 18px;margin:0 0 14px;
white-space:pre-wrap;line-height:1.6}
mark{padding:0 1px;border-radius:2px}
mark.good{background:#d4f0dc}mark.bad{background:#f8d0d0}mark.warn{background:#fde7c2}
mark.unchecked{background:#e4e7ee}
a.cite{font-size:11px;font-weight:700;text-decoration:none;vertical-align:super;padding:0 2px;color:#1d2330}
a.cite.good{color:#1f8a4c}a.cite.bad{color:#c0262d}a.cite.warn{color:#c77700}
.hint{border-left-color:#c77700;background:#fff8ec}
.judge{border-left-color:#566079;background:#eef0f6}
"""


def _badge(verdict: str) -> str:
    cls = VERDICT_CLASS.get(verdict, "unchecked")
    return f'<span class="badge {cls}" data-verdict="{esc(verdict)}">{esc(verdict)}</span>'


def _placed(citations: Sequence[Mapping[str, Any]], n: int) -> list[Mapping[str, Any]]:
    return [c for c in citations if isinstance(c.get("claim_start"), int) and isinstance(c.get("claim_end"), int)
            and 0 <= c["claim_start"] <= c["claim_end"] <= n]


def marked_text(text: str, citations: Sequence[Mapping[str, Any]]) -> str:
    """The report's text, escaped, each claim a ``mark`` (coloured by the worst verdict on it) and each citation
    a numbered link after its claim to ``#c-N``."""
    placed = _placed(citations, len(text))
    cuts = sorted({0, len(text), *(c["claim_start"] for c in placed), *(c["claim_end"] for c in placed)})
    ends: dict[int, list[Mapping[str, Any]]] = {}
    for c in placed:
        ends.setdefault(c["claim_end"], []).append(c)
    out: list[str] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        for c in ends.get(a, []) if a else []:
            out.append(_mark_link(c))
        over = [c for c in placed if c["claim_start"] <= a and b <= c["claim_end"] > c["claim_start"]]
        piece = esc(text[a:b])
        if over:
            worst = VERDICT_CLASS.get(min(over, key=lambda c: _RANK.get(c["verdict"], 0))["verdict"], "unchecked")
            title = "; ".join(f"[{c['n']}] {c['verdict']}" for c in over)
            piece = f'<mark class="{worst}" title="{esc(title)}">{piece}</mark>'
        out.append(piece)
    for c in ends.get(len(text), []) if text else []:
        out.append(_mark_link(c))
    return "".join(out)


def _mark_link(c: Mapping[str, Any]) -> str:
    cls = VERDICT_CLASS.get(c["verdict"], "unchecked")
    return (f'<a class="cite {cls}" href="#c-{int(c["n"])}" title="{esc(c["verdict"])}">'
            f"[{int(c['n'])}]</a>")


def _row(label: str, value: str) -> str:
    return f"<tr><th>{esc(label)}</th><td>{value}</td></tr>"


def _mono(v: object) -> str:
    return f'<span class="mono">{esc(v)}</span>' if v not in (None, "") else "—"


# what the report says of a source besides its address, shown as it says it (never a link, never evidence)
_SAID = (("address", "written as"), ("locator", "where in the source, as the report says"),
         ("read_at", "read by the author at"), ("cached", "the report's archived copy (not read)"))


def _citation(c: Mapping[str, Any]) -> str:
    read = c.get("read") or {}
    rows = [_row("source", _mono(c.get("source")))]
    rows += [_row(label, _mono(c[k])) for k, label in _SAID if c.get(k)]
    rows += [_row("claim", esc(c.get("claim")) or "—"), _row("why", esc(c.get("reason"))),
             _row("receipt", _mono(c.get("receipt_id")))]
    if read:
        rows.append(_row("read", esc(f"{read.get('outcome')}, HTTP {read.get('http_status')}, "
                                     f"{read.get('how')}, {read.get('fetched_at')}")))
        if read.get("final_url") and read.get("final_url") != read.get("url"):
            rows.append(_row("final address", _mono(read.get("final_url"))))
    if c.get("citation_id"):
        rows.append(_row("manifest citation", _mono(c["citation_id"])))
    parts = [f'<article class="citation" id="c-{int(c["n"])}"><h2>[{int(c["n"])}] {_badge(c["verdict"])}</h2>',
             f"<table>{''.join(rows)}</table>"]
    if c.get("quote") is not None:
        parts.append(f"<h3>the report's quote</h3><blockquote>{esc(c['quote'])}</blockquote>")
    found = c.get("found")
    if found:
        parts.append(f"<h3>found in the page's {esc(found.get('text_source'))} text at {esc(found.get('start'))}–"
                     f"{esc(found.get('end'))} ({esc(found.get('match'))}), passage "
                     f"{esc(found.get('passage_id'))}</h3><blockquote>{esc(found.get('text'))}</blockquote>")
    for h in c.get("hints") or ():
        parts.append(f"<h3>{esc(h.get('label'))}: similarity {esc(h.get('similarity'))}</h3>"
                     f'<blockquote class="hint">{esc(h.get("text"))}</blockquote>')
    judge = c.get("judge")
    if judge:
        said = judge.get("opinion") if "opinion" in judge else judge.get("error")
        parts.append(f"<h3>the judge's opinion ({esc(judge.get('judge'))}), not the verdict</h3>"
                     f'<blockquote class="judge">{esc(said)}</blockquote>')
    parts.append("</article>")
    return "".join(parts)


def _figures(result: Mapping[str, Any]) -> str:
    f = result.get("figures") or {}
    items = "".join(f"<li>{_badge(k)} <b>{int(f.get(k, 0))}</b></li>" for k in VERDICTS)
    share = f.get("quote_found_share", 0)
    return (f'<section class="summary"><h2>{int(f.get("citations", 0))} citations, '
            f"{esc(f'{share:.0%}')} of quotes found</h2><div class=\"counts\"><ul>{items}</ul></div>"
            f"<table>{_row('sources', esc(f.get('sources')))}{_row('sources failed', esc(f.get('sources_failed')))}"
            f"{_row('claims without citations', esc(f.get('claims_without_citations')))}"
            f"{_row('result', _mono(result.get('result_id')))}{_row('run', _mono(result.get('run_id')))}"
            f"{_row('signed by', _mono((result.get('signature') or {}).get('key_id')))}</table></section>")


def render_report_check(result: Mapping[str, Any], text: str) -> str:
    """The page for a signed ``report-check.v1`` result and the text of the report it checked."""
    citations = result.get("citations") or []
    report = result.get("report") or {}
    unplaced = [c for c in citations if c not in _placed(citations, len(text))]
    body = [_figures(result), f'<section class="report">{marked_text(text, citations)}</section>']
    if unplaced:
        links = " ".join(_mark_link(c) for c in unplaced)
        body.append(f'<section class="summary"><h2>citations the format does not place in the text</h2>{links}'
                    "</section>")
    body += [_citation(c) for c in citations]
    return page(f"Report check: {report.get('name', '')}", f"{report.get('format', '')} · {report.get('sha256', '')}",
                body, STYLE)
