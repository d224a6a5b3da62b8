"""``g6 ledger publish DEST``: the ledger as a C2SP tlog-tiles log anyone can audit with standard tools.

What is written (https://c2sp.org/tlog-tiles@v0.1.0): ``tile/entries/<N>[.p/<W>]``, each entry the receipt's
stored canonical JSON (signature included), so its RFC 6962 leaf hash is the ledger's leaf and the level-0
tile hash; ``tile/<L>/<N>[.p/<W>]``, the hash tiles; then ``checkpoint``, a checkpoint the ledger issued,
with the cosignatures kept beside it (``Ledger.kept_beside``) appended as more signature lines.

Incremental: the destination's own checkpoint says what is there. Only the tiles a tree of that size did
not have are written (the full tiles completed since, and the partial tiles of the published size); a
tile already there must be byte for byte what the ledger says, else :class:`PublishConflict` (a rewritten
history or destination) and nothing is overwritten. Partial tiles of sizes published before are left in
place (the spec asks a log to keep serving them). The checkpoint goes last, whole (``publish_dest``).

Every tile is computed from the receipts themselves (a :class:`TileTree` started from the kept tree's edge
at the first entry bundle to write) and must equal the ledger's kept tree hashes, tile by tile; the tree's
root must be the checkpoint's before the checkpoint is written. ``check_existing`` starts from the first
receipt instead and re-reads every full tile and bundle already published.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from g6.errors import LedgerError, PublishConflict, PublishError
from g6.home import EvidenceHome
from g6.ledger.chain import stored_bytes
from g6.ledger.merkle import TreeView, leaf_hash
from g6.ledger.note import Checkpoint, NoteError, parse_note, parse_signature_line
from g6.ledger.stored_tree import StoredTree, stored_hash_index
from g6.ledger.transparency.cosignature import with_cosignatures as add_cosignatures
from g6.ledger.transparency.tiles import MAX_ENTRY, WIDTH, Tile, TileTree, edge_ids, encode_bundle, tiles_for
from g6.prove.publish_dest import CHECKPOINT, Destination


@dataclass
class PublishReport:
    destination: str
    origin: str
    size: int
    previous_size: int  # the size the destination's checkpoint held before (0: it had none)
    root: bytes
    note: str  # the checkpoint as published, cosignatures included
    signed: bool  # a checkpoint was signed for this publish (none covered the ledger)
    written: list[str] = field(default_factory=list)  # paths written, in order (the checkpoint last)
    already: int = 0  # files that were there already, byte for byte as the ledger says
    left: int = 0  # full tiles and bundles of the previous size, left as they were (neither read nor written)
    cosignatures: int = 0
    skipped: list[str] = field(default_factory=list)  # kept cosignature lines that are not signature lines

    def count(self, kind: str) -> int:
        prefix = {"entries": "tile/entries/", "tiles": "tile/"}[kind]
        return sum(1 for p in self.written if p.startswith(prefix)
                   and (kind == "entries" or not p.startswith("tile/entries/")))

    def to_json(self) -> dict[str, Any]:
        return {"destination": self.destination, "origin": self.origin, "size": self.size,
                "previous_size": self.previous_size, "root": self.root.hex(), "checkpoint_signed": self.signed,
                "written": {"entry_bundles": self.count("entries"), "tiles": self.count("tiles"),
                            "checkpoint": CHECKPOINT in self.written},
                "already_there": self.already, "full_tiles_left": self.left, "cosignatures": self.cosignatures,
                "skipped_cosignatures": list(self.skipped), "paths": list(self.written), "checkpoint": self.note}


def choose_checkpoint(home: EvidenceHome, latest_only: bool) -> tuple[Checkpoint, str, bool]:
    """The checkpoint to publish: the latest the ledger issued when it covers every receipt (or, with
    ``latest_only``, whatever it covers); else one signed now with the home's key (the flag says so)."""
    from g6.prove.proofs import checkpoint

    latest = home.ledger.latest_checkpoint()
    if latest is not None and (latest_only or latest[0].size == home.ledger.head()[0]):
        return latest[0], latest[1], False
    if latest_only:
        raise PublishError("the ledger has issued no checkpoint to publish: run `g6 ledger checkpoint`, or publish "
                           "without --latest")
    cp, note = checkpoint(home)
    return cp, note, True


