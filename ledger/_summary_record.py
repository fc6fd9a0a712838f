"""The record a specimen listing shows, and the classification it names.

``SpecimenSummary`` is the one projection of a specimen that goes on the wire: the CLI's
``specimens list --json`` prints ``to_dict()`` and the service's ``GET /specimens`` items
(and the summary part of ``GET /specimens/{id}``) are the same dict, checked against the
service's response model field by field (``tests/unit/service/test_reads_service.py``).

Apart from ``_records`` (which re-exports both) so that listing specimens creates only
these two classes, not every record type of the ledger: each frozen dataclass costs
about a millisecond to create, paid by every process that imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only a type here: importing ``_records`` would undo the split above
    from ._records import SpecimenRecord

__all__ = ["Classification", "SpecimenSummary"]


class Classification(StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"

    @property
    def rank(self) -> int:
        return list(Classification).index(self)


@dataclass(frozen=True, slots=True)
class SpecimenSummary:
    """One line of a specimen listing: identities and status, no manifest content."""

    specimen_id: str
    tenant_id: str
    agent_name: str
    agent_version: str
    manifest_digest: str
    highest_classification: Classification
    sealed_at: str
    step_count: int
    erased: bool
    legal_hold: bool

    @classmethod
    def of(cls, record: SpecimenRecord) -> SpecimenSummary:
        """The summary of a whole record: what a listing shows for the same specimen."""
        return cls(
            specimen_id=record.specimen_id,
            tenant_id=record.tenant_id,
            agent_name=record.agent_name,
            agent_version=record.agent_version,
            manifest_digest=record.manifest_digest,
            highest_classification=Classification(record.highest_classification),
            sealed_at=record.sealed_at,
            step_count=len(record.steps),
            erased=record.erased,
            legal_hold=record.legal_hold,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "specimen_id": self.specimen_id,
            "tenant_id": self.tenant_id,
            "agent_name": self.agent_name,
            "agent_version": self.agent_version,
            "manifest_digest": self.manifest_digest,
            "highest_classification": self.highest_classification.value,
            "sealed_at": self.sealed_at,
            "step_count": self.step_count,
            "erased": self.erased,
            "legal_hold": self.legal_hold,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SpecimenSummary:
        expected = {
            "specimen_id",
            "tenant_id",
            "agent_name",
            "agent_version",
            "manifest_digest",
            "highest_classification",
            "sealed_at",
            "step_count",
            "erased",
            "legal_hold",
        }
        if set(data) != expected:
            raise ValueError("specimen summary has missing or unknown keys")
        strings = (
            "specimen_id",
            "tenant_id",
            "agent_name",
            "agent_version",
            "manifest_digest",
            "sealed_at",
        )
        if not all(isinstance(data[k], str) for k in strings):
            raise ValueError("specimen summary identities must be strings")
        count = data["step_count"]
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ValueError("step_count must be a non-negative integer")
        if not isinstance(data["erased"], bool) or not isinstance(data["legal_hold"], bool):
            raise ValueError("erased and legal_hold must be booleans")
        return cls(
            specimen_id=data["specimen_id"],
            tenant_id=data["tenant_id"],
            agent_name=data["agent_name"],
            agent_version=data["agent_version"],
            manifest_digest=data["manifest_digest"],
            highest_classification=Classification(data["highest_classification"]),
            sealed_at=data["sealed_at"],
            step_count=count,
            erased=data["erased"],
            legal_hold=data["legal_hold"],
        )
