"""``g6 keys``: init, show, trust; add, retire and rotate writer keys in the log; wacz, the key of signed WACZ."""

# Imports: the key folder and ledger parts are loaded by g6.config anyway, so they are imported at the top.
from __future__ import annotations

from pathlib import Path

import click

from g6.cli.app import EXIT_FAILED, Ctx, cli, emit_json, fail, info, pass_ctx
from g6.cli.options import json_option
from g6.errors import G6Error
from g6.ledger import Receipt, VerifyKey, trust_key
from g6.ledger.note import NoteError, parse_verifier_key, verifier_key


@cli.group("keys", short_help="Signing keys: init, show, trust; add, retire, rotate.")
def keys_group() -> None:
    """Signing keys: init, show, trust; add, retire, rotate (key entries in the log); wacz (the key of signed
    WACZ exports)."""


@keys_group.command("init", short_help="Create the home's Ed25519 signing key.")
@click.option("--force", is_flag=True, help="Replace the signing key (as `keys rotate` does when the ledger holds "
                                            "receipts); the old public key stays trusted.")
@json_option("keys-init.v1", help="Print the new key as JSON")
@pass_ctx
def keys_init(c: Ctx, force: bool, as_json: bool) -> None:
    """Create the Ed25519 signing key (mode 0600) under $G6_HOME/keys (and the home, if new)."""
    with c.evidence(write=True) as ev:
        try:
            if force and ev.keys.exists():
                key, entries = ev.rotate_key()  # recorded in the log, so verify knows the old key's end
                for e in entries:
                    info(f"g6: key entry {e.receipt_id}: {e.request['action']} {e.request['key_id']}")
            else:
                key = ev.keys.init(force=force)
        except G6Error as e:
            fail(str(e), EXIT_FAILED)
        path = ev.keys.signing_path
    if as_json:
        emit_json({"key_id": key.key_id, "public_key": key.public.to_text(), "path": str(path),
                   "replaced": force})
        return
    click.echo(f"{key.key_id} {key.public.to_text()}")


@keys_group.command("show", short_help="Print the public signing key and every trusted key.")
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
    retired: dict[str, int] = {}
    with c.evidence() as ev:
        if ev.ledger.present():
            vkey = verifier_key(ev.ledger.origin, current)  # a damaged ledger / no log id: LedgerError, exit 1
            trusted = ev.trusted()  # the key folder's and those kept with the ledger
            retired = {str(e.receipt.request.get("key_id")): e.seq for e in ev.ledger.key_entries()
                       if e.receipt.request.get("action") == "retire"}
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
            note = f", retired at seq {retired[kid]}" if kid in retired else ""
            click.echo(f"{kid} {k.to_text()} (trusted{note})")


@keys_group.command("trust", short_help="Trust a public key (or 'self', this home's own).")
@click.argument("public_key")
@json_option("keys-trust.v1", help="Print the trusted key as JSON")
@pass_ctx
def keys_trust(c: Ctx, public_key: str, as_json: bool) -> None:
    """Trust a public key ('ed25519:<base64>', a checkpoint verifier key, or a file holding either; 'self' for
    this home's own key).

    The key is kept in this home's key folder and with the ledger (a table), so everyone who verifies
    a shared ledger trusts it too."""
    kd = c.settings.key_dir()  # G6_ALLOW_OPEN_KEY read by the settings
    try:
        if public_key == "self":
            k = kd.load_signing().public
        else:
            text = Path(public_key).read_text(encoding="utf-8") if Path(public_key).is_file() else public_key
            k = key_from_text(text)
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


def key_from_text(text: str) -> VerifyKey:
    """'ed25519:<base64>', or a checkpoint verifier key (what `keys show` prints for a grader to pin): its key,
    so that one name serves everywhere a key is given; trusting a key does not depend on the log it names."""
    if not text.lstrip().startswith("ed25519:"):
        try:
            return parse_verifier_key(text)[1]
        except NoteError:
            pass  # neither: VerifyKey says what an ed25519 key reads like
    return VerifyKey.from_text(text)


def _read_public_key(text: str, known: dict[str, VerifyKey] | None = None) -> VerifyKey:
    """A public key from 'ed25519:<base64>', a file holding one, or (``known``) a key id among them."""
    if known is not None and text in known:
        return known[text]
    try:
        body = Path(text).read_text(encoding="utf-8") if Path(text).is_file() else text
        return key_from_text(body)
    except G6Error as e:
        fail(f"{e}" + (" (or give the id of a key this home knows: `g6 keys show`)" if known is not None else ""))
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        fail(f"cannot read a public key from {text}: {why}")


def _entries_out(action: str, key: VerifyKey, origin: str | None, entries: list[Receipt], as_json: bool) -> None:
    if as_json:
        emit_json({"action": action, "key_id": key.key_id, "public_key": key.to_text(), "origin": origin,
                   "entries": [{"receipt_id": e.receipt_id, "seq": (e.log or {}).get("seq"),
                                "action": e.request["action"], "key_id": e.request["key_id"],
                                "signed_by": e.signature.key_id if e.signature else None} for e in entries]})
        return
    for e in entries:
        who = e.signature.key_id if e.signature else "?"
        click.echo(f"{e.request['action']} {e.request['key_id']} at seq {(e.log or {}).get('seq')} "
                   f"({e.receipt_id}, signed by {who})")
    if not entries:
        click.echo(f"{key.key_id} (no receipts yet: nothing to record in the log)")