def with_cosignatures(home: EvidenceHome, cp: Checkpoint, note: str) -> tuple[str, int, list[str]]:
    """``note`` with the cosignatures kept beside ``cp`` appended, one per witness key (its newest, as
    ``ledger prove`` and ``g6 bundle`` show them); a kept line the note format cannot hold is left out and
    returned, never published."""
    lines, skipped = [], []
    for _kind, _name, line in home.ledger.kept_beside(cp, "cosignature"):
        line = str(line).rstrip("\n")
        try:
            if "\n" in line:
                raise NoteError("more than one line")
            parse_signature_line(line)
        except NoteError:
            skipped.append(line[:120])
            continue
        lines.append(line)
    full = add_cosignatures(note, lines)
    return full, len(parse_note(full)[1]) - len(parse_note(note)[1]), skipped


def _previous(dest: Destination, cp: Checkpoint, tree: TreeView, ledger_size: int) -> tuple[int, bytes | None]:
    """The size the destination holds (0 without a checkpoint) and its checkpoint's bytes, after checking it
    is this log, not ahead of ``cp``, and the ledger's own tree at that size."""
    raw = dest.read(CHECKPOINT)
    if raw is None:
        return 0, None
    try:
        old = Checkpoint.parse(parse_note(raw.decode("utf-8"))[0])
    except (NoteError, UnicodeDecodeError) as e:
        raise PublishError(f"{dest.where}/{CHECKPOINT} is not a checkpoint ({e}); not overwriting it: look at what "
                           "is there, or publish to another place") from None
    if old.origin != cp.origin:
        raise PublishError(f"{dest.where} holds another log ({old.origin}), not {cp.origin}: publish to another place")
    if old.size > cp.size:
        raise PublishError(f"{dest.where} already holds size {old.size}, more than the checkpoint to publish "
                           f"(size {cp.size}): publishing it would take the log back")
    if old.size > ledger_size or tree.root(old.size) != old.root:
        raise PublishConflict(f"{dest.where}/{CHECKPOINT} (size {old.size}, root {old.root.hex()}) is not this "
                              f"ledger's tree at that size: the destination or the ledger's history was rewritten; "
                              "nothing was written")
    return old.size, raw


def _kept_hashes(home: EvidenceHome, tree: TreeView, ids: list[tuple[int, int]]) -> list[bytes | None]:
    """The kept tree's hashes of these (RFC 9162 level, index) subtrees, in one read."""
    if isinstance(tree, StoredTree):
        want = [stored_hash_index(level, i) for level, i in ids]
        got = home.ledger.rows.read_hashes(want)
        return [got.get(i) for i in want]
    return [tree._mth(i << level, (i + 1) << level) for level, i in ids]  # an old ledger's tree, in memory


def _put(dest: Destination, path: str, data: bytes, report: PublishReport) -> None:
    if dest.create(path, data):
        report.written.append(path)
        return
    if dest.read(path) != data:
        raise PublishConflict(f"{dest.where}/{path} is there already and differs from what the ledger says: someone "
                              "rewrote the log's history or the destination; nothing there was overwritten and "
                              "the checkpoint was not published")
    report.already += 1


def _hash_tile(home: EvidenceHome, tree: TreeView, dest: Destination, tile: Tile, hashes: list[bytes],
               report: PublishReport) -> None:
    if _kept_hashes(home, tree, tile.hash_ids()) != hashes:
        raise LedgerError(f"the receipts and the ledger's kept Merkle tree disagree within {tile.path}; nothing "
                          "more was published: run `g6 ledger verify`")
    _put(dest, tile.path, b"".join(hashes), report)


