"""The worker's reply as a closed schema, validated by the supervisor.

The worker runs agent code in its own process, so anything in it — the reply code
included — may have been patched by that code. The supervisor therefore accepts a reply
only if it has exactly the expected shape, and rebuilds every value it keeps:

1. Keys: exactly the schema's, at every level; no others, none missing.
2. Types: ``bool`` is not a number; integers within ``±(2**53 - 1)`` and finite floats
   only (otherwise ``value_out_of_range``); JSON values in an outcome's layers at most
   ``MAX_DEPTH`` deep.
3. Failure reasons from ``RUN_FAILURES``; variants from ``VARIANTS``; seeds exactly the
   ones asked for, in order.
4. Names only from the sealed specimen's own ``Vocabulary``: a live-state read must be a
   declared live-state field of a recorded call; an unverifiable effect a recorded
   effect; an unserved effect that the record does not know is renamed ``new_call #k``
   (its position among the run's new calls), never reported by name.
5. Lists without duplicates and no longer than the vocabulary allows.
6. Decisions only as labels of the closed decision vocabulary (``_decisions``:
   ``recorded``, declared values, ``other``), consistent with the flip and with the
   "same as recorded" flags; changed layers from ``LAYERS``; served-by marks only of the
   ways a call can be served (``_served.mark_allowed``), unknown calls renamed
   ``new_call #k`` per run or arm in order of appearance, one mark per (arm, call);
   an ambient input the record does not hold keeps the closed name of its kind
   (``AMBIENT_MISSING``) and may only be ``unservable``.
7. The boundaries whose substitute answered a request the record does not hold, as
   (arm, boundary) pairs: a boundary the record itself calls, or ``UNRECORDED``; each
   pair once, and only for an arm whose marks show a call served by a substitute.

Anything else refuses the whole reply (``ReplyInvalid`` / ``ValueOutOfRange``): the
audit fails closed with that code and nothing of the reply is quoted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..sandbox import REASONS as SANDBOX_REASONS
from ._compare import MAX_PROPOSAL_FIELDS
from ._decisions import RECORDED, decision_vocabulary, flip_consistent
from ._errors import RUN_FAILURES, ReplyInvalid, ValueOutOfRange
from ._model import LAYERS, RunResult, Trajectory, boundary_names
from ._results import SampleSummary
from .worker import AMBIENT_MISSING, ARMS, HOWS, UNRECORDED, mark_allowed

__all__ = [
    "FAILURE_REASONS",
    "MAX_NEW_CALLS",
    "VARIANTS",
    "Vocabulary",
    "parse_loaded",
    "parse_runs",
    "parse_samples",
]

VARIANTS = frozenset({"baseline", "intervened", "placebo"})
MAX_NEW_CALLS = 16  # unserved calls the record does not know, per run
MAX_DEPTH = 32
MAX_INT = 2**53 - 1
# Every reason a failed audit may carry.
FAILURE_REASONS: frozenset[str] = (
    RUN_FAILURES
    | SANDBOX_REASONS
    | {ReplyInvalid.code, ValueOutOfRange.code, "lineage_mismatch", "apparatus_fault"}
    | {"unstable"}
    | {"model_drift"}
)

_RUN_KEYS = frozenset(
    {
        "seed",
        "variant",
        "failure",
        "layers",
        "live_state_reads",
        "unverifiable_effects",
        "unserved_effects",
        "served",
        "unused",
    }
)
_SAMPLE_KEYS = frozenset(f.name for f in fields(SampleSummary))
_LAYER_KEYS = frozenset(LAYERS)
_BOOLS = ("flip", "baseline_hit", "intervened_hit", "placebo_equal", "placebo_flip")
_HOWS = frozenset(HOWS)


@dataclass(frozen=True)
class Vocabulary:
    """The names the sealed specimen itself holds; nothing else is reported by name."""

    calls: frozenset[str]
    effects: frozenset[str]
    live_state: frozenset[tuple[str, str]]
    proposal_fields: tuple[str, ...]
    decisions: tuple[str, ...] = ()  # values the agent declares for its decision
    boundaries: frozenset[str] = frozenset()  # the record's boundary names

    @property
    def decision_labels(self) -> tuple[str, ...]:
        return decision_vocabulary(self.decisions)

    @classmethod
    def of(cls, trajectory: Trajectory, *, decisions: tuple[str, ...] = ()) -> Vocabulary:
        proposal = trajectory.outcome.get("proposal")
        keys = (
            sorted(map(str, proposal))[:MAX_PROPOSAL_FIELDS]
            if isinstance(proposal, Mapping)
            else []
        )
        return cls(
            calls=frozenset(s.call_id for s in trajectory.steps),
            effects=frozenset(s.call_id for s in trajectory.steps if s.side_effecting),
            live_state=frozenset(
                (s.call_id, "/" + name) for s in trajectory.steps for name in s.live_state
            ),
            proposal_fields=tuple(keys[:MAX_PROPOSAL_FIELDS]),
            decisions=decision_vocabulary(decisions)[1:-1],
            boundaries=boundary_names((s.kind, s.name) for s in trajectory.steps),
        )


# -- checks -------------------------------------------------------------------------------


def _int(value: Any) -> int:
    if type(value) is not int:
        raise ReplyInvalid()
    if not -MAX_INT <= value <= MAX_INT:
        raise ValueOutOfRange()
    return value


def _number(value: Any) -> float:
    kind = type(value)
    if kind is float:
        if not math.isfinite(value):
            raise ValueOutOfRange()
        return float(value)
    return float(_int(value))


def _bool(value: Any) -> bool:
    if type(value) is not bool:
        raise ReplyInvalid()
    return bool(value)


def _json(value: Any, depth: int = 0) -> None:
    """An agent's outcome value: plain JSON, exact numbers, bounded depth."""
    if depth > MAX_DEPTH:
        raise ReplyInvalid()
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return
    if kind is int or kind is float:
        _number(value)
    elif kind is list:
        for item in value:
            _json(item, depth + 1)
    elif kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise ReplyInvalid()
            _json(item, depth + 1)
    else:
        raise ReplyInvalid()


