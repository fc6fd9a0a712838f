"""Transparency-log formats the ledger is published in: RFC 9162 Merkle trees and
their inclusion and consistency proofs (``_merkle``). Plaintext-free and importable
without the enclave: an independent reviewer verifies a proof with this alone."""

from ._merkle import (
    HASH_SIZE,
    Node,
    ProofInvalid,
    consistency_ranges,
    hash_children,
    hash_leaf,
    inclusion_ranges,
    proof_hashes,
    proof_nodes,
    range_nodes,
    range_root,
    root_of_leaves,
    verify_consistency,
    verify_inclusion,
)

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
