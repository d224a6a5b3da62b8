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
from g6.cli.words import counted
from g6.errors import G6Error, InputError
from g6.ledger.receipts import utc_now


@cli.command("chunk", short_help="Cut a kept page's text into passages with stable ids.")
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


@cli.command("cite", short_help="Add a citation to a manifest (created if absent).")
@click.argument("receipt_id", required=False)
@click.option("--passage", help="A passage id from `g6 chunk`.")
@click.option("--quote", help="Exact words from the page (compared after normalising).")
@click.option("--paper", type=click.IntRange(min=1), help="Paper number N of a search page receipt.")
@click.option("--annotation", "annotation_path", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="Cite each quote (TextQuoteSelector) of a W3C Web Annotation file or a Hypothesis export, against "
                   "RECEIPT_ID or, without one, the newest good read of each annotation's source URL.")
@click.option("--manifest", "manifest_path", type=click.Path(path_type=Path), default=Path("citations.json"),
              show_default=True, help="The manifest to add the citation to (created if absent).")
@click.option("--allow-failed-read", is_flag=True,
              help="Cite a read that failed (a 403 or 404 page…) anyway: the manifest records it as a failed read, "
                   "and `g6 bundle verify` says so. Without it such a receipt is refused.")
@json_option("cite.v1", "cite-annotation.v1",
             help="Print the new citation as JSON ({}: a citation of schemas/manifest.v1.schema.json; with "
                  "--annotation, {})")
@pass_ctx
def cite_cmd(c: Ctx, receipt_id: str | None, passage: str | None, quote: str | None, paper: int | None,
             annotation_path: Path | None, manifest_path: Path, allow_failed_read: bool, as_json: bool) -> None:
    """Add a citation to a manifest (created if absent). A quote not in the document is refused, and so is a
    receipt whose read failed (its body is an error page) unless --allow-failed-read. With --annotation, one
    citation per annotation quote; exit 1 when any could not be cited (each is listed, with why)."""
    from g6.cite.cite import cite_paper, cite_web
    from g6.cite.manifest import Manifest, load_manifest, save_manifest

    if annotation_path is not None:
        if any(x is not None for x in (passage, quote, paper)):
            fail("--annotation gives the quotes: no --passage, --quote or --paper with it")
        _cite_annotations(c, annotation_path, receipt_id, manifest_path, allow_failed_read, as_json)
        return
    if receipt_id is None:
        fail("give RECEIPT_ID (a receipt id from g6 fetch), or --annotation FILE")
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
    if m.signature is not None and m.with_citation(citation).signature is None:  # a citation already in it: kept
        click.echo("g6: the manifest was signed; adding a citation removes the signature", err=True)
    save_manifest(m.with_citation(citation), manifest_path)
    if as_json:
        emit_json(citation.to_json())
    else:
        click.echo(_citation_line(citation))
    info(f"manifest: {manifest_path} ({counted(len(m.with_citation(citation).citations), 'citation')})")


def _citation_line(citation: Any) -> str:
    where = f" ({citation.text_source} text)" if citation.text_source in ("visible", "rendered") else ""
    if citation.failed_read is not None:
        from g6.cite.cite import read_words

        failed = citation.failed_read
        where += f" FAILED READ ({read_words(failed['outcome'], failed['http_status'])})"
    return f"{citation.citation_id} {citation.kind} {citation.source_url}{where} \"{citation.quote}\""


def _cite_annotations(c: Ctx, path: Path, receipt_id: str | None, manifest_path: Path, allow_failed_read: bool,
                      as_json: bool) -> None:
    """`g6 cite --annotation FILE`: every quote of the file cited (g6.report.cite_annotations), the manifest saved
    with those that were, each refusal said; exit 1 when any was refused."""
    from g6.cite.manifest import Manifest, load_manifest, save_manifest
    from g6.report.cite_annotations import cite_annotations

    check_out(manifest_path, "--manifest")
    try:
        data = path.read_bytes()
    except OSError as e:
        fail(f"--annotation {path}: cannot read it: {e.strerror or e}")
    with c.evidence() as ev:
        try:
            got = cite_annotations(ev, data, name=str(path), receipt_id=receipt_id,
                                   allow_failed_read=allow_failed_read)
            m = load_manifest(manifest_path) if manifest_path.exists() else Manifest.new()
        except G6Error as e:
            fail_on(e)
    if got.cited:
        signed = m.signature is not None
        for _, citation in got.cited:
            m = m.with_citation(citation)
        if signed and m.signature is None:  # only citations already in it: nothing changed, the signature stays
            click.echo("g6: the manifest was signed; adding a citation removes the signature", err=True)
        save_manifest(m, manifest_path)
    if as_json:
        emit_json({"manifest": str(manifest_path), "manifest_id": m.manifest_id if manifest_path.exists() else None,
                   "cited": [{"where": w, "citation": x.to_json()} for w, x in got.cited],
                   "refused": [r.to_json() for r in got.refused]})
    else:
        for _, citation in got.cited:
            click.echo(_citation_line(citation))
        for r in got.refused:
            click.echo(shown(f"refused {r.where or 'the annotation'} {r.source[:200]}: {r.reason}"))
    info(f"manifest: {manifest_path} ({counted(len(m.citations), 'citation')}); {counted(len(got.cited), 'quote')} "
         f"cited, {len(got.refused)} refused")
    finish(not got.refused)


