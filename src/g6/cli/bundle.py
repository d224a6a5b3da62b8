"""``g6 bundle MANIFEST -o BUNDLE.zip`` and ``g6 bundle verify BUNDLE.zip``: evidence packed for offline
checking."""

# Imports: g6.prove.bundle and g6.export (the bundle itself, the HTML report) only inside the command, so
# `g6 --help` does not load them.
from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

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
    pass_ctx,
    progress,
    read_key,
    shown,
    write_html,
)
from g6.cli.options import json_option, quiet_option
from g6.errors import G6Error
from g6.ledger.note import NoteError
from g6.ledger.receipts import utc_now


@cli.command("bundle", context_settings={"ignore_unknown_options": False})
@click.argument("args", nargs=-1, required=True, metavar="MANIFEST | verify BUNDLE")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="The zip to write (creating a bundle).")
@click.option("--key", "keys", multiple=True,
              help="Pin the publisher's public key (verify; repeatable): ed25519:<base64>, a C2SP verifier key "
                   "<origin>+<id>+<key> (which also pins the log), or a file with one.")
@click.option("--origin", help="The log origin the checkpoint must name (verify; implied by a verifier key).")
@click.option("--trust-bundle-keys", is_flag=True, help="Verify with the keys shipped inside the bundle.")
@click.option("--allow-unsigned", is_flag=True,
              help="Accept a manifest nobody signed (verify); the summary then says so.")
@click.option("--max-parsed-body", type=click.IntRange(min=0), default=None,
              help="Re-read HTML pages and search replies up to this many bytes to check cited text (verify; "
                   "default 256 KiB, which keeps verifying under 128 MiB of memory).")
@json_option("bundle-index.v1", "bundle-verify.v1",
             help="Print the bundle's index (creating: {}) or the verdicts (verify: {}) as JSON")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="verify: also write the result as one self-contained HTML page to this file.")
@quiet_option
@pass_ctx
def bundle_cmd(c: Ctx, args: tuple[str, ...], output: Path | None, keys: tuple[str, ...], origin: str | None,
               trust_bundle_keys: bool, allow_unsigned: bool, max_parsed_body: int | None, as_json: bool,
               html_out: Path | None = None) -> None:
    """`g6 bundle MANIFEST -o report-evidence.zip` packs a manifest with its receipts, blobs, inclusion
    proofs, checkpoint and public keys; `g6 bundle verify report-evidence.zip --key KEY` checks it all
    offline, one verdict per citation. Exit 0 only when everything holds."""
    if args[0] == "verify":
        if len(args) != 2:
            fail("usage: g6 bundle verify BUNDLE.zip [--key KEY]")
        if not Path(args[1]).is_file():
            fail(f"no bundle file at {args[1]}")
        _verify(args[1], keys, origin, trust_bundle_keys, allow_unsigned, max_parsed_body, as_json, html_out)
    if len(args) != 1 or output is None:
        fail("usage: g6 bundle MANIFEST -o BUNDLE.zip")
    if html_out is not None:
        fail("--html is for `g6 bundle verify BUNDLE.zip`")
    check_out(output, "-o")
    from g6.prove.bundle import build_bundle

    with c.evidence(need_key=True) as ev:
        try:
            with progress("bundling", "steps") as bar:
                index = build_bundle(ev, args[0], output, progress=bar)
        except G6Error as e:
            fail_on(e)
        except (OSError, ValueError) as e:
            fail(str(e))
    if not json.loads(Path(args[0]).read_bytes()).get("signature"):  # build_bundle has read it as an object
        click.echo("g6: the manifest is not signed, so `g6 bundle verify` fails it unless given --allow-unsigned; "
                   "run `g6 manifest sign` and bundle again", err=True)
    if as_json:
        emit_json(index)
    else:
        click.echo(f"wrote {output}: {len(index['files'])} files for manifest {index['manifest_id']}")


def _verify(bundle: str, keys: tuple[str, ...], origin: str | None, trust_bundle_keys: bool, allow_unsigned: bool,
            max_parsed_body: int | None, as_json: bool, html_out: Path | None) -> NoReturn:
    """``g6 bundle verify BUNDLE.zip``: every check offline, one verdict per citation."""
    from g6.prove.bundle import MAX_PARSED_BODY, PinnedKey, verify_bundle

    pinned = []
    for k in keys:
        try:
            key, key_origin = read_key(k)
        except (G6Error, NoteError, ValueError, OSError) as e:
            fail(f"bad --key: {e}")
        if origin is not None and key_origin is not None and origin != key_origin:
            fail(f"--origin {origin!r} is not the log the verifier key names ({key_origin!r})")
        pinned.append(PinnedKey(key, key_origin))
    check_html_out(html_out)
    with progress("verifying the bundle", "files") as bar:
        report = verify_bundle(bundle, tuple(pinned), trust_bundle_keys, origin=origin,
                               allow_unsigned=allow_unsigned,
                               max_parsed_body=MAX_PARSED_BODY if max_parsed_body is None else max_parsed_body,
                               progress=bar)
    if html_out is not None:
        from g6.export.html_report import render_bundle

        write_html(html_out, render_bundle(report.to_json(), bundle_path=bundle,
                                           keys=[p.key.key_id for p in pinned], generated_at=utc_now()))
    if as_json:
        emit_json(report.to_json())
    else:
        for ch in report.bundle_checks:
            click.echo(shown(f"{ch.check:<22} {'ok' if ch.ok else 'FAILED'}{': ' + ch.detail if ch.detail else ''}"))
        for v in report.citations:
            if v.ok:  # every field shown here was recomputed from the verified receipt and body
                quote = (v.quote or "")[:70]
                click.echo(shown(f"{v.citation_id} holds  {v.receipt_id}  {v.url}  \"{quote}\""))
            else:
                failed = "; ".join(f"{x.check}: {x.detail}" for x in v.checks if not x.ok)
                click.echo(shown(f"citation {v.position} FAILED ({failed})"))
        n = f"{len(report.citations)} citation{'' if len(report.citations) == 1 else 's'}"
        if not report.ok:
            click.echo(f"bundle FAILED: {n}")
        elif report.manifest_signed:
            click.echo(f"bundle holds: {n}, manifest signed by a pinned key")
        else:
            click.echo(f"bundle holds, but its manifest is UNSIGNED (accepted by --allow-unsigned): {n}, "
                       "each checked against its receipt; nobody vouched for the list itself")
    finish(report.ok)
