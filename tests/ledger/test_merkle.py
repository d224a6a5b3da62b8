"""RFC 9162 Merkle trees against the CT / transparency-dev test vectors (fixtures/merkle)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.ledger.merkle import MerkleTree, ProofError, leaf_hash, verify_consistency, verify_inclusion

FIX = Path(__file__).resolve().parent.parent.parent / "fixtures" / "merkle"
REF = json.loads((FIX / "rfc6962_roots.json").read_text())
LEAVES = [leaf_hash(bytes.fromhex(x)) for x in REF["leaves_hex"]]
TREE = MerkleTree(LEAVES)


def b64(x: str | None) -> bytes:
    return base64.b64decode(x) if x else b""


def test_roots_for_every_size() -> None:
    for size, want in enumerate(REF["roots_hex_by_size"]):
        assert TREE.root(size).hex() == want


def test_golang_record_hash() -> None:
    note = json.loads((FIX / "signed_note_golang.json").read_text())
    assert base64.b64encode(leaf_hash(b"hello world")).decode() == note["record_hash_of_hello_world_b64"]


def vectors(kind: str) -> list[tuple[str, dict]]:
    return [(str(p.relative_to(FIX)), json.loads(p.read_text()))
            for p in sorted((FIX / "transparency-dev" / kind).rglob("*.json"))]


@pytest.mark.parametrize(("name", "case"), vectors("inclusion"))
def test_inclusion_vectors(name: str, case: dict) -> None:
    proof = [b64(p) for p in case["proof"] or []]
    try:
        verify_inclusion(case["leafIdx"], case["treeSize"], b64(case["leafHash"]), proof, b64(case["root"]))
        ok = True
    except ProofError:
        ok = False
    assert ok is not case["wantErr"], case["desc"]


@pytest.mark.parametrize(("name", "case"), vectors("consistency"))
def test_consistency_vectors(name: str, case: dict) -> None:
    proof = [b64(p) for p in case["proof"] or []]
    try:
        verify_consistency(case["size1"], case["size2"], proof, b64(case["root1"]), b64(case["root2"]))
        ok = True
    except ProofError:
        ok = False
    assert ok is not case["wantErr"], case["desc"]


def test_vector_counts() -> None:
    assert len(vectors("inclusion")) > 50 and len(vectors("consistency")) > 80


def test_generated_proofs_match_the_happy_path_vectors() -> None:
    happy = [c for _, c in vectors("inclusion") if c["desc"] == "happy path" and c["treeSize"] <= 8]
    assert happy
    for c in happy:
        assert [base64.b64encode(p).decode() for p in TREE.inclusion_proof(c["leafIdx"], c["treeSize"])] == \
            (c["proof"] or [])
    for _, c in vectors("consistency"):
        if c["desc"] == "happy path" and 0 < c["size1"] <= c["size2"] <= 8:
            got = [base64.b64encode(p).decode() for p in TREE.consistency_proof(c["size1"], c["size2"])]
            assert got == (c["proof"] or [])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 70), st.data())
def test_property_every_generated_proof_verifies_and_tampering_fails(n: int, data: st.DataObject) -> None:
    tree = MerkleTree([leaf_hash(i.to_bytes(4, "big")) for i in range(n)])
    size = data.draw(st.integers(1, n))
    i = data.draw(st.integers(0, size - 1))
    proof = tree.inclusion_proof(i, size)
    verify_inclusion(i, size, tree.leaves[i], proof, tree.root(size))
    with pytest.raises(ProofError):
        verify_inclusion(i, size, leaf_hash(b"other"), proof, tree.root(size))
    if size > 1:
        with pytest.raises(ProofError):
            verify_inclusion((i + 1) % size, size, tree.leaves[i], proof, tree.root(size))
    if proof:
        with pytest.raises(ProofError):
            verify_inclusion(i, size, tree.leaves[i], proof[:-1], tree.root(size))
    old = data.draw(st.integers(1, size))
    cproof = tree.consistency_proof(old, size)
    verify_consistency(old, size, cproof, tree.root(old), tree.root(size))
    if old < size:
        rewritten = MerkleTree([leaf_hash(b"rewritten")] + tree.leaves[1:size])
        with pytest.raises(ProofError):
            verify_consistency(old, size, rewritten.consistency_proof(old, size), tree.root(old), rewritten.root(size))
