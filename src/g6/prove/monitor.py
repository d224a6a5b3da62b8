"""``g6 monitor URL``: follow a log published as C2SP tlog-tiles (``g6 ledger publish``) over HTTP.

Each run fetches the log's ``checkpoint`` and holds it to what this monitor saw last (the state folder):

* the checkpoint is signed by the pinned key (for the expected origin) and, with a policy, carries a quorum
  of valid witness cosignatures;
* it is not smaller than the last one (a log never shrinks), and at the same size it has the same root
  (another root is a fork);
* every entry since the last size is fetched from the entry bundles, re-hashed (RFC 6962 leaf hash) and
  folded tile by tile (:class:`g6.ledger.transparency.tiles.TileTree`): each hash tile completed on the way, and each
  partial tile of the new size, must be byte for byte the tile the log serves; the tree at the last size
  must have the last root (consistency), and the tree at the new size the new checkpoint's root.

Where the fold starts: at the last size rounded down to a multiple of 256. The hashes a tree of that size
has at levels >= 1 (its right edge) are read from the tiles of the new tree; they are bound to the new
root, since the fold from them must give it. A first run (no state) starts from 0 and reads every tile
and every entry. Tiles wholly below the last size, checked by an earlier run, are not read again.

Every check is a verdict (:class:`ProofCheck`), and the run fails closed: a tile or bundle that cannot be
fetched, is larger than it can be, or does not decode is a failed check. Only when every check holds is
the new checkpoint written as the state (a temporary file beside it, then a rename). A checkpoint that
cannot be fetched at all is :class:`MonitorUnreachable`; a state file that is not ours,
:class:`MonitorStateError` (an input error: nothing is fetched).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from g6.errors import InputError, MonitorStateError, MonitorUnreachable
from g6.ledger.keys import VerifyKey
from g6.ledger.merkle import leaf_hash
from g6.ledger.note import MAX_NOTE, Checkpoint, NoteError, open_checkpoint
from g6.ledger.proofs import ProofCheck
from g6.ledger.redactions import ENTRY_KINDS
from g6.ledger.transparency.tiles import (
    HASH_SIZE,
    HEIGHT,
    MAX_ENTRY,
    WIDTH,
    Tile,
    TileError,
    TileTree,
    decode_bundle,
    level_width,
    split_hashes,
)
from g6.prove.bundle_report import MISBEHAVIOR

STATE_FILE = "monitor-state.json"
STATE_FORMAT = "g6-monitor-state.v1"
MAX_STATE = MAX_NOTE + (1 << 16)
MAX_TILE = WIDTH * HASH_SIZE  # 8192 bytes: a full hash tile
MAX_BUNDLE = WIDTH * (2 + MAX_ENTRY)  # a full entry bundle of the largest entries
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
CHECKPOINT = "checkpoint"


class _Failed(Exception):
    """A check that failed inside the fold: (check name, detail)."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail)
        self.check = check
        self.detail = detail


@dataclass
class MonitorReport:
    url: str
    origin: str | None = None
    previous_size: int | None = None  # None: no state, a first run
    size: int | None = None
    root: bytes | None = None
    checks: list[ProofCheck] = field(default_factory=list)
    entries_checked: int = 0
    tiles_checked: int = 0
    note: str | None = None  # the checkpoint the log serves now
    previous_note: str | None = None  # the one this monitor saw last (from the state)
    misbehavior: bool = False  # two signed checkpoints that cannot both be of one append-only log
    state_saved: bool = False
    # the redaction and hold entries among the new entries, as the log states them (removing is evidence too):
    # a monitor learns of every takedown as of any other entry (``g6.ledger.redactions``)
    takedowns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def add(self, check: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(ProofCheck(check, ok, detail))
        return ok

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "ok": self.ok, "origin": self.origin, "previous_size": self.previous_size,
                "size": self.size, "root": None if self.root is None else self.root.hex(),
                "entries_checked": self.entries_checked, "tiles_checked": self.tiles_checked,
                "misbehavior": self.misbehavior, "state_saved": self.state_saved,
                "checks": [c.to_json() for c in self.checks], "checkpoint": self.note,
                "previous_checkpoint": self.previous_note, "takedowns": list(self.takedowns)}


# -- the state folder ----------------------------------------------------------------------------------------
def check_url(url: str) -> str:
    """The published prefix as a base URL ending in ``/``; InputError for anything but an http(s) URL."""
    try:
        u = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as e:
        raise InputError(f"bad URL {url[:80]!r}: {e}") from None
    if u.scheme not in ("http", "https") or not u.host:
        raise InputError(f"bad URL {url[:80]!r}: give the http:// or https:// URL the log is published under")
    if u.query or u.fragment:
        raise InputError(f"bad URL {url[:80]!r}: the published prefix has no query or fragment")
    text = str(u)
    return text if text.endswith("/") else text + "/"