def _entries(home: EvidenceHome, start: int, size: int) -> Iterator[tuple[int, bytes]]:
    for row in home.ledger.rows.rows_between(start + 1, size):
        seq = row[0]
        data = stored_bytes(row[5])
        if len(data) > MAX_ENTRY:
            raise PublishError(f"the receipt at seq {seq} is {len(data):,} bytes, more than an entry of a published "
                               f"log holds ({MAX_ENTRY:,}; it was appended before g6 refused such receipts): this "
                               "ledger cannot be published as tlog-tiles")
        yield seq, data


def publish_tiles(home: EvidenceHome, dest: Destination, cp: Checkpoint, tree: TreeView, start: int,
                  report: PublishReport, progress: Callable[[int, int], None] | None = None) -> None:
    """Write every tile from entry ``start`` (a multiple of 256) up to ``cp.size``, each checked against the
    kept tree, then check the root."""
    ids = edge_ids(start)
    edge = [_kept_hashes(home, tree, level) for level in ids]
    if any(h is None for level in edge for h in level):
        raise LedgerError(f"the ledger's kept Merkle tree lacks hashes below size {start}: run `g6 ledger verify`")
    tiles = TileTree(start, edge)  # type: ignore[arg-type]
    bundle: list[bytes] = []
    total = cp.size - start
    for seq, data in _entries(home, start, cp.size):
        if seq != tiles.size + 1:
            raise LedgerError(f"the ledger has no receipt at seq {tiles.size + 1}: run `g6 ledger verify`")
        bundle.append(data)
        done = tiles.append(leaf_hash(data))
        if len(bundle) == WIDTH:
            _put(dest, Tile(-1, tiles.size // WIDTH - 1).path, encode_bundle(bundle), report)
            bundle = []
            for tile, hashes in done:
                _hash_tile(home, tree, dest, tile, hashes, report)
            if progress is not None:
                progress(tiles.size - start, total)
    if tiles.size != cp.size:
        raise LedgerError(f"the ledger holds {tiles.size} receipts, not the {cp.size} its checkpoint covers: run "
                          "`g6 ledger verify`")
    if bundle:
        _put(dest, Tile(-1, cp.size // WIDTH, len(bundle)).path, encode_bundle(bundle), report)
    for tile, hashes in tiles.partial_tiles():
        _hash_tile(home, tree, dest, tile, hashes, report)
    if tiles.root() != cp.root:
        raise LedgerError(f"the tiles of the receipts fold to root {tiles.root().hex()}, not the checkpoint's "
                          f"{cp.root.hex()}: the checkpoint was not published; run `g6 ledger verify`")
    if progress is not None:
        progress(total, total)


def publish(home: EvidenceHome, dest: Destination, *, latest_only: bool = False, check_existing: bool = False,
            progress: Callable[[int, int], None] | None = None) -> PublishReport:
    """Publish the ledger's checkpoint (see :func:`choose_checkpoint`) and every tile it needs to ``dest``."""
    cp, note, signed = choose_checkpoint(home, latest_only)
    note, cosigned, skipped = with_cosignatures(home, cp, note)
    tree = home.ledger.tree()
    ledger_size = len(tree)
    if cp.size > ledger_size or tree.root(cp.size) != cp.root:
        raise LedgerError(f"the ledger no longer matches its checkpoint of size {cp.size}: run `g6 ledger verify`")
    previous, old_note = _previous(dest, cp, tree, ledger_size)
    report = PublishReport(dest.where, cp.origin, cp.size, previous, cp.root, note, signed, cosignatures=cosigned,
                           skipped=skipped)
    if not check_existing:  # a full tile never changes: what the destination had full stays untouched
        report.left = sum(1 for t in tiles_for(previous) if t.full)
    if previous < cp.size or check_existing:
        start = 0 if check_existing else previous // WIDTH * WIDTH
        publish_tiles(home, dest, cp, tree, start, report, progress)
    if old_note != note.encode():
        dest.replace_checkpoint(note.encode())
        report.written.append(CHECKPOINT)
    return report
