"""RFC 9162 Merkle trees (section 2.1): hashes, proofs as ranges of leaves, verification.

A tree of ``n`` leaves is made of *perfect subtrees*: node ``(level, index)`` is the
hash of leaves ``[index * 2**level, (index + 1) * 2**level)``. Every hash an inclusion or
consistency proof carries is the root of a range that RFC 9162's recursion splits off
(``MTH(D[a:b])``), and each such range is ``a`` perfect subtrees wide, largest first
(``range_nodes``). So a proof is computed in two steps: which ranges it needs (a pure
function of the indexes and sizes), then the root of each from stored perfect nodes —
one read of at most a few dozen nodes, whatever the tree's size.

Verification (``verify_inclusion``, ``verify_consistency``) is RFC 9162 sections
2.1.3.2 and 2.1.4.2 step by step; it needs no storage and raises ``ProofInvalid``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = [
    "HASH_SIZE",
    "Node",
    "ProofInvalid",
    "consistency_ranges",
    "hash_children",
    "hash_leaf",
    "inclusion_ranges",
    "proof_hashes",
    "proof_nodes",
    "range_nodes",
    "range_root",
    "root_of_leaves",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
Node = tuple[int, int]
"""A perfect subtree: ``(level, index)`` covers ``2**level`` leaves from
``index * 2**level``."""


class ProofInvalid(ValueError):
    """A proof that does not prove what it claims, or is malformed."""


def hash_leaf(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def hash_children(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n`` > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def range_nodes(start: int, end: int) -> list[Node]:
    """The perfect subtrees of ``MTH(D[start:end])``, left to right (largest first).

    ``start`` must be a multiple of the largest power of two not above ``end - start``,
    as every range RFC 9162's recursion splits off is."""
    nodes: list[Node] = []
    while start < end:
        level = (end - start).bit_length() - 1
        if start % (1 << level):
            raise ValueError("a range not aligned as RFC 9162 splits them")
        nodes.append((level, start >> level))
        start += 1 << level
    return nodes


def range_root(nodes: Sequence[Node], known: Mapping[Node, bytes]) -> bytes:
    """``MTH`` of the range made of ``nodes`` (``range_nodes``), from their hashes."""
    if not nodes:
        raise ValueError("an empty range has no subtree root")
    root = known[nodes[-1]]
    for node in reversed(nodes[:-1]):
        root = hash_children(known[node], root)
    return root


def root_of_leaves(leaves: Sequence[bytes]) -> bytes:
    """``MTH`` of a list of leaf hashes (the empty tree: SHA-256 of nothing)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    level = list(leaves)
    while len(level) > 1:
        pairs = [hash_children(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges whose roots make ``PATH(index, D[0:size])``, leaf to root."""
    if not 0 <= index < size:
        raise ValueError("the leaf is not in the tree")
    path: list[tuple[int, int]] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            path.append((start + k, end))
            end = start + k
        else:
            path.append((start, start + k))
            start += k
    return path[::-1]


def consistency_ranges(old: int, new: int) -> list[tuple[int, int]]:
    """The leaf ranges whose roots make ``PROOF(old, D[0:new])``, in proof order."""
    if not 0 < old <= new:
        raise ValueError("a consistency proof needs 0 < old size <= new size")
    proof: list[tuple[int, int]] = []
    start, end, complete = 0, new, True
    m = old
    while True:
        if m == end - start:
            if not complete:
                proof.append((start, end))
            break
        k = _split(end - start)
        if m <= k:
            proof.append((start + k, end))
            end = start + k
        else:
            proof.append((start, start + k))
            start, m, complete = start + k, m - k, False
    return proof[::-1]


def proof_nodes(ranges: Iterable[tuple[int, int]]) -> set[Node]:
    """Every perfect subtree the roots of ``ranges`` are made of."""
    return {node for start, end in ranges for node in range_nodes(start, end)}


def proof_hashes(
    ranges: Sequence[tuple[int, int]], read: Callable[[set[Node]], Mapping[Node, bytes]]
) -> list[bytes]:
    """The roots of ``ranges``, from one ``read`` of the perfect subtrees they need."""
    known = read(proof_nodes(ranges))
    return [range_root(range_nodes(start, end), known) for start, end in ranges]


def _check_hashes(*hashes: bytes) -> None:
    if any(not isinstance(h, bytes) or len(h) != HASH_SIZE for h in hashes):
        raise ProofInvalid("a hash is not 32 bytes")


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """RFC 9162 2.1.3.2: ``leaf_hash`` is leaf ``index`` of the tree of ``size`` leaves
    whose root is ``root``, or ``ProofInvalid``."""
    _check_hashes(leaf_hash, root, *proof)
    if not 0 <= index < size:
        raise ProofInvalid("the leaf index is not below the tree size")
    fn, sn = index, size - 1
    r = leaf_hash
    for p in proof:
        if sn == 0:
            raise ProofInvalid("the proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = hash_children(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = hash_children(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofInvalid("the proof is shorter than the tree is deep")
    if r != root:
        raise ProofInvalid("the proof does not lead to the root")


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """RFC 9162 2.1.4.2: the tree of ``old_size`` leaves with root ``old_root`` is a
    prefix of the tree of ``new_size`` leaves with root ``new_root``, or ``ProofInvalid``."""
    if not 0 < old_size <= new_size:
        raise ProofInvalid("a consistency proof needs 0 < old size <= new size")
    if old_size == new_size:
        if proof:
            raise ProofInvalid("a proof between equal sizes is empty")
        if old_root != new_root:
            raise ProofInvalid("equal sizes with different roots")
        return
    _check_hashes(old_root, new_root, *proof)
    if not proof:
        raise ProofInvalid("the proof is empty")
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root starts the path
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofInvalid("the proof is longer than the trees are deep")
        if fn & 1 or fn == sn:
            fr = hash_children(c, fr)
            sr = hash_children(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = hash_children(sr, c)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofInvalid("the proof is shorter than the trees are deep")
    if fr != old_root or sr != new_root:
        raise ProofInvalid("the proof does not lead to both roots")
