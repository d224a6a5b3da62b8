"""``g6 blob redact|hold|release|expire``: taking bytes out of the home, on the record (``g6.ledger.takedown``).

Each is thin over the library: the bodies asked for (by digest, ``--receipt`` or ``--url``) are planned from the
log, a signed entry is appended, then (redact, expire) the bytes go. A dry run (``--dry-run``; ``expire``
without ``--apply``) says what would be done and appends nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import click

from g6.cli.app import Ctx, emit_json, fail_on, info, pass_ctx
from g6.cli.blob import blob_group
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error, InputError
from g6.ledger import takedown
from g6.ledger.redactions import HOLD_ACTION, RELEASE

_REASON = click.option("--reason", required=True,
                       help="Why, in one line (court-order, gdpr-erasure, takedown-notice, leaked-credentials…): "
                            "signed into the log with the entry.")
_NOTE = click.option("--note", default="", help="The operator's note (an order's reference, a ticket), signed too.")
_DRY = click.option("--dry-run", is_flag=True, help="Say what would be done; append and remove nothing.")


def _targets(f: Any) -> Any:
    f = click.option("--url", "urls", multiple=True, metavar="URL",
                     help="Every body read from this URL (as asked, or after redirects). Repeatable.")(f)
    f = click.option("--receipt", "receipt_ids", multiple=True, metavar="ID",
                     help="The body this receipt read. Repeatable.")(f)
    return click.argument("digests", nargs=-1, metavar="[DIGEST]...")(f)


def _url_forms(urls: Iterable[str]) -> list[tuple[str, ...]]:
    """Each URL as receipts may hold it: as given, normalised (hops, final URL), and redacted (``request.url``)."""
    from g6.adapters.net.redact import redact_url
    from g6.adapters.net.urls import URLError, normalise_url

    out = []
    for u in urls:
        forms = [u, redact_url(u)]
        try:
            forms.append(normalise_url(u).url)
        except (URLError, ValueError, UnicodeError):
            pass
        out.append(tuple(dict.fromkeys(forms)))
    return out


def _plan(ev: Any, digests: Sequence[str], receipt_ids: Sequence[str], urls: Sequence[str]) -> takedown.Plan:
    if not (digests or receipt_ids or urls):
        raise InputError("name what to take out: a DIGEST (blake3:… or sha256:…), --receipt ID or --url URL")
    return takedown.plan(ev.ledger, digests=digests, receipt_ids=receipt_ids, urls=_url_forms(urls))


def _plan_json(p: takedown.Plan) -> dict[str, Any]:
    return {"blobs": [b.to_json() for b in p.all_blobs()],
            "receipts": sorted({r for ids in p.receipts.values() for r in ids})}


def _forget(ev: Any, receipts: Iterable[str]) -> None:
    """The words of redacted reads kept in re-check run files go too (``g6.cite.recheck.forget_texts``), and
    the texts the report check keeps of each redacted body (``g6.report.texts_cache.forget``)."""
    from g6.cite.recheck import forget_texts
    from g6.report.texts_cache import forget

    n = forget_texts(ev, receipts)
    if n:
        info(f"g6: took the quoted text out of {counted(n, 're-check verdict')} kept in run files")
    kept = sum(forget(ev.root, r.blob.blake3) for r in ev.redactions().bodies())
    if kept:
        info(f"g6: took {counted(kept, 'page text')} out of the report check's cache")


def _entries_said(out: takedown.Outcome) -> None:
    for e in out.entries:
        blobs = e.request.get("blobs") or []
        derived = sum(1 for b in blobs if b.get("role") == "derived")
        parts = sum(1 for b in blobs if b.get("role") == "resource")
        action = {"redact": "redacted", "hold": "held", "release": "released"}.get(str(e.request.get("action")), "?")
        what = counted(len(blobs) - derived - parts, "body", "bodies") + \
            f" and {counted(derived, 'derived copy', 'derived copies')}" + \
            (f" and {counted(parts, 'sub-resource')} of its capture" if parts else "") \
            if e.kind == "redaction" else counted(len(blobs), "blob")
        click.echo(f"{action} at seq {(e.log or {}).get('seq')} ({e.receipt_id}): {what}; reason "
                   f"{e.request.get('reason')!r}")


@blob_group.command("redact", short_help="Take bodies out of the store, on the record.")
@_targets
@_REASON
@_NOTE
@_DRY
@json_option("blob-redact.v1", help="Print what was (or would be) redacted and removed as JSON")
@quiet_option
@pass_ctx
def blob_redact(c: Ctx, digests: tuple[str, ...], receipt_ids: tuple[str, ...], urls: tuple[str, ...], reason: str,
                note: str, dry_run: bool, as_json: bool) -> None:
    """Take bodies out of the store, on the record: a signed redaction entry (the digests, the reason, the note,
    the receipts that read those bytes) is appended first, then the bytes and every copy derived from them
    (extracted text, a capture's DOM, text and screenshot, the sub-resources it loaded) are removed. Certificates
    servers presented are never removed. Receipts stay as they are; every reader then says redacted, never
    damaged."""
    with c.evidence(need_key=not dry_run, write=not dry_run) as ev:
        try:
            p = _plan(ev, digests, receipt_ids, urls)
            if dry_run:
                out = takedown.Outcome(skipped=dict(p.skipped))
            else:
                out = takedown.redact(ev.ledger, ev.store, ev.signing_key(), ev.removal_roots(), p, reason, note)
                _forget(ev, ev.redactions().receipts)
        except G6Error as e:
            fail_on(e)
    if as_json:
        emit_json({"dry_run": dry_run, "reason": reason, "note": note, **_plan_json(p), **out.to_json()})
        return
    if dry_run:
        for b in p.all_blobs():
            click.echo(f"would redact {b.blake3} ({b.role}{', from ' + b.source if b.source else ''})")
        for d, why in p.skipped.items():
            click.echo(f"would leave {d}: {why}")
        return
    if out.finished:
        click.echo(f"finished the removal of {counted(len(out.finished), 'blob')} an earlier run left")
    _entries_said(out)
    for d, why in out.skipped.items():
        click.echo(f"left {d}: {why}")
    click.echo(f"removed {counted(len(out.removed), 'blob')} from the store")


def _hold(c: Ctx, action: str, digests: tuple[str, ...], receipt_ids: tuple[str, ...], urls: tuple[str, ...],
          reason: str, note: str, dry_run: bool, as_json: bool) -> None:
    with c.evidence(need_key=not dry_run, write=not dry_run) as ev:
        try:
            p = _plan(ev, digests, receipt_ids, urls)
            if dry_run:
                out = takedown.Outcome()
            else:
                out = takedown.hold(ev.ledger, ev.signing_key(), ev.removal_roots(), p, action, reason, note)
        except G6Error as e:
            fail_on(e)
    if as_json:
        emit_json({"dry_run": dry_run, "action": action, "reason": reason, "note": note, **_plan_json(p),
                   "entries": out.to_json()["entries"], "skipped": dict(out.skipped)})
        return
    if dry_run:
        for b in p.all_blobs():
            click.echo(f"would {action} {b.blake3}")
        return
    _entries_said(out)
    for d, why in out.skipped.items():
        click.echo(f"left {d}: {why}")


@blob_group.command("hold", short_help="Put bodies under a legal hold, in a signed entry.")
@_targets
@_REASON
@_NOTE
@_DRY
@json_option("blob-hold.v1", help="Print the hold entry (or what it would hold) as JSON")
@quiet_option
@pass_ctx
def blob_hold(c: Ctx, digests: tuple[str, ...], receipt_ids: tuple[str, ...], urls: tuple[str, ...], reason: str,
              note: str, dry_run: bool, as_json: bool) -> None:
    """Put bodies (and the copies derived from them) under a legal hold, in a signed entry: `blob redact`,
    `blob expire` and `blob gc` leave them until `blob release`."""
    _hold(c, HOLD_ACTION, digests, receipt_ids, urls, reason, note, dry_run, as_json)


@blob_group.command("release", short_help="Lift a legal hold, in a signed entry.")
@_targets
@_REASON
@_NOTE
@_DRY
@json_option("blob-hold.v1", help="Print the release entry (or what it would release) as JSON")
@quiet_option
@pass_ctx
def blob_release(c: Ctx, digests: tuple[str, ...], receipt_ids: tuple[str, ...], urls: tuple[str, ...],
                 reason: str, note: str, dry_run: bool, as_json: bool) -> None:
    """Lift a legal hold, in a signed entry: the bodies may be redacted or expired again."""
    _hold(c, RELEASE, digests, receipt_ids, urls, reason, note, dry_run, as_json)


@blob_group.command("expire", short_help="Redact the bodies of reads older than a date.")
@click.option("--older-than", "older_than", required=True, metavar="DATE",
              help="Redact the bodies whose every read is older than this (YYYY-MM-DD, or RFC 3339 in UTC).")
@click.option("--manifest", "manifests", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="A citation manifest: the bodies its citations read are cited (skipped unless --include-cited). "
                   "Repeatable. Bodies a `g6 recheck` re-checked are cited too.")
@click.option("--include-cited", is_flag=True, help="Redact cited bodies too.")
@click.option("--apply", "--yes", "apply", is_flag=True,
              help="Do it: append the redaction entries (reason `retention`) and remove the bytes. Without it, "
                   "a dry run.")
@_NOTE
@json_option("blob-expire.v1", help="Print what expires (or would) and what is kept as JSON")
@quiet_option
@pass_ctx
def blob_expire(c: Ctx, older_than: str, manifests: tuple[Path, ...], include_cited: bool, apply: bool, note: str,
                as_json: bool) -> None:
    """Retention: redact the bodies of reads older than a date, with reason `retention`; a dry run unless --apply.
    Cited, held and already redacted bodies are left."""
    from g6.cite.manifest import load_manifest

    try:
        cited = {c_.receipt_id for m in manifests for c_ in load_manifest(m).citations}
    except (G6Error, OSError) as e:
        fail_on(e if isinstance(e, G6Error) else InputError(f"cannot read a --manifest: {e}"))
    with c.evidence(need_key=apply, write=apply) as ev:
        try:
            roots = ev.removal_roots()
            found = takedown.expiring(ev.ledger, roots, older_than, cited, include_cited=include_cited)
            out = takedown.Outcome(skipped=found.skipped)
            if apply:
                out = takedown.expire(ev.ledger, ev.store, ev.signing_key(), roots, found, note)
                _forget(ev, ev.redactions().receipts)
        except G6Error as e:
            fail_on(e)
    _expire_said(found, out, apply, include_cited, as_json)


def _expire_said(found: takedown.Expiry, out: takedown.Outcome, apply: bool, include_cited: bool,
                 as_json: bool) -> None:
    if as_json:
        emit_json({"dry_run": not apply, "older_than": found.cutoff, "include_cited": include_cited,
                   "expiring": [r.to_json() for r in found.bodies.values()], **out.to_json()})
        return
    verb = "expired" if apply else "would expire"
    for b3 in found.bodies:
        click.echo(f"{verb} {b3}")
    for d, why in out.skipped.items():
        click.echo(f"kept {d}: {why}")
    if apply:
        _entries_said(out)
    click.echo(f"{verb} {counted(len(found.bodies), 'body', 'bodies')} read before {found.cutoff}; "
               f"kept {len(out.skipped)}"
               + ("" if apply else " (a dry run: --apply does it)"))


