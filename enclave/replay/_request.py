"""The frozen audit request: everything decided before anything runs."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger import canonical_json

from .._errors import BadInput
from ..capture import is_code_digest
from ..keys import TenantDigester
from ._candidate import CandidateCode
from ._inference_grant import InferenceGrant
from ._intervention import Intervention
from ._model import Strategy, Tolerances

__all__ = ["AuditRequest", "COARSE_DETAIL", "DETAILS", "MAX_SAMPLES", "PER_SAMPLE", "check_samples"]

MAX_SAMPLES = 100_000
_CUT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
# a boundary name as a call id holds it: no "/" or "#" (they delimit call ids)
_BOUNDARY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
MAX_AUTHORITATIVE = 64
MAX_GRANTS = 16
# what a certificate states: the tight default (predicate v3: no per-sample rows, coarse
# served-by marks) or, where a policy grants it, every count (predicate v2: a row per
# sample, exact served-by counts per arm and call), charged at its larger bound
COARSE_DETAIL = "coarse"
PER_SAMPLE = "per-sample"
DETAILS = (COARSE_DETAIL, PER_SAMPLE)


def check_samples(samples: int) -> None:
    """``BadInput`` unless ``samples`` paired samples is a count an audit can run."""
    if not 2 <= samples <= MAX_SAMPLES:
        raise BadInput(f"--samples must lie in 2..{MAX_SAMPLES}")


@dataclass(frozen=True)
class AuditRequest:
    specimen_id: str
    intervention: Intervention
    purpose: str
    requester: str
    samples: int = 20
    seed: int = 1
    tolerances: Tolerances = field(default_factory=Tolerances)
    policy: tuple[str, int] | None = None  # (policy id, version) when a policy authorised it
    # the digest of the agent code to run when it is not the captured code (a candidate
    # release); without it an audit of changed code is refused ``code_changed``
    code_revision: str | None = None
    # a code-revision audit (strategy CODE): the candidate the intervened arm runs; the
    # baseline gate, baseline and placebo arms run the captured code
    candidate: CandidateCode | None = None
    # start every run from this cut's recorded state (``_cuts``): the work before it is
    # neither executed nor served; the intervention's target must lie after it
    from_cut: str | None = None
    # boundaries whose declared substitute the authorising policy takes as the service
    # itself: an arm that met calls the record does not hold answered by any other
    # substitute caps the label at inconclusive (``_verdict``)
    authoritative_substitutes: tuple[str, ...] = ()
    # model boundaries whose calls the record does not hold may be asked of the operator's
    # endpoint after departure, pinned and capped (``_inference_grant``); none: unservable
    inference: tuple[InferenceGrant, ...] = ()
    # ``per-sample`` only where the authorising policy grants it (``_eligibility``)
    detail: str = COARSE_DETAIL

    def __post_init__(self) -> None:
        from ..store import validate_id

        # before anything is recorded: the request's ledger entries name the specimen
        validate_id(self.specimen_id, what="specimen id")
        check_samples(self.samples)
        if isinstance(self.seed, bool) or not 0 <= self.seed <= 2**53 - 1 - self.samples:
            raise BadInput("--seed must be a non-negative integer")
        if not self.purpose.strip() or len(self.purpose) > 500:
            raise BadInput("a purpose (1-500 characters) is required")
        if self.code_revision is not None and not is_code_digest(self.code_revision):
            raise BadInput("a code revision is a code digest (sha256:<64 hex>)")
        code = self.intervention.strategy is Strategy.CODE
        if code != (self.candidate is not None) or (code and self.code_revision is not None):
            raise BadInput("a code intervention names a candidate, and only it does")
        if self.from_cut is not None:
            if type(self.from_cut) is not str or not _CUT_NAME.fullmatch(self.from_cut):
                raise BadInput("--from-cut names a declared cut (letters, digits, ._:-)")
            if code:
                raise BadInput("a code intervention changes the work before every cut")
        names = self.authoritative_substitutes
        if (
            not isinstance(names, tuple)
            or len(names) > MAX_AUTHORITATIVE
            or not all(type(n) is str and _BOUNDARY_NAME.fullmatch(n) for n in names)
            or len(set(names)) != len(names)
        ):
            raise BadInput("authoritative substitutes are distinct boundary names")
        object.__setattr__(self, "authoritative_substitutes", tuple(sorted(names)))
        grants = self.inference
        if (
            not isinstance(grants, tuple)
            or len(grants) > MAX_GRANTS
            or not all(isinstance(g, InferenceGrant) for g in grants)
            or len({g.boundary for g in grants}) != len(grants)
        ):
            raise BadInput("inference grants name distinct boundaries, at most 16")
        object.__setattr__(self, "inference", tuple(sorted(grants, key=lambda g: g.boundary)))
        if self.detail not in DETAILS:
            raise BadInput("--detail is coarse or per-sample")

    def to_dict(self) -> dict[str, Any]:
        """The frozen request as stored with a queued audit (includes a REPLACE value:
        an analyst-supplied counterfactual, never captured content)."""
        iv = self.intervention
        return {
            "specimen_id": self.specimen_id,
            "intervention": {
                "strategy": iv.strategy.value,
                "call_id": iv.call_id,
                "field": iv.field,
                "value": iv.value,
                "delta": iv.delta,
                "revision": list(iv.revision) if iv.revision else None,
                "bundle": iv.bundle,
            },
            "purpose": self.purpose,
            "requester": self.requester,
            "samples": self.samples,
            "seed": self.seed,
            "tolerances": {
                "score": self.tolerances.score,
                "ignored": sorted(self.tolerances.ignored),
            },
            "policy": list(self.policy) if self.policy else None,
            **({"code_revision": self.code_revision} if self.code_revision else {}),
            **({"candidate": self.candidate.to_dict()} if self.candidate else {}),
            **({"from_cut": self.from_cut} if self.from_cut else {}),
            **(
                {"authoritative_substitutes": list(self.authoritative_substitutes)}
                if self.authoritative_substitutes
                else {}
            ),
            **({"inference": [g.to_dict() for g in self.inference]} if self.inference else {}),
            **({"detail": self.detail} if self.detail != COARSE_DETAIL else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditRequest:
        try:
            iv = data["intervention"]
            revision = iv.get("revision")
            policy = data.get("policy")
            return cls(
                specimen_id=str(data["specimen_id"]),
                intervention=Intervention(
                    Strategy(iv["strategy"]),
                    call_id=iv.get("call_id"),
                    field=iv.get("field"),
                    value=iv.get("value"),
                    delta=iv.get("delta"),
                    revision=(str(revision[0]), str(revision[1])) if revision else None,
                    bundle=iv.get("bundle"),
                ),
                purpose=str(data["purpose"]),
                requester=str(data["requester"]),
                samples=int(data["samples"]),
                seed=int(data["seed"]),
                tolerances=Tolerances(
                    score=float(data["tolerances"]["score"]),
                    ignored=frozenset(data["tolerances"]["ignored"]),
                ),
                policy=(str(policy[0]), int(policy[1])) if policy else None,
                code_revision=data.get("code_revision"),
                candidate=CandidateCode.from_dict(data["candidate"])
                if data.get("candidate") is not None
                else None,
                from_cut=data.get("from_cut"),
                authoritative_substitutes=tuple(data.get("authoritative_substitutes") or ()),
                inference=tuple(InferenceGrant.from_dict(g) for g in data.get("inference") or ()),
                detail=data.get("detail", COARSE_DETAIL),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput("the stored audit request is malformed") from exc

    def parameters(self) -> tuple[str, Any]:
        """(kind, value) of what the intervention sets — digested, never shown."""
        iv = self.intervention
        if iv.strategy is Strategy.REPLACE:
            return "value", iv.value
        if iv.strategy is Strategy.PERTURB:
            return "delta", iv.delta
        if iv.strategy is Strategy.REVISION:
            return "revision", list(iv.revision or ())
        if iv.strategy is Strategy.CODE and self.candidate is not None:
            return "code", self.candidate.digest
        return "neutral", None

    def published_digest(
        self, digester: TenantDigester, digest: str, *, call_id: str, purpose: str
    ) -> str:
        """An internal digest about this request's target, in the form that leaves the
        enclave (see :func:`published_target_digest`)."""
        return published_target_digest(
            digester,
            digest,
            specimen_id=self.specimen_id,
            intervention=self.intervention,
            call_id=call_id,
            purpose=purpose,
        )

    def parameters_digest(self, *, call_id: str, digester: TenantDigester) -> str:
        """The published digest of what the intervention sets. Purpose "request": never
        equal to the recorded field's digest, even for the same value (else a request
        would test a guess of the recorded value), but the same for the same request on
        the same specimen and target."""
        _, value = self.parameters()
        internal = digester.digest(canonical_json(value))
        return self.published_digest(digester, internal, call_id=call_id, purpose="request")

    def to_predicate(self, *, call_id: str, digester: TenantDigester) -> dict[str, Any]:
        kind, _ = self.parameters()
        out: dict[str, Any] = {
            "specimen": self.specimen_id,
            "call": call_id,
            "strategy": self.intervention.strategy.value.upper(),
            "parameters": {
                "digest": self.parameters_digest(call_id=call_id, digester=digester),
                "kind": kind,
            },
            "field": self.intervention.target_label,
            "samples": self.samples,
            "seed": self.seed,
            "tolerances": self.tolerances.to_dict(),
            "purpose": self.purpose,
            "requester": self.requester,
        }
        if self.intervention.delta is not None:
            out["delta"] = self.intervention.delta
        if self.intervention.revision:
            out["revision"] = "=".join(self.intervention.revision)
        if self.policy:
            out["policy"] = {"id": self.policy[0], "version": self.policy[1]}
        if self.code_revision:
            out["code_revision"] = self.code_revision  # the code that ran, not the captured
        if self.candidate:
            out["candidate"] = self.candidate.to_predicate()  # the intervened arm's code
        if self.from_cut:
            out["from_cut"] = self.from_cut  # runs started from this cut's recorded state
        if self.authoritative_substitutes:  # what the label may rest on (``_verdict``)
            out["authoritative_substitutes"] = list(self.authoritative_substitutes)
        return out


def published_target_digest(
    digester: TenantDigester,
    digest: str,
    *,
    specimen_id: str,
    intervention: Intervention,
    call_id: str,
    purpose: str,
) -> str:
    """An internal digest about an intervention's target, in the form that leaves the
    enclave: keyed to the specimen, the target (call, side, label) and ``purpose``."""
    label = intervention.target_label
    side = "identity" if label == "#identity" else "response"
    return digester.published(
        digest, specimen_id=specimen_id, locator=(call_id, side, label), purpose=purpose
    )
