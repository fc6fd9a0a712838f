"""Cedar decisions are remembered per distinct set of attributes, and a resource's id is
left out of the memo's key only when no policy can read it (that remembered decisions
equal fresh ones: ``test_governance``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import cedarpy
import pytest

from enclave.governance import AccessPolicy, Action, Analyst, Resource, policies_root

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
CLASSES = ("public", "internal", "confidential", "restricted")


def _fresh(policy_dir: Path | None = None) -> AccessPolicy:
    return AccessPolicy.load(policy_dir)


def test_a_page_costs_one_evaluation_per_distinct_set_of_attributes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evaluated: list[int] = []
    real = cedarpy.is_authorized_batch

    def counting(requests: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        evaluated.append(len(requests))
        return real(requests, *args, **kwargs)

    monkeypatch.setattr(cedarpy, "is_authorized_batch", counting)
    access = _fresh()
    who = Analyst(name="p", tenant="acme", roles=("viewer",), created_at="x")
    page = [
        Resource(kind="Audit", id=f"au-{n}", tenant="acme", classification=CLASSES[n % 2])
        for n in range(50)
    ]
    decisions = access.authorize_many(who, Action.READ_AUDIT, page, now=T0)
    assert evaluated == [2]
    assert [d.allowed for d in decisions] == [True] * 50
    access.authorize_many(who, Action.READ_AUDIT, page, now=T0)
    assert evaluated == [2]  # the same second: remembered
    access.authorize_many(who, Action.READ_AUDIT, page, now=T0 + timedelta(seconds=1))
    assert evaluated == [2, 2]  # the time is part of what Cedar sees


def test_a_policy_that_names_a_resource_keeps_ids_in_the_key(tmp_path: Path) -> None:
    source = policies_root() / "access"
    (tmp_path / "schema.cedarschema").write_text((source / "schema.cedarschema").read_text())
    (tmp_path / "enclave.cedar").write_text(
        'permit (principal, action == Action::"read_audit", resource)\n'
        'when { resource == Audit::"au-open" };\n'
    )
    access = _fresh(tmp_path)
    assert access._memo._id_blind is False
    assert _fresh()._memo._id_blind is True  # the shipped policies read no ids
    who = Analyst(name="p", tenant="acme", roles=("viewer",), created_at="x")
    twins = [
        Resource(kind="Audit", id=name, tenant="acme", classification="internal")
        for name in ("au-open", "au-shut", "au-open2")
    ]
    codes = [d.code for d in access.authorize_many(who, Action.READ_AUDIT, twins, now=T0)]
    assert codes == ["allowed", "not_permitted", "not_permitted"]
    assert [access.authorize(who, Action.READ_AUDIT, r, now=T0).code for r in twins] == codes


@pytest.mark.parametrize(
    ("action", "scope", "blind"),
    [
        ("read_audit", "resource", True),
        ("read_audit", "resource is Audit", True),
        ("read_audit", 'resource == Audit::"au-1"', False),
        ("list_specimens", 'resource in Tenant::"acme"', False),
        ("list_specimens", 'resource is Tenant in Tenant::"acme"', False),
    ],
)
def test_resource_scopes_that_read_an_id(
    tmp_path: Path, action: str, scope: str, blind: bool
) -> None:
    source = policies_root() / "access"
    (tmp_path / "schema.cedarschema").write_text((source / "schema.cedarschema").read_text())
    (tmp_path / "enclave.cedar").write_text(
        f'permit (principal, action == Action::"{action}", {scope});\n'
    )
    assert _fresh(tmp_path)._memo._id_blind is blind
