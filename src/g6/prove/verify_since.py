"""``g6 ledger verify --since``: verify only what is new since a checkpoint, and remember what was verified.

The starting point is a signed checkpoint note: one the user kept (``g6 ledger checkpoint`` prints
it), or the one ``g6 ledger verify --record`` kept after a clean run, in
``$G6_HOME/state/verified-checkpoint`` (verify writes nothing unless asked: reading never writes).
Either must be signed by a trusted key for this ledger's origin; an unsigned or foreign note is
refused, because it is the only thing vouching for the rows before it. ``--record`` signs the
verified head with the home's signing key (without one, nothing is recorded and ``--since`` needs
a file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from g6.errors import InputError
from g6.home import EvidenceHome
from g6.ledger.chain import Check, LedgerVerifyReport
from g6.ledger.keys import VerifyKey
from g6.ledger.note import Checkpoint, NoteError, parse_note, read_note_file, sign_checkpoint, signed_by
from g6.prove.proofs import write_note

STATE_NAME = "verified-checkpoint"


def state_path(home: EvidenceHome) -> Path:
    return home.root / "state" / STATE_NAME


def read_note(home: EvidenceHome, path: Path | None) -> str:
    """The note text from ``path``, or the one verify recorded; InputError when there is none."""
    src = path or state_path(home)
    try:
        return read_note_file(src)  # as bytes: read_text would turn a CRLF copy into a note that verifies
    except FileNotFoundError:
        if path is None:
            raise InputError(f"no verified checkpoint recorded yet ({src}); run a full `g6 ledger verify "
                             "--record` first, or pass --since FILE") from None
        raise InputError(f"no such checkpoint file: {src}") from None
    except NoteError as e:
        raise InputError(f"not a signed checkpoint note: {e}") from None
    except OSError as e:
        raise InputError(f"cannot read checkpoint {src}: {e.strerror or e}") from None


def verify_since(home: EvidenceHome, note: str, *, keys: Mapping[str, VerifyKey] | None = None,
                 kept: Sequence[tuple[str, str]] = (), workers: int | None = None,
                 progress: Callable[[int, int], None] | None = None, strict_time: bool = False) -> LedgerVerifyReport:
    """Prove the ledger extends the checkpoint in ``note``, then check the rows after it. ``keys``
    pins the public keys (``keys/trusted/`` is then not consulted); ``kept`` as in ``Ledger.verify``."""
    try:
        text, _ = parse_note(note)
        cp = Checkpoint.parse(text)
    except NoteError as e:
        raise InputError(f"not a signed checkpoint note: {e}") from None
    trust = home.trust(keys, strict_time=strict_time)
    origin = home.ledger.origin
    # the note vouches for every row before it: only a pinned key or one in the home's own folder may sign
    # it (the ledger's trusted-keys table is writable by whoever can write the database)
    signers = keys if keys is not None else home.keys.trusted()
    if not any(signed_by(note, k, origin) for k in signers.values()):
        why = f"is for {cp.origin}, not this ledger ({origin})" if cp.origin != origin else \
            "is not signed by a trusted key"
        return LedgerVerifyReport(0, (Check("consistency", False, None, None, f"the checkpoint {why}"),))
    return home.ledger.verify(trust, home.store, kept, since=cp, workers=workers, progress=progress)


def record_verified(home: EvidenceHome, size: int) -> Path | None:
    """Sign and keep a checkpoint of the first ``size`` receipts, which verify just found sound."""
    if not home.keys.exists():
        return None
    cp = Checkpoint(home.ledger.origin, size, home.ledger.tree().root(size))
    note = sign_checkpoint(cp, home.signing_key())
    path = state_path(home)
    write_note(path, note)  # whole or not at all: a full disk leaves no torn or stray file
    return path
