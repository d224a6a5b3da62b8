"""``g6 chunk``, ``g6 cite``, ``g6 manifest sign|verify`` and ``g6 recheck``: citing what was kept, and
checking the citations later."""

# Imports: g6.cite and g6.export (passages, manifests, re-checks, the HTML report) only inside the commands
# that use them, so `g6 --help` does not load them.
from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from g6.cli.app import (
    Ctx,
    check_html_out,
    check_out,
    cli,
    emit_json,
    fail,
    fail_on,
    finish,
    info,
    pass_ctx,
    progress,
    shown,
    write_html,
)
from g6.cli.options import json_option, quiet_option
from g6.errors import G6Error, InputError
from g6.ledger.receipts import utc_now


@cli.command("chunk")
@click.argument("receipt_id")
@click.option("--text", "source", type=click.Choice(["main", "visible", "rendered"]), default=None,
              help="main (the default for a page read raw): the main-content extraction; visible: all reader-visible "
                   "text (navigation, sidebars…); rendered (the default, and the only text, of a rendered capture): "
                   "the text the browser showed.")
@json_option("chunk.v1", help="Print the passages as JSON, with the receipt and text source")
@pass_ctx
def chunk_cmd(c: Ctx, receipt_id: str, source: str | None, as_json: bool) -> None:
    """Cut a stored page's text into passages with stable ids and offsets."""
    from g6.cite.cite import chunk_text

    with c.evidence() as ev:
        try:
            r, source, passages = chunk_text(ev, receipt_id, source)
        except G6Error as e:
            fail_on(e)
    if as_json:
        emit_json({"receipt_id": r.receipt_id, "source_url": r.final_url, "content": dict(r.content or {}),
                   "text_source": source, "passages": [p.to_json() for p in passages]})
        return
    for p in passages:
        text = " ".join(p.text.split())
        click.echo(f"{p.passage_id} {p.start:>6}-{p.end:<6} {text[:100]}{'…' if len(text) > 100 else ''}")


@cli.command("cite")
@click.argument("receipt_id")
@click.option("--passage", help="A passage id from `g6 chunk`.")
@click.option("--quote", help="Exact words from the page (compared after normalising).")
@click.option("--paper", type=click.IntRange(min=1), help="Paper number N of a search page receipt.")
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path), default=Path("citations.json"),
              show_default=True, help="The manifest to add the citation to (created if absent).")
@click.option("--allow-failed-read", is_flag=True,
              help="Cite a read that failed (a 403 or 404 page…) anyway: the manifest records it as a failed read, "
                   "and `g6 bundle verify` says so. Without it such a receipt is refused.")
@json_option("cite.v1", help="Print the new citation as JSON ({}: a citation of schemas/manifest.v1.schema.json)")
@pass_ctx
def cite_cmd(c: Ctx, receipt_id: str, passage: str | None, quote: str | None, paper: int | None,
             manifest_path: Path, allow_failed_read: bool, as_json: bool) -> None:
    """Add a citation to a manifest (created if absent). A quote not in the document is refused, and so is a
    receipt whose read failed (its body is an error page) unless --allow-failed-read."""
    from g6.cite.cite import cite_paper, cite_web
    from g6.cite.manifest import Manifest, load_manifest, save_manifest

    if sum(x is not None for x in (passage, quote, paper)) != 1:
        fail("give exactly one of --passage, --quote or --paper")
    check_out(manifest_path, "--manifest")  # never a folder, never a folder made for it
    with c.evidence() as ev:
        try:
            citation = cite_paper(ev, receipt_id, paper, allow_failed_read=allow_failed_read) if paper is not None \
                else cite_web(ev, receipt_id, passage=passage, quote=quote, allow_failed_read=allow_failed_read)
            m = load_manifest(manifest_path) if manifest_path.exists() else Manifest.new()
        except G6Error as e:
            fail_on(e)
    if m.signature is not None:
        click.echo("g6: the manifest was signed; adding a citation removes the signature", err=True)
    save_manifest(m.with_citation(citation), manifest_path)
    if as_json:
        emit_json(citation.to_json())
    else:
        where = f" ({citation.text_source} text)" if citation.text_source in ("visible", "rendered") else ""
        if citation.failed_read is not None:
            from g6.cite.cite import read_words

            failed = citation.failed_read
            where += f" FAILED READ ({read_words(failed['outcome'], failed['http_status'])})"
        click.echo(f"{citation.citation_id} {citation.kind} {citation.source_url}{where} \"{citation.quote}\"")
    info(f"manifest: {manifest_path} ({len(m.with_citation(citation).citations)} citations)")


@cli.group("manifest")
def manifest_group() -> None:
    """Citation manifests: sign, verify."""


@manifest_group.command("sign")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@json_option("manifest-sign.v1", help="Print what was signed as JSON")
@pass_ctx
def manifest_sign(c: Ctx, path: Path, as_json: bool) -> None:
    """Sign PATH with the evidence home's key (Ed25519 over RFC 8785 canonical JSON)."""
    from g6.cite.manifest import load_manifest, save_manifest

    with c.evidence(need_key=True) as ev:
        try:
            m = load_manifest(path).signed(ev.signing_key())
        except G6Error as e:
            fail(str(e))
    save_manifest(m, path)
    assert m.signature is not None
    if as_json:
        emit_json({"path": str(path), "manifest_id": m.manifest_id, "citations": len(m.citations),
                   "signature": m.signature.to_json()})
        return
    click.echo(f"signed {m.manifest_id} with {m.signature.key_id}")