def state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


def read_state(state_dir: Path, key: VerifyKey, origin: str | None) -> tuple[Checkpoint, str] | None:
    """The checkpoint this monitor saw last and its note, or None (no state yet). MonitorStateError for a
    state folder that is a file, a state file that is not ours or garbled, or of another log or key."""
    state_dir = Path(state_dir)
    probe = state_dir
    while not probe.exists() and probe.parent != probe:  # a folder created on the first save: where it would go
        probe = probe.parent
    if not probe.is_dir():
        raise MonitorStateError(f"--state {state_dir} is not a folder" + (f" ({probe} is a file)" if probe != state_dir
                                                                          else ""))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise MonitorStateError(f"--state {state_dir}: {probe} cannot be written")
    path = state_path(state_dir)
    if not path.exists() and not path.is_symlink():
        return None
    what = f"the monitor state {path}"
    try:
        with path.open("rb") as f:
            data = f.read(MAX_STATE + 1)
    except OSError as e:
        raise MonitorStateError(f"cannot read {what}: {e.strerror or e}") from None
    if len(data) > MAX_STATE:
        raise MonitorStateError(f"{what} is larger than {MAX_STATE} bytes: it is not a monitor's state")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MonitorStateError(f"{what} is not JSON: it is not a monitor's state (garbled?); move it away to "
                                "start over") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT or not isinstance(doc.get("checkpoint"), str):
        raise MonitorStateError(f"{what} is not a g6 monitor state ({STATE_FORMAT}); move it away to start over")
    note = doc["checkpoint"]
    try:
        cp = open_checkpoint(note, key, origin)
    except NoteError as e:
        raise MonitorStateError(f"{what} holds a checkpoint that does not open with this --key and origin ({e}): "
                                "it is the state of another log; give that log's key, or another --state") from None
    return cp, note


