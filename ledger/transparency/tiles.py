"""C2SP tlog-tiles as pure functions: tile paths, which tiles a tree size has, entry bundles, and a tree
built tile by tile (https://c2sp.org/tlog-tiles@v0.1.0).

A tile is 256 hashes wide (height 8). Level 0 holds the leaf hashes; at level ``l`` >= 1 hash ``i`` of tile
``n`` is the Merkle tree hash of the ``256**l`` leaves ``[(n*256+i) * 256**l, (n*256+i+1) * 256**l)``: the
hash of the complete subtree at RFC 9162 level ``8*l``, index ``n*256+i`` (what ``g6.ledger.stored_tree``
keeps under ``stored_hash_index(8*l, n*256+i)``). For a tree of size ``s``, level ``l`` has
``s // 256**(l+1)`` full tiles and, when ``w = (s // 256**l) % 256`` is not 0, one partial tile of ``w``
hashes, named ``.p/<w>``; a partial tile is never hashed into the level above. Entry bundles follow the
level-0 tiles: bundle ``n`` holds entries ``n*256 ..``, each as a big-endian uint16 length and its bytes,
so an entry is at most 65,535 bytes.

Nothing here reads or writes: ``g6.prove.publish`` writes tiles, ``g6.prove.monitor`` reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from g6.ledger.merkle import EMPTY_ROOT, node_hash

HEIGHT = 8
WIDTH = 1 << HEIGHT  # 256 hashes (or entries) in a full tile
HASH_SIZE = 32
MAX_ENTRY = 0xFFFF  # an entry's length is a uint16 in its bundle
MAX_LEVEL = 63


class TileError(ValueError):
    """A tile or entry bundle that is not what its path says it holds."""


def encode_index(n: int) -> str:
    """``N`` as path elements: zero-padded 3-digit groups, every group but the last prefixed ``x``
    (5 -> ``005``, 1000 -> ``x001/000``, 1234067 -> ``x001/x234/067``)."""
    if n < 0:
        raise ValueError(f"a tile index is not negative: {n}")
    groups = [f"{n % 1000:03d}"]
    n //= 1000
    while n:
        groups.append(f"x{n % 1000:03d}")
        n //= 1000
    return "/".join(reversed(groups))


def decode_index(text: str) -> int:
    """The inverse of :func:`encode_index`; ValueError for anything it would not write."""
    parts = text.split("/")
    if not all(len(p) == 4 and p[0] == "x" and p[1:].isdigit() for p in parts[:-1]) \
            or not (len(parts[-1]) == 3 and parts[-1].isdigit()) or not parts[-1].isascii():
        raise ValueError(f"not a tile index: {text!r}")
    if len(parts) > 1 and parts[0] == "x000":
        raise ValueError(f"not a tile index (a leading x000): {text!r}")
    n = 0
    for p in parts:
        n = n * 1000 + int(p.lstrip("x"))
    return n


@dataclass(frozen=True, slots=True, order=True)
class Tile:
    """One tile: ``level`` (-1 for an entry bundle), ``index`` and ``width`` (1..256; 256 is full)."""

    level: int
    index: int
    width: int = WIDTH

    @property
    def full(self) -> bool:
        return self.width == WIDTH

    @property
    def path(self) -> str:
        """``tile/<L>/<N>[.p/<W>]``, or ``tile/entries/<N>[.p/<W>]`` for an entry bundle."""
        if not 1 <= self.width <= WIDTH or not -1 <= self.level <= MAX_LEVEL:
            raise ValueError(f"no such tile: level {self.level}, width {self.width}")
        level = "entries" if self.level == -1 else str(self.level)
        return f"tile/{level}/{encode_index(self.index)}" + ("" if self.full else f".p/{self.width}")

    def hash_ids(self) -> list[tuple[int, int]]:
        """(RFC 9162 level, subtree index) of each hash this (hash) tile holds."""
        return [(HEIGHT * self.level, self.index * WIDTH + i) for i in range(self.width)]


def level_width(size: int, level: int) -> int:
    """How many hashes level ``level``'s rightmost tile has for a tree of ``size`` (0: no partial tile)."""
    return (size >> (HEIGHT * level)) % WIDTH


def tiles_for(size: int, since: int = 0, *, entries: bool = True) -> list[Tile]:
    """The tiles a tree of ``size`` is served as that a tree of ``since`` did not have yet: every full tile
    that was not full at ``since`` and the partial tiles of ``size`` (none when ``since == size``), entry
    bundles first (with ``entries``), then level by level."""
    if not 0 <= since <= size:
        raise ValueError(f"no tiles from size {since} to size {size}")
    if since == size:
        return []
    out: list[Tile] = []
    for level in ([-1] if entries else []) + list(range(MAX_LEVEL + 1)):
        shift = HEIGHT * max(level, 0)
        if size >> shift == 0:
            break
        first_new = since >> (shift + HEIGHT)
        out += [Tile(level, n) for n in range(first_new, size >> (shift + HEIGHT))]
        w = level_width(size, max(level, 0))
        if w:
            out.append(Tile(level, size >> (shift + HEIGHT), w))
    return out