def _list(value: Any, limit: int) -> list[Any]:
    if type(value) is not list or len(value) > limit:
        raise ReplyInvalid()
    return value


def _live_reads(value: Any, vocab: Vocabulary) -> tuple[tuple[str, str], ...]:
    items = _list(value, len(vocab.live_state))
    out: list[tuple[str, str]] = []
    for item in items:
        if type(item) is not list or len(item) != 2:
            raise ReplyInvalid()
        pair = (item[0], item[1])
        if pair not in vocab.live_state or pair in out:
            raise ReplyInvalid()
        out.append(pair)
    return tuple(out)


def _unverifiable(value: Any, vocab: Vocabulary) -> tuple[str, ...]:
    items = _list(value, len(vocab.effects))
    if not all(type(c) is str and c in vocab.effects for c in items) or len(set(items)) != len(
        items
    ):
        raise ReplyInvalid()
    return tuple(items)


def _unserved(value: Any, vocab: Vocabulary) -> tuple[str, ...]:
    items = _list(value, len(vocab.calls) + MAX_NEW_CALLS)
    if not all(type(c) is str for c in items) or len(set(items)) != len(items):
        raise ReplyInvalid()
    out: list[str] = []
    new = 0
    for call in items:
        if call in vocab.calls:
            out.append(call)
        else:
            if new >= MAX_NEW_CALLS:
                raise ReplyInvalid()
            out.append(f"new_call #{new}")
            new += 1
    return tuple(out)


def _renamer(vocab: Vocabulary) -> Any:
    """Call ids as reported: recorded ones by name, others ``new_call #k`` in order of
    first appearance (the same unknown id keeps its number)."""
    new: dict[str, str] = {}

    def name(call: Any) -> str:
        if type(call) is not str:
            raise ReplyInvalid()
        if call in vocab.calls or call in AMBIENT_MISSING:  # recorded, or a closed name
            return str(call)
        if call not in new:
            if len(new) >= MAX_NEW_CALLS:
                raise ReplyInvalid()
            new[call] = f"new_call #{len(new)}"
        return new[call]

    return name


