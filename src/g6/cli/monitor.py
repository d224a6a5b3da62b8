"""``g6 monitor URL``: follow a log published as C2SP tlog-tiles over HTTP (``g6.prove.monitor``)."""

# Imports: g6.prove.monitor (and httpx with it) only inside the command, so `g6 --help` does not load it.
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from g6.cli.app import cli, emit_json, fail, finish, info, progress, read_key
from g6.cli.options import json_option, quiet_option
from g6.cli.words import counted
from g6.errors import G6Error
from g6.ledger.note import NoteError


@cli.command("monitor", short_help="Follow a published log and check every new entry.")
@click.argument("url")
@click.option("--key", "key_text", required=True, metavar="PUBKEY",
              help="The log's public key: a C2SP verifier key <origin>+<id>+<key> (which also names the origin), "
                   "ed25519:<base64>, or a file holding one.")
@click.option("--origin", help="The origin the log's checkpoint must name (implied by a verifier key).")
@click.option("--policy", "policy_file", type=click.Path(path_type=Path, dir_okay=False),
              help="A witness policy file (C2SP tlog-policy): every checkpoint must carry a quorum of valid witness "
                   "cosignatures.")
@click.option("--state", "state_dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="The folder where the monitor keeps the last checkpoint it verified (created on the first run).")
@json_option("monitor.v1", help="Print a verdict per check, both checkpoints and the counts as JSON")
@quiet_option
def monitor_cmd(url: str, key_text: str, origin: str | None, policy_file: Path | None, state_dir: Path,
                as_json: bool) -> None:
    """Follow a log published as C2SP tlog-tiles at URL (`g6 ledger publish`): check the new checkpoint's
    signature (and, with --policy, its witness quorum), that it extends the last one seen, and re-hash every
    new entry into the tiles and the root. A fork, a shrunk log or a rewritten tile exits 1 and prints both
    checkpoints; the state moves on only when every check holds."""
    from g6.prove.monitor import check_url, monitor

    try:
        key, key_origin = read_key(key_text)
    except (G6Error, NoteError, ValueError) as e:
        fail(f"bad --key: {e}")
    if origin is not None and key_origin is not None and origin != key_origin:
        fail(f"--origin {origin!r} is not the origin the verifier key names ({key_origin!r})")
    check_url(url)  # a bad URL is refused before the policy or the state is read
    policy = None
    if policy_file is not None:
        from g6.ledger.transparency.policy import read_policy

        policy = read_policy(policy_file)  # PolicyError: an input error, exit 2, naming the line
    with progress("monitoring", "entries") as bar:
        report = monitor(url, key, state_dir, origin=origin or key_origin, policy=policy, progress=bar)
    if as_json:
        emit_json(report.to_json())
    else:
        _print(report)
    if report.ok:
        info(f"g6: state saved in {state_dir}" if report.state_saved else f"g6: state in {state_dir} unchanged")
    else:
        click.echo(f"g6: the state in {state_dir} was left as it was", err=True)
    finish(report.ok)


def _print(report: Any) -> None:
    for ch in report.checks:
        click.echo(f"{ch.check:<22} {'ok' if ch.ok else 'FAILED'}{': ' + ch.detail if ch.detail else ''}")
    was = "first run" if report.previous_size is None else f"was {report.previous_size}"
    size = "?" if report.size is None else report.size
    for t in report.takedowns:  # the log's own record of bytes taken out or held: shown as it says
        click.echo(f"{t['kind']:<22} seq {t['seq']} {t['receipt_id']}: {t['action']} {counted(t['blobs'], 'blob')} "
                   f"({t['reason']})")
    verdict = "ok" if report.ok else ("MISBEHAVIOR DETECTED" if report.misbehavior else "FAILED")
    click.echo(f"monitor {report.url} {report.origin or ''}: size {size} ({was}), "
               f"{counted(report.entries_checked, 'entry', 'entries')} and {counted(report.tiles_checked, 'tile')} "
               f"checked: {verdict}")
    if not report.ok and report.note is not None:
        if report.previous_note is not None:
            click.echo("\nthe checkpoint this monitor verified last (from its state):")
            click.echo(report.previous_note, nl=False)
        click.echo("\nthe checkpoint the log serves now:")
        click.echo(report.note, nl=not report.note.endswith("\n"))
