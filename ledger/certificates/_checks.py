"""What a verification reports: named checks in step order.

Standard library only, so whoever carries a report (the analyst's wire objects) does
not load the verifier's cryptography and schemas to name its checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BUNDLE_CHECK_NAMES", "CHECK_NAMES", "VerificationCheck", "VerificationReport"]

CHECK_NAMES = ("envelope", "signature", "statement", "predicate", "subject", "ledger_entry")
# offline, from a bundle: the log's signed checkpoint, then the two entries proven in it
BUNDLE_CHECK_NAMES = CHECK_NAMES[:4] + ("checkpoint", "subject", "ledger_entry")


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationCheck:
    step: int
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True, slots=True, kw_only=True)
class VerificationReport:
    """The checks ``names`` lists, in step order. ``statement`` is set once steps 1–3
    passed; ``finding`` (``ledger.certificates.finding``) once every check passed: the
    verifier's own sentence, re-derived from the figures it verified."""

    checks: tuple[VerificationCheck, ...]
    statement: dict[str, Any] | None = None
    names: tuple[str, ...] = CHECK_NAMES
    finding: str | None = None

    @property
    def ok(self) -> bool:
        ran = tuple(c.name for c in self.checks)
        return ran == self.names and all(c.ok for c in self.checks)

    @property
    def first_failure(self) -> VerificationCheck | None:
        return next((c for c in self.checks if not c.ok), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checks": [c.to_dict() for c in self.checks],
            "finding": self.finding if self.ok else None,
        }