def _served_trace(value: Any, vocab: Vocabulary) -> tuple[tuple[str, str], ...]:
    items = _list(value, 2 * len(vocab.calls) + MAX_NEW_CALLS)
    rename = _renamer(vocab)
    out = []
    for item in items:
        if type(item) is not list or len(item) != 2 or type(item[1]) is not str:
            raise ReplyInvalid()
        if item[1] not in _HOWS:
            raise ReplyInvalid()
        call = rename(item[0])
        fresh = call.startswith("new_call #") or call in AMBIENT_MISSING
        if fresh and not mark_allowed(
            "intervened", item[1], recorded=False, ambient=call in AMBIENT_MISSING
        ):
            raise ReplyInvalid()
        out.append((call, str(item[1])))
    return tuple(out)


def _unused(value: Any, vocab: Vocabulary) -> tuple[str, ...]:
    items = _list(value, len(vocab.calls))
    if not all(type(c) is str and c in vocab.calls for c in items) or len(set(items)) != len(items):
        raise ReplyInvalid()
    return tuple(items)


def _marks(value: Any, vocab: Vocabulary) -> tuple[tuple[str, str, str], ...]:
    per_arm = len(vocab.calls) + MAX_NEW_CALLS
    items = _list(value, len(ARMS) * per_arm)
    renamers = {arm: _renamer(vocab) for arm in ARMS}
    out: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for item in items:
        if type(item) is not list or len(item) != 3 or item[0] not in ARMS:
            raise ReplyInvalid()
        arm, call, how = str(item[0]), renamers[item[0]](item[1]), item[2]
        closed = item[1] in AMBIENT_MISSING and item[1] not in vocab.calls
        if type(how) is not str or not mark_allowed(
            arm, how, recorded=item[1] in vocab.calls, ambient=closed
        ):
            raise ReplyInvalid()
        if (arm, call) in seen:
            raise ReplyInvalid()
        seen.add((arm, call))
        out.append((arm, call, how))
    return tuple(out)


def _substituted(
    value: Any, vocab: Vocabulary, served: tuple[tuple[str, str, str], ...]
) -> tuple[tuple[str, str], ...]:
    names = vocab.boundaries | {UNRECORDED}
    items = _list(value, len(ARMS) * len(names))
    arms = {arm for arm, _, how in served if how == "substitute"}
    out: list[tuple[str, str]] = []
    for item in items:
        if type(item) is not list or len(item) != 2 or item[0] not in arms:
            raise ReplyInvalid()
        if type(item[1]) is not str or item[1] not in names:
            raise ReplyInvalid()
        pair = (str(item[0]), str(item[1]))
        if pair in out:
            raise ReplyInvalid()
        out.append(pair)
    return tuple(out)


def _decisions(item: dict[str, Any], vocab: Vocabulary, failure: str | None) -> tuple[Any, Any]:
    labels = (item["baseline_decision"], item["intervened_decision"])
    if failure is not None:
        if labels != (None, None) or item["changed_layers"]:
            raise ReplyInvalid()
        return None, None
    allowed = vocab.decision_labels
    if not all(type(label) is str and label in allowed for label in labels):
        raise ReplyInvalid()
    if not flip_consistent(labels[0], labels[1], _bool(item["flip"])):
        raise ReplyInvalid()
    hits = (_bool(item["baseline_hit"]), _bool(item["intervened_hit"]))
    if hits != (labels[0] == RECORDED, labels[1] == RECORDED):
        raise ReplyInvalid()
    return labels


def _changed_layers(value: Any) -> tuple[str, ...]:
    items = _list(value, len(LAYERS))
    if not all(type(x) is str and x in LAYERS for x in items) or len(set(items)) != len(items):
        raise ReplyInvalid()
    return tuple(items)


def _failure(value: Any) -> str | None:
    if value is None:
        return None
    if type(value) is not str or value not in RUN_FAILURES:
        raise ReplyInvalid()
    return str(value)


