"""One self-contained HTML page for a person: a re-check report or a bundle verification.

The renderers take the JSON dicts the commands print (``schemas/recheck-report.v1.schema.json`` and
``g6 bundle verify --json``), plus what a reader needs beside them: the manifest (for quotes and the
cited text) and the receipts (for when each source was read). Fields they do not know are shown in
a generic "other fields" list rather than dropped, so a report that grows new fields still renders
whole.

Safety: every string that came from outside (quotes, page text, URLs, reasons) goes through
``html.escape`` with quotes escaped, and only into element text or quoted attribute values; no URL
is ever made a link target (a hostile ``javascript:`` URL stays text). The page carries a Content
Security Policy that forbids scripts and every network load, so even a renderer bug could not make
it run code or call out. The page uses no script and no external resource.
"""

from __future__ import annotations

import difflib
import html
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from g6 import TOOL_NAME, __version__

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

GOOD = ("unchanged", "current", "holds")
WARN = ("changed", "failed read")
BAD = ("gone", "failed")
# verdicts that mean "could not be checked": grey/amber, never green
_KNOWN_VERDICT_FIELDS = {"citation_id", "verdict", "source_url", "receipt_id", "moved", "similarity", "new_text",
                         "new_start", "new_end", "detail", "final_url", "retry_after", "removed", "added",
                         "span", "aligned", "diff", "recheck_receipt_id", "quote"}

_STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;color:#c9d1e0;font-size:13px}
main{padding:18px 28px;max-width:1100px}
section.summary,article.citation{background:#fff;border:1px solid #dde2ea;border-radius:6px;padding:14px 18px;
margin:0 0 14px}
table{border-collapse:collapse}
td,th{padding:2px 12px 2px 0;text-align:left;vertical-align:top;font-size:13px}
th{color:#566079;font-weight:600;white-space:nowrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;word-break:break-all}
.badge{display:inline-block;padding:2px 9px;border-radius:10px;font-weight:700;font-size:12px;color:#fff;
text-transform:uppercase;letter-spacing:.03em;background:#6b7385}
.badge.good{background:#1f8a4c}.badge.warn{background:#c77700}.badge.bad{background:#c0262d}
.badge.unchecked{background:#6b7385}
.counts .badge{margin-right:4px}
.counts li{display:inline-block;margin:0 14px 6px 0}
.counts ul{padding:0;margin:6px 0}
blockquote{margin:8px 0;padding:6px 12px;border-left:4px solid #a9b3c6;background:#f3f5f8;white-space:pre-wrap}
.diff{margin:8px 0;padding:6px 12px;border-left:4px solid #c77700;background:#fff8ec;white-space:pre-wrap}
del{background:#fbd3d3;color:#7d1111;text-decoration:line-through}
ins{background:#cdeccf;color:#0c4f1f;text-decoration:none}
.why{color:#8a1c1c}
h2{font-size:16px;margin:0 0 8px}
h3{font-size:13px;margin:10px 0 4px;color:#566079}
ul.checks{margin:4px 0;padding-left:18px}
.ok{color:#1f8a4c;font-weight:600}.no{color:#c0262d;font-weight:600}
footer{color:#6b7385;font-size:12px;padding:0 28px 24px}
"""


def esc(value: object) -> str:
    """Text for an element body or a quoted attribute value; anything not a str is JSON first."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return html.escape(value, quote=True)


def verdict_class(verdict: str) -> str:
    if verdict in GOOD:
        return "good"
    if verdict in WARN:
        return "warn"
    if verdict in BAD:
        return "bad"
    return "unchecked"


def badge(verdict: str) -> str:
    return f'<span class="badge {verdict_class(verdict)}" data-verdict="{esc(verdict)}">{esc(verdict)}</span>'


_WORD = re.compile(r"\S+")


def word_diff(old: str, new: str) -> str:
    """The new text with removed words as ``<del>`` and added words as ``<ins>`` (word level)."""
    a, b = _WORD.findall(old), _WORD.findall(new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(esc(" ".join(b[j1:j2])))
            continue
        if op in ("delete", "replace"):
            out.append(f"<del>{esc(' '.join(a[i1:i2]))}</del>")
        if op in ("insert", "replace"):
            out.append(f"<ins>{esc(' '.join(b[j1:j2]))}</ins>")
    return " ".join(out)


def _row(label: str, value: str) -> str:
    return f"<tr><th>{esc(label)}</th><td>{value}</td></tr>"


def _mono(value: object) -> str:
    return f'<span class="mono">{esc(value)}</span>' if value not in (None, "") else "—"


def _page(title: str, subtitle: str, body: Iterable[str]) -> str:
    return page(title, subtitle, body)


def page(title: str, subtitle: str, body: Iterable[str], style: str = "") -> str:
    """A whole page: the header, ``body`` (HTML already escaped), the footer; ``style`` adds CSS rules."""
    return "\n".join([
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{_STYLE}{style}</style>",
        "</head>",
        "<body>",
        f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>",
        "<main>",
        *body,
        "</main>",
        f"<footer>Written by {esc(TOOL_NAME)} {esc(__version__)}. Text quoted from sources is untrusted and "
        "shown as text only; this page runs no script and loads nothing.</footer>",
        "</body>",
        "</html>",
        "",
    ])


def _counts(counts: Mapping[str, int]) -> str:
    items = "".join(f"<li>{badge(k)} <b>{int(n)}</b></li>" for k, n in sorted(counts.items()))
    return f'<div class="counts"><ul>{items}</ul></div>'


def _citations_by_id(manifest: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for c in (manifest or {}).get("citations") or []:
        if isinstance(c, Mapping) and isinstance(c.get("citation_id"), str):
            out[c["citation_id"]] = c
    return out


def _receipt_time(receipts: Mapping[str, Mapping[str, Any]], rid: object) -> str | None:
    r = receipts.get(rid) if isinstance(rid, str) else None
    t = r.get("fetched_at") if isinstance(r, Mapping) else None
    return t if isinstance(t, str) else None


def _other_fields(d: Mapping[str, Any], known: set[str]) -> str:
    rest = {k: v for k, v in d.items() if k not in known}
    if not rest:
        return ""
    rows = "".join(_row(k, _mono(v)) for k, v in sorted(rest.items()))
    return f'<h3>Other fields</h3><table class="other">{rows}</table>'


def _span_of(v: Mapping[str, Any]) -> Mapping[str, Any]:
    for k in ("span", "aligned"):
        if isinstance(v.get(k), Mapping):
            return v[k]
    return {}


def _token_diff(v: Mapping[str, Any]) -> tuple[list[str], list[str]] | None:
    """A token diff the re-check itself reported (``removed``/``added``, top level or under ``diff``)."""
    src = v.get("diff") if isinstance(v.get("diff"), Mapping) else v
    removed, added = src.get("removed"), src.get("added")
    if removed is None and added is None:
        return None

    def words(x: object) -> list[str]:
        if isinstance(x, str):
            return [x]
        if isinstance(x, Sequence):
            return [w if isinstance(w, str) else json.dumps(w, ensure_ascii=False) for w in x]
        return [json.dumps(x, ensure_ascii=False)] if x is not None else []

    return words(removed), words(added)


def _check_items(checks: Iterable[Mapping[str, Any]]) -> str:
    return "".join(
        f'<li class="check" data-ok="{esc(bool(c.get("ok")))}"><b>{esc(c.get("check"))}</b> '
        f'<span class="{"ok" if c.get("ok") else "no"}">{"ok" if c.get("ok") else "FAILED"}</span>'
        f'{": " + esc(c.get("detail")) if c.get("detail") else ""}</li>' for c in checks)


# -- re-check --------------------------------------------------------------------------------
def render_recheck(report: Mapping[str, Any], *, manifest: Mapping[str, Any] | None = None,
                   receipts: Mapping[str, Mapping[str, Any]] | None = None,
                   manifest_path: str | None = None, generated_at: str | None = None,
                   checks: Sequence[Mapping[str, Any]] = ()) -> str:
    """The page for a re-check report (``RecheckReport.to_json()``).

    ``manifest``: the manifest's JSON (quotes, cited text, first-read receipt ids). ``receipts``:
    receipt JSON by id (the original reads and the re-check reads), for the read times and keys.
    ``checks``: what the caller verified beside the re-check (``{"check", "ok", "detail"}`` each),
    e.g. the manifest's and the receipts' signatures against the trusted keys.
    """
    receipts = receipts or {}
    cites = _citations_by_id(manifest)
    verdicts = [v for v in report.get("verdicts") or [] if isinstance(v, Mapping)]
    counts = report.get("counts")
    if not isinstance(counts, Mapping):
        counts = Counter(str(v.get("verdict")) for v in verdicts)
    sig = (manifest or {}).get("signature")
    signer_keys = sorted({str(r["signature"]["key_id"]) for r in receipts.values()
                          if isinstance(r, Mapping) and isinstance(r.get("signature"), Mapping)
                          and r["signature"].get("key_id")})
    rows = [
        _row("Manifest", _mono(report.get("manifest_id")) + (f" ({esc(manifest_path)})" if manifest_path else "")),
        _row("Manifest signed by", _mono(sig.get("key_id")) if isinstance(sig, Mapping) else "not signed"),
        _row("Run", _mono(report.get("run_id"))),
        _row("Citations", esc(str(len(verdicts)))),
        _row("Resumed from an earlier run", esc(str(report.get("resumed", 0)))),
        _row("Receipts signed with", ", ".join(_mono(k) for k in signer_keys) or "—"),
        _row("Exit code", esc(str(report.get("exit_code", "")))
             + " <small>(0 all hold, 1 some changed or gone, 3 some could not be checked)</small>"),
    ]
    if generated_at:
        rows.append(_row("Report written", esc(generated_at)))
    extra = _other_fields(report, {"run_id", "manifest_id", "counts", "resumed", "exit_code", "verdicts"})
    checked = (f'<h3>Verified</h3><ul class="checks">{_check_items(checks)}</ul>' if checks else "")
    summary = (f'<section class="summary" id="summary"><h2>Summary</h2>{_counts(counts)}'
               f"<table>{''.join(rows)}</table>{checked}{extra}</section>")
    body = [summary]
    for v in verdicts:
        body.append(_recheck_citation(v, cites.get(str(v.get("citation_id"))), receipts))
    title = "Re-check report"
    return _page(title, f"manifest {report.get('manifest_id', '?')} · run {report.get('run_id', '?')}", body)


def _recheck_citation(v: Mapping[str, Any], c: Mapping[str, Any] | None, receipts: Mapping[str, Any]) -> str:
    verdict = str(v.get("verdict", "?"))
    detail = v.get("detail") if isinstance(v.get("detail"), Mapping) else {}
    c = c or {}
    quote = c.get("quote") or v.get("quote") or ""
    cited_text = c.get("text") or quote
    first_rid = c.get("receipt_id")
    re_rid = v.get("recheck_receipt_id") or v.get("receipt_id")
    final_url = v.get("final_url") or detail.get("final_url")
    if final_url is None and isinstance(re_rid, str) and isinstance(receipts.get(re_rid), Mapping):
        final_url = receipts[re_rid].get("final_url")
    rows = [
        _row("Source URL", _mono(v.get("source_url") or c.get("source_url"))),
        _row("Final URL", _mono(final_url)),
        _row("First read", esc(_receipt_time(receipts, first_rid) or "— (receipt not at hand)")
             + (f" · receipt {_mono(first_rid)}" if first_rid else "")),
        _row("Cited at", esc(c.get("added_at") or "—")),
        _row("Re-read", esc(_receipt_time(receipts, re_rid) or "—")
             + (f" · receipt {_mono(re_rid)}" if re_rid else " · no receipt")),
    ]
    if v.get("recheck_receipt_id") and v.get("receipt_id") and v["receipt_id"] != v["recheck_receipt_id"]:
        rows.append(_row("Receipt", _mono(v["receipt_id"])))
    if verdict == "current" and v.get("moved") is not None:
        where = "moved" if v.get("moved") else "same place"
        span = f" (now at {esc(v.get('new_start'))}–{esc(v.get('new_end'))})" if v.get("new_start") is not None else ""
        rows.append(_row("Cited text", f"still there, {where}{span}"))
    if v.get("similarity") is not None:
        rows.append(_row("Similarity", esc(str(v["similarity"]))))
    retry_after = v.get("retry_after", detail.get("retry_after"))
    if retry_after is not None:
        rows.append(_row("Retry after", esc(str(retry_after))))
    parts = [f'<article class="citation {verdict_class(verdict)}" id="{esc(v.get("citation_id"))}" '
             f'data-verdict="{esc(verdict)}">',
             f'<h2>{badge(verdict)} <span class="mono">{esc(v.get("citation_id"))}</span></h2>',
             f'<blockquote class="quote">{esc(quote)}</blockquote>' if quote else "",
             f"<table>{''.join(rows)}</table>"]
    span = _span_of(v)
    new_text = v.get("new_text") or span.get("text")
    if verdict == "changed" or new_text:
        if isinstance(new_text, str) and new_text:
            start = v.get("new_start", span.get("start"))
            end = v.get("new_end", span.get("end"))
            where = f" (at {esc(start)}–{esc(end)})" if start is not None else ""
            parts.append(f"<h3>Now on the page{where}: word-level diff against the cited text</h3>")
            parts.append(f'<div class="diff">{word_diff(str(cited_text), new_text)}</div>')
        td = _token_diff(v)
        if td is not None:
            removed, added = td
            parts.append('<h3>Token diff reported by the re-check</h3><ul class="tokens">'
                         + "".join(f"<li><del>{esc(w)}</del></li>" for w in removed)
                         + "".join(f"<li><ins>{esc(w)}</ins></li>" for w in added) + "</ul>")
    if verdict not in ("unchanged", "current", "changed"):
        why = detail.get("reason") or detail.get("error") or ""
        if verdict == "gone" and not why:
            sim = detail.get("closest_similarity")
            why = "the page answered and the passage is not there" + (
                f" (closest similarity {sim})" if sim is not None else "")
        label = "Why" if verdict == "gone" else "What kept it from being checked"
        parts.append(f'<p class="why"><b>{esc(label)}:</b> {esc(why or verdict)}</p>')
    if detail:
        rows_d = "".join(_row(str(k), _mono(val)) for k, val in sorted(detail.items()))
        parts.append(f'<h3>Detail</h3><table class="detail">{rows_d}</table>')
    parts.append(_other_fields(v, _KNOWN_VERDICT_FIELDS))
    parts.append("</article>")
    return "\n".join(p for p in parts if p)


# -- bundle verify ------------------------------------------------------------------------------
# The page shows only what bundle verify recomputed from a receipt whose signature verified and a
# body that hashes to it (``BundleReport.to_json()``); nothing is read from the bundle's members, so a
# forged manifest or receipt can never put its words on the page. A failed citation is shown by its
# position and what failed.
def render_bundle(result: Mapping[str, Any], *, bundle_path: str | None = None,
                  keys: Sequence[str] = (), generated_at: str | None = None) -> str:
    """The page for ``BundleReport.to_json()``. The keys and where each came from are the report's
    ``keys``; ``keys`` here (key ids the verifier pinned) is for a report that has none."""
    citations = [c for c in result.get("citations") or [] if isinstance(c, Mapping)]
    bundle_checks = [c for c in result.get("bundle_checks") or [] if isinstance(c, Mapping)]
    ok = bool(result.get("ok"))
    counts = Counter(_bundle_verdict(c) for c in citations)
    signed = result.get("manifest_signed")
    used = [k for k in result.get("keys") or [] if isinstance(k, Mapping)]
    pinned = [str(k.get("key_id")) for k in used if k.get("source") == "pinned with --key"] if used else list(keys)
    shipped = [str(k.get("key_id")) for k in used if k.get("source") != "pinned with --key"]
    rows = [
        _row("Result", badge("holds" if ok else "failed")),
        _row("Bundle", _mono(bundle_path)),
        _row("Manifest", _mono(result.get("manifest_id"))),
        _row("Manifest signature", esc("verified" if signed else
                                       "UNSIGNED or not verified: nobody vouched for which citations the list holds")),
        _row("Pinned keys", ", ".join(_mono(k) for k in pinned) or "none given"),
    ]
    if shipped:
        rows.append(_row("Keys shipped inside the bundle, not pinned", ", ".join(_mono(k) for k in shipped)))
    rows.append(_row("Citations", esc(str(len(citations)))))
    if generated_at:
        rows.append(_row("Report written", esc(generated_at)))
    checks = _check_items(bundle_checks)
    extra = _other_fields(result, {"ok", "manifest_id", "manifest_signed", "bundle_checks", "citations", "keys",
                                   "misbehavior", "forks"})
    body = [f'<section class="summary" id="summary"><h2>Summary</h2>{_counts(counts)}<table>{"".join(rows)}</table>'
            f'<h3>Bundle checks</h3><ul class="checks">{checks}</ul>{extra}</section>']
    forks = [f for f in result.get("forks") or [] if isinstance(f, Mapping)]
    if forks:
        body.append(_forks(forks))
    if not citations:
        body.append('<section class="summary"><p class="why"><b>Nothing was verified:</b> '
                    "the bundle gave no citation to check (see the bundle checks above).</p></section>")
    for c in citations:
        body.append(_bundle_citation(c))
    return _page("Bundle verification", f"manifest {result.get('manifest_id') or '?'}", body)


def _bundle_verdict(v: Mapping[str, Any]) -> str:
    if not v.get("ok"):
        return "failed"
    return "failed read" if v.get("failed_read") else "holds"


def _forks(forks: Sequence[Mapping[str, Any]]) -> str:
    """Two signed checkpoints of one log that show two histories: each fork's words and both notes."""
    parts = ['<section class="summary" id="misbehavior"><h2>Misbehavior detected: the log shows two histories</h2>']
    for f in forks:
        parts.append(f'<p class="why">{esc(f.get("detail"))}</p>')
        for cp in f.get("checkpoints") or []:
            if isinstance(cp, Mapping):
                parts.append(f'<h3>{esc(cp.get("label"))}</h3><pre class="mono">{esc(cp.get("note"))}</pre>')
    parts.append("</section>")
    return "".join(parts)


def _bundle_citation(v: Mapping[str, Any]) -> str:
    verdict = _bundle_verdict(v)
    name = v.get("citation_id") if v.get("ok") and v.get("citation_id") else f"citation {v.get('position', '?')}"
    rid = v.get("receipt_id")
    rows = [_row("Source URL", _mono(v.get("url"))),
            _row("Receipt", _mono(rid))] if v.get("ok") else []
    if v.get("outcome") is not None:  # only from a receipt whose signature verified
        status = v.get("http_status")
        rows.append(_row("Read", esc(f"{v.get('outcome')}, " + (f"HTTP {status}" if status is not None
                                                                 else "no HTTP status"))))
    checks = [x for x in v.get("checks") or [] if isinstance(x, Mapping)]
    items = _check_items(checks)
    failed = [f"{x.get('check')}: {x.get('detail') or 'failed'}" for x in checks if not x.get("ok")]
    parts = [f'<article class="citation {verdict_class(verdict)}" id="{esc(name)}" data-verdict="{verdict}">',
             f'<h2>{badge(verdict)} <span class="mono">{esc(name)}</span></h2>',
             f'<blockquote class="quote">{esc(v.get("quote") or "")}</blockquote>' if v.get("ok") else "",
             f"<table>{''.join(rows)}</table>" if rows else "",
             f'<h3>Checks</h3><ul class="checks">{items}</ul>']
    if v.get("ok") and v.get("failed_read"):
        parts.append('<p class="why"><b>A failed read:</b> the quoted words are the error page\'s, not evidence '
                     "of the page (marked as such in the manifest).</p>")
    if failed:
        parts.append(f'<p class="why"><b>What failed:</b> {esc("; ".join(failed))}</p>')
    parts.append(_other_fields(v, {"citation_id", "ok", "quote", "checks", "position", "receipt_id", "url",
                                   "outcome", "http_status", "failed_read"}))
    parts.append("</article>")
    return "\n".join(p for p in parts if p)


def recheck_receipts(home: Any, manifest: Mapping[str, Any], report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The receipts a re-check page shows (first reads and re-reads), from an evidence home's ledger."""
    ids = {c.get("receipt_id") for c in _citations_by_id(manifest).values()}
    for v in report.get("verdicts") or []:
        if isinstance(v, Mapping):
            ids |= {v.get("receipt_id"), v.get("recheck_receipt_id")}
    out: dict[str, dict[str, Any]] = {}
    for rid in sorted(i for i in ids if isinstance(i, str)):
        try:
            out[rid] = home.ledger.get(rid).to_json()
        except Exception:  # noqa: BLE001 - a receipt the ledger cannot give is shown as unknown, not fatal
            continue
    return out


def signature_checks(manifest: Any, receipts: Mapping[str, Any], keys: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The manifest's signature and every shown receipt's signature, against ``keys`` (id -> VerifyKey)."""
    from g6.ledger.receipts import Receipt

    out: list[dict[str, Any]] = []
    names = ", ".join(sorted(keys)) or "no trusted key"
    if getattr(manifest, "signature", None) is not None:
        ok, why = manifest.verify_signature(keys)
        out.append({"check": "manifest_signature", "ok": ok, "detail": why})
    else:
        out.append({"check": "manifest_signature", "ok": False, "detail": "the manifest is not signed"})
    bad = []
    for rid, r in sorted(receipts.items()):
        ok, why = Receipt.from_json(r).verify_signature(keys)
        if not ok:
            bad.append(f"{rid}: {why}")
    out.append({"check": "receipt_signatures", "ok": bool(receipts) and not bad,
                "detail": (f"{len(receipts) - len(bad)} of {len(receipts)} receipts verified with {names}"
                           + (f"; {'; '.join(bad[:5])}" if bad else ""))})
    return out


def write_html(path: str | os.PathLike[str], page: str) -> Path:
    """Write atomically (a temporary file beside it, then rename), so no half page is left behind."""
    out = Path(path)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


__all__ = ["page", "recheck_receipts", "render_bundle", "render_recheck", "signature_checks", "word_diff",
           "write_html"]
