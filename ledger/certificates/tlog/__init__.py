"""Transparency-log formats the ledger is published in: RFC 9162 Merkle trees and
their inclusion and consistency proofs (``_merkle``), C2SP signed notes and the
checkpoints a log signs as one (``_note``), the C2SP proofs that carry an entry's
inclusion with the checkpoint it is proven against (``_proof``), and witnesses'
cosignatures (``_cosignature``) with the witness's side of ``add-checkpoint``
(``_witness``). Plaintext-free and importable
without the enclave: an independent reviewer verifies a proof with this alone."""

from ._cosignature import WitnessVerifier, cosign, cosigned_by
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
from ._note import (
    Checkpoint,
    NoteInvalid,
    NoteVerifier,
    checkpoint_text,
    note_key_id,
    open_note,
    parse_checkpoint,
    sign_note,
)
from ._proof import TlogProof, parse_proof, proof_text
from ._witness import WitnessAnswer, WitnessState, add_checkpoint

__all__ = [
    "Checkpoint",
    "NoteInvalid",
    "NoteVerifier",
    "checkpoint_text",
    "note_key_id",
    "open_note",
    "parse_checkpoint",
    "sign_note",
    "TlogProof",
    "WitnessAnswer",
    "WitnessState",
    "WitnessVerifier",
    "add_checkpoint",
    "cosign",
    "cosigned_by",
    "parse_proof",
    "proof_text",
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
