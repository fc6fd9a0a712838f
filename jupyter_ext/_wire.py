"""Wire objects exchanged with the enclave service (frozen, checked on the way in)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any

from ledger.certificates import VerificationCheck

from ._errors import BadResponse

__all__ = ["AuditRequestBody", "AuditStatus", "VerifyCheck", "VerifyReport", "TERMINAL_STATES"]

STATES = ("QUEUED", "RUNNING", "FINALIZING", "COMPLETED", "FAILED", "CANCELLED")
TERMINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED"})
STRATEGIES = ("NULLIFY", "REPLACE", "PERTURB", "REVISION")


def _str(data: Mapping[str, Any], key: str, *, optional: bool = False) -> str | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise BadResponse(f"service answer lacks a string {key!r}")
    return value


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key, 0)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadResponse(f"service answer has a non-integer {key!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRequestBody:
    """What ``POST /audits`` takes. Either a field intervention (call, field, strategy
    and its parameter) or a declared revision swap ``name=identity``. Strategies are
    named in upper case here, as the panels show them, and sent in the service's."""

    specimen_id: str
    purpose: str
    samples: int = 20
    seed: int = 1
    call_id: str | None = None
    field: str | None = None
    strategy: str | None = None
    value: Any = None
    has_value: bool = False
    delta: float | None = None
    revision: str | None = None
    tolerances: Mapping[str, float | str] = _field(default_factory=dict)
    policy_id: str | None = None
    from_cut: str | None = None  # a cut the specimen recorded: replay starts there
    per_sample: bool = False  # every count (a v2 certificate), where the policy grants it

    def __post_init__(self) -> None:
        if self.strategy is not None:
            object.__setattr__(self, "strategy", self.strategy.upper())
        if not self.specimen_id:
            raise ValueError("a specimen is required")
        if not self.purpose.strip():
            raise ValueError("a purpose is required: it is recorded in the ledger")
        if self.samples < 2:
            raise ValueError("samples must be at least 2")
        if self.seed < 0:
            raise ValueError("seed must not be negative")
        # the intervention itself is judged by the service's one intervention model (its
        # refusal comes back as ``ServiceRefused`` with that model's one line): no second
        # set of rules here to disagree with it

    def intervention(self) -> dict[str, Any]:
        """The intervention part as the service takes it (strategies in lower case)."""
        out: dict[str, Any] = {}
        if self.revision is not None and self.strategy in (None, "REVISION"):
            out["strategy"] = "revision"
        elif self.strategy is not None:
            out["strategy"] = self.strategy.lower()  # the service's spelling
        for name in ("call_id", "field", "delta", "revision"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.has_value:
            out["value"] = self.value
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "specimen_id": self.specimen_id,
            "purpose": self.purpose,
            "samples": self.samples,
            "seed": self.seed,
            **self.intervention(),
        }
        if self.tolerances:
            out["tolerances"] = dict(self.tolerances)
        if self.policy_id is not None:
            out["policy_id"] = self.policy_id
        if self.from_cut is not None:
            out["from_cut"] = self.from_cut  # sent only when a cut is chosen
        if self.per_sample:
            out["detail"] = "per-sample"  # sent only when asked for: the default is coarse
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditStatus:
    audit_id: str
    status: str
    progress_done: int = 0
    progress_total: int = 0
    classification: str | None = None
    auditability: str | None = None
    failure_code: str | None = None
    has_certificate: bool = False
    specimen_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    finding: str | None = None  # the certificate's, or a failed audit's

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATES

    @property
    def fraction(self) -> float:
        return self.progress_done / self.progress_total if self.progress_total else 0.0

    @classmethod
    def from_dict(cls, data: object) -> AuditStatus:
        if not isinstance(data, Mapping):
            raise BadResponse("audit status is not an object")
        status = _str(data, "status")
        if status not in STATES:
            raise BadResponse("audit status has an unknown state")
        auditability = data.get("auditability")
        if isinstance(auditability, Mapping):  # tolerate the predicate's object form
            auditability = auditability.get("class")
        return cls(
            audit_id=_str(data, "audit_id") or "",
            status=status,
            progress_done=_int(data, "progress_done"),
            progress_total=_int(data, "progress_total"),
            classification=_str(data, "classification", optional=True),
            auditability=auditability if isinstance(auditability, str) else None,
            failure_code=_str(data, "failure_code", optional=True),
            has_certificate=bool(data.get("has_certificate", False)),
            specimen_id=_str(data, "specimen_id", optional=True),
            created_at=_str(data, "created_at", optional=True),
            updated_at=_str(data, "updated_at", optional=True),
            finding=_str(data, "finding", optional=True),
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


# One check type on both sides: the analyst's reports hold the verifier's own checks
# (``ledger.certificates.VerificationCheck``), under the name this front has always had.
VerifyCheck = VerificationCheck


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyReport:
    ok: bool
    checks: tuple[VerificationCheck, ...]
    finding: str | None = None  # the verifier's own sentence, when every check passed

    @classmethod
    def from_dict(cls, data: object) -> VerifyReport:
        if not isinstance(data, Mapping) or not isinstance(data.get("checks"), list):
            raise BadResponse("verification report is not an object with checks")
        checks = []
        for item in data["checks"]:
            if not isinstance(item, Mapping):
                raise BadResponse("verification check is not an object")
            checks.append(
                VerificationCheck(
                    step=_int(item, "step"),
                    name=_str(item, "name") or "",
                    ok=item.get("ok") is True,
                    detail=str(item.get("detail") or ""),
                )
            )
        ok = data.get("ok") is True and all(c.ok for c in checks) and bool(checks)
        found = data.get("finding")
        finding = found if ok and isinstance(found, str) else None
        return cls(ok=ok, checks=tuple(checks), finding=finding)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checks": [c.to_dict() for c in self.checks],
            "finding": self.finding,
        }

    def _repr_html_(self) -> str:
        from ._render import verify_html  # rendering imports the wire objects

        return verify_html(self)
