"""``g6 bundle MANIFEST -o BUNDLE.zip`` and ``g6 bundle verify BUNDLE.zip``: evidence packed for offline
checking."""

# Imports: g6.prove.bundle and g6.export (the bundle itself, the HTML report) only inside the command, so
# `g6 --help` does not load them.
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

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
    read_kept_notes,
    read_key,
    read_tsa_roots,
    shown,
    write_html,
)
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error
from g6.ledger.note import NoteError
from g6.ledger.receipts import utc_now


@cli.command("bundle", short_help="Pack a manifest's evidence in a zip; verify one offline.",
             context_settings={"ignore_unknown_options": False})
@click.argument("args", nargs=-1, required=True, metavar="MANIFEST | verify BUNDLE")
@click.option("-o", "--output", type=click.Path(path_type=Path), help="The zip to write (creating a bundle).")
@click.option("--key", "keys", multiple=True,
              help="Pin the publisher's key (verify; repeatable): their checkpoint verifier key <origin>+<id>+<key> "
                   "(`g6 keys show`; it also pins the log), an ed25519:<base64> public key, or a file with one.")
@click.option("--origin", help="The log origin the checkpoint must name (verify; implied by a verifier key).")
@click.option("--trust-bundle-keys", is_flag=True, help="Verify with the keys shipped inside the bundle.")
@click.option("--allow-unsigned", is_flag=True,
              help="Accept a manifest nobody signed (verify); the summary then says so.")
@click.option("--checkpoint", "kept", multiple=True, type=click.Path(path_type=Path),
              help="A signed checkpoint note the grader kept (from `g6 ledger checkpoint --out`; repeatable). "
                   "Verify: the bundle's checkpoint must be it or consistent with it (a fork is misbehavior). "
                   "Make: also carry the consistency proof between it and the bundle's checkpoint.")
@click.option("--policy", "policy_file", type=click.Path(path_type=Path, dir_okay=False),
              help="verify: a witness policy file (C2SP tlog-policy); the bundle's checkpoint must carry a quorum "
                   "of valid witness cosignatures.")
@click.option("--max-parsed-body", type=click.IntRange(min=0), default=None,
              help="Re-read HTML pages and search replies up to this many bytes to check cited text (verify; "
                   "default 256 KiB, which keeps verifying under 128 MiB of memory).")
@click.option("--tsa-root", "tsa_roots", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Pin this TSA root certificate (verify; PEM; repeatable): check the RFC 3161 tokens the bundle "
                   "carries, and say per citation when its receipt existed by (`existed before <genTime>`).")
@json_option("bundle-index.v1", "bundle-verify.v1",
             help="Print the bundle's index (creating: {}) or the verdicts (verify: {}) as JSON")
@click.option("--html", "html_out", type=click.Path(path_type=Path), default=None,
              help="verify: also write the result as one self-contained HTML page to this file.")
@quiet_option
@pass_ctx
def bundle_cmd(c: Ctx, args: tuple[str, ...], output: Path | None, keys: tuple[str, ...], origin: str | None,
               trust_bundle_keys: bool, allow_unsigned: bool, kept: tuple[Path, ...], policy_file: Path | None,
               max_parsed_body: int | None, as_json: bool, html_out: Path | None = None,
               tsa_roots: tuple[Path, ...] = ()) -> None:
    """`g6 bundle MANIFEST -o report-evidence.zip` packs a manifest with its receipts, blobs, inclusion
    proofs, checkpoint, consistency proofs from the log's earlier checkpoints and public keys; `g6 bundle
    verify report-evidence.zip --key KEY [--checkpoint KEPT]` checks it all offline, one verdict per
    citation. Exit 0 only when everything holds."""
    notes = read_kept_notes(kept, "replace")
    if args[0] == "verify":
        if len(args) != 2:
            fail("usage: g6 bundle verify BUNDLE.zip [--key KEY]")
        if not Path(args[1]).is_file():
            fail(f"no bundle file at {args[1]}")
        _verify(args[1], keys, origin, trust_bundle_keys, allow_unsigned, max_parsed_body, as_json, html_out,
                notes, policy_file, read_tsa_roots(tsa_roots) if tsa_roots else None)
    if policy_file is not None:
        fail("--policy is for `g6 bundle verify BUNDLE.zip`")
    if len(args) != 1 or output is None:
        fail("usage: g6 bundle MANIFEST -o BUNDLE.zip")
    if html_out is not None:
        fail("--html is for `g6 bundle verify BUNDLE.zip`")
    if tsa_roots:
        fail("--tsa-root is for `g6 bundle verify BUNDLE.zip`")
    check_out(output, "-o")
    from g6.prove.bundle import build_bundle

    with c.evidence(need_key=True) as ev:
        try:
            with progress("bundling", "steps") as bar:
                index = build_bundle(ev, args[0], output, kept=notes, progress=bar)
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
        import zipfile

        with zipfile.ZipFile(output) as z:  # what was written, the index (bundle.json) included
            entries = len(z.infolist())
        click.echo(f"wrote {output}: {counted(entries, 'file')} for manifest {index['manifest_id']}")


