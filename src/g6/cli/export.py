"""``g6 export warc|wacz``: the evidence in standard web-archive formats."""

# Imports: g6.export and g6.cite (the WARC and WACZ writers, manifests) only inside the commands, so
# `g6 --help` does not load them.
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from g6.cli.app import Ctx, check_out, cli, emit_json, fail, fail_on, info, pass_ctx, progress
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error


@cli.group("export", short_help="Export evidence in standard formats: warc, wacz.")
def export_group() -> None:
    """Export evidence in standard formats: warc, wacz."""


def _export_command(name: str, schema: str, output_help: str,
                    short_help: str) -> Callable[[Callable[..., None]], click.Command]:
    """`g6 export NAME`, with what every export takes: -o/--output (required), --manifest, --json and -q."""
    def decorate(f: Callable[..., None]) -> click.Command:
        f = json_option(schema, help="Print the summary as JSON")(quiet_option(pass_ctx(f)))
        f = click.option("--manifest", "manifest_path", type=click.Path(path_type=Path, exists=True, dir_okay=False),
                         help="Only the receipts a manifest cites, and their re-checks.")(f)
        f = click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help=output_help)(f)
        return export_group.command(name, short_help=short_help)(f)

    return decorate


@_export_command("warc", "export-warc.v1", "out.warc.gz or out.warc", "Write a WARC/1.1 file that replays in pywb.")
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
        click.echo(f"wrote {summary.path}: {counted(summary.responses, 'response')} "
                   f"({counted(summary.redirects, 'redirect')}), {counted(summary.revisits, 'revisit')}, "
                   f"{counted(summary.conversions, 'conversion')}, {counted(summary.requests, 'request')}, "
                   f"{counted(summary.metadata, 'metadata record')}"
                   + (f", {counted(summary.certificates, 'certificate')}" if summary.certificates else "")
                   + f" from {counted(summary.receipts, 'receipt')}"
                   + (f"; {counted(summary.redacted, 'redacted body', 'redacted bodies')} left out (a resource "
                      "record says why)" if summary.redacted else ""))


@_export_command("wacz", "export-wacz.v1", "The .wacz file to write.",
                 "Write a WACZ for ReplayWeb.page or pywb, proofs inside.")
@click.option("--sign", is_flag=True, help="Sign datapackage-digest.json (WACZ Signing and Verification 0.1.0, "
                                         "anonymous ECDSA P-384) with the home's WACZ key, which the log vouches for.")
@click.option("--tsa", "tsa_url", metavar="URL", help="With --sign: have this RFC 3161 TSA time-stamp the signature "
                                                      "(signedData.timeSignature).")
@click.option("--tsa-name", metavar="NAME", help="The name the --tsa is reported under (default: its URL).")
def export_wacz_cmd(c: Ctx, output: Path, manifest_path: Path | None, as_json: bool, sign: bool,
                    tsa_url: str | None, tsa_name: str | None) -> None:
    """Write a WACZ (WARC, index, pages.jsonl) with the receipts, checkpoint and inclusion proofs
    inside, for ReplayWeb.page or pywb; --sign signs it as ReplayWeb.page checks."""
    from g6.export.wacz import export_wacz

    check_out(output, "-o")
    if (tsa_url or tsa_name) and not sign:
        fail("--tsa and --tsa-name time-stamp the signature: give --sign too")
    if tsa_name and not tsa_url:
        fail("--tsa-name names a --tsa: give --tsa URL too")
    if tsa_url is not None and (not tsa_url.startswith(("http://", "https://")) or len(tsa_url) > 2000):
        fail(f"bad --tsa {tsa_url[:80]!r}: an http:// or https:// URL")
    with c.evidence(need_key=True) as ev:
        try:
            signer = _wacz_signer(ev, tsa_url, tsa_name) if sign else None
            entries = _export_entries(ev, manifest_path)  # after the key entry a first --sign appends
            with progress("writing the WACZ", "steps") as bar:
                summary = export_wacz(ev, output, entries, progress=bar, signer=signer)
        except G6Error as e:
            fail_on(e)
    if as_json:
        emit_json(summary.to_json())
        return
    click.echo(f"wrote {summary.path}: {counted(summary.pages, 'page')}, {counted(summary.receipts, 'receipt')} "
               f"with {counted(summary.proofs, 'inclusion proof')}")
    if summary.signature is not None:
        s = summary.signature
        stamped = f"; time-stamped by {s['tsa']} (genTime {s['gen_time']})" if s["tsa"] else ""
        click.echo(f"signed by {s['key_id']} (WACZ key entry {s['key_entry']}){stamped}")


def _wacz_signer(ev: Any, tsa_url: str | None, tsa_name: str | None) -> Any:
    from g6.export.wacz_sign import prepare_signer

    signer = prepare_signer(ev, tsa_url=tsa_url, tsa_name=tsa_name or tsa_url)
    if signer.new_entry:
        info(f"g6: WACZ key entry {signer.entry.receipt_id}: add {signer.key.key_id}")
    return signer


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
