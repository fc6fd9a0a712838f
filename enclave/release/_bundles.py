"""A stored release report as a bundle (``make_report_bundle``): the envelope with the
C2SP proof that the ledger holds its ``release.reported`` entry, against a checkpoint
the home's log key signed, and the bundle of every certificate it names — so that a
third party verifies the whole report offline (``verify_report_bundle``).

The report's entry is proven first: the checkpoint that covers it (the latest one, or
one signed now) covers every certificate entry before it, so the members' proofs are
normally against the same checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import BadInput, IntegrityFailure

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._runtime import Runtime

__all__ = ["report_bundle"]


def report_bundle(
    runtime: Runtime, report_id: str, *, may_read: Callable[[str], object] | None = None
) -> dict[str, Any]:
    """The bundle of the release report stored as ``report_id``. ``may_read`` is asked
    about each member's audit id before anything is proven (it raises to refuse)."""
    from ledger import Conflict, stored_report
    from ledger.certificates import ProvenEntry

    from .._log_key import LogKey
    from ..replay.certificates import certificate_bundle
    from ._verify import make_report_bundle

    ledger = runtime.ledger
    stored = stored_report(ledger.engine, report_id)
    if stored is None:
        raise BadInput("no stored release report has that id")
    reported = [
        e
        for e in ledger.entries(kind="release.reported", subject=stored.selection_digest)
        if e.body.get("report_id") == report_id
        and e.body.get("envelope_digest") == stored.envelope_digest
    ]
    named: dict[str, str] = {
        row["certificate"]: str(row.get("audit"))
        for row in stored.predicate.get("specimens") or ()
        if isinstance(row, dict) and row.get("certificate") is not None
    }
    # each member's own entry, looked up by its audit (the ledger's subject index)
    issued = {
        digest
        for digest, audit_id in named.items()
        if any(
            e.body.get("envelope_digest") == digest
            for e in ledger.entries(kind="certificate.issued", subject=audit_id)
        )
    }
    if not reported or issued != set(named):
        raise IntegrityFailure("the ledger holds no entry for a stored release report")
    members = [named[digest] for digest in sorted(named)]
    if may_read is not None:
        for audit_id in members:
            may_read(audit_id)
    log = LogKey.of(runtime)
    try:
        ((canonical, proof),) = ledger.prove_entries(
            reported[:1], origin=log.origin, signer=log.verifier, sign=log.sign
        )
    except Conflict:
        raise IntegrityFailure("the ledger does not extend its signed checkpoints") from None
    return make_report_bundle(
        stored.envelope,
        report_entry=ProvenEntry(canonical, proof),
        certificates=[certificate_bundle(runtime, audit_id) for audit_id in members],
    )
