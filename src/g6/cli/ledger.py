"""``g6 ledger`` (list, verify, checkpoint, checkpoints, prove, consistency, copy, publish) and
``g6 verify-proof``: the receipt ledger and its proofs."""

# Imports: the ledger is loaded by g6.config anyway (top); g6.prove (checkpoints, proofs, verify --since)
# only inside the commands that use it, so `g6 --help` does not load it.
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import click

from g6.adapters.net.redact import redact_text
from g6.cli.app import (
    EXIT_FAILED,
    EXIT_USAGE,
    Ctx,
    check_out,
    cli,
    emit_json,
    fail,
    fail_on,
    finish,
    info,
    pass_ctx,
    progress,
    read_kept_notes,
    read_key,
    read_tsa_roots,
    shown,
    write_out,
)
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error
from g6.ledger import copy_ledger, open_ledger
from g6.ledger.note import Checkpoint, NoteError, parse_note
from g6.ledger.proofs import (
    CONSISTENCY_HEADER,
    MAX_PROOF,
    MAX_RECEIPT,
    verify_consistency_proof,
    verify_inclusion_proof,
)
from g6.ledger.receipts import KINDS


@cli.group("ledger", short_help="The receipt ledger: verify, checkpoint, prove, publish.")
def ledger_group() -> None:
    """The receipt ledger: list, verify, checkpoint, checkpoints, prove, consistency, copy, publish."""


