"""``g6 keys``: init, show, trust."""

# Imports: the key folder and ledger parts are loaded by g6.config anyway, so they are imported at the top.
from __future__ import annotations

from pathlib import Path

import click

from g6.cli.app import EXIT_FAILED, Ctx, cli, emit_json, fail, pass_ctx
from g6.cli.options import json_option
from g6.errors import G6Error
from g6.ledger import VerifyKey, trust_key
from g6.ledger.note import verifier_key


@cli.group("keys")
def keys_group() -> None:
    """Signing keys: init, show, trust."""


@keys_group.command("init")
@click.option("--force", is_flag=True, help="Replace the signing key; the old public key stays trusted.")
@json_option("keys-init.v1", help="Print the new key as JSON")
@pass_ctx
def keys_init(c: Ctx, force: bool, as_json: bool) -> None:
    """Create the Ed25519 signing key (mode 0600) under $G6_HOME/keys (and the home, if new)."""
    with c.evidence(write=True) as ev:
        try:
            key = ev.keys.init(force=force)
        except G6Error as e:
            fail(str(e), EXIT_FAILED)
        path = ev.keys.signing_path
    if as_json:
        emit_json({"key_id": key.key_id, "public_key": key.public.to_text(), "path": str(path),
                   "replaced": force})
        return
    click.echo(f"{key.key_id} {key.public.to_text()}")


@keys_group.command("show")
@json_option("keys-show.v1", help="Print the signing key, the checkpoint verifier key and the trusted keys as JSON")
@pass_ctx
def keys_show(c: Ctx, as_json: bool) -> None:
    """Print the public signing key and every trusted key."""
    kd = c.settings.key_dir()  # G6_ALLOW_OPEN_KEY read by the settings
    try:
        current = kd.load_signing().public
    except G6Error as e:
        fail(str(e), EXIT_FAILED)
    vkey = None
    with c.evidence() as ev:
        if ev.ledger.present():
            vkey = verifier_key(ev.ledger.origin, current)  # a damaged ledger / no log id: LedgerError, exit 1
            trusted = ev.trusted()  # the key folder's and those kept with the ledger
        else:  # keys made before any ledger: the log id (part of the verifier key) does not exist yet
            click.echo("g6: no ledger yet, so no checkpoint verifier key (it names the log)", err=True)
            trusted = kd.trusted()
    if as_json:
        emit_json({"signing": {"key_id": current.key_id, "public_key": current.to_text(),
                               "checkpoint_verifier_key": vkey},
                   "trusted": [{"key_id": k, "public_key": v.to_text()} for k, v in trusted.items()]})
        return
    click.echo(f"{current.key_id} {current.to_text()}")
    if vkey is not None:
        click.echo(f"checkpoint verifier key: {vkey}")
    for kid, k in trusted.items():
        if kid != current.key_id:
            click.echo(f"{kid} {k.to_text()} (trusted, retired)")


@keys_group.command("trust")
@click.argument("public_key")
@json_option("keys-trust.v1", help="Print the trusted key as JSON")
@pass_ctx
def keys_trust(c: Ctx, public_key: str, as_json: bool) -> None:
    """Trust a public key ('ed25519:<base64>' or a file holding it; 'self' for this home's own key).

    The key is kept in this home's key folder and with the ledger (a table), so everyone who verifies
    a shared ledger trusts it too."""
    kd = c.settings.key_dir()  # G6_ALLOW_OPEN_KEY read by the settings
    try:
        if public_key == "self":
            k = kd.load_signing().public
        else:
            text = Path(public_key).read_text(encoding="utf-8") if Path(public_key).is_file() else public_key
            k = VerifyKey.from_text(text)
    except G6Error as e:
        fail(str(e))
    except (OSError, UnicodeDecodeError) as e:  # an unreadable or binary key file
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        fail(f"cannot read a public key from {public_key}: {why}")
    with c.evidence(write=True) as ev:
        kd.trust(k)
        trust_key(ev.ledger, k)
    if as_json:
        emit_json({"key_id": k.key_id, "public_key": k.to_text()})
        return
    click.echo(k.key_id)
