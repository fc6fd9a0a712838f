"""A certificate bundle: the signed envelope with C2SP proofs that the ledger holds its
``certificate.issued`` entry and its specimen's ``specimen.sealed`` entry, so that a
third party verifies it offline with the issuer's key and the log's key alone.

::

    {"mediaType": BUNDLE_MEDIA_TYPE,
     "envelope": <the DSSE envelope>,
     "specimen_entry":    {"entry": base64(canonical bytes), "proof": <tlog-proof text>},
     "certificate_entry": {"entry": base64(canonical bytes), "proof": <tlog-proof text>}}

An entry's canonical bytes are what the ledger hashes (``ledger._chain``): metadata only,
by the ledger's own rule. Both proofs are against one checkpoint. ``verify_bundle`` runs
``BUNDLE_CHECK_NAMES``: steps 1–4 as ``verify_certificate`` (on the bundle's envelope),
then

5. ``checkpoint``   — both proofs are C2SP tlog-proofs carrying the same checkpoint, a
                      signed note the log key signed, of the log key's origin; given
                      witnesses, cosigned (C2SP tlog-cosignature) by a quorum of them.
6. ``subject``      — the specimen entry is ``specimen.sealed`` for the subject's
                      specimen with the subject's manifest digest, its index and SHA-256
                      are ``predicate.ledger``'s, and its leaf is proven in the checkpoint.
7. ``ledger_entry`` — the certificate entry is ``certificate.issued`` naming this
                      envelope's digest and specimen, after the specimen's entry, and its
                      leaf is proven in the checkpoint.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .._canonical import canonical_json, loads
from .._errors import CanonicalizationError
from ._checks import BUNDLE_CHECK_NAMES, VerificationReport
from ._statement import envelope_digest, specimen_of
from ._verify import _STEPS, _Failed, _State, _step_envelope, _trusted, run_steps
from .tlog import (
    Checkpoint,
    NoteInvalid,
    NoteVerifier,
    ProofInvalid,
    TlogProof,
    WitnessVerifier,
    cosigned_by,
    hash_leaf,
    open_note,
    parse_checkpoint,
    parse_proof,
    proof_text,
    verify_inclusion,
)

__all__ = [
    "BUNDLE_MEDIA_TYPE",
    "ProvenEntry",
    "is_bundle",
    "make_bundle",
    "proven_entry",
    "verify_bundle",
]

BUNDLE_MEDIA_TYPE = "application/vnd.replay-enclave.certificate-bundle.v1+json"
_PARTS = ("specimen_entry", "certificate_entry")
_ENTRY_KEYS = frozenset({"body", "index", "kind", "prev_hash", "recorded_at", "subject"})


@dataclass(frozen=True)
class ProvenEntry:
    """A ledger entry's canonical bytes and its proof of inclusion."""

    canonical: bytes
    proof: TlogProof

    def to_dict(self) -> dict[str, str]:
        return {
            "entry": base64.b64encode(self.canonical).decode(),
            "proof": proof_text(self.proof),
        }


def make_bundle(
    envelope: Mapping[str, Any], *, specimen: ProvenEntry, certificate: ProvenEntry
) -> dict[str, Any]:
    if specimen.proof.note != certificate.proof.note:
        raise ValueError("a bundle's proofs are against one checkpoint")
    return {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "envelope": dict(envelope),
        "specimen_entry": specimen.to_dict(),
        "certificate_entry": certificate.to_dict(),
    }


def is_bundle(document: Any) -> bool:
    """Whether ``document`` says it is a bundle (not whether it is a sound one)."""
    return isinstance(document, Mapping) and document.get("mediaType") == BUNDLE_MEDIA_TYPE


def _step_bundle(s: _State) -> str:
    bundle = s.raw if isinstance(s.raw, Mapping) else {}
    parts = [bundle.get(name) for name in _PARTS]
    if (
        set(bundle) != {"mediaType", "envelope", *_PARTS}
        or bundle.get("mediaType") != BUNDLE_MEDIA_TYPE
        or not all(
            isinstance(p, Mapping)
            and set(p) == {"entry", "proof"}
            and all(isinstance(v, str) for v in p.values())
            for p in parts
        )
    ):
        raise _Failed("not a certificate bundle (keys or media type)")
    s.bundle, s.raw = bundle, bundle["envelope"]
    return _step_envelope(s)


