"""``g6 receipt show`` and ``g6 receipt export``: one receipt, as g6 keeps it or in the field's formats."""

# Imports: g6.export.receipt (and through it the DSSE and VC writers) only inside `receipt export`, so
# `g6 --help` does not load them.
from __future__ import annotations

from pathlib import Path

import click

from g6.cli.app import EXIT_FAILED, Ctx, check_out, cli, emit_json, fail, fail_on, pass_ctx
from g6.cli.options import json_option
from g6.errors import G6Error

# what each format is, in the line `receipt export -o FILE` prints
_SAID = {"json": "the receipt as g6 signs it", "dsse": "an in-toto Statement v1 in a DSSE envelope",
         "vc": "a W3C Verifiable Credential 2.0 with an eddsa-jcs-2022 proof"}


@cli.group("receipt", short_help="Receipts: show one, export one.")
def receipt_group() -> None:
    """Receipts: show one, export one as an in-toto attestation or a W3C Verifiable Credential."""


@receipt_group.command("show", short_help="Print one receipt as JSON, signature included.")
@click.argument("receipt_id")
@json_option("receipt.v1", help="Print the receipt as JSON ({}); the receipt is JSON without it too, so "
                                "`receipt show ID | jq` works")
@pass_ctx
def receipt_show(c: Ctx, receipt_id: str, as_json: bool) -> None:
    """Print one receipt as JSON, signature included."""
    with c.evidence() as ev:
        try:
            r = ev.ledger.get(receipt_id)
        except G6Error as e:
            fail(str(e), EXIT_FAILED)
    click.echo(r.shown(), nl=False)  # the bytes g6 serve's /receipt/{id} serves (Receipt.shown)


@receipt_group.command("export", short_help="Export a receipt as DSSE or a VC.")
@click.argument("receipt_id")
@click.option("--format", "fmt", type=click.Choice(["json", "dsse", "vc"]), default="json", show_default=True,
              help="json: the receipt as `receipt show` prints it; dsse: an in-toto Statement v1 in a DSSE envelope "
                   "(one line); vc: a W3C Verifiable Credential 2.0 secured with eddsa-jcs-2022.")
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="Write the document to this file (replaced whole or not at all) instead of stdout.")
@json_option("receipt-export.v1", help="Print what was exported as JSON ({}): format, media type, signing key, "
                                       "and the document itself when there is no -o")
@pass_ctx
def receipt_export(c: Ctx, receipt_id: str, fmt: str, output: Path | None, as_json: bool) -> None:
    """Export one receipt in a format other tools verify: dsse and vc are signed by this home's signing key,
    after the receipt's own signature was checked (a receipt that fails it is not exported, exit 1)."""
    from g6.export.receipt import export_receipt
    from g6.prove.proofs import write_note

    if output is not None:
        check_out(output, "-o")
    with c.evidence() as ev:  # read only: an id that names nothing creates nothing
        try:
            exported = export_receipt(ev, receipt_id, fmt)
        except G6Error as e:  # an id that names nothing, a receipt that fails its signature: 1; bad input: 2
            fail_on(e)
    if output is not None:
        try:
            write_note(output, exported.text)  # atomic: a temporary file beside it, then a rename
        except OSError as e:
            fail(f"cannot write -o {output}: {e.strerror or e}", EXIT_FAILED)
    if as_json:
        emit_json(exported.summary(str(output) if output is not None else None))
    elif output is None:
        click.echo(exported.text, nl=False)
    else:
        signed = f", signed by {exported.key_id}" if exported.key_id else ""
        click.echo(f"wrote {output}: {exported.receipt_id} as {_SAID[fmt]} ({exported.media_type}){signed}")
