"""The closed vocabularies of a certificate's verdict: the label an audit ends with, and
its auditability class and reasons.

One definition, used by the enclave when it decides (``enclave.replay``) and by the
predicate schema and rules when they check (``_schema_v2``, ``_rules_v2``). Values are
the strings a signed predicate carries; members compare equal to them.
"""

from __future__ import annotations

from enum import StrEnum

from .statistics import EQUIVALENT, INCONCLUSIVE, INFLUENTIAL

__all__ = ["AuditLabel", "AuditabilityClass", "AuditabilityReason"]


class AuditLabel(StrEnum):
    """An audit's classification. The three effect labels are ``statistics.effect_label``'s;
    ``FAILED`` ends an audit without a certificate; ``NO_INFLUENCE`` is read in v1
    certificates only, never issued."""

    INFLUENTIAL = INFLUENTIAL
    EQUIVALENT = EQUIVALENT
    INCONCLUSIVE = INCONCLUSIVE
    BASELINE_NOT_REPRODUCED = "baseline-not-reproduced"
    OBSERVABLE_ONLY = "observable-only"
    FAILED = "failed"
    NO_INFLUENCE = "no-measurable-influence"

    @property
    def is_effect(self) -> bool:
        """An effect label: an effect is reported exactly with one of these."""
        return self in _EFFECT_LABELS

    @property
    def compared(self) -> bool:
        """Whether an intervened branch was compared (not so for a failed audit or an
        unreproduced baseline: their auditability is ``not-assessed``)."""
        return self not in (AuditLabel.FAILED, AuditLabel.BASELINE_NOT_REPRODUCED)


_EFFECT_LABELS = frozenset({AuditLabel.INFLUENTIAL, AuditLabel.EQUIVALENT, AuditLabel.INCONCLUSIVE})


class AuditabilityClass(StrEnum):
    """Whether the intervened branch admits a counterfactual conclusion."""

    COUNTERFACTUAL_ADMISSIBLE = "counterfactual-admissible"
    OBSERVABLE_ONLY = "observable-only"
    NOT_ASSESSED = "not-assessed"  # nothing was compared (v2 only)


class AuditabilityReason(StrEnum):
    """Why a branch has its auditability class; a predicate's ``reason`` joins them with
    ``"; "`` in this order."""

    EFFECT_UNVERIFIABLE = "an effect's idempotency token can no longer be re-verified"
    EFFECT_UNSERVED = "an effect could not be served from the effect store"
    LIVE_STATE_READ = (
        "the branch read live-state fields of a served response after the departure point"
    )
    ALL_VERIFIED = "every effect re-verified; no live state read after departure"
    NOT_COMPARED = "no intervened branch was compared"
