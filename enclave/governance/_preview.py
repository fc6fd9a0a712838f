"""A no-run preview of a policy's counterfactuals on one sealed specimen.

Inside the enclave: the specimen is opened through a single-use grant, each authorised
parameter is applied to the recorded trajectory with ``apply_intervention`` (which
validates the counterfactual against the field's schema and proves nothing undeclared
changed), and only metadata leaves: keyed digests of the original and counterfactual
values, schema validity, and whether the value changed. Nothing is replayed; no
captured value and no parameter value is returned.

The preview passes when the target resolves and at least one authorised parameter
yields a schema-valid change; parameters that do not are reported individually.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .._errors import BadInput, Refused
from .._runtime import Runtime
from ..capture import load_agent
from ..replay import Intervention, Strategy
from ..replay.certificates import publish_digests
from ..replay.runs import apply_intervention, open_specimen
from ._policy import InterventionPolicy

__all__ = ["Preview", "PreviewParameter", "preview_policy"]

_PREVIEW_LEASE_SECONDS = 60


@dataclass(frozen=True)
class PreviewParameter:
    label: str  # "alternates[0]", "delta.min", "neutral" — a position, never a value
    call_id: str
    ok: bool
    code: str | None
    schema_valid: bool
    changes: bool
    original_digest: str | None
    counterfactual_digest: str | None
    unchanged_digest_equal: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "parameter": self.label,
            "call_id": self.call_id,
            "ok": self.ok,
            "code": self.code,
            "schema_valid": self.schema_valid,
            "changes": self.changes,
            "original_digest": self.original_digest,
            "counterfactual_digest": self.counterfactual_digest,
            "unchanged_digest_equal": self.unchanged_digest_equal,
        }


@dataclass(frozen=True)
class Preview:
    specimen_id: str
    manifest_digest: str
    ok: bool
    code: str | None
    parameters: tuple[PreviewParameter, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "specimen_id": self.specimen_id,
            "manifest_digest": self.manifest_digest,
            "ok": self.ok,
            "code": self.code,
            "parameters": [p.to_dict() for p in self.parameters],
        }


def _interventions(policy: InterventionPolicy, call_id: str) -> list[tuple[str, Intervention]]:
    params, strategy = policy.params, policy.strategy
    if strategy is Strategy.REVISION:
        point = params.revision_point or ""
        return [
            (f"alternates[{i}]", Intervention(strategy, revision=(point, str(alt))))
            for i, alt in enumerate(params.alternates)
        ]
    if strategy is Strategy.REPLACE:
        return [
            (
                f"alternates[{i}]",
                Intervention(strategy, call_id=call_id, field=policy.field, value=alt),
            )
            for i, alt in enumerate(params.alternates)
        ]
    if strategy is Strategy.PERTURB:
        assert params.delta is not None
        return [
            (label, Intervention(strategy, call_id=call_id, field=policy.field, delta=bound))
            for label, bound in (("delta.min", params.delta[0]), ("delta.max", params.delta[1]))
            if bound != 0
        ]
    return [("neutral", Intervention(strategy, call_id=call_id, field=policy.field))]


def preview_policy(
    runtime: Runtime, policy: InterventionPolicy, specimen_id: str, *, now: datetime
) -> Preview:
    job_id = f"preview-{secrets.token_hex(6)}"
    opened = open_specimen(
        runtime, specimen_id, job_id=job_id, lease_seconds=_PREVIEW_LEASE_SECONDS, now=now
    )
    record = opened.record
    runtime.ledger.append(
        "policy.previewed",
        policy.label,
        {
            "policy_id": policy.id,
            "version": policy.version,
            "specimen_id": specimen_id,
            "grant": {"provider": opened.grant_provider, "accessor": opened.grant_accessor},
            "at": now.isoformat(),
        },
    )

    def empty(code: str) -> Preview:
        return Preview(specimen_id, record.manifest_digest, False, code, ())

    if record.tenant_id != policy.tenant:
        return empty("wrong_tenant")
    targets = [
        s
        for s in record.steps
        if s.name == policy.tool
        and s.schema_id == policy.schema_id
        and s.schema_version == policy.schema_version
    ]
    if not targets:
        return empty("unknown_call")
    agent = load_agent(record.agent_name)
    digester = runtime.digests.for_tenant(record.tenant_id)
    results: list[PreviewParameter] = []
    for step in targets:
        for label, intervention in _interventions(policy, step.call_id):
            try:
                applied = publish_digests(
                    specimen_id,
                    intervention,
                    apply_intervention(
                        opened.trajectory, intervention, agent=agent, digester=digester
                    ),
                    digester,
                )
            except (Refused, BadInput) as exc:
                # only "no_change" is raised after the schema check passed
                results.append(
                    PreviewParameter(
                        label,
                        step.call_id,
                        False,
                        exc.code,
                        exc.code == "no_change",
                        False,
                        None,
                        None,
                        None,
                    )
                )
                continue
            results.append(
                PreviewParameter(
                    label,
                    applied.target_call_id,
                    True,
                    None,
                    True,
                    True,
                    applied.original_digest,
                    applied.counterfactual_digest,
                    applied.unchanged_digest_equal,
                )
            )
    if any(p.code == "unresolvable" for p in results):
        return Preview(specimen_id, record.manifest_digest, False, "unresolvable", tuple(results))
    ok = any(p.ok for p in results)
    return Preview(
        specimen_id,
        record.manifest_digest,
        ok,
        None if ok else "no_valid_counterfactual",
        tuple(results),
    )
