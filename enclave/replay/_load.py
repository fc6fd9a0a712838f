"""Open a sealed specimen inside the enclave: grant, decrypt, rebuild the trajectory.

Before any grant is issued, the agent's code on disk must be the code the specimen was
captured with (``enclave.capture._code_identity.check_code``), or the audit's declared
code revision. The data key is obtained through a single-use grant for exactly this
specimen and job, redeemed once, and the grant is revoked whatever happens. Only the
grant's accessor leaves this module. The grant comes from ``runtime.grants``: this
process's own broker, or — a replay worker in Vault mode — the service, for the job
the worker has claimed (``enclave.keys._provider.GrantSource``).

Run-time identities (an undeclared alias or resolved identity, every idempotency token,
an answer's own valid time) are keyed digests in the ledger; the trajectory takes their
plaintext from the specimen's encrypted ``identity`` frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledger import NotFound, RunStatus, SpecimenRecord

from .._errors import DecryptionFailed, GrantRefused, Refused
from .._runtime import Runtime
from ..capture import check_code, decode_payload
from ._inference_record import record_key
from ._model import HOLE, RecordedStep, Trajectory

__all__ = ["OpenedSpecimen", "open_specimen"]

_DIGEST_ONLY = {"$hole": "digest-only"}


@dataclass(frozen=True)
class OpenedSpecimen:
    record: SpecimenRecord
    trajectory: Trajectory
    grant_accessor: str
    grant_provider: str
    # the key of the audit's own sealed answers (``_inference_record``), derived from the
    # data key, which is gone by now
    record_key: bytes = field(default=b"", repr=False)


def open_specimen(
    runtime: Runtime,
    specimen_id: str,
    *,
    job_id: str,
    lease_seconds: int,
    now: datetime,
    code_revision: str | None = None,
) -> OpenedSpecimen:
    # 1. a run that began but never sealed (crashed, still running) is refused as such
    try:
        status = runtime.ledger.run_status(specimen_id)
    except NotFound:
        status = None
    if status is not None and status is not RunStatus.SEALED:
        raise Refused("the specimen's run is not sealed and complete", code="not_sealed")
    try:
        record = runtime.ledger.get_specimen(specimen_id)
    except NotFound:
        raise Refused("no sealed specimen has that id", code="unknown_specimen") from None
    if _erased(runtime, specimen_id):
        raise Refused("the specimen was erased; its evidence is unresolvable", code="unresolvable")
    # 2. the code that will run is the code that was captured (or the declared revision)
    check_code(record.manifest.get("code"), record.agent_name, code_revision=code_revision)
    try:
        wrapped = runtime.payloads.wrapped_key(record.tenant_id, specimen_id)
    except DecryptionFailed:
        raise Refused(
            "the specimen's key material is gone; unresolvable", code="unresolvable"
        ) from None
    grants = runtime.grants
    grant = grants.grant(
        record.tenant_id, specimen_id, wrapped, job_id=job_id, ttl_seconds=lease_seconds, now=now
    )
    try:
        data_key = grant.redeem(now=now)
    except GrantRefused:
        raise Refused("the key grant could not be redeemed", code="grant_refused") from None
    finally:
        grant.revoke()
    try:
        fields = runtime.payloads.read_fields(record.tenant_id, specimen_id, data_key=data_key)
        inference_key = record_key(data_key)
    finally:
        del data_key
    return OpenedSpecimen(
        record=record,
        trajectory=_trajectory(record, fields),
        grant_accessor=grant.accessor,
        grant_provider=grants.name,
        record_key=inference_key,
    )


def _erased(runtime: Runtime, specimen_id: str) -> bool:
    return bool(runtime.ledger.entries(kind="specimen.erased", subject=specimen_id))


def _identity(fields: dict[tuple[int, str, str], bytes], seq: int, name: str, shown: Any) -> Any:
    """A step's run-time identity from its sealed frame; else the ledger's (declared) one."""
    plain = fields.get((seq, "identity", "/" + name))
    return shown if plain is None else decode_payload(plain)


def _trajectory(record: SpecimenRecord, fields: dict[tuple[int, str, str], bytes]) -> Trajectory:
    steps = []
    for step in record.manifest["steps"]:
        sides: dict[str, dict[str, Any]] = {"request": {}, "response": {}}
        live: list[str] = []
        for f in step["fields"]:
            name = f["path"][1:]
            if f["retention"] == "encrypted":
                value = decode_payload(fields[(step["seq"], f["side"], f["path"])])
            elif f["retention"] == "digest":
                value = dict(_DIGEST_ONLY)
            else:
                value = dict(HOLE)
            sides[f["side"]][name] = value
            if f.get("live_state"):
                live.append(name)
        effect = step.get("effect")
        seq = step["seq"]
        steps.append(
            RecordedStep(
                seq=step["seq"],
                agent=step["agent"],
                call_id=step["call_id"],
                kind=step["kind"],
                name=step["name"],
                alias=_identity(fields, seq, "alias", step.get("alias")),
                resolved=_identity(fields, seq, "resolved", step.get("resolved")),
                request=sides["request"],
                response=sides["response"],
                live_state=tuple(live),
                token_expires_at=effect.get("token_expires_at") if effect else None,
                side_effecting=effect is not None,
                idempotency_token=_identity(fields, seq, "idempotency_token", None),
            )
        )
    return Trajectory(
        specimen_id=record.specimen_id,
        agent=record.agent_name,
        seed=int(record.manifest["seed"]),
        steps=tuple(steps),
    )