def _verify(bundle: str, keys: tuple[str, ...], origin: str | None, trust_bundle_keys: bool, allow_unsigned: bool,
            max_parsed_body: int | None, as_json: bool, html_out: Path | None,
            kept: list[tuple[str, str]], policy_file: Path | None = None,
            tsa_roots: list[Any] | None = None) -> NoReturn:
    """``g6 bundle verify BUNDLE.zip``: every check offline, one verdict per citation."""
    from g6.ledger.transparency.policy import PolicyError, read_policy
    from g6.prove.bundle import MAX_PARSED_BODY, PinnedKey, verify_bundle

    policy = None
    if policy_file is not None:
        try:
            policy = read_policy(policy_file)
        except PolicyError as e:
            fail(str(e))

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
    _refuse_what_is_not_a_zip(bundle)
    with progress("verifying the bundle", "files") as bar:
        report = verify_bundle(bundle, tuple(pinned), trust_bundle_keys, origin=origin,
                               allow_unsigned=allow_unsigned,
                               max_parsed_body=MAX_PARSED_BODY if max_parsed_body is None else max_parsed_body,
                               kept=kept, progress=bar, policy=policy, tsa_roots=tsa_roots)
    if html_out is not None:
        from g6.export.html_report import render_bundle

        write_html(html_out, render_bundle(report.to_json(), bundle_path=bundle,
                                           keys=[p.key.key_id for p in pinned], generated_at=utc_now()))
    if as_json:
        emit_json(report.to_json())
    else:
        _print_report(report)
    finish(report.ok)


# How every zip file starts: a local file header, or the end record of a zip with no entries (APPNOTE.TXT 4.3.7,
# 4.3.16). A bundle cut short or tampered with still starts so, and gets its verdict (exit 1); a file that does
# not is no bundle at all: the wrong file was given (exit 2).
ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")


def _refuse_what_is_not_a_zip(bundle: str) -> None:
    try:
        with open(bundle, "rb") as f:
            start = f.read(4)
    except OSError as e:
        fail(f"cannot read {bundle}: {e.strerror or e}")
    if start not in ZIP_STARTS:
        fail(f"{bundle} is not an evidence bundle (a zip made by `g6 bundle MANIFEST -o BUNDLE.zip`): "
             f"{'it is empty' if not start else 'it is not a zip file'}")


def _print_report(report: Any) -> None:
    """``g6 bundle verify`` in text mode: a line per bundle check, both notes of any fork, a line per
    citation (with the read it cites), then the summary, which says where every key came from."""
    from g6.prove.bundle_report import MISBEHAVIOR

    for ch in report.bundle_checks:
        click.echo(shown(f"{ch.check:<22} {'ok' if ch.ok else 'FAILED'}{': ' + ch.detail if ch.detail else ''}"))
    for fork in report.forks:  # Go's sumdb client prints both notes: so does this
        click.echo(shown(f"{MISBEHAVIOR}: {fork.detail}"))
        for seen in fork.checkpoints:
            click.echo(shown(f"  {seen.label}:"))
            for line in seen.note.splitlines():
                click.echo(shown(f"    {line}"))
    for v in report.citations:
        read = v.read_words()
        if v.ok:  # every field shown here was recomputed from the verified receipt and body
            quote = (v.quote or "")[:70]
            head = f"{v.citation_id} is a FAILED READ (marked in the manifest)" if v.failed_read else \
                f"{v.citation_id} holds"
            click.echo(shown(f"{head}  {v.receipt_id}  {v.url}  {read}  \"{quote}\""))
            for x in v.checks:
                if x.check == "trusted_time":  # `ledger verify --tsa-root` words it the same way
                    click.echo(shown(f"  {x.detail}"))
        elif v.redaction is not None:  # taken out on the record by the publisher: redacted, not damaged
            click.echo(shown(f"{v.label()} REDACTED at seq {v.redaction['seq']} ({v.redaction['reason']})  "
                             f"{v.receipt_id}  {read}: the body was taken out by the signed entry "
                             f"{v.redaction['receipt_id']}"))
        else:
            failed = "; ".join(f"{x.check}: {x.detail}" for x in v.checks if not x.ok)
            click.echo(shown(f"{v.label()} FAILED{'  ' + read if read else ''} ({failed})"))
    click.echo(shown(_summary(report)))


def _summary(report: Any) -> str:
    from g6.prove.bundle_report import MISBEHAVIOR

    n = f"{len(report.citations)} citation{'' if len(report.citations) == 1 else 's'}"
    if report.misbehavior:
        return f"bundle FAILED: {MISBEHAVIOR}; {n}"
    if not report.ok:
        # how many of how many failed: a bundle fails with one bad citation, and the others still hold
        failed = sum(1 for v in report.citations if not v.ok)
        redacted = sum(1 for v in report.citations if v.redaction is not None)
        if not report.citations:
            return "bundle FAILED: no citation checked"
        said = f"{failed} of {n} failed" + ("" if failed else ", but the bundle's own checks did (above)")
        return f"bundle FAILED: {said}" + (f" ({redacted} REDACTED: their bodies were taken out on the record)"
                                           if redacted else "")
    failed_reads = sum(1 for v in report.citations if v.failed_read)
    if failed_reads:
        n += (f" ({failed_reads} of a FAILED READ, marked in the manifest: its words are an error page's, not "
              "evidence of the page)")
    signer = report.key_said(report.manifest_key) or "?"
    if not report.pinned:
        unsigned = "" if report.manifest_signed else ", its manifest UNSIGNED (accepted by --allow-unsigned)"
        signed_by = f", manifest signed by {signer}" if report.manifest_signed else ""
        return (f"bundle holds only against keys shipped inside the bundle, not pinned{unsigned}: {n}{signed_by}; "
                "pin the publisher's checkpoint verifier key with --key to know who made it")
    if report.manifest_signed and signer != f"{report.manifest_key} (pinned with --key)":
        # a key the log had before a rotation, or a writer it added: the key entries vouch for it
        return f"bundle holds: {n}, manifest signed by {signer}"
    if report.manifest_signed:
        return f"bundle holds: {n}, manifest signed by a pinned key ({report.manifest_key}, pinned with --key)"
    return (f"bundle holds, but its manifest is UNSIGNED (accepted by --allow-unsigned): {n}, each checked "
            "against its receipt; nobody vouched for the list itself")
