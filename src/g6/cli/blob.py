"""``g6 blob``: cat, verify, gc (collect garbage), copy (redact, hold, release and expire: ``g6.cli.blob_redact``)."""

# Imports: the store is loaded by g6.config anyway, so it is imported at the top.
from __future__ import annotations

from typing import Any

import click

from g6.cli.app import EXIT_FAILED, EXIT_USAGE, Ctx, cli, emit_json, fail, finish, pass_ctx, progress
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error, StoreError
from g6.store.open import copy_blobs, describe, open_store


@cli.group("blob", short_help="The blob store: cat, verify, gc, copy, redact, hold.")
def blob_group() -> None:
    """The blob store: cat, verify, gc (collect garbage), copy; redact, hold, release, expire."""


@blob_group.command("cat", short_help="Write a kept body's raw bytes to stdout.")
@click.argument("digest")
@pass_ctx
def blob_cat(c: Ctx, digest: str) -> None:
    """Write a blob's raw bytes to stdout (blake3:… or sha256:…)."""
    try:
        # hashed before a byte is served: a blob (or sha256 index entry) that lies is refused
        with c.evidence() as ev:
            ev.refuse_redacted(digest)  # redacted: never served, whether or not bytes are still in the store
            with ev.store.open_verified(digest) as f:
                out = click.get_binary_stream("stdout")
                while block := f.read(1 << 20):
                    out.write(block)
    except StoreError as e:
        fail(str(e), EXIT_USAGE if "digest" in type(e).__name__.lower() else EXIT_FAILED)


@blob_group.command("verify", short_help="Re-hash every blob; list the bad ones.")
@json_option("blob-verify.v1", help="Print the counts and the bad and dangling blobs as JSON")
@quiet_option
@pass_ctx
def blob_verify(c: Ctx, as_json: bool) -> None:
    """Re-hash every blob and check its meta and every sha256 index entry; list the bad ones."""
    with c.evidence() as ev:
        with progress("verifying", "blobs") as bar:
            report = ev.store.verify(progress=bar)
        red = _redactions(ev)
        # redacted on the record: gone is what they should be; still here is a removal to finish
        pending = [r.blob.blake3 for r in red.bodies() if ev.store.has(r.blob.blake3)] if red else []
    if as_json:
        emit_json({"ok": report.ok, "checked": report.checked, "index_checked": report.index_checked,
                   "bad": [{"digest": b.digest, "detail": b.detail} for b in report.bad],
                   "dangling": list(report.dangling), "redacted": len(red.bodies()) if red else 0,
                   "pending": pending})
    else:
        for b in report.bad:
            click.echo(f"BAD {b.digest}: {b.detail}")
        if report.dangling:
            click.echo(f"{counted(len(report.dangling), 'index entry', 'index entries')} of unfinished writes "
                       "(`g6 blob gc` sweeps them)")
        for d in pending:
            click.echo(f"redacted but still stored: {d} (`g6 blob gc` finishes the removal)")
        click.echo(f"blobs {'ok' if report.ok else 'FAILED'}: {report.checked} checked, "
                   f"{counted(report.index_checked, 'index entry', 'index entries')}, {len(report.bad)} bad"
                   + (f"; redacted {len(red.bodies())}" if red and red.bodies() else ""))
    finish(report.ok)


def _redactions(ev: Any) -> Any:
    """The home's redactions that count (``g6.ledger.redactions``), or None when its ledger cannot be read
    (the store's own verdict stands; `g6 ledger verify` says what is wrong with the ledger)."""
    try:
        return ev.redactions()
    except G6Error:
        return None


@blob_group.command("gc", short_help="Remove the blobs no receipt references.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@click.option("--grace", type=click.FloatRange(min=0), default=3600.0, show_default=True,
              help="Keep unreferenced blobs younger than this many seconds.")
@json_option("blob-gc.v1", help="Print what was (or would be) removed and kept as JSON")
@quiet_option
@pass_ctx
def blob_gc(c: Ctx, dry_run: bool, grace: float, as_json: bool) -> None:
    """Remove blobs that no receipt references, and what unfinished writes left behind."""
    from g6.cite.recheck import forget_texts
    from g6.ledger import takedown

    with c.evidence() as ev:  # the ledger is only read; an unreadable ledger stops gc (exit 1), never empties it
        with progress("reading receipts", "receipts") as bar:
            referenced = ev.ledger.referenced_digests(progress=bar)
        red = ev.redactions()  # a held blob is kept whatever else holds; a redacted one still here goes
        referenced |= {d for h in red.held.values() for d in (h.blob.blake3, h.blob.sha256)}
        with progress("collecting", "blobs") as bar:
            report = ev.store.gc(referenced, grace_seconds=grace, dry_run=dry_run, progress=bar)
        if dry_run:  # what finishing would take out: entries signed by the home's own keys only
            finished = [r.blob.blake3 for r in takedown.current(ev.ledger, ev.removal_roots()).bodies()
                        if ev.store.has(r.blob.blake3)]
        else:
            finished = takedown.finish(ev.ledger, ev.store, ev.removal_roots(), deep=True)
            forget_texts(ev, red.receipts)
    if as_json:
        emit_json({"dry_run": dry_run, "removed": list(report.removed), "kept": report.kept,
                   "young": list(report.skipped_young), "temp_files_removed": report.temp_files_removed,
                   "index_entries_removed": report.index_entries_removed, "redactions_finished": finished})
    else:
        verb = "would remove" if dry_run else "removed"
        for d in report.removed:
            click.echo(f"{verb} {d}")
        for d in finished:
            click.echo(f"{verb} {d} (redacted: the removal an earlier run left)")
        click.echo(f"{verb} {counted(len(report.removed), 'blob')}, "
                   f"{counted(report.temp_files_removed, 'temp file')} and "
                   f"{counted(report.index_entries_removed, 'index entry', 'index entries')} of unfinished writes; "
                   f"kept {report.kept} referenced, {len(report.skipped_young)} younger than {grace:g}s")


@blob_group.command("copy", short_help="Copy every blob into another store, re-hashed.")
@click.option("--to", "url", required=True, help="The store to copy into: s3://bucket/prefix or file:///path.")
@json_option("blob-copy.v1", help="Print the copy's counts and checks as JSON")
@quiet_option
@pass_ctx
def blob_copy(c: Ctx, url: str, as_json: bool) -> None:
    """Copy every blob into another store, re-hashing each; blobs already there are skipped (resumable)."""
    with c.evidence() as ev:
        red = _redactions(ev)  # redacted bytes are never copied anywhere, whatever the store still holds
        dst = open_store(url, url, env=c.settings.values)
        try:
            with progress("copying", "blobs") as bar:
                report = copy_blobs(ev.store, dst, skip={r.blob.blake3 for r in red.bodies()} if red else (),
                                    progress=bar)
        finally:
            getattr(dst, "close", lambda: None)()
    if as_json:
        emit_json(report.to_json())
    else:
        for b in report.bad:
            click.echo(f"BAD {b.digest}: {b.detail}")
        click.echo(f"blobs {'copied' if report.ok else 'FAILED'}: {report.copied} copied, {report.already} already in "
                   f"{describe(dst)}, {len(report.bad)} bad"
                   + (f", {report.skipped} redacted left behind" if report.skipped else ""))
    finish(report.ok)