@keys_group.command("add", short_help="Add a writer key to the log, signed by this home's key.")
@click.argument("public_key")
@click.option("--reason", default="", help="Why, kept in the key entry.")
@json_option("keys-entry.v1", help="Print the key entry as JSON")
@pass_ctx
def keys_add(c: Ctx, public_key: str, reason: str, as_json: bool) -> None:
    """Add a writer key to the log ('ed25519:<base64>', its checkpoint verifier key, or a file holding either):
    a key entry signed by this home's key, so a grader who pins the log's key can check that writer's receipts
    with it alone."""
    key = _read_public_key(public_key)
    with c.evidence(need_key=True) as ev:
        entry = ev.add_writer(key, reason)
        origin = ev.ledger.origin
    _entries_out("add", key, origin, [entry], as_json)


@keys_group.command("retire", short_help="Retire a key in the log: it signs nothing after.")
@click.argument("key")
@click.option("--reason", default="", help="Why, kept in the key entry.")
@json_option("keys-entry.v1", help="Print the key entry as JSON")
@pass_ctx
def keys_retire(c: Ctx, key: str, reason: str, as_json: bool) -> None:
    """Retire a key in the log (its id, 'ed25519:<base64>', or a file holding it): nothing it signs after this
    entry verifies, and appends with it are refused. Removing a .pub file revokes nothing; this does."""
    with c.evidence(need_key=True) as ev:
        known = {**ev.trusted(), **_logged_keys(ev)}
        k = _read_public_key(key, known)
        if k.key_id == ev.signing_key().key_id:
            fail("that is this home's own signing key: `g6 keys rotate` replaces it and retires it in one step")
        entry = ev.retire_key(k, reason)
        origin = ev.ledger.origin
    _entries_out("retire", k, origin, [entry], as_json)


@keys_group.command("rotate", short_help="Replace this home's signing key, recorded in the log.")
@json_option("keys-entry.v1", help="Print the new key and the key entries as JSON")
@pass_ctx
def keys_rotate(c: Ctx, as_json: bool) -> None:
    """Replace this home's signing key: the log records the new key (added by the old) and the old key's end
    (retired by the new); the old public key stays in keys/trusted so its receipts still verify."""
    with c.evidence(need_key=True) as ev:
        try:
            key, entries = ev.rotate_key()
        except G6Error as e:
            fail(str(e), EXIT_FAILED)
        origin = ev.ledger.origin if entries else None
    _entries_out("rotate", key.public, origin, entries, as_json)


def _logged_keys(ev: object) -> dict[str, VerifyKey]:
    """Keys the log's key entries name (a writer this home never trusted itself can still be retired)."""
    out: dict[str, VerifyKey] = {}
    for e in ev.ledger.key_entries():  # type: ignore[attr-defined]
        try:
            k = VerifyKey.from_text(str(e.receipt.request.get("key")))
        except G6Error:
            continue
        out[k.key_id] = k
    return out


@keys_group.command("wacz", short_help="The key that signs WACZ exports.")
@click.option("--rotate", is_flag=True, help="Make a new WACZ signing key: the log retires the old one and adds "
                                             "the new one (signed by this home's key).")
@json_option("keys-wacz.v1", help="Print the WACZ key and what the log says of it as JSON")
@pass_ctx
def keys_wacz(c: Ctx, rotate: bool, as_json: bool) -> None:
    """Show the ECDSA P-384 key that signs `export wacz --sign` (keys/wacz-signing.key) and its key entries
    in the log; --rotate replaces it."""
    from g6.export.wacz_sign import key_lives, key_path, load_wacz_key, rotate_wacz_key

    with c.evidence(write=rotate, need_key=rotate) as ev:
        try:
            entries = []
            if rotate:
                key, entries = rotate_wacz_key(ev)
            else:
                key = load_wacz_key(ev)
                if key is None:
                    fail(f"no WACZ signing key at {key_path(ev)}: the first `g6 export wacz --sign` makes one",
                         EXIT_FAILED)
            life = key_lives(ev).get(key.key_id) if ev.ledger.present() else None
        except G6Error as e:
            fail(str(e), EXIT_FAILED)
    added = {"seq": life.added_at, "receipt_id": life.added_by} if life else None
    retired = {"seq": life.retired_at, "receipt_id": life.retired_by} if life and life.retired_at else None
    if as_json:
        emit_json({"key_id": key.key_id, "public_key": key.public.to_text(), "path": str(key_path(ev)),
                   "added": added, "retired": retired,
                   "entries": [{"receipt_id": e.receipt_id, "action": e.request["action"],
                                "key_id": e.request["key_id"]} for e in entries]})
        return
    for e in entries:
        info(f"g6: WACZ key entry {e.receipt_id}: {e.request['action']} {e.request['key_id']}")
    click.echo(f"{key.key_id} {key.public.to_text()}")
    if retired:
        click.echo(f"retired in the log at seq {retired['seq']} ({retired['receipt_id']}): it signs nothing more; "
                   "`g6 keys wacz --rotate` makes a new one")
    elif added:
        click.echo(f"added to the log at seq {added['seq']} ({added['receipt_id']})")
    else:
        click.echo("not in the log yet: the next `g6 export wacz --sign` adds it")
