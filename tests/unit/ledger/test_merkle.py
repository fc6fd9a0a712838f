"""RFC 9162 Merkle proofs: the reference test vectors (``tests/data/merkle``), the
reference tree's proofs reproduced exactly, and a property against the RFC's recursive
definitions written out naively here."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.certificates.tlog import (
    ProofInvalid,
    consistency_ranges,
    hash_children,
    hash_leaf,
    inclusion_ranges,
    proof_hashes,
    range_nodes,
    root_of_leaves,
    verify_consistency,
    verify_inclusion,
)
from tests.unit.ledger.merkle_reference import perfect_nodes

VECTORS = Path(__file__).parents[2] / "data" / "merkle"
# the leaves of the reference tree the vectors' happy paths are proofs in (RFC 6962's)
REFERENCE_LEAVES = [
    bytes.fromhex(h)
    for h in (
        "",
        "00",
        "10",
        "2021",
        "3031",
        "40414243",
        "5051525354555657",
        "606162636465666768696a6b6c6d6e6f",
    )
]


def _b64(value: str | None) -> bytes:
    return base64.b64decode(value or "")


def _cases(kind: str) -> list[Any]:
    files = sorted((VECTORS / kind).rglob("*.json"))
    return [pytest.param(json.loads(f.read_text()), id=str(f.relative_to(VECTORS))) for f in files]


@pytest.mark.parametrize("case", _cases("inclusion"))
def test_inclusion_vectors(case: dict[str, Any]) -> None:
    proof = [_b64(p) for p in case["proof"] or []]
    check = lambda: verify_inclusion(  # noqa: E731
        _b64(case["leafHash"]), case["leafIdx"], case["treeSize"], proof, _b64(case["root"])
    )
    if case["wantErr"]:
        with pytest.raises(ProofInvalid):
            check()
    else:
        check()


@pytest.mark.parametrize("case", _cases("consistency"))
def test_consistency_vectors(case: dict[str, Any]) -> None:
    proof = [_b64(p) for p in case["proof"] or []]
    check = lambda: verify_consistency(  # noqa: E731
        case["size1"], case["size2"], _b64(case["root1"]), _b64(case["root2"]), proof
    )
    if case["wantErr"]:
        with pytest.raises(ProofInvalid):
            check()
    else:
        check()


def test_there_are_vectors_of_both_kinds_and_of_both_outcomes() -> None:
    cases = [c.values[0] for c in _cases("inclusion") + _cases("consistency")]
    assert len(cases) > 150
    assert {c["wantErr"] for c in cases} == {True, False}


# -- the reference tree: our proofs are the vectors' happy paths, byte for byte ----------


def _reader(nodes: dict[tuple[int, int], bytes]) -> Any:
    def read(wanted: set[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        return {node: nodes[node] for node in wanted}

    return read


def test_proofs_of_the_reference_tree_are_the_vectors_happy_paths() -> None:
    leaves = [hash_leaf(data) for data in REFERENCE_LEAVES]
    read = _reader(perfect_nodes(leaves))
    seen = 0
    for case in (c.values[0] for c in _cases("inclusion")):
        if case["desc"] == "happy path":
            index, size = case["leafIdx"], case["treeSize"]
            assert _b64(case["root"]) == root_of_leaves(leaves[:size])
            proof = proof_hashes(inclusion_ranges(index, size), read)
            assert proof == [_b64(p) for p in case["proof"] or []]
            seen += 1
    for case in (c.values[0] for c in _cases("consistency")):
        if case["desc"] == "happy path" and case["size1"] > 0:
            old, new = case["size1"], case["size2"]
            proof = proof_hashes(consistency_ranges(old, new), read)
            assert proof == [_b64(p) for p in case["proof"] or []]
            seen += 1
    assert seen >= 8


# -- the RFC's definitions, naively ------------------------------------------------------


def _mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hash_children(_mth(leaves[:k]), _mth(leaves[k:]))


def _path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if m < k:
        return _path(m, leaves[:k]) + [_mth(leaves[k:])]
    return _path(m - k, leaves[k:]) + [_mth(leaves[:k])]


def _subproof(m: int, leaves: list[bytes], complete: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if complete else [_mth(leaves)]
    k = 1
    while k * 2 < n:
        k *= 2
    if m <= k:
        return _subproof(m, leaves[:k], complete) + [_mth(leaves[k:])]
    return _subproof(m - k, leaves[k:], False) + [_mth(leaves[:k])]


sizes = st.integers(min_value=1, max_value=300)


@given(size=sizes, data=st.data())
def test_inclusion_proofs_are_the_rfc_s_and_verify(size: int, data: st.DataObject) -> None:
    leaves = [hash_leaf(i.to_bytes(4, "big")) for i in range(size)]
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    read = _reader(perfect_nodes(leaves))
    proof = proof_hashes(inclusion_ranges(index, size), read)
    root = _mth(leaves)
    assert proof == _path(index, leaves)
    assert root_of_leaves(leaves) == root
    verify_inclusion(leaves[index], index, size, proof, root)
    # another leaf, a flipped bit or a proof cut short fails (the size is bound by the
    # signed checkpoint the root comes from, not by the proof)
    with pytest.raises(ProofInvalid):
        verify_inclusion(hash_leaf(b"other"), index, size, proof, root)
    if proof:
        with pytest.raises(ProofInvalid):
            verify_inclusion(leaves[index], index, size, proof[:-1], root)
    if proof:
        at = data.draw(st.integers(min_value=0, max_value=len(proof) - 1))
        bad = list(proof)
        bad[at] = bytes([bad[at][0] ^ 1]) + bad[at][1:]
        with pytest.raises(ProofInvalid):
            verify_inclusion(leaves[index], index, size, bad, root)


@given(new=sizes, data=st.data())
def test_consistency_proofs_are_the_rfc_s_and_verify(new: int, data: st.DataObject) -> None:
    leaves = [hash_leaf(i.to_bytes(4, "big")) for i in range(new)]
    old = data.draw(st.integers(min_value=1, max_value=new))
    read = _reader(perfect_nodes(leaves))
    proof = proof_hashes(consistency_ranges(old, new), read)
    assert proof == (_subproof(old, leaves, True) if old < new else [])
    old_root, new_root = _mth(leaves[:old]), _mth(leaves)
    verify_consistency(old, new, old_root, new_root, proof)
    # another history of the old tree: not a prefix
    forged = _mth([hash_leaf(b"rewritten"), *leaves[1:old]])
    with pytest.raises(ProofInvalid):
        verify_consistency(old, new, forged, new_root, proof)
    if proof:
        with pytest.raises(ProofInvalid):
            verify_consistency(old, new, old_root, new_root, proof[:-1])


def test_ranges_are_perfect_subtrees_largest_first() -> None:
    assert range_nodes(0, 7) == [(2, 0), (1, 2), (0, 6)]
    assert range_nodes(8, 13) == [(2, 2), (0, 12)]
    with pytest.raises(ValueError, match="aligned"):
        range_nodes(1, 5)
    with pytest.raises(ValueError, match="not in the tree"):
        inclusion_ranges(3, 3)