def _proof(s: _State, part: str) -> TlogProof:
    assert s.bundle is not None
    try:
        return parse_proof(s.bundle[part]["proof"])
    except ProofInvalid:
        raise _Failed(f"the {part.replace('_', ' ')}'s proof is not a C2SP tlog-proof") from None


def _step_checkpoint(s: _State) -> str:
    assert s.bundle is not None
    notes = {_proof(s, part).note for part in _PARTS}
    if len(notes) != 1:
        raise _Failed("the two proofs are against different checkpoints")
    (log_key,) = s.log_keys
    s.checkpoint, said = _open_checkpoint(notes.pop(), log_key, s.witnesses, s.quorum)
    return said


def _open_checkpoint(
    note: str, log_key: NoteVerifier, witnesses: Sequence[WitnessVerifier], quorum: int
) -> tuple[Checkpoint, str]:
    """The checkpoint in ``note`` once the log key's signature (and ``quorum`` of the
    witnesses' cosignatures) verify on it, and what was checked."""
    try:
        text, _ = open_note(note, [log_key])
        checkpoint = parse_checkpoint(text)
    except NoteInvalid:
        raise _Failed("the checkpoint is not signed by the log key") from None
    if checkpoint.origin != log_key.name:
        raise _Failed("the checkpoint is another log's")
    witnessed = ""
    if quorum:
        try:
            cosigners = cosigned_by(note, list(witnesses))
        except NoteInvalid:
            raise _Failed("a witness's cosignature does not verify") from None
        if len(cosigners) < quorum:
            raise _Failed(f"cosigned by {len(cosigners)} of the witnesses, {quorum} required")
        witnessed = f", cosigned by {len(cosigners)} of {len(witnesses)} witnesses"
    return checkpoint, f"signed by {checkpoint.origin} at {checkpoint.size} entries{witnessed}"


def _entry(s: _State, part: str) -> tuple[dict[str, Any], bytes]:
    """The entry's fields and bytes, once its leaf is proven in the checkpoint."""
    assert s.bundle is not None and s.checkpoint is not None
    return _leaf(s.bundle[part]["entry"], _proof(s, part), s.checkpoint, part.replace("_", " "))


def _leaf(
    entry: str, proof: TlogProof, checkpoint: Checkpoint, name: str
) -> tuple[dict[str, Any], bytes]:
    """The fields and bytes of ``entry`` (base64 canonical bytes), once ``proof``
    leads from its leaf to ``checkpoint``'s root."""
    try:
        data = base64.b64decode(entry, validate=True)
        fields = loads(data)
        canonical = canonical_json(fields) == data
    except (binascii.Error, ValueError, CanonicalizationError):
        raise _Failed(f"the {name} is not canonical JSON") from None
    if not canonical or not isinstance(fields, dict) or set(fields) != _ENTRY_KEYS:
        raise _Failed(f"the {name} is not a canonical ledger entry")
    if not isinstance(fields["body"], dict) or type(fields["index"]) is not int:
        raise _Failed(f"the {name} is not a canonical ledger entry")
    if proof.index != fields["index"]:
        raise _Failed(f"the {name}'s proof is for another index")
    try:
        verify_inclusion(
            hash_leaf(data), proof.index, checkpoint.size, proof.hashes, checkpoint.root
        )
    except ProofInvalid:
        raise _Failed(f"the {name}'s proof does not lead to the checkpoint's root") from None
    return fields, data


