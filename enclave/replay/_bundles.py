"""A stored certificate as a bundle (``ledger.certificates.make_bundle``): the envelope
with C2SP proofs that the ledger holds its ``certificate.issued`` and its specimen's
``specimen.sealed`` entries, against a checkpoint the home's log key signed — the
latest one when it covers both, else one signed now."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import BadInput, IntegrityFailure

if TYPE_CHECKING:
    from .._runtime import Runtime

__all__ = ["certificate_bundle"]


def certificate_bundle(runtime: Runtime, audit_id: str) -> dict[str, Any]:
    """The bundle of the certificate stored for ``audit_id``."""
    from ledger import Conflict, stored_certificate
    from ledger.certificates import ProvenEntry, envelope_digest, make_bundle

    from .._log_key import LogKey

    ledger = runtime.ledger
    stored = stored_certificate(ledger.engine, audit_id)
    if stored is None:
        raise BadInput("no stored certificate has that audit id")
    digest = envelope_digest(stored.envelope)
    issued = [
        e
        for e in ledger.entries(kind="certificate.issued", subject=audit_id)
        if e.body.get("envelope_digest") == digest
    ]
    sealed = ledger.entries(kind="specimen.sealed", subject=stored.specimen_id)
    if not issued or not sealed:
        raise IntegrityFailure("the ledger holds no entry for a stored certificate")
    log = LogKey.of(runtime)
    try:
        specimen, certificate = ledger.prove_entries(
            [sealed[0], issued[0]], origin=log.origin, signer=log.verifier, sign=log.sign
        )
    except Conflict:
        raise IntegrityFailure("the ledger does not extend its signed checkpoints") from None
    return make_bundle(
        stored.envelope,
        specimen=ProvenEntry(*specimen),
        certificate=ProvenEntry(*certificate),
    )
