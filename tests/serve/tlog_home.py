"""What the transparency tests of ``g6 serve`` share: a home of 302 receipts (one with non-ASCII text), a
checkpoint at 300 (so the last two are not covered yet), and that checkpoint published as tiles (a full
level-0 tile and entry bundle, partial ones of 44, a partial level-1 tile)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from g6.home import EvidenceHome
from g6.ledger.keys import VerifyKey
from g6.prove.publish import publish
from g6.prove.publish_dest import open_destination
from tests.prove.tiles_peers import fill, receipt, write_vkey

COVERED = 300


@dataclass(frozen=True)
class TlogHome:
    home: Path
    tiles: Path
    vkey: Path  # a file holding the C2SP verifier key of the log's checkpoints
    origin: str
    ids: list[str]  # receipt ids by leaf index
    unicode_id: str  # a receipt whose JSON holds non-ASCII text
    key: VerifyKey  # the log's public key


def make_tlog_home(tmp: Path) -> TlogHome:
    with EvidenceHome(tmp / "home", fsync=False) as ev:
        ev.keys.init()
        fill(ev, 200)
        ev.ledger.append_many([receipt(200, note="café ✓ « citation »")], ev.signing_key())
        fill(ev, COVERED)
        ev.ledger.checkpoint(ev.signing_key())
        publish(ev, open_destination(str(tmp / "tiles"), {}), latest_only=True)
        fill(ev, COVERED + 2)
        ids = [e.receipt.receipt_id for e in ev.ledger.entries()]
        vkey, origin, key = write_vkey(ev, tmp / "log.vkey"), ev.ledger.origin, ev.signing_key().public
    return TlogHome(tmp / "home", tmp / "tiles", vkey, origin, ids, ids[200], key)
