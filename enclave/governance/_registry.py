"""The policy registry and its lifecycle: draft -> validated -> active -> retired.

Invariants:

1. A policy is stored once per (id, version) and never edited: loading the same id and
   version again is accepted only with byte-identical source (same ``source_digest``).
2. Only these transitions exist: draft -> validated (validation passed),
   validated -> active, and draft|validated|active -> retired. Retired is final.
   Each is a compare-and-set on the current status, so two racing operators cannot
   both win.
3. Activating a version retires the other active versions of the same policy id.
   Two *different* active policies may match the same tool, field and strategy; an
   audit request then refuses as ambiguous (``_eligibility``) rather than pick one.
4. Every transition appends a ``policy.<status>`` ledger entry (metadata only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from ledger import Conflict
from ledger.transactions import read, write

from .._errors import BadInput, Refused
from .._runtime import Runtime
from ._policy import InterventionPolicy, PolicyStatus
from ._preview import Preview, preview_policy
from ._schemas import find_tool, parameter_problems

__all__ = [
    "ValidationReport",
    "activate_policy",
    "get_policy",
    "list_policies",
    "load_policy",
    "load_policy_file",
    "retire_policy",
    "validate_policy",
]

_ALLOWED = {
    PolicyStatus.VALIDATED: {PolicyStatus.DRAFT, PolicyStatus.VALIDATED},
    PolicyStatus.ACTIVE: {PolicyStatus.VALIDATED},
    PolicyStatus.RETIRED: {PolicyStatus.DRAFT, PolicyStatus.VALIDATED, PolicyStatus.ACTIVE},
}


def _iso(now: datetime) -> str:
    return now.isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ValidationReport:
    policy: InterventionPolicy
    ok: bool
    problems: tuple[str, ...]
    preview: Preview | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": {"id": self.policy.id, "version": self.policy.version},
            "status": self.policy.status.value,
            "ok": self.ok,
            "problems": list(self.problems),
            "preview": None if self.preview is None else self.preview.to_dict(),
        }


def load_policy(
    runtime: Runtime, policy: InterventionPolicy, *, now: datetime
) -> InterventionPolicy:
    """Store ``policy`` as a draft (idempotent for identical source)."""
    from ledger.tables import InterventionPolicyRow, table_of

    table = table_of(InterventionPolicyRow)
    stamp = _iso(now)
    draft = replace(
        policy,
        status=PolicyStatus.DRAFT,
        created_at=stamp,
        updated_at=stamp,
        activated_at=None,
        retired_at=None,
    )
    with write(runtime.ledger.engine) as conn:
        existing = (
            conn.execute(
                sa.select(table).where(table.c.id == policy.id, table.c.version == policy.version)
            )
            .mappings()
            .first()
        )
        if existing is not None:
            if existing["source_digest"] != policy.source_digest:
                raise BadInput(
                    "that policy id and version is already loaded with other content; "
                    "bump the version"
                )
            return InterventionPolicy.from_row(existing)
        conn.execute(sa.insert(table), draft.to_row())
    runtime.ledger.append("policy.draft", draft.label, {**draft.ledger_body(), "at": stamp})
    return draft


def load_policy_file(runtime: Runtime, path: Path, *, now: datetime) -> InterventionPolicy:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput("policy file not found") from None
    except OSError:
        raise BadInput("policy file cannot be read") from None
    return load_policy(runtime, InterventionPolicy.from_toml(data), now=now)


def list_policies(
    runtime: Runtime, *, status: PolicyStatus | None = None, tenant: str | None = None
) -> list[InterventionPolicy]:
    from ledger.tables import InterventionPolicyRow, table_of

    table = table_of(InterventionPolicyRow)
    query = sa.select(table)
    if status is not None:
        query = query.where(table.c.status == status.value)
    if tenant is not None:
        query = query.where(table.c.tenant == tenant)
    query = query.order_by(table.c.id, table.c.version)
    with read(runtime.ledger.engine) as conn:
        rows = conn.execute(query).mappings().all()
    return [InterventionPolicy.from_row(row) for row in rows]


def get_policy(runtime: Runtime, policy_id: str, version: int | None = None) -> InterventionPolicy:
    """One policy; ``version=None`` means the highest loaded version."""
    from ledger.tables import InterventionPolicyRow, table_of

    table = table_of(InterventionPolicyRow)
    query = sa.select(table).where(table.c.id == policy_id)
    if version is not None:
        query = query.where(table.c.version == version)
    query = query.order_by(table.c.version.desc()).limit(1)
    with read(runtime.ledger.engine) as conn:
        row = conn.execute(query).mappings().first()
    if row is None:
        raise BadInput("no such policy (id and version)")
    return InterventionPolicy.from_row(row)


def _transition(
    runtime: Runtime, policy: InterventionPolicy, target: PolicyStatus, *, now: datetime
) -> InterventionPolicy:
    from ledger.tables import InterventionPolicyRow, table_of

    table = table_of(InterventionPolicyRow)
    stamp = _iso(now)
    allowed = _ALLOWED[target]
    if policy.status not in allowed:
        raise Refused(
            f"a {policy.status.value} policy cannot become {target.value}",
            code="invalid_transition",
        )
    values: dict[str, Any] = {"status": target.value, "updated_at": stamp}
    if target is PolicyStatus.ACTIVE:
        values["activated_at"] = stamp
    if target is PolicyStatus.RETIRED:
        values["retired_at"] = stamp
    superseded: list[Mapping[Any, Any]] = []
    try:
        with write(runtime.ledger.engine) as conn:
            done = conn.execute(
                sa.update(table)
                .where(
                    table.c.id == policy.id,
                    table.c.version == policy.version,
                    table.c.status == policy.status.value,
                )
                .values(**values)
            )
            if done.rowcount != 1:
                raise Refused(
                    "the policy's status changed meanwhile; reload it", code="invalid_transition"
                )
            if target is PolicyStatus.ACTIVE:
                superseded = list(
                    conn.execute(
                        sa.select(table.c.id, table.c.version).where(
                            table.c.id == policy.id,
                            table.c.version != policy.version,
                            table.c.status == PolicyStatus.ACTIVE.value,
                        )
                    ).mappings()
                )
                conn.execute(
                    sa.update(table)
                    .where(
                        table.c.id == policy.id,
                        table.c.version != policy.version,
                        table.c.status == PolicyStatus.ACTIVE.value,
                    )
                    .values(status=PolicyStatus.RETIRED.value, updated_at=stamp, retired_at=stamp)
                )
    except Conflict:
        raise Refused(
            "the policy's status changed meanwhile; reload it", code="invalid_transition"
        ) from None
    updated = replace(
        policy,
        status=target,
        updated_at=stamp,
        activated_at=values.get("activated_at", policy.activated_at),
        retired_at=values.get("retired_at", policy.retired_at),
    )
    items = [(f"policy.{target.value}", updated.label, {**updated.ledger_body(), "at": stamp})]
    for old in superseded:
        items.append(
            (
                "policy.retired",
                f"{old['id']}@{old['version']}",
                {
                    "policy_id": old["id"],
                    "version": old["version"],
                    "superseded_by": policy.version,
                    "at": stamp,
                },
            )
        )
    runtime.ledger.append_many(items)
    return updated


def validate_policy(
    runtime: Runtime,
    policy_id: str,
    version: int | None = None,
    *,
    now: datetime,
    specimen_id: str | None = None,
) -> ValidationReport:
    """Check the policy against its tool's declared schema; on success a draft becomes
    validated. With ``specimen_id``, also preview the counterfactual on that specimen
    (digests and schema validity only; nothing is replayed)."""
    policy = get_policy(runtime, policy_id, version)
    if policy.status not in (PolicyStatus.DRAFT, PolicyStatus.VALIDATED):
        raise Refused(
            f"a {policy.status.value} policy is not validated again", code="invalid_transition"
        )
    try:
        tool = find_tool(policy)
        problems = parameter_problems(policy, tool)
    except Refused as exc:
        problems = [exc.code]
    preview = None
    if specimen_id is not None and not problems:
        preview = preview_policy(runtime, policy, specimen_id, now=now)
        if not preview.ok:
            problems = [f"preview:{preview.code}"]
            problems += [f"preview:{p.label}:{p.code}" for p in preview.parameters if not p.ok]
    if problems:
        return ValidationReport(policy, False, tuple(problems), preview)
    if policy.status is PolicyStatus.DRAFT:
        policy = _transition(runtime, policy, PolicyStatus.VALIDATED, now=now)
    return ValidationReport(policy, True, (), preview)


def activate_policy(
    runtime: Runtime, policy_id: str, version: int | None = None, *, now: datetime
) -> InterventionPolicy:
    return _transition(
        runtime, get_policy(runtime, policy_id, version), PolicyStatus.ACTIVE, now=now
    )


def retire_policy(
    runtime: Runtime, policy_id: str, version: int | None = None, *, now: datetime
) -> InterventionPolicy:
    return _transition(
        runtime, get_policy(runtime, policy_id, version), PolicyStatus.RETIRED, now=now
    )