def write_state(state_dir: Path, url: str, cp: Checkpoint, note: str) -> None:
    """The new state, whole or not at all: a temporary file beside it, then a rename."""
    state_dir = Path(state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    doc = {"format": STATE_FORMAT, "url": url, "origin": cp.origin, "size": cp.size, "root": cp.root.hex(),
           "saved_at": int(time.time()), "checkpoint": note}
    fd, tmp = tempfile.mkstemp(dir=state_dir, prefix=f".{STATE_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            json.dump(doc, f, indent=2, ensure_ascii=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, state_path(state_dir))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# -- fetching ------------------------------------------------------------------------------------------------
def new_client(transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """The client a monitor reads with: timeouts, no redirects followed (a redirect is a failed fetch)."""
    return httpx.Client(transport=transport, timeout=TIMEOUT, follow_redirects=False,
                        headers={"User-Agent": "g6-monitor"})


class _Reader:
    def __init__(self, client: httpx.Client, base: str) -> None:
        self.client, self.base = client, base

    def get(self, path: str, limit: int) -> bytes | None:
        """The bytes at ``path`` (at most ``limit``), None on 404; httpx.HTTPError or ValueError otherwise."""
        url = self.base + path
        with self.client.stream("GET", url) as r:
            if r.status_code == 404:
                return None
            if r.status_code != 200:
                where = f" (to {r.headers.get('location', '')[:120]})" if r.is_redirect else ""
                raise ValueError(f"{url} answered HTTP {r.status_code}{where}")
            length = r.headers.get("content-length", "")
            if length.isascii() and length.isdigit() and int(length) > limit:
                raise ValueError(f"{url} is {int(length):,} bytes, more than the {limit:,} it can be")
            out = bytearray()
            for chunk in r.iter_bytes():
                out += chunk
                if len(out) > limit:
                    raise ValueError(f"{url} is more than the {limit:,} bytes it can be")
            return bytes(out)

    def need(self, path: str, limit: int, check: str) -> bytes:
        try:
            data = self.get(path, limit)
        except httpx.HTTPError as e:
            raise _Failed(check, f"cannot fetch {self.base + path}: {type(e).__name__}: {e}") from None
        except ValueError as e:
            raise _Failed(check, str(e)) from None
        if data is None:
            raise _Failed(check, f"{self.base + path} is missing (HTTP 404): the log does not serve it")
        return data

    def tile(self, tile: Tile) -> list[bytes]:
        """A hash tile's hashes; a partial tile the log no longer serves is read from its full tile (as
        tlog-tiles allows), its first hashes taken."""
        path = tile.path
        try:
            data = self.get(path, MAX_TILE)
            if data is None and not tile.full:
                full = self.get(Tile(tile.level, tile.index).path, MAX_TILE)
                data = None if full is None else full[:tile.width * HASH_SIZE]
        except httpx.HTTPError as e:
            raise _Failed("tiles", f"cannot fetch {self.base + path}: {type(e).__name__}: {e}") from None
        except ValueError as e:
            raise _Failed("tiles", str(e)) from None
        if data is None:
            raise _Failed("tiles", f"{self.base + path} is missing (HTTP 404): the log does not serve it")
        try:
            return split_hashes(data, tile.width)
        except TileError as e:
            raise _Failed("tiles", f"{path}: {e}") from None

    def bundle(self, tile: Tile) -> list[bytes]:
        data = self.need(tile.path, MAX_BUNDLE, "entries")
        try:
            return decode_bundle(data, tile.width)
        except TileError as e:
            raise _Failed("entries", f"{tile.path}: {e}") from None


def fetch_checkpoint(client: httpx.Client, base: str) -> bytes:
    """The log's checkpoint as served; MonitorUnreachable when it cannot be had."""
    try:
        data = _Reader(client, base).get(CHECKPOINT, MAX_NOTE)
    except httpx.HTTPError as e:
        raise MonitorUnreachable(f"cannot fetch {base}{CHECKPOINT}: {type(e).__name__}: {e or 'no answer'}; "
                                 "nothing was checked") from None
    except ValueError as e:
        raise MonitorUnreachable(f"{e}; nothing was checked") from None
    if data is None:
        raise MonitorUnreachable(f"{base}{CHECKPOINT} is missing (HTTP 404): is the log published there? Nothing "
                                 "was checked")
    return data


# -- the fold ------------------------------------------------------------------------------------------------
def _tile_in(size: int, level: int, index: int) -> Tile:
    """Tile ``index`` of ``level`` as a tree of ``size`` serves it (full, or its partial tile)."""
    full = size >> (HEIGHT * (level + 1))
    return Tile(level, index) if index < full else Tile(level, index, level_width(size, level))


def _fold(reader: _Reader, report: MonitorReport, old: Checkpoint | None, new: Checkpoint,
          progress: Callable[[int, int], None] | None) -> None:
    """Re-hash every entry from the old size (rounded down to a tile) to the new one and check the tiles,
    the old root (consistency) and the new root. Raises _Failed at the first thing that does not hold."""
    old_size = 0 if old is None else old.size
    start = old_size // WIDTH * WIDTH
    edge: list[list[bytes]] = [[]]
    level = 1
    while start >> (HEIGHT * level):
        w = level_width(start, level)
        hashes = reader.tile(_tile_in(new.size, level, start >> (HEIGHT * (level + 1)))) if w else []
        edge.append(hashes[:w])
        report.tiles_checked += bool(w)
        level += 1
    tree = TileTree(start, edge)

    old_root: list[bytes] = []  # the tree's root at the old size, once the fold passes it

    def at_old_size() -> None:
        if old is not None and tree.size == old.size:
            old_root.append(tree.root())

    at_old_size()
    total = new.size - start
    for b in range(start // WIDTH, (new.size + WIDTH - 1) // WIDTH):
        hashes_tile = _tile_in(new.size, 0, b)  # entry bundle b is shaped as level-0 tile b
        entries = reader.bundle(Tile(-1, b, hashes_tile.width))
        for data in entries:
            if tree.size >= old_size:
                _takedown(report, tree.size + 1, data)
            for tile, hashes in tree.append(leaf_hash(data)):
                _compare(reader, report, tile, hashes)
            report.entries_checked += 1
            at_old_size()
        if progress is not None:
            progress(tree.size - start, total)
    for tile, hashes in tree.partial_tiles():
        _compare(reader, report, tile, hashes)
    report.add("entries", True, f"{report.entries_checked} entries from index {start} re-hashed; each leaf hash is "
                                "in its level-0 tile")
    report.add("tiles", True, f"{report.tiles_checked} tiles read, each what the entries hash to")
    root = tree.root()
    if root != new.root:
        raise _Failed("root", f"the tiles fold to root {root.hex()}, not the checkpoint's {new.root.hex()}")
    report.add("root", True, f"the {new.size} entries fold to the checkpoint's root")
    # only now, with the entries being what the new checkpoint signed, is a wrong old root the log's doing
    if old is not None:
        if old_root != [old.root]:
            report.misbehavior = True
            raise _Failed("consistency", f"{MISBEHAVIOR}: the tree the new checkpoint signs has, at the last size "
                                         f"seen ({old.size}), root {old_root[0].hex() if old_root else '?'}, not "
                                         f"{old.root.hex()} as that checkpoint signed")
        report.add("consistency", True, f"the tree at size {old.size} has the root the last checkpoint signed; "
                                        f"size {new.size} extends it")


def _takedown(report: MonitorReport, seq: int, data: bytes) -> None:
    """Note a new redaction or hold entry (its kind, action, reason, how many blobs, its id), as the entry says."""
    if b'"kind":"redaction"' not in data and b'"kind":"hold"' not in data:
        return  # (a receipt is canonical JSON: the kind is written so, and nothing else is parsed)
    try:
        entry = json.loads(data)
        request = entry["request"]
        if entry["kind"] not in ENTRY_KINDS:
            return
        report.takedowns.append({"seq": seq, "receipt_id": str(entry["receipt_id"]), "kind": entry["kind"],
                                 "action": str(request["action"]), "reason": str(request["reason"])[:200],
                                 "blobs": len(request["blobs"])})
    except (ValueError, KeyError, TypeError):
        return  # a malformed entry is still an entry: its leaf was checked like every other


def _compare(reader: _Reader, report: MonitorReport, tile: Tile, hashes: list[bytes]) -> None:
    served = reader.tile(tile)
    report.tiles_checked += 1
    if served != hashes:
        i = next(i for i, (a, b) in enumerate(zip(served, hashes, strict=True)) if a != b)
        what = "the leaf hash of entry" if tile.level == 0 else "the subtree hash at"
        raise _Failed("tiles", f"{tile.path} is not what the entries hash to: hash {i} ({what} "
                               f"{tile.index * WIDTH + i}) is {served[i].hex()}, the entries give {hashes[i].hex()} "
                               "(a rewritten tile or entry bundle)")


def monitor(url: str, key: VerifyKey, state_dir: Path, *, origin: str | None = None, policy: Any = None,
            client: httpx.Client | None = None, now: float | None = None, save: bool = True,
            progress: Callable[[int, int], None] | None = None) -> MonitorReport:
    """One run of the monitor (see the module's text). ``policy``: a ``g6.ledger.transparency.policy.Policy`` the
    checkpoint's cosignatures must meet. Raises InputError for a bad URL, MonitorStateError for a bad
    state and MonitorUnreachable when the checkpoint cannot be fetched; every other failure is a check."""
    base = check_url(url)
    previous = read_state(state_dir, key, origin)
    if previous is not None:
        origin = previous[0].origin
    report = MonitorReport(base, origin=origin)
    if previous is not None:
        report.previous_size, report.previous_note = previous[0].size, previous[1]
    own = client is None
    client = new_client() if client is None else client
    try:
        raw = fetch_checkpoint(client, base)
        try:
            cp = open_checkpoint(raw, key, origin)
        except NoteError as e:
            report.add("checkpoint signature", False, f"{base}{CHECKPOINT}: {e}")
            with contextlib.suppress(UnicodeDecodeError):
                report.note = raw.decode("utf-8")
            return report
        note = raw.decode("utf-8")
        report.note, report.origin, report.size, report.root = note, cp.origin, cp.size, cp.root
        report.add("checkpoint signature", True, f"signed by the pinned key for {cp.origin}")
        if policy is not None:
            verdict = policy.satisfied(note, time.time() if now is None else now)
            if not report.add("witness quorum", verdict.ok, verdict.detail):
                return report
        if previous is not None and not _against_state(report, previous[0], cp):
            return report
        if previous is not None and cp.size == previous[0].size:
            report.add("entries", True, "no new entries since the last run")
        else:
            try:
                _fold(_Reader(client, base), report, None if previous is None else previous[0], cp, progress)
            except _Failed as f:
                report.add(f.check, False, f.detail)
                return report
    finally:
        if own:
            client.close()
    if save and report.ok and (previous is None or previous[1] != note):
        try:
            write_state(state_dir, base, cp, note)
        except OSError as e:
            raise MonitorStateError(f"every check held, but the state could not be saved in {state_dir}: "
                                    f"{e.strerror or e}") from None
        report.state_saved = True
    return report


def _against_state(report: MonitorReport, old: Checkpoint, cp: Checkpoint) -> bool:
    if cp.size < old.size:
        report.misbehavior = True
        return report.add("size", False, f"{MISBEHAVIOR}: the log shrank: it serves size {cp.size}, this monitor saw "
                                         f"size {old.size} signed before")
    if cp.size == old.size and cp.root != old.root:
        report.misbehavior = True
        return report.add("consistency", False, f"{MISBEHAVIOR}: a fork: two checkpoints of size {cp.size} with "
                                                 f"roots {old.root.hex()} and {cp.root.hex()}")
    report.add("size", True, f"size {cp.size}, at least the {old.size} seen last")
    if cp.size == old.size:
        report.add("consistency", True, f"the same root as the last checkpoint seen (size {cp.size})")
    return True