def _layers(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if type(value) is not dict or value.keys() != _LAYER_KEYS:
        raise ReplyInvalid()
    _json(value)
    return dict(value)


# -- replies --------------------------------------------------------------------------------


def parse_loaded(reply: Any, expected: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """``{"loaded": [...], "fidelity": {boundary: {"checked": n, "faithful": bool}}}``.
    ``expected`` (boundary -> recorded calls) is the supervisor's own count: the reply
    must cover exactly those boundaries with exactly those counts, so of it only one
    bit per boundary is kept — whether its substitute reproduced the record."""
    if type(reply) is not dict or reply.keys() != {"loaded", "fidelity"}:
        raise ReplyInvalid()
    if reply["loaded"] != sorted(VARIANTS) or type(reply["fidelity"]) is not dict:
        raise ReplyInvalid()
    if reply["fidelity"].keys() != expected.keys():
        raise ReplyInvalid()
    fidelity: dict[str, dict[str, Any]] = {}
    for name, count in expected.items():
        item = reply["fidelity"][name]
        if type(item) is not dict or item.keys() != {"checked", "faithful"}:
            raise ReplyInvalid()
        if _int(item["checked"]) != count or type(item["faithful"]) is not bool:
            raise ReplyInvalid()
        fidelity[name] = {"checked": count, "faithful": item["faithful"]}
    return fidelity


def parse_runs(
    reply: Any, expected: Sequence[tuple[str, int]], vocab: Vocabulary
) -> list[RunResult]:
    """``{"results": [run...]}`` for the runs asked for, as (variant, seed), in order."""
    if type(reply) is not dict or reply.keys() != {"results"}:
        raise ReplyInvalid()
    items = _list(reply["results"], len(expected))
    if len(items) != len(expected):
        raise ReplyInvalid()
    out = []
    for item, (variant, seed) in zip(items, expected, strict=True):
        if type(item) is not dict or item.keys() != _RUN_KEYS:
            raise ReplyInvalid()
        if item["variant"] != variant or _int(item["seed"]) != seed:
            raise ReplyInvalid()
        failure, layers = _failure(item["failure"]), _layers(item["layers"])
        if (failure is None) == (layers is None):
            raise ReplyInvalid()
        out.append(
            RunResult(
                seed=seed,
                variant=variant,
                failure=failure,
                failure_detail=None,
                layers=layers,
                live_state_reads=_live_reads(item["live_state_reads"], vocab),
                unverifiable_effects=_unverifiable(item["unverifiable_effects"], vocab),
                unserved_effects=_unserved(item["unserved_effects"], vocab),
                served=_served_trace(item["served"], vocab),
                unused=_unused(item["unused"], vocab),
            )
        )
    return out


def _sample(item: Any, seed: int, vocab: Vocabulary) -> SampleSummary:
    if type(item) is not dict or item.keys() != _SAMPLE_KEYS:
        raise ReplyInvalid()
    if _int(item["seed"]) != seed:
        raise ReplyInvalid()
    failure = _failure(item["failure"])
    variant = item["failure_variant"]
    if (failure is None) != (variant is None) or (variant is not None and variant not in VARIANTS):
        raise ReplyInvalid()
    delta = item["delta"]
    if failure is not None and delta is not None:  # a completed sample may lack a score
        raise ReplyInvalid()
    baseline_decision, intervened_decision = _decisions(item, vocab, failure)
    placebo_abs = _number(item["placebo_abs_delta"])
    if placebo_abs < 0:
        raise ReplyInvalid()
    flags = [_bool(item[name]) for name in _BOOLS]
    served = _marks(item["served"], vocab)
    return SampleSummary(
        seed=seed,
        failure=failure,
        failure_variant=None if variant is None else str(variant),
        delta=None if delta is None else _number(delta),
        flip=flags[0],
        baseline_hit=flags[1],
        intervened_hit=flags[2],
        placebo_equal=flags[3],
        placebo_abs_delta=placebo_abs,
        placebo_flip=flags[4],
        live_state_reads=_live_reads(item["live_state_reads"], vocab),
        unverifiable_effects=_unverifiable(item["unverifiable_effects"], vocab),
        unserved_effects=_unserved(item["unserved_effects"], vocab),
        baseline_decision=baseline_decision,
        intervened_decision=intervened_decision,
        changed_layers=_changed_layers(item["changed_layers"]),
        served=served,
        substituted=_substituted(item["substituted"], vocab, served),
    )


def parse_samples(reply: Any, seeds: Sequence[int], vocab: Vocabulary) -> list[SampleSummary]:
    """``{"samples": [summary...]}``, one per seed asked for, in order."""
    if type(reply) is not dict or reply.keys() != {"samples"}:
        raise ReplyInvalid()
    items = _list(reply["samples"], len(seeds))
    if len(items) != len(seeds):
        raise ReplyInvalid()
    return [_sample(item, seed, vocab) for item, seed in zip(items, seeds, strict=True)]
