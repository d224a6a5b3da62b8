"""``g6 export warc|wacz``: the evidence in standard web-archive formats."""

# Imports: g6.export and g6.cite (the WARC and WACZ writers, manifests) only inside the commands, so
# `g6 --help` does not load them.
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from g6.cli.app import EXIT_FAILED, EXIT_USAGE, Ctx, check_out, cli, emit_json, fail, pass_ctx, progress
from g6.cli.options import json_option, quiet_option
from g6.errors import G6Error, InputError


@cli.group("export")
def export_group() -> None:
    """Export evidence in standard formats: warc, wacz."""


_manifest_option = click.option("--manifest", "manifest_path",
                                 type=click.Path(path_type=Path, exists=True, dir_okay=False),
                                 help="Only the receipts a manifest cites, and their re-checks.")


@export_group.command("warc")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="out.warc.gz or out.warc")
@_manifest_option
@json_option("export-warc.v1", help="Print the summary as JSON")
@quiet_option
@pass_ctx
def export_warc_cmd(c: Ctx, output: Path, manifest_path: Path | None, as_json: bool) -> None:
    """Write a WARC/1.1 file that replays in pywb: response (redirect hops too), revisit, request,
    conversion and metadata (receipt, urn:g6:receipt:ID) records."""
    from g6.export.warc import export_warc

    check_out(output, "-o")
    with c.evidence() as ev:
        entries = _export_entries(ev, manifest_path)
        with progress("writing the WARC", "receipts") as bar:
            summary = export_warc(ev, output, entries, progress=bar)
    if as_json:
        emit_json(summary.to_json())
    else:
        click.echo(f"wrote {summary.path}: {summary.responses} responses ({summary.redirects} redirects), "
                   f"{summary.revisits} revisits, {summary.conversions} conversions, {summary.requests} requests, "
                   f"{summary.metadata} metadata records from {summary.receipts} receipts")


@export_group.command("wacz")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="The .wacz file to write.")
@_manifest_option
@json_option("export-wacz.v1", help="Print the summary as JSON")
@quiet_option
@pass_ctx
def export_wacz_cmd(c: Ctx, output: Path, manifest_path: Path | None, as_json: bool) -> None:
    """Write a WACZ (WARC, index, pages.jsonl) with the receipts, checkpoint and inclusion proofs
    inside, for ReplayWeb.page or pywb."""
    from g6.export.wacz import export_wacz

    check_out(output, "-o")
    with c.evidence(need_key=True) as ev:
        entries = _export_entries(ev, manifest_path)
        try:
            with progress("writing the WACZ", "steps") as bar:
                summary = export_wacz(ev, output, entries, progress=bar)
        except G6Error as e:
            fail(str(e), EXIT_USAGE if isinstance(e, InputError) else EXIT_FAILED)
    if as_json:
        emit_json(summary.to_json())
    else:
        click.echo(f"wrote {summary.path}: {summary.pages} pages, {summary.receipts} receipts with "
                   f"{summary.proofs} inclusion proofs")


def _export_entries(ev: Any, manifest_path: Path | None) -> list[Any]:
    """Every receipt in the ledger, or those a manifest cites and their re-checks."""
    from g6.cite.manifest import load_manifest

    entries = [e.receipt for e in ev.ledger.entries()]
    if manifest_path is None:
        return entries
    try:
        m = load_manifest(manifest_path)
    except G6Error as e:
        fail(str(e))
    cited = {x.receipt_id for x in m.citations}
    return [r for r in entries if r.receipt_id in cited or
            set(r.links.get("rechecks", []) if isinstance(r.links.get("rechecks"), list) else []) & cited]