@cli.group("manifest", short_help="Citation manifests: sign, verify, export.")
def manifest_group() -> None:
    """Citation manifests: sign, verify, export."""


@manifest_group.command("sign", short_help="Sign a manifest with the home's key.")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@json_option("manifest-sign.v1", help="Print what was signed as JSON")
@pass_ctx
def manifest_sign(c: Ctx, path: Path, as_json: bool) -> None:
    """Sign PATH with the evidence home's key (Ed25519 over RFC 8785 canonical JSON)."""
    from g6.cite.manifest import load_manifest, save_manifest
    from g6.cite.recheck import CITES_NOTHING, signing_problems

    try:
        m = load_manifest(path)
    except G6Error as e:
        fail(str(e))
    if not m.citations:
        fail(f"{path}: {CITES_NOTHING}: nothing to sign")
    with c.evidence(need_key=True) as ev:
        # a signature vouches for the cited texts and quotes: each is checked in full before it is given
        problems = signing_problems(ev, m, c.sources())
        if not problems:
            try:
                m = m.signed(ev.signing_key())
            except G6Error as e:
                fail(str(e))
    if problems:
        for cid, why in problems.items():
            click.echo(shown(f"{cid} FAILED: {why}"), err=True)
        fail(f"not signed: {counted(len(problems), 'citation')} of {m.manifest_id} did not verify "
             "(a signature would vouch for them); `g6 manifest verify` shows each check", 1)
    save_manifest(m, path)
    assert m.signature is not None
    if as_json:
        emit_json({"path": str(path), "manifest_id": m.manifest_id, "citations": len(m.citations),
                   "signature": m.signature.to_json()})
        return
    click.echo(f"signed {m.manifest_id} with {m.signature.key_id}")


@manifest_group.command("verify", short_help="Check a manifest's signature and every citation.")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@json_option("manifest-verify.v1", help="Print the verdicts (signature, each citation) as JSON")
@pass_ctx
def manifest_verify(c: Ctx, path: Path, as_json: bool) -> None:
    """Check the manifest's signature and every citation: its receipt is in the ledger and verifies, its digests,
    URL and text hash are the receipt's, its blob is in the store, and its text is at its offsets in the page."""
    from g6.cite.manifest import load_manifest
    from g6.cite.recheck import CITES_NOTHING, verify_citations

    try:
        m = load_manifest(path)
    except G6Error as e:
        fail(str(e))
    if not m.citations:  # a check of nothing is no check that passed
        fail(f"{path}: {CITES_NOTHING}: nothing to verify", 1)
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


EXPORT_FORMATS = ("robust-links", "annotation")


@manifest_group.command("export", short_help="Write the citations as Robust Links or W3C Web Annotations.")
@click.argument("path", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True,
              help="robust-links: an HTML page, one <a> per citation with data-originalurl, data-versionurl and "
                   "data-versiondate; annotation: a W3C Web Annotation collection (JSON-LD), a TextQuoteSelector "
                   "and a TimeState per citation.")
@click.option("--base-url", metavar="URL",
              help="The public root of a g6 serve of this home: each citation's memento there is its "
                   "data-versionurl (robust-links) or TimeState cached (annotation).")