def proven_entry(
    part: Any,
    *,
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> tuple[dict[str, Any] | None, str]:
    """One proven entry ``{"entry": base64(canonical bytes), "proof": tlog-proof}`` as a
    bundle carries it: its fields once the checkpoint verifies with the log key (and,
    given witnesses, ``quorum`` of them — default all) and its leaf is proven in that
    checkpoint, with what was checked; else ``None`` and the first thing that failed."""
    needed = len(witnesses) if quorum is None else quorum
    try:
        if not (
            isinstance(part, Mapping)
            and set(part) == {"entry", "proof"}
            and all(isinstance(v, str) for v in part.values())
        ):
            raise _Failed("not a proven entry (keys)")
        try:
            proof = parse_proof(part["proof"])
        except ProofInvalid:
            raise _Failed("the entry's proof is not a C2SP tlog-proof") from None
        checkpoint, said = _open_checkpoint(proof.note, log_key, witnesses, needed)
        fields, _ = _leaf(part["entry"], proof, checkpoint, "entry")
    except _Failed as failure:
        return None, failure.detail
    return fields, f"entry {fields['index']} proven, {said}"


def _step_proven_subject(s: _State) -> str:
    assert s.statement is not None
    specimen_id, digest = specimen_of(s.statement)
    fields, data = _entry(s, "specimen_entry")
    body = fields["body"]
    if (
        fields["kind"] != "specimen.sealed"
        or fields["subject"] != specimen_id
        or body.get("specimen_id") != specimen_id
    ):
        raise _Failed("the specimen entry is not this specimen's seal")
    if body.get("manifest_digest") != digest:
        raise _Failed("subject digest differs from the sealed manifest digest")
    claimed = s.statement["predicate"]["ledger"]
    entry_hash = "sha256:" + hashlib.sha256(data).hexdigest()
    if (fields["index"], entry_hash) != (
        claimed["specimen_entry_index"],
        claimed["specimen_entry_hash"],
    ):
        raise _Failed("predicate.ledger differs from the specimen's ledger position")
    return f"specimen entry {fields['index']} with matching manifest digest, proven"


def _step_proven_entry(s: _State) -> str:
    assert s.statement is not None
    fields, _ = _entry(s, "certificate_entry")
    body = fields["body"]
    specimen_id, _digest = specimen_of(s.statement)
    if fields["kind"] != "certificate.issued" or body.get("envelope_digest") != envelope_digest(
        s.raw
    ):
        raise _Failed("the certificate entry does not name this envelope")
    if body.get("specimen_id") != specimen_id:
        raise _Failed("the certificate entry names another specimen")
    if fields["index"] <= s.statement["predicate"]["ledger"]["specimen_entry_index"]:
        raise _Failed("certificate entry precedes its specimen entry")
    return f"certificate.issued at entry {fields['index']}, proven"


_BUNDLE_STEPS = (
    _step_bundle,
    *_STEPS[1:4],
    _step_checkpoint,
    _step_proven_subject,
    _step_proven_entry,
)


def verify_bundle(
    bundle: Mapping[str, Any],
    *,
    public_key: Ed25519PublicKey | Mapping[str, Ed25519PublicKey],
    log_key: NoteVerifier,
    witnesses: Sequence[WitnessVerifier] = (),
    quorum: int | None = None,
) -> VerificationReport:
    """Run the bundle's seven steps (module docstring) with no ledger at hand; with
    ``witnesses``, step 5 also requires ``quorum`` of them (default: all) to have
    cosigned the checkpoint."""
    if not isinstance(log_key, NoteVerifier):
        raise TypeError("the log key is a NoteVerifier")
    if not all(isinstance(w, WitnessVerifier) for w in witnesses):
        raise TypeError("witnesses are WitnessVerifiers")
    needed = len(witnesses) if quorum is None else quorum
    if not 0 <= needed <= len(witnesses) or (witnesses and needed == 0):
        raise ValueError("the quorum is 1 to the number of witnesses")
    state = _State(
        raw=bundle,
        keys=_trusted(public_key),
        lookup=None,
        log_keys=(log_key,),
        witnesses=tuple(witnesses),
        quorum=needed,
    )
    return run_steps(state, _BUNDLE_STEPS, BUNDLE_CHECK_NAMES)
