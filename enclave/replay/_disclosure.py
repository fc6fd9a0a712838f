"""The disclosure bound: how many bits a certificate's agent-influenced content can carry.

Agent code under audit chooses its outcomes, so every value in a certificate that
depends on what it returned is a channel. The certificate is a deterministic function
of those values; if field *i* can take at most ``n_i`` values, no encoding can carry
more than ``sum(log2 n_i)`` bits through it. The terms, field by field:

* ``/classification``: one of the 5 labels a certificate can carry (influential,
  equivalent, inconclusive, baseline-not-reproduced, observable-only); the
  auditability class ``not-assessed`` follows from it;
* ``/auditability``: its class and reason follow from three flags (an unverifiable
  effect, an unserved effect, a live-state read): 3 bits;
  ``first_unverifiable_step``: null, a recorded call id or ``new_call #k``;
  ``live_state_fields``: a subset of the specimen's declared live-state fields;
* ``/baseline``: ``ok`` and ``equal`` of six exact layers and ``ok`` of the score; the
  score delta on the resolution grid (or null); ``changed_fields``: a count, at most the
  recorded proposal's fields plus the new ones a run may add;
* ``/effect``: the mean and both interval ends on the grid; flips, and the recorded
  decision in each arm, as counts out of N (rates and exact intervals are functions of
  them); the TOST interval and the minimum detectable delta are derived from the mean
  and the interval (``statistics.derived_equivalence``), so they carry nothing of their
  own; ``/effect/layer_changes``: ``none``, ``some`` or ``all`` per layer;
  ``/effect/outcome``: numeric or categorical (1 bit: every delta field is null
  together). Flip bounds and the tolerances are functions of counts already charged or
  of the request.
* ``/placebo``: the largest absolute delta on the grid over [0, 1]; flips out of N.
* ``/recorded_seed``: a (baseline, intervened) pair of decision labels from the
  ``d``-label vocabulary and a flip that the labels fix unless both are ``other``:
  ``d² + 1`` values (its seed is the request's).
* ``/served_by``: per arm, one row for the recorded calls and one for the new calls,
  each the set of marks their (call, sample) cells took (one mark is ``all``, several
  are ``some`` each): ``log2(2^m - 1)`` for ``m`` marks — 5 for recorded calls in the
  baseline arm (record, substitute, unservable, unused, absent), 6 in the intervened
  and placebo arms (and intervention), 3 for new calls (substitute, unservable,
  absent). No row names a call, so the term does not grow with the record.
* ``/substituted``: which recorded boundaries a substitute served, a subset of the
  ``B`` boundary names: ``B`` bits.
* ``/substitute_fidelity``: per recorded boundary, whether its substitute reproduced the
  record: at most one bit per recorded call name (the counts are the record's).
* ``/substitute_answers``: which boundaries' substitutes answered, in some arm, a request
  the record does not hold — a subset of the ``B`` boundary names of the record's steps
  and ``(unrecorded boundary)``: ``B + 1`` bits — and in how many samples any did, a
  count out of N. Whether that capped the label, and what ``not_established`` says of
  it, are functions of it and the request.

* ``/inference`` (an audit that authorised inference): per arm and the preparation,
  the answers asked of the endpoint and served from the audit's record, each a count up
  to the calls cap, and the input and output tokens, each up to its cap: ``4 ×
  (2 log2(calls + 1) + log2(input + 1) + log2(output + 1))`` for the loosest grant;
  ``/served_by`` rows gain the mark ``inference`` (one more mark per row).

Everything else in a certificate (request, intervention proof, samples, environment,
lineage, grant, ledger position, times) is fixed by the request, the specimen and the
supervisor before agent code runs. The bound depends only on the request and the
specimen's vocabulary, so it is known — and charged to the budget — at admission.
Each term is rounded *up* to 0.01 bit. A default 1,000-sample audit of a specimen of a
dozen calls states at most ~220 bits (``docs/certificate-v3.md``).

Where a policy grants per-sample detail (``per_sample``: the certificate is a v2
predicate with every count), the terms are v2's: ``/sample_rows`` (``d² + 1`` values per
sample, N times), ``/effect/histogram`` (``C(N + B - 1, B - 1)`` ways to put N samples in
B bins), ``/served_by`` per arm and call (a composition of N samples into the call's
marks: ``log2 C(N + m - 1, m - 1)`` per recorded call, plus the new calls' row), the
changed proposal fields by name (a subset), layer changes counted out of N, the
recorded seed's delta on the grid, and the TOST interval and minimum detectable delta
stated on the grid; there is no ``/substituted`` (the per-call rows show it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ledger.certificates import COARSE

from ._compare import MAX_NEW_FIELDS, MAX_PROPOSAL_FIELDS
from ._decisions import decision_vocabulary
from ._inference_grant import InferenceGrant
from ._model import LAYERS, boundary_names
from ._quantize import BIN_EDGES, grid_values, resolution_for
from ._reply import MAX_NEW_CALLS, Vocabulary
from .worker import ARMS

__all__ = ["CERTIFIED_LABELS", "DisclosureBound", "VocabularySize", "disclosure_bound"]

# influential, equivalent, inconclusive, baseline-not-reproduced, observable-only
CERTIFIED_LABELS = 5
_EXACT_LAYERS = 6


@dataclass(frozen=True)
class VocabularySize:
    """How many names of each kind the specimen holds (what may be reported by name)."""

    calls: int
    live_state: int
    proposal_fields: int = MAX_PROPOSAL_FIELDS  # unknown before decryption: the cap
    decisions: int = len(decision_vocabulary())  # decision labels a row may carry
    # distinct boundary names among the record's steps; None: at most one per call
    boundaries: int | None = None

    def __post_init__(self) -> None:
        if self.boundaries is None:
            object.__setattr__(self, "boundaries", self.calls)
        for value in (
            self.calls,
            self.live_state,
            self.proposal_fields,
            self.decisions,
            self.boundaries,
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError("vocabulary sizes are non-negative integers")

    @property
    def boundary_names(self) -> int:
        assert self.boundaries is not None  # set in __post_init__
        return self.boundaries

    @classmethod
    def of(cls, vocabulary: Vocabulary) -> VocabularySize:
        return cls(
            calls=len(vocabulary.calls),
            live_state=len(vocabulary.live_state),
            proposal_fields=len(vocabulary.proposal_fields),
            decisions=len(vocabulary.decision_labels),
            boundaries=len(vocabulary.boundaries),
        )

    @classmethod
    def of_manifest(cls, manifest: Mapping[str, Any]) -> VocabularySize:
        """From a sealed manifest's metadata (no decryption): proposal fields at the cap."""
        steps = manifest.get("steps") or []
        return cls(
            calls=len(steps),
            live_state=sum(1 for s in steps for f in s.get("fields", ()) if f.get("live_state")),
            boundaries=len(boundary_names((str(s.get("kind")), str(s.get("name"))) for s in steps)),
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "live_state": self.live_state,
            "proposal_fields": self.proposal_fields,
            "decisions": self.decisions,
            "boundaries": self.boundary_names,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VocabularySize:
        return cls(
            calls=data["calls"],
            live_state=data["live_state"],
            proposal_fields=data["proposal_fields"],
            # stored before decision labels were counted: no declared decisions
            decisions=data.get("decisions", len(decision_vocabulary())),
            # stored before boundary names were counted: at most one per call
            boundaries=data.get("boundaries"),
        )


@dataclass(frozen=True)
class DisclosureBound:
    bits: float
    resolution: float
    terms: tuple[tuple[str, float], ...]
    bins: int | None = None  # the histogram's bins: a per-sample (v2) certificate's only

    def to_dict(self) -> dict[str, Any]:
        return {
            "bits": self.bits,
            "resolution": self.resolution,
            **({"bins": self.bins} if self.bins is not None else {}),
            "terms": [{"field": name, "bits": bits} for name, bits in self.terms],
        }


def _up(bits: float) -> float:
    return math.ceil(bits * 100 - 1e-9) / 100


def _marks(marks: int) -> float:
    """log2 of the coarse rows over ``marks`` marks: which marks the N samples took
    (a non-empty set: one mark is ``all``, several are ``some`` each)."""
    return math.log2(2**marks - 1)


# the marks a recorded call's cell can take per arm, and a new call's (``/served_by``)
_RECORDED_MARKS = {"baseline": 5, "intervened": 6, "placebo": 6}
_NEW_MARKS = 3


def _served_by(calls: int, inference: bool = False) -> float:
    """Per arm, the recorded calls' row (when the record has calls) and the new calls'."""
    extra = 1 if inference else 0  # the mark ``inference``
    return math.fsum(
        (_marks(_RECORDED_MARKS[arm] + extra) if calls else 0.0) + _marks(_NEW_MARKS + extra)
        for arm in ARMS
    )


def _inference(grants: Sequence[InferenceGrant]) -> float:
    """Four tallies in each of the preparation and the three arms, at the loosest caps."""
    calls = max(g.caps.calls for g in grants)
    tokens_in = max(g.caps.input_tokens for g in grants)
    tokens_out = max(g.caps.output_tokens for g in grants)
    per_arm = 2 * math.log2(calls + 1) + math.log2(tokens_in + 1) + math.log2(tokens_out + 1)
    return 4 * per_arm


def _compositions(samples: int, marks: int) -> float:
    """log2 of the ways to count N samples into ``marks`` bins."""
    return math.log2(math.comb(samples + marks - 1, marks - 1))


def _served_by_per_call(samples: int, calls: int, inference: bool = False) -> float:
    """Per arm and recorded call an exact composition of the N samples, and the new
    calls' row."""
    extra = 1 if inference else 0
    return math.fsum(
        calls * _compositions(samples, _RECORDED_MARKS[arm] + extra)
        + _compositions(samples, _NEW_MARKS + extra)
        for arm in ARMS
    )


def _per_sample_terms(
    samples: int, r: float, vocabulary: VocabularySize, inference: bool
) -> dict[str, float]:
    """The terms that differ where every count is stated (v2), by field."""
    grid = math.log2(grid_values(r))
    counts = math.log2(samples + 1)
    row = vocabulary.decisions**2 + 1
    return {
        "/baseline/layers/proposal/changed_fields": vocabulary.proposal_fields
        + math.log2(MAX_NEW_FIELDS + 1),
        "/effect/histogram": _compositions(samples, len(BIN_EDGES) - 1),
        "/effect/equivalence/delta_interval": 2 * grid,
        "/effect/mde/delta": math.log2(grid_values(r, 0.0, 1.0)),
        "/effect/layer_changes": len(LAYERS) * counts,
        "/recorded_seed": math.log2(row) + math.log2(grid_values(r) + 1),
        "/sample_rows": samples * math.log2(row),
        "/served_by": _served_by_per_call(samples, vocabulary.calls, inference),
    }


def disclosure_bound(
    *,
    samples: int,
    tolerance: float,
    vocabulary: VocabularySize,
    inference: Sequence[InferenceGrant] = (),
    per_sample: bool = False,
) -> DisclosureBound:
    if samples < 1:
        raise ValueError("an audit has at least one sample")
    r = resolution_for(tolerance)
    grid = math.log2(grid_values(r))
    counts = math.log2(samples + 1)
    row = vocabulary.decisions**2 + 1  # (baseline, intervened) labels and the flip
    raw = (
        ("/classification", math.log2(CERTIFIED_LABELS)),
        ("/auditability/class", 3.0),
        (
            "/auditability/first_unverifiable_step",
            math.log2(vocabulary.calls + MAX_NEW_CALLS + 1),
        ),
        ("/auditability/live_state_fields", float(vocabulary.live_state)),
        ("/baseline/layers/ok", float(2 * _EXACT_LAYERS + 1)),
        ("/baseline/layers/score/delta", math.log2(grid_values(r) + 1)),
        (
            "/baseline/layers/proposal/changed_fields",
            math.log2(vocabulary.proposal_fields + MAX_NEW_FIELDS + 1),
        ),
        ("/effect/mean_delta", grid),
        ("/effect/delta_interval", 2 * grid),
        ("/effect/flip_rate", counts),
        ("/effect/baseline_rate", counts),
        ("/effect/intervened_rate", counts),
        ("/placebo/max_abs_delta", math.log2(grid_values(r, 0.0, 1.0))),
        ("/placebo/flips", counts),
        ("/effect/outcome", 1.0),
        ("/effect/layer_changes", len(LAYERS) * math.log2(len(COARSE))),
        ("/recorded_seed", math.log2(row)),
        ("/served_by", _served_by(vocabulary.calls, bool(inference))),
        # a subset of the boundary names: whose substitute served a recorded call
        ("/substituted", float(vocabulary.boundary_names)),
        # one bit per recorded boundary: whether its substitute reproduced the record
        ("/substitute_fidelity", float(vocabulary.calls)),
        # a subset of the boundary names, and a count of samples out of N
        ("/substitute_answers", vocabulary.boundary_names + 1 + counts),
        *((("/inference", _inference(inference)),) if inference else ()),
    )
    if per_sample:
        detailed = _per_sample_terms(samples, r, vocabulary, bool(inference))
        raw = tuple(
            (name, detailed.get(name, bits)) for name, bits in raw if name != "/substituted"
        ) + tuple((name, bits) for name, bits in detailed.items() if name not in dict(raw))
    terms = tuple((name, _up(bits)) for name, bits in raw)
    return DisclosureBound(
        bits=round(math.fsum(b for _, b in terms), 2),
        resolution=r,
        terms=terms,
        bins=len(BIN_EDGES) - 1 if per_sample else None,
    )