@manifest_group.command("verify")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@json_option("manifest-verify.v1", help="Print the verdicts (signature, each citation) as JSON")
@pass_ctx
def manifest_verify(c: Ctx, path: Path, as_json: bool) -> None:
    """Check the manifest's signature and every citation: its receipt is in the ledger and verifies, its digests,
    URL and text hash are the receipt's, its blob is in the store, and its text is at its offsets in the page."""
    from g6.cite.manifest import load_manifest
    from g6.cite.recheck import verify_citations

    try:
        m = load_manifest(path)
    except G6Error as e:
        fail(str(e))
    with c.evidence() as ev:
        ok, why = m.verify_signature(ev.keys.trusted())
        # every citation is checked in full, whatever the signature says (as for an unsigned manifest)
        _, problems = verify_citations(ev, replace(m, signature=None), c.sources())
        cites = [{"citation_id": x.citation_id, "ok": x.citation_id not in problems,
                  "problems": [problems[x.citation_id]] if x.citation_id in problems else []} for x in m.citations]
    all_ok = ok and all(x["ok"] for x in cites)
    if as_json:
        emit_json({"ok": all_ok, "signature": {"ok": ok, "detail": why}, "citations": cites})
    else:
        click.echo(f"signature  {'ok' if ok else 'FAILED'}: {why}")
        for x in cites:
            click.echo(f"{x['citation_id']} {'ok' if x['ok'] else 'FAILED: ' + '; '.join(x['problems'])}")
    finish(all_ok)


@cli.command("recheck")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--run", "run_id", help="Resume this run: citations it already checked are skipped.")
@click.option("--workers", type=click.IntRange(1, 256), default=8, show_default=True, help="Hosts in parallel.")
@click.option("--processes", type=click.IntRange(1, 64), default=None, metavar="N",
              help="Fetch and judge on N processes (default: one per core, at most --workers; "
                   "1 with a store that is not a folder).")
@json_option("recheck-report.v1", help="Print the report as JSON")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="Also write the report as one self-contained HTML page to this file.")
@quiet_option
@pass_ctx
def recheck_cmd(c: Ctx, path: Path, run_id: str | None, workers: int, as_json: bool,
                html_out: Path | None = None, processes: int | None = None) -> None:
    """Fetch every cited source again; one verdict per citation.

    Exit 0: all unchanged/current; 1: any changed, gone or unverified; 3: any could not be checked.
    """
    from g6.cite.manifest import load_manifest
    from g6.cite.recheck import recheck

    try:
        m = load_manifest(path)
    except G6Error as e:
        fail(str(e))
    check_html_out(html_out)
    policy = c.policy()
    from g6.cli.fetch import renderer_for

    # a citation of a rendered capture is re-checked by rendering again: the browsers only then
    render_mode = "always" if any(x.text_source == "rendered" for x in m.citations) else "off"
    with c.evidence(need_key=True) as ev, c.settings.client(policy) as client, renderer_for(c, render_mode) as rd:
        try:
            with progress("re-checking", "citations") as bar:
                report = recheck(ev, client, m, run_id=run_id, workers=workers, progress=bar, sources=c.sources(),
                                  processes=processes or min(os.cpu_count() or 1, workers), renderer=rd)
        except InputError as e:
            fail(str(e))
        if html_out is not None:
            _write_recheck_html(ev, html_out, m, report.to_json(), path)
    info(f"run: {report.run_id} (resume with --run {report.run_id})")
    sig = report.manifest_signature
    if sig["status"] != "ok":
        click.echo(f"g6: manifest {m.manifest_id} is {'UNSIGNED' if sig['status'] == 'unsigned' else 'NOT VERIFIED'}:"
                   f" {sig['detail']}", err=True)
    if as_json:
        emit_json(report.to_json())
    else:
        _print_recheck(m, report)
    sys.exit(report.exit_code)


def _print_recheck(m: Any, report: Any) -> None:
    """``g6 recheck`` in text mode: a line per verdict, with the quote under it, then the counts."""
    by_id = {x.citation_id: x for x in m.citations}
    click.echo(f"manifest {m.manifest_id}: signature {report.manifest_signature['status']}")
    for v in report.verdicts:
        extra = ""
        if v.verdict == "current":
            extra = " (moved)" if v.moved else " (same place)"
        elif v.verdict == "changed":
            diff = v.diff or {}
            extra = (f" similarity={v.similarity} -{' '.join(diff.get('removed', []))!r}"
                     f" +{' '.join(diff.get('added', []))!r}: \"{' '.join((v.new_text or '').split())[:80]}\"")
        elif v.verdict == "gone" and v.detail.get("hidden"):
            extra = f" (hidden: {v.detail['hidden']})"
        elif v.verdict == "rate_limited" and v.retry_after:
            extra = f" (retry after {v.retry_after})"
        elif not v.checked:
            extra = f" ({v.detail.get('reason', '')})"
        if v.final_url and v.final_url != v.source_url:
            extra += f" now at {v.final_url}"
        if "total_now" in v.detail:
            extra += f" total {v.detail.get('total_then')} -> {v.detail.get('total_now')}"
        click.echo(shown(f"{v.citation_id} {v.verdict:<17} {v.source_url}{extra}"))
        click.echo(f"{'':<19}\"{shown(by_id[v.citation_id].quote[:90])}\"")
    counts = ", ".join(f"{k} {n}" for k, n in sorted(report.counts().items()))
    click.echo(f"{len(report.verdicts)} citations: {counts}")


def _write_recheck_html(ev: Any, out: Path, m: Any, report: dict[str, Any], manifest_path: Path) -> None:
    from g6.export.html_report import recheck_receipts, render_recheck, signature_checks

    mj = m.to_json()
    receipts = recheck_receipts(ev, mj, report)
    write_html(out, render_recheck(report, manifest=mj, receipts=receipts, manifest_path=str(manifest_path),
                                   generated_at=utc_now(),
                                   checks=signature_checks(m, receipts, ev.keys.trusted())))