@click.option("--archive", "archives", multiple=True, metavar="NAME=URLTEMPLATE",
              help="Another web archive's URL of the page, with {url} and {timestamp} (YYYYMMDDhhmmss), added to "
                   "data-versionurl after the g6 memento (robust-links); repeat for several.")
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="The file to write (default: stdout).")
@json_option("manifest-export.v1", help="Print what was written as JSON (needs -o)")
@pass_ctx
def manifest_export(c: Ctx, path: Path, fmt: str, base_url: str | None, archives: tuple[str, ...],
                    output: Path | None, as_json: bool) -> None:
    """Write the citations of the manifest at PATH in a format other tools read: Robust Links for scholarly HTML,
    or W3C Web Annotations (Hypothesis, Zotero). Each needs the citation's receipt from this home."""
    import json

    from g6.cite.manifest import load_manifest
    from g6.export import annotation, robust_links
    from g6.export.citations import Archive, export_citations

    if as_json and output is None:
        fail("--json prints what was written: give -o FILE for the export itself")
    if fmt == "annotation" and archives:
        fail("--archive is for --format robust-links (a TimeState has one cached copy: the g6 memento)")
    if output is not None:
        check_out(output, "-o")
    try:
        m = load_manifest(path)
        parsed = [Archive.parse(a) for a in archives]
        with c.evidence() as ev:
            exported = export_citations(ev, m, base_url=base_url, archives=parsed)
            if fmt == "robust-links":
                text = robust_links.render(m, exported)
            else:
                text = json.dumps(annotation.render(ev, m, exported), indent=2, ensure_ascii=False) + "\n"
    except G6Error as e:
        fail_on(e)
    if output is None:
        click.echo(text, nl=False)
    else:
        from g6.prove.proofs import write_note  # whole or not at all: a temporary file beside it, then a rename

        try:
            write_note(output, text)
        except OSError as e:
            fail(f"cannot write -o {output}: {e.strerror or e}", 1)
    missing = [e for e in exported if e.why_no_memento is not None]
    for e in missing:
        info(f"g6: {e.citation.citation_id}: no memento in g6 serve ({e.why_no_memento})")
    if as_json:
        emit_json({"format": fmt, "path": str(output), "manifest_id": m.manifest_id, "base_url": base_url,
                   "citations": [{"citation_id": e.citation.citation_id, "receipt_id": e.citation.receipt_id,
                                  "source_url": e.citation.source_url, "read_at": e.receipt.fetched_at,
                                  "versions": [v.to_json() for v in e.versions], "no_memento": e.why_no_memento}
                                 for e in exported]})
    elif output is not None:
        click.echo(f"wrote {output}: {counted(len(exported), 'citation')} as {fmt}"
                   + (f", {len(exported) - len(missing)} with a g6 memento" if base_url else ""))


@cli.command("recheck", short_help="Fetch every cited source again; a verdict per citation.")
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

    Exit 0: all unchanged/current; 1: any changed, gone, unverified or redacted (its body taken out on the
    record: not read again); 3: any could not be checked.
    """
    from g6.cite.manifest import RUN_ID, check_id, load_manifest
    from g6.cite.recheck import CITES_NOTHING, new_run_id, recheck

    try:
        m = load_manifest(path)
        run_id = check_id(run_id, RUN_ID, "run id") if run_id is not None else new_run_id()
    except G6Error as e:
        fail(str(e))
    if not m.citations:  # nothing checked is not "all unchanged" (g6 bundle refuses it too)
        fail(f"{path}: {CITES_NOTHING}: nothing to re-check")
    check_html_out(html_out)
    policy = c.policy()
    _need_home(c)
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
        except KeyboardInterrupt:
            # shown with -q too: the verdicts on file are kept, and only this id reuses them
            click.echo(f"g6: stopped; to go on from here: g6 recheck {path} --run {run_id}", err=True)
            raise
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


def _need_home(c: Ctx) -> None:
    """A re-check reads the receipts the manifest cites: a home that is not there (a wrong --home, G6_HOME unset in
    a cron job) is refused before anything is made in it, not created with a key no citation was signed by."""
    home = c.settings.home
    if not ((home / "knowledge").is_dir() or (home / "keys").is_dir()):
        fail(f"no evidence home at {home}; recheck reads the receipts the manifest cites (set --home or G6_HOME)")


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
                     f" +{' '.join(diff.get('added', []))!r}")
        elif v.verdict == "gone" and v.detail.get("hidden"):
            extra = f" (hidden: {v.detail['hidden']})"
        elif v.verdict == "rate_limited" and v.retry_after:
            extra = f" (retry after {v.retry_after})"
        elif not v.checked:
            message = v.detail.get("message")
            extra = f" ({v.detail.get('reason', '')}{': ' + str(message) if message else ''})"
        if v.final_url and v.final_url != v.source_url:
            extra += f" now at {v.final_url}"
        if "total_now" in v.detail:
            extra += f" total {v.detail.get('total_then')} -> {v.detail.get('total_now')}"
        click.echo(shown(f"{v.citation_id} {v.verdict:<17} {v.source_url}{extra}"))
        # the line under a verdict is what was cited (the manifest's quote); what the page says now is its own line
        click.echo(f"{'':<19}cited: \"{shown(by_id[v.citation_id].quote[:90])}\"")
        if v.verdict == "changed" and v.new_text:
            click.echo(f"{'':<19}now:   \"{shown(' '.join(v.new_text.split())[:90])}\"")
    counts = ", ".join(f"{k} {n}" for k, n in sorted(report.counts().items()))
    click.echo(f"{counted(len(report.verdicts), 'citation')}: {counts}")


def _write_recheck_html(ev: Any, out: Path, m: Any, report: dict[str, Any], manifest_path: Path) -> None:
    from g6.export.html_report import recheck_receipts, render_recheck, signature_checks

    mj = m.to_json()
    receipts = recheck_receipts(ev, mj, report)
    write_html(out, render_recheck(report, manifest=mj, receipts=receipts, manifest_path=str(manifest_path),
                                   generated_at=utc_now(),
                                   checks=signature_checks(m, receipts, ev.keys.trusted())))
