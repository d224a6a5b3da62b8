"""g6.ledger.transparency.tiles: C2SP tlog-tiles names and tile math, against the spec's own examples
(https://c2sp.org/tlog-tiles@v0.1.0) and against the ledger's RFC 9162 Merkle tree."""

from __future__ import annotations

import hashlib

import pytest

from g6.ledger.merkle import MerkleTree, leaf_hash
from g6.ledger.transparency.tiles import (
    MAX_ENTRY,
    Tile,
    TileError,
    TileTree,
    decode_bundle,
    decode_index,
    edge_ids,
    encode_bundle,
    encode_index,
    split_hashes,
    tiles_for,
)


@pytest.mark.parametrize(("n", "text"), [(0, "000"), (5, "005"), (999, "999"), (1000, "x001/000"),
                                         (1234067, "x001/x234/067")])
def test_index_encoding_is_the_spec_s(n: int, text: str) -> None:
    assert encode_index(n) == text and decode_index(text) == n


@pytest.mark.parametrize("text", ["5", "0005", "x000/005", "001/000", "x01/000", "x001/", "", "٣٣٣"])
def test_an_index_g6_would_not_write_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        decode_index(text)


def test_tiles_of_size_70000_are_the_spec_s_example() -> None:
    tiles = tiles_for(70_000, entries=False)
    level0 = [t for t in tiles if t.level == 0]
    assert len([t for t in level0 if t.full]) == 273 and level0[-1] == Tile(0, 273, 112)
    assert [t for t in tiles if t.level > 0] == [Tile(1, 0), Tile(1, 1, 17), Tile(2, 0, 1)]
    assert Tile(2, 0, 1).path == "tile/2/000.p/1" and Tile(-1, 273, 112).path == "tile/entries/273.p/112"


def test_tiles_for_a_size_since_another() -> None:
    assert [t.path for t in tiles_for(256)] == ["tile/entries/000", "tile/0/000", "tile/1/000.p/1"]
    # from 300 to 600: the full tiles completed since, then the partial tiles of 600 (not those of 300)
    assert [t.path for t in tiles_for(600, 300)] == ["tile/entries/001", "tile/entries/002.p/88", "tile/0/001",
                                                     "tile/0/002.p/88", "tile/1/000.p/2"]
    assert tiles_for(600, 600) == [] and tiles_for(0) == []
    with pytest.raises(ValueError):
        tiles_for(3, 4)


def test_bundles_hold_uint16_length_prefixed_entries() -> None:
    entries = [b"", b"a", b"x" * MAX_ENTRY]
    data = encode_bundle(entries)
    assert data[:5] == b"\x00\x00\x00\x01a" and decode_bundle(data, 3) == entries
    with pytest.raises(TileError, match="does not fit an entry bundle"):
        encode_bundle([b"x" * (MAX_ENTRY + 1)])
    for bad, count in ((data, 2), (data, 4), (data[:-1], 3), (data + b"\x00", 3)):
        with pytest.raises(TileError):
            decode_bundle(bad, count)
    with pytest.raises(TileError):
        split_hashes(b"\x00" * 33, 1)


@pytest.mark.parametrize("size", [0, 1, 2, 255, 256, 257, 511, 512, 600, 65_536, 65_537])
def test_a_tile_tree_has_the_merkle_root_and_its_edge_restarts_it(size: int) -> None:
    leaves = [leaf_hash(hashlib.sha256(i.to_bytes(4, "big")).digest()) for i in range(size + 300)]
    tree = TileTree()
    full: list[Tile] = []
    for h in leaves[:size]:
        full += [t for t, _ in tree.append(h)]
    assert tree.root() == MerkleTree(leaves[:size]).root()
    assert full == [t for t in tiles_for(size, entries=False) if t.full]
    assert [t for t, _ in tree.partial_tiles()] == [t for t in tiles_for(size, entries=False) if not t.full]
    # where a kept tree holds the edge: each level's partial tile's hashes (none for a level without one)
    partial = {t.level: t for t, _ in tree.partial_tiles()}
    ids = edge_ids(size)
    assert len(ids) == len(tree.edge()) and ids == [partial[lvl].hash_ids() if lvl in partial else []
                                                    for lvl in range(len(ids))]
    again = TileTree(size, tree.edge())  # what a publish starts from: the edge alone
    for h in leaves[size:]:
        again.append(h)
    assert again.root() == MerkleTree(leaves).root()


def test_an_edge_that_does_not_fit_the_size_is_refused() -> None:
    with pytest.raises(ValueError):
        TileTree(3, [[b"\x00" * 32] * 2])
    with pytest.raises(ValueError):
        TileTree(256, [])