@ledger_group.command("list", short_help="List the newest receipts.")
@click.option("--kind", type=click.Choice(KINDS),
              help="Only receipts of this kind.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="At most this many, newest first.")
@json_option("ledger-list.v1", help="Print the receipts as a JSON list")
@pass_ctx
def ledger_list(c: Ctx, kind: str | None, limit: int, as_json: bool) -> None:
    """List the newest receipts."""
    with c.evidence() as ev:
        entries = list(ev.ledger.entries(kind=kind, limit=limit, newest_first=True))
    if as_json:
        emit_json([{"seq": e.seq, "receipt_id": e.receipt.receipt_id, "kind": e.receipt.kind,
                    "source": e.receipt.source, "outcome": e.receipt.outcome,
                    "final_url": e.receipt.final_url, "fetched_at": e.receipt.fetched_at,
                    "entry_hash": e.entry_hash} for e in entries])
        return
    for e in entries:
        r = e.receipt
        target = r.final_url or r.request.get("url") or r.request.get("query") or ""
        if r.kind in ("key", "wacz-key"):  # a key entry: which key, and what happened to it
            target = f"{r.request.get('action')} {r.request.get('key_id')}"
        elif r.kind in ("redaction", "hold"):  # bytes taken out or held: how many, and why
            blobs = r.request.get("blobs")
            target = f"{r.request.get('action')} {counted(len(blobs) if isinstance(blobs, list) else 0, 'blob')}: " \
                     f"{r.request.get('reason')}"
        click.echo(f"{e.seq:>6} {r.receipt_id} {r.kind:<7} {r.outcome:<17} {r.fetched_at} {target}")


_policy_option = click.option(
    "--policy", "policy_file", type=click.Path(path_type=Path, dir_okay=False),
    help="A witness policy file (C2SP tlog-policy: log, witness, group and quorum lines): the checkpoint must "
         "carry a quorum of valid witness cosignatures.")


def _read_policy(path: Path | None) -> Any:
    """The --policy file, parsed; a bad one ends the command (exit 2) naming the line."""
    if path is None:
        return None
    from g6.ledger.transparency.policy import PolicyError, read_policy

    try:
        return read_policy(path)
    except PolicyError as e:
        fail(str(e))


def _witness_list(urls: tuple[str, ...], vkeys: tuple[str, ...]) -> list[Any]:
    """--witness URL and --witness-key VKEY, paired in order."""
    from g6.ledger.transparency.cosignature import CosignatureError, parse_cosigner_key
    from g6.ledger.transparency.policy import PolicyWitness

    if len(urls) != len(vkeys):
        fail(f"give one --witness-key per --witness (in the same order): {len(urls)} --witness, "
             f"{len(vkeys)} --witness-key")
    out = []
    for url, vkey in zip(urls, vkeys, strict=True):
        if not url.startswith(("http://", "https://")):
            fail(f"--witness {url[:60]!r}: the witness's submission URL, http:// or https://")
        try:
            key = parse_cosigner_key(vkey)
        except CosignatureError as e:
            fail(f"bad --witness-key {vkey[:60]!r}: {e}")
        out.append(PolicyWitness(key.name, key, url))
    return out


@ledger_group.command("verify", short_help="Check every signature, chain link and blob.")
@click.option("--checkpoint", "kept", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="A checkpoint note kept outside the home (from `ledger checkpoint --out`); the ledger must "
                   "extend it (repeatable).")
@click.option("--key", "pinned", multiple=True, metavar="PUBKEY",
              help="Pin a public key (ed25519:<base64>, a verifier key, or a file holding one; repeatable): "
                   "keys/trusted/ is then not consulted.")
@json_option("ledger-verify.v1", help="Per-check verdicts as JSON")
@click.option("--since", "since", is_flag=False, flag_value="", default=None, metavar="[FILE]",
              help="Only what is new since this signed checkpoint note (alone: the one `--record` kept).")
@click.option("--record", is_flag=True,
              help="After a clean run, keep the verified head, signed, in state/verified-checkpoint for a later "
                   "`--since` (the only write verify makes, and only when asked).")
@click.option("--strict-time", is_flag=True,
              help="A clock warning (a receipt dated in the future, far before its writer's previous one, or far "
                   "from its id's time) fails verify instead of being listed.")
@_policy_option
@click.option("--tsa-root", "tsa_roots", multiple=True, type=click.Path(path_type=Path, dir_okay=False),
              help="Pin this TSA root certificate (PEM; repeatable) and check every RFC 3161 token kept beside a "
                   "checkpoint against it, and that no receipt a token covers was fetched after its genTime.")
@quiet_option
@pass_ctx
def ledger_verify(c: Ctx, kept: tuple[Path, ...], pinned: tuple[str, ...], as_json: bool,
                  since: str | None, record: bool, strict_time: bool, policy_file: Path | None,
                  tsa_roots: tuple[Path, ...]) -> None:
    """Check every signature, chain link and referenced blob (and, with --policy, the witnesses'
    cosignatures of the latest checkpoint; with --tsa-root, the RFC 3161 tokens). Exit 0 only when all hold."""
    from g6.prove.verify_since import read_note, record_verified, verify_since

    policy = _read_policy(policy_file)
    roots = read_tsa_roots(tsa_roots)

    # bytes that are not UTF-8 are kept (surrogateescape) for the note reader (g6.ledger.note.note_text)
    # to refuse, as it refuses a CR, a BOM or a NUL: that checkpoint's failed verdict, never a crash
    notes = read_kept_notes(kept, "surrogateescape")
    keys = None
    if pinned:
        keys = {}
        for text in pinned:
            try:
                k = read_key(text)[0]
            except (G6Error, NoteError, OSError, UnicodeDecodeError) as e:
                fail(f"bad --key {text[:60]!r}: {e}")
            keys[k.key_id] = k
    with c.evidence() as ev:
        try:
            size = ev.ledger.head()[0]  # recorded as verified only up to here, whatever is appended meanwhile
        except G6Error:
            size = 0  # a damaged or missing ledger: verify reports it
        try:
            with progress("verifying", "receipts") as bar:
                if since is None:
                    report = ev.verify(keys, notes, progress=bar, strict_time=strict_time)
                else:
                    report = verify_since(ev, read_note(ev, Path(since) if since else None), keys=keys, kept=notes,
                                          progress=bar, strict_time=strict_time)
        except G6Error as e:  # a --since note that is no note: exit 2; a trusted key that cannot be read: 1
            fail_on(e)
        if policy is not None:
            from g6.prove.witness import with_witness_checks

            report = with_witness_checks(report, ev.ledger, policy)
        if tsa_roots:
            from g6.ledger.transparency.timestamped import with_timestamps

            report = with_timestamps(report, ev.ledger, roots)
        if record and report.ok and size:
            try:
                path = record_verified(ev, size)
            except (G6Error, OSError) as e:  # the verdict stands; only the record for --since is missing
                click.echo(f"g6: could not record the verified checkpoint: {e}", err=True)
            else:
                if path:
                    info(f"g6: recorded the verified head ({counted(size, 'receipt')}) in {path}")
                else:
                    click.echo("g6: nothing recorded: the home has no signing key", err=True)
    if as_json:
        emit_json(report.to_json())
    else:
        _print_verify(report, since is not None)
    finish(report.ok)


def _print_verify(report: Any, since: bool) -> None:
    """``g6 ledger verify`` in text mode: a line per check with its first failures and warnings, the keys
    it trusted and why, then the verdict."""
    data = report.to_json()
    for name, v in data["checks"].items():
        warned = v.get("warnings", [])
        click.echo(f"{name:<10} {'ok' if v['ok'] else 'FAILED'} checked={v['checked']} failed={v['failed']}"
                   + (f" warnings={len(warned)}" if warned else ""))
        for f in v["failures"][:20] + warned[:20]:
            where = f"seq={f['seq']} {f['receipt_id']}: " if f["seq"] is not None else ""
            click.echo(f"  {where}{'warning: ' if f.get('warning') else ''}{f['detail']}")
        if name in ("kept_checkpoint", "witnesses", "timestamp", "wacz_keys"):  # what each proved, not only what failed
            for ch in report.of(name):
                if ch.ok:
                    click.echo(f"  {ch.detail}")
        if name == "keys":  # a key entry that holds but is worth saying (a key retired that verify never trusted)
            for ch in report.of(name):
                if ch.ok and ch.seq is not None:
                    click.echo(f"  seq={ch.seq} {ch.receipt_id}: {ch.detail}")
    rules = data.get("rules")
    if rules and rules["old_rule"]:
        click.echo(f"receipts   {rules['bound']} bound to their place in the log, {rules['old_rule']} under the old "
                   "rule (signed before binding existed)")
    red = data.get("redactions")
    if red:  # removed on purpose, and said so in the log: not damage
        pending = f"; {red['pending']} still in the store (`g6 blob gc` finishes the removal)" if red.get("pending") \
            else ""
        entries = counted(red['entries'], 'redaction entry', 'redaction entries')
        click.echo(f"redacted   {counted(red['redacted'], 'blob')} by {entries}{pending}; "
                   f"held {red['held']}")
    for k in data.get("keys", []):
        until = f"through seq {k['valid_to']} (retired by {k['retired_by']})" if k["valid_to"] is not None else \
            "not retired"
        click.echo(f"key        {k['key_id']} trusted: {k['why']}; signs from seq {k['valid_from']}, {until}")
    rows = counted(report.rows, "new receipt" if since else "receipt")
    click.echo(f"ledger {'ok' if report.ok else 'FAILED'}: {rows}")


@ledger_group.command("checkpoint", short_help="Sign a checkpoint; have witnesses and TSAs back it.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the signed note to this file: keep it away from the home, and check the ledger "
                   "against it later with `ledger verify --checkpoint FILE`.")
@click.option("--witness", "witness_urls", multiple=True, metavar="URL",
              help="Submit the checkpoint to the C2SP tlog witness at this submission URL (repeatable; each with "
                   "its --witness-key) and keep its cosignature.")
@click.option("--witness-key", "witness_keys", multiple=True, metavar="VKEY",
              help="The cosigning verifier key (<name>+<id>+<key>, type 0x04) of the --witness at the same place.")
@_policy_option
@click.option("--tsa", "tsas", multiple=True, metavar="URL",
              help="Ask this RFC 3161 time-stamping authority for a token over the checkpoint and keep it beside "
                   "it (repeatable); `ledger verify --tsa-root` checks it.")
@click.option("--tsa-name", "tsa_names", multiple=True, metavar="NAME",
              help="The name the n-th --tsa is kept and reported under (default: its URL).")
@json_option("ledger-checkpoint.v1", help="Print the checkpoint (origin, size, root, note, verifier key) as JSON")
@pass_ctx
def ledger_checkpoint(c: Ctx, out: Path | None, witness_urls: tuple[str, ...], witness_keys: tuple[str, ...],
                      policy_file: Path | None, tsas: tuple[str, ...], tsa_names: tuple[str, ...],
                      as_json: bool) -> None:
    """Sign a C2SP checkpoint of the ledger as it is now (origin, size, root hash) and keep it; with
    --witness or --policy, have witnesses cosign it too; with --tsa, have TSAs timestamp it."""
    from g6.prove.proofs import checkpoint, note_verifier_key, write_note

    if out is not None:  # a folder, or a folder that does not exist: refused before a checkpoint is signed
        check_out(out, "--out")
    extra = _witness_list(witness_urls, witness_keys)
    policy = _read_policy(policy_file)
    names = _tsa_names(tsas, tsa_names)
    witnessed = None
    with c.evidence(need_key=True) as ev:
        cp, note = checkpoint(ev)
        vkey = note_verifier_key(ev)
        stamps = [_stamp(ev, cp, note, url, name) for url, name in zip(tsas, names, strict=True)]
        if extra or policy is not None:
            from g6.prove.witness import witness_checkpoint

            witnessed = witness_checkpoint(ev, cp, note, policy, extra)
    shown = witnessed.cosigned_note if witnessed is not None else note
    if out is not None:
        try:
            write_note(out, shown)
        except OSError as e:
            fail(f"checkpoint kept in the ledger, but writing --out {out} failed: {e}", EXIT_FAILED)
        info(f"g6: wrote the checkpoint to {out}; keep it away from the home")
    if as_json:
        data: dict[str, Any] = {"origin": cp.origin, "size": cp.size, "root": cp.root.hex(), "note": note,
                                "verifier_key": vkey}
        if witnessed is not None:
            data["cosigned_note"] = witnessed.cosigned_note
            data["witnesses"] = witnessed.to_json()
        if tsas:
            data["timestamps"] = stamps
        emit_json(data)
    else:
        click.echo(shown, nl=False)
        info(f"verifier key: {vkey}")
    stamped = all(s["ok"] for s in stamps)
    if witnessed is None:
        if not stamped:
            finish(False)
        return
    for sub in witnessed.submissions:
        if sub.ok:
            info(f"g6: witness {sub.witness} cosigned size {cp.size} (from size {sub.old}"
                 f"{', after a 409' if sub.retried else ''})")
        else:
            click.echo(f"g6: {sub.error} [{sub.error.code}]", err=True)
    v = witnessed.verdict
    if witnessed.ok:
        info(f"g6: witnesses ok: {v.detail}")
    elif v.ok:  # met by cosignatures kept before: this run's submission still failed, and says so
        who = ", ".join(s.witness for s in witnessed.failed)
        click.echo(f"g6: witnesses FAILED: this run's submission to {who} failed (above), although the "
                   f"cosignatures kept meet the quorum ({v.detail})", err=True)
    else:
        click.echo(f"g6: witnesses FAILED: {v.detail}", err=True)
    finish(witnessed.ok and stamped)


def _tsa_names(tsas: tuple[str, ...], tsa_names: tuple[str, ...]) -> list[str]:
    """The name of each --tsa (its --tsa-name, else its URL); bad ones exit 2 before anything is signed."""
    if len(tsa_names) > len(tsas):
        fail(f"{len(tsa_names)} --tsa-name for {len(tsas)} --tsa: each names the --tsa in the same place")
    for url in tsas:
        if not url.startswith(("http://", "https://")) or len(url) > 2000:
            fail(f"bad --tsa {url[:80]!r}: an http:// or https:// URL")
    return [tsa_names[i] if i < len(tsa_names) else url for i, url in enumerate(tsas)]


def _stamp(ev: Any, cp: Any, note: str, url: str, name: str) -> dict[str, Any]:
    """Ask one TSA for a token and keep it; a TSA that fails is reported, and the checkpoint and the other
    tokens are kept."""
    from g6.prove.timestamp_client import stamp_checkpoint

    try:
        s = stamp_checkpoint(ev, cp, note, url, name=name)
    except G6Error as e:
        click.echo(f"g6: {e}", err=True)
        return {"tsa": name, "url": url, "ok": False, "gen_time": None, "error": str(e)}
    info(f"g6: TSA {name}: token kept beside checkpoint {cp.size}, genTime {_gen_time(s.report)} "
         "(`ledger verify --tsa-root FILE` checks it against the TSA's root)")
    return {"tsa": name, "url": url, "ok": True, "gen_time": _gen_time(s.report), "error": None}


def _gen_time(report: Any) -> str | None:
    from g6.ledger.transparency.timestamp import iso

    return iso(report.gen_time) if report.gen_time else None


@ledger_group.command("checkpoints", short_help="List every checkpoint issued.")
@json_option("ledger-checkpoints.v1", help="Print the checkpoints as a JSON list")
@pass_ctx
def ledger_checkpoints(c: Ctx, as_json: bool) -> None:
    """List every checkpoint issued."""
    with c.evidence() as ev:
        cps = ev.ledger.checkpoints()
    if as_json:
        emit_json([{"origin": cp.origin, "size": cp.size, "root": cp.root.hex(), "note": note} for cp, note in cps])
        return
    for cp, _ in cps:
        click.echo(f"{cp.size:>8} {cp.root.hex()} {cp.origin}")


def _checkpoint_of(note: str) -> Any:
    """The checkpoint a signed note carries (the ledger signed it just now, or kept it)."""
    return Checkpoint.parse(parse_note(note)[0])


_proof_output = click.option("-o", "--output", type=click.Path(path_type=Path),
                             help="Write the proof here (else stdout).")


@ledger_group.command("prove", short_help="Print an inclusion proof of a receipt.")
@click.argument("receipt_id")
@_proof_output
@json_option("ledger-prove.v1", help="Print the proof as JSON, its tlog-proof text included")
@pass_ctx
def ledger_prove(c: Ctx, receipt_id: str, output: Path | None, as_json: bool) -> None:
    """Print an inclusion proof (C2SP tlog-proof) of RECEIPT_ID against the latest checkpoint."""
    from g6.prove.proofs import prove

    if output is not None:
        check_out(output, "-o")
    with c.evidence(need_key=True) as ev:
        try:
            proof, made = prove(ev, receipt_id)
        except (G6Error, ValueError) as e:
            fail(str(e), EXIT_FAILED)
    if made:
        info("g6: no checkpoint covered that receipt; signed a new one")
    if output:
        write_out(output, proof.text(), "-o")
    if as_json:
        cp = _checkpoint_of(proof.checkpoint_note)
        emit_json({"receipt_id": receipt_id, "index": proof.index, "tree_size": cp.size, "root": cp.root.hex(),
                   "origin": cp.origin, "hashes": [h.hex() for h in proof.hashes],
                   "checkpoint": proof.checkpoint_note, "new_checkpoint": made,
                   "path": str(output) if output else None, "proof": proof.text()})
    elif not output:
        click.echo(proof.text(), nl=False)


@ledger_group.command("consistency", short_help="Prove that one checkpoint extends an older one.")
@click.argument("old", type=click.IntRange(min=1))
@click.argument("new", type=click.IntRange(min=1))
@_proof_output
@json_option("ledger-consistency.v1", help="Print the proof as JSON, its text included")
@pass_ctx
def ledger_consistency(c: Ctx, old: int, new: int, output: Path | None, as_json: bool) -> None:
    """Prove the checkpoint of size NEW extends the checkpoint of size OLD."""
    from g6.prove.proofs import consistency

    if output is not None:
        check_out(output, "-o")
    with c.evidence() as ev:
        try:
            proof = consistency(ev, old, new)
        except (G6Error, ValueError) as e:
            fail(str(e), EXIT_USAGE)
    if output:
        write_out(output, proof.text(), "-o")
    if as_json:
        old_cp, new_cp = _checkpoint_of(proof.old_note), _checkpoint_of(proof.new_note)
        emit_json({"old": proof.old, "new": proof.new, "origin": new_cp.origin, "old_root": old_cp.root.hex(),
                   "new_root": new_cp.root.hex(), "hashes": [h.hex() for h in proof.hashes],
                   "old_checkpoint": proof.old_note, "new_checkpoint": proof.new_note,
                   "path": str(output) if output else None, "proof": proof.text()})
    elif not output:
        click.echo(proof.text(), nl=False)


@ledger_group.command("copy", short_help="Copy the ledger into another, checking every row.")
@click.option("--to", "url", required=True, help="The ledger to copy into: postgresql://… or sqlite:///path.")
@click.option("--key", "keys", multiple=True, help="Trust only this public key (repeatable) while checking.")
@json_option("ledger-copy.v1", help="Print the copy's counts and checks as JSON")
@quiet_option
@pass_ctx
def ledger_copy(c: Ctx, url: str, keys: tuple[str, ...], as_json: bool) -> None:
    """Copy every receipt and checkpoint into another ledger, checking each row's chain link and
    signature first; the copy keeps the same log id, hashes and checkpoint roots. An interrupted copy
    resumes where it stopped."""
    try:
        pinned = {k.key_id: k for k in (read_key(t)[0] for t in keys)} if keys else None
    except (G6Error, ValueError) as e:
        fail(f"bad --key: {e}")
    with c.evidence() as ev:
        try:  # the target cannot be opened (a folder, a missing folder): that is the --to argument's fault
            target = open_ledger(url, url)
        except sqlite3.DatabaseError as e:
            fail(redact_text(f"--to {url}: cannot open that ledger: {e}"))
        with target as dst:
            with progress("copying", "receipts") as bar:
                report = copy_ledger(ev.ledger, dst, ev.trusted() if pinned is None else pinned, progress=bar,
                                     pinned=pinned is not None)
            with progress("verifying the copy", "receipts") as bar:
                check = dst.verify(ev.trusted() if pinned is None else pinned, progress=bar)
    data = {**report.to_json(), "verify": check.to_json()}
    if as_json:
        emit_json(data)
    else:
        click.echo(f"copied {counted(report.copied, 'receipt')} ({report.already} already there), "
                   f"{counted(report.checkpoints, 'checkpoint')}, {counted(report.keys, 'trusted key')}; the copy "
                   f"holds {counted(report.size, 'receipt')}, root {report.root}")
        click.echo(f"copy verify {'ok' if check.ok else 'FAILED'}: {counted(check.rows, 'receipt')}")
    finish(check.ok)


@ledger_group.command("publish", short_help="Publish the log as C2SP tlog-tiles.")
@click.argument("dest")
@click.option("--latest", is_flag=True,
              help="Publish the latest checkpoint the ledger issued, even when receipts came after it: sign none.")
@click.option("--check-existing", is_flag=True,
              help="Also read back every tile and entry bundle already at DEST and compare it with the ledger.")
@json_option("ledger-publish.v1", help="Print what was written (tiles, entry bundles, the checkpoint) as JSON")
@quiet_option
@pass_ctx
def ledger_publish(c: Ctx, dest: str, latest: bool, check_existing: bool, as_json: bool) -> None:
    """Publish the log as C2SP tlog-tiles to DEST (a folder, file:///path or s3://bucket/prefix): the tiles
    and entry bundles it does not have yet, then the checkpoint (signed now when none covers the ledger)
    with the cosignatures kept beside it. Full tiles already there are never rewritten."""
    from g6.prove.publish import publish
    from g6.prove.publish_dest import open_destination

    destination = open_destination(dest, c.settings.values)  # a file, an unwritable folder: refused before work
    with c.evidence(need_key=not latest) as ev:
        with progress("publishing", "receipts") as bar:
            report = publish(ev, destination, latest_only=latest, check_existing=check_existing, progress=bar)
    if report.signed:
        info("g6: no checkpoint covered the whole ledger; signed a new one")
    for line in report.skipped:
        click.echo(f"g6: warning: a kept cosignature is not a note signature line; left out: {shown(line)}",
                   err=True)
    if as_json:
        emit_json(report.to_json())
    else:
        _print_publish(report)


def _print_publish(report: Any) -> None:
    click.echo(f"published {report.origin} size {report.size} to {report.destination} (it held size "
               f"{report.previous_size})")
    written = "the checkpoint" if "checkpoint" in report.written else "no checkpoint (the same one is there)"
    click.echo(f"wrote {counted(report.count('tiles'), 'tile')}, {counted(report.count('entries'), 'entry bundle')} "
               f"and {written}; {counted(report.left, 'full tile')} left as they were, "
               f"{counted(report.already, 'file')} already there"
               + (f"; {counted(report.cosignatures, 'cosignature')}" if report.cosignatures else ""))


def _read_bounded(path: Path, limit: int, what: str) -> bytes:
    """A file given to an offline check: its bytes, refused in one line when unreadable or past ``limit``."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        fail(f"cannot read {what} {path}: {e.strerror or e}")
    if len(data) > limit:
        fail(f"{what} {path} is larger than {limit} bytes; it is not one")
    return data


@cli.command("verify-proof", short_help="Check an inclusion or consistency proof offline.")
@click.argument("proof_file", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--receipt", "receipt_file", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="The receipt JSON (for an inclusion proof).")
@click.option("--key", "key_texts", required=True, multiple=True,
              help="Public key: ed25519:<base64>, a C2SP verifier key <origin>+<id>+<key>, or a file with one "
                   "(repeatable: the log's key before and after a rotation, say).")
@click.option("--origin", help="The log origin the checkpoint must name (implied by a verifier key).")
@_policy_option
@json_option("verify-proof.v1", help="Print a verdict per check as JSON")
def verify_proof_cmd(proof_file: Path, receipt_file: Path | None, key_texts: tuple[str, ...], origin: str | None,
                     policy_file: Path | None, as_json: bool) -> None:
    """Check an inclusion or consistency proof offline: only the public key, the receipt and the proof
    (and, with --policy, the witness cosignatures its checkpoint carries)."""
    policy = _read_policy(policy_file)
    keys, named = [], {}
    for text in key_texts:
        try:
            key, key_origin = read_key(text)
        except (G6Error, NoteError) as e:
            fail(f"bad --key: {e}")
        keys.append(key)
        if key_origin is not None:
            named[key_origin] = text
    if len(named) > 1 or (origin is not None and named and origin not in named):
        fail("the --key verifier keys and --origin name more than one log: " + ", ".join(sorted({*named, origin}
                                                                                                   - {None})))
    origin = origin or next(iter(named), None)
    # read as bytes, bounded: the proof's reader (g6.ledger.proofs.proof_text) decodes it strictly and
    # refuses a CR, a BOM or a NUL as a failed `format` check (read_text would turn CRLF into LF)
    data = _read_bounded(proof_file, MAX_PROOF, "the proof")
    if CONSISTENCY_HEADER.encode() in data.split(b"\n", 1)[0]:  # a CRLF or BOM copy too: its format fails
        report = verify_consistency_proof(data, keys, origin)
    else:
        if receipt_file is None:
            fail("an inclusion proof needs --receipt RECEIPT.json")
        report = verify_inclusion_proof(data, _read_bounded(receipt_file, MAX_RECEIPT, "the receipt"), keys, origin)
    if policy is not None:
        from g6.prove.witness import proof_witness_check

        report = proof_witness_check(report, data, policy)
    if as_json:
        emit_json(report.to_json())
    else:
        for ch in report.checks:
            click.echo(f"{ch.check:<26} {'ok' if ch.ok else 'FAILED'}{': ' + ch.detail if ch.detail else ''}")
        click.echo(f"{report.kind} proof {'holds' if report.ok else 'FAILED'}")
    finish(report.ok)