# -- entry bundles ---------------------------------------------------------------------------------------
def encode_bundle(entries: Iterable[bytes]) -> bytes:
    out = bytearray()
    for e in entries:
        if len(e) > MAX_ENTRY:
            raise TileError(f"an entry of {len(e)} bytes does not fit an entry bundle (at most {MAX_ENTRY})")
        out += len(e).to_bytes(2, "big") + e
    return bytes(out)


def decode_bundle(data: bytes, count: int) -> list[bytes]:
    """Exactly ``count`` entries, and nothing after them; TileError otherwise."""
    out, i = [], 0
    while i < len(data):
        if len(data) - i < 2:
            raise TileError("the entry bundle ends inside a length prefix")
        n = int.from_bytes(data[i:i + 2], "big")
        if len(data) - i - 2 < n:
            raise TileError(f"entry {len(out)} of the bundle is cut short ({len(data) - i - 2} of {n} bytes)")
        out.append(data[i + 2:i + 2 + n])
        i += 2 + n
        if len(out) > count:
            raise TileError(f"the entry bundle holds more than the {count} entries it should")
    if len(out) != count:
        raise TileError(f"the entry bundle holds {len(out)} entries, not {count}")
    return out


def split_hashes(data: bytes, width: int) -> list[bytes]:
    """A hash tile's ``width`` hashes; TileError when it is not exactly ``width`` * 32 bytes."""
    if len(data) != width * HASH_SIZE:
        raise TileError(f"{len(data)} bytes, not the {width * HASH_SIZE} of {width} hashes")
    return [data[i:i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


# -- a tree built tile by tile ---------------------------------------------------------------------------
def _mth(hashes: Sequence[bytes]) -> bytes:
    """Merkle tree hash over ``hashes`` taken as leaves already hashed (a full tile's 256 -> the level above)."""
    if not hashes:
        return EMPTY_ROOT
    if len(hashes) == 1:
        return hashes[0]
    k = 1 << ((len(hashes) - 1).bit_length() - 1)
    return node_hash(_mth(hashes[:k]), _mth(hashes[k:]))


class TileTree:
    """The right edge of a tree read as tiles: the hashes of each level's partial tile. That edge is all
    a tree of ``size`` needs to take more leaves, to say which full tiles each leaf completes, and to give
    its root: at most 255 hashes per level, whatever the size.

    ``TileTree(size, edge)`` starts from a tree of ``size`` whose partial tiles hold ``edge[l]`` at level
    ``l`` (as :meth:`edge` gives them, or read from the partial tiles of a published size)."""

    def __init__(self, size: int = 0, edge: Sequence[Sequence[bytes]] = ()) -> None:
        self.size = size
        self.levels: list[list[bytes]] = [list(hs) for hs in edge]
        while self.levels and not self.levels[-1]:
            self.levels.pop()
        for level, hs in enumerate(self.levels):
            if len(hs) != level_width(size, level) or any(len(h) != HASH_SIZE for h in hs):
                raise ValueError(f"level {level} of the edge holds {len(hs)} hashes; a tree of {size} has "
                                 f"{level_width(size, level)} there")
        if size >> (HEIGHT * len(self.levels)):
            raise ValueError(f"an edge of {len(self.levels)} levels cannot hold a tree of {size}")

    def append(self, leaf: bytes) -> list[tuple[Tile, list[bytes]]]:
        """Add one leaf hash; returns each (hash) tile it completes, with its 256 hashes, lowest level first."""
        done: list[tuple[Tile, list[bytes]]] = []
        h, level = leaf, 0
        while True:
            if level == len(self.levels):
                self.levels.append([])
            hs = self.levels[level]
            hs.append(h)
            if len(hs) < WIDTH:
                break
            done.append((Tile(level, self.size >> (HEIGHT * (level + 1))), hs))
            h = _mth(hs)
            self.levels[level] = []
            level += 1
        self.size += 1
        return done

    def edge(self) -> list[list[bytes]]:
        return [list(hs) for hs in self.levels]

    def partial_tiles(self) -> list[tuple[Tile, list[bytes]]]:
        """The partial tile of each level that has one, with its hashes, lowest level first."""
        return [(Tile(level, self.size >> (HEIGHT * (level + 1)), len(hs)), list(hs))
                for level, hs in enumerate(self.levels) if hs]

    def root(self) -> bytes:
        """RFC 9162 root of the tree: the partial tiles' hashes, highest level first, each split in
        power-of-two groups as the size's binary form says, folded right to left."""
        subtrees: list[bytes] = []
        for hs in reversed(self.levels):
            i = 0
            for bit in reversed(range(HEIGHT)):
                if len(hs) >> bit & 1:
                    subtrees.append(_mth(hs[i:i + (1 << bit)]))
                    i += 1 << bit
        if not subtrees:
            return EMPTY_ROOT
        h = subtrees[-1]
        for left in reversed(subtrees[:-1]):
            h = node_hash(left, h)
        return h


def edge_ids(size: int) -> list[list[tuple[int, int]]]:
    """(RFC 9162 level, subtree index) of each hash of each level's partial tile at ``size``: where a kept
    tree (``g6.ledger.stored_tree``) holds the edge a :class:`TileTree` starts from."""
    out = []
    level = 0
    while size >> (HEIGHT * level):
        w = level_width(size, level)
        first = (size >> (HEIGHT * (level + 1))) * WIDTH
        out.append([(HEIGHT * level, first + i) for i in range(w)])
        level += 1
    return out

