"""Write the predicate parity corpus the browser's verifier is tested against.

Each case is a golden predicate (``tests/golden``, v1, v2 and v3) changed by a few
operations, with what ``ledger.certificates.predicate_problems`` says of it: its problem list
(``location: rule``), or that the rules raised. The cases are

* ``schema``: at every node of the golden (the first and last items of long lists),
  values of other JSON types, boundary numbers, strings that a pattern or a length
  refuses (a final newline included), shortened and duplicated lists, deleted and
  unknown keys;
* ``rule``: each rule beyond the schema broken on its own (and the figures the rules
  cannot evaluate);
* ``figures``: consistent v2 predicates recomputed for other sample counts, flips,
  confidences and powers (exact intervals, minimum detectable flip rate, label), and the
  same nudged just inside and just outside the rules' tolerance;
* ``random``: seeded random stacks of the above;
* the same for an audit whose new calls governed inference answered (``inference_ops``):
  schema changes at the nodes of its ``inference`` section and served-by column, and each
  rule of the column broken on its own;
* for v3: its own rules broken one by one (derived intervals, coarse served-by rows,
  ``substituted``), and the v2 figures stated tight (``tight_predicate``) so that the
  derived TOST interval and minimum detectable delta are recomputed at many N.

Every changed predicate is passed through canonical JSON (RFC 8785) first, as a signed
certificate's would be; a change that cannot be (an integer beyond 2**53 - 1) is left
out. ``labextension/test/predicate-parity.test.ts`` replays the operations in TypeScript;
``tests/unit/certificates/test_predicate_port.py`` fails when the committed corpus is stale.

    python scripts/export-predicate-corpus.py [--check]
"""

from __future__ import annotations

import base64
import copy
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import rfc8785

from ledger.certificates import (
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    PREDICATE_TYPE_V2,
    finding,
    predicate_problems,
    tight_predicate,
)
from ledger.certificates.statistics import clopper_pearson, effect_label, flip_mde

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "labextension/test/fixtures/predicate-corpus.json"
TYPES = {"v1": PREDICATE_TYPE_V1, "v2": PREDICATE_TYPE_V2, "v3": PREDICATE_TYPE}
DELETE = {"delete": True}  # an operation's value: remove the key (or list item)
# v3 has more operations that fail on their own: more stacks, so that some still pass
RANDOM_STACKS = {"v1": 100, "v2": 100, "v3": 200}

Path_ = list[str | int]
Op = tuple[Path_, Any]


# a consistent v2 predicate of an audit whose baseline did not reproduce
UNREPRODUCED: list[Op] = [
    (["classification"], "baseline-not-reproduced"),
    (["auditability", "class"], "not-assessed"),
    (["baseline", "reproduced"], False),
    (["effect"], None),
    (["sample_rows"], None),
    (["served_by"], None),
]


def golden(version: str) -> dict[str, Any]:
    envelope = json.loads((ROOT / f"tests/golden/certificate_{version}.dsse.json").read_text())
    predicate: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return predicate


def apply(predicate: Any, ops: list[Op]) -> Any:
    out = copy.deepcopy(predicate)
    for path, value in ops:
        if not path:
            out = copy.deepcopy(value)
            continue
        node = out
        for part in path[:-1]:
            node = node[part]
        if value == DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = copy.deepcopy(value)
    return out


def _nodes(value: Any, path: Path_) -> Iterator[tuple[Path_, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _nodes(value[key], [*path, key])
    elif isinstance(value, list):
        picks = range(len(value)) if len(value) <= 2 else (0, len(value) - 1)
        for index in picks:
            yield from _nodes(value[index], [*path, index])


_OTHER_TYPES: list[Any] = [None, True, 0.5, "x", [], {}]


def _variants(value: Any) -> Iterator[Any]:
    yield from (v for v in _OTHER_TYPES if type(v) is not type(value))
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, int | float):
        yield from (value + 1, value - 1, -value, 0, 1e300, value + 1e-12)
    elif isinstance(value, str):
        yield from (value + "\n", value + "\n\n", value.upper(), "x" * 300)
    elif isinstance(value, list):
        if value:
            yield from (value + value[:1], value[:-1])
        yield [*value, None]
    elif isinstance(value, dict):
        yield {**value, "zz_extra": 1}
        yield {**value, "Not-A-Name": 1}
        for key in sorted(value):
            yield {k: v for k, v in value.items() if k != key}


def schema_cases(version: str, base: dict[str, Any]) -> Iterator[tuple[str, list[Op]]]:
    for path, value in _nodes(base, []):
        where = "/" + "/".join(map(str, path))
        for index, variant in enumerate(_variants(value)):
            yield f"schema {where} #{index}", [(path, variant)]


def _v2_rule_cases() -> Iterator[tuple[str, list[Op]]]:
    e = ["effect"]
    yield "disclosure bits off", [(["disclosure", "bits"], 600.0)]
    yield "reason too long", [(["auditability", "reason"], "x" * 1025)]
    yield "reason at its length", [(["auditability", "reason"], "x" * 1024)]
    yield "changed path too long", [(["intervention", "declared_changes", 0], "/" + "x" * 512)]
    yield "disclosure bits within 0.01", [(["disclosure", "bits"], 554.015)]
    yield "baseline delta off grid", [(["baseline", "layers", "score", "delta"], 0.0005)]
    yield "baseline delta at the edge", [(["baseline", "layers", "score", "delta"], -1)]
    yield "digest equality contradicts", [(["intervention", "unchanged_digest_equal"], False)]
    yield "digests differ", [(["intervention", "unchanged_digest_after"], "sha256:" + "0" * 64)]
    yield "seeds misspelt", [(["samples", "seeds"], "41..61")]
    yield "seeds with a newline", [(["samples", "seeds"], "41..60\n")]
    yield "seeds with leading zeros", [(["samples", "seeds"], "041..0060")]
    yield "baseline not reproduced", [(["baseline", "reproduced"], False)]
    yield "no baseline", [(["baseline"], None)]
    yield "no intervention", [(["intervention"], None)]
    yield "changes differ", [(["intervention", "actual_changes"], ["/model/other"])]
    yield (
        "changes reordered",
        [
            (["intervention", "actual_changes"], ["/b", "/a"]),
            (["intervention", "declared_changes"], ["/a", "/b"]),
        ],
    )
    yield "placebo failed", [(["placebo", "passed"], False)]
    yield "no placebo", [(["placebo"], None)]
    yield "observable-only with an effect", [(["auditability", "class"], "observable-only")]
    yield (
        "observable-only label",
        [
            (["classification"], "observable-only"),
            (["auditability", "class"], "observable-only"),
        ],
    )
    yield "not-assessed", [(["auditability", "class"], "not-assessed")]
    yield (
        "baseline-not-reproduced",
        [
            (["classification"], "baseline-not-reproduced"),
            (["auditability", "class"], "not-assessed"),
            (["effect"], None),
        ],
    )
    yield "baseline-not-reproduced, unreproduced", UNREPRODUCED
    yield "no samples", [(["samples"], None)]
    yield "no samples nor served_by", [(["samples"], None), (["served_by"], None)]
    yield "no effect", [(["effect"], None)]
    yield "no effect, equivalent", [(["effect"], None), (["classification"], "equivalent")]
    yield "edges unordered", [([*e, "histogram", "edges", 1], 0.9)]
    yield "counts short", [([*e, "histogram", "counts", 0], DELETE)]
    yield "counts sum", [([*e, "histogram", "counts", 0], 7)]
    yield "no histogram", [([*e, "histogram"], None)]
    yield "categorical with numbers", [([*e, "outcome"], "categorical")]
    yield (
        "categorical",
        [
            ([*e, "outcome"], "categorical"),
            ([*e, "mean_delta"], None),
            ([*e, "delta_interval"], None),
            ([*e, "histogram"], None),
            ([*e, "equivalence", "delta_interval"], None),
            ([*e, "mde", "delta"], None),
        ],
    )
    yield (
        "categorical, recorded delta",
        [
            ([*e, "outcome"], "categorical"),
            ([*e, "mean_delta"], None),
            ([*e, "delta_interval"], None),
            ([*e, "histogram"], None),
            ([*e, "equivalence", "delta_interval"], None),
            ([*e, "mde", "delta"], None),
            (["recorded_seed", "delta"], None),
        ],
    )
    yield "mean off grid", [([*e, "mean_delta"], -0.0405)]
    yield "interval not nested", [([*e, "equivalence", "delta_interval"], [-0.05, -0.033])]
    yield "mean outside", [([*e, "mean_delta"], -0.02)]
    yield "mde delta below tolerance", [([*e, "mde", "delta"], 0.0)]
    yield "flip rate", [([*e, "flip_rate"], 0.6)]
    yield "flips", [([*e, "flips"], 12)]
    yield "flips beyond the samples", [([*e, "flips"], 21)]
    yield "flips zero", [([*e, "flips"], 0)]
    yield "flip interval", [([*e, "flip_interval", 0], 0.4)]
    yield "flip interval reversed", [([*e, "flip_interval"], [0.8460907952154588, 0.4])]
    yield "flip upper", [([*e, "equivalence", "flip_upper"], 0.82)]
    yield "alpha", [([*e, "equivalence", "alpha"], 0.1)]
    yield "confidence", [([*e, "confidence"], 0.9)]
    yield "baseline rate", [([*e, "baseline_rate"], 0.333)]
    yield "intervened rate", [([*e, "intervened_rate"], 0.5)]
    yield "intervened rate half a count", [([*e, "intervened_rate"], 0.375)]
    yield "layer changes", [([*e, "layer_changes", "score"], 21)]
    yield "score tolerance", [([*e, "score_tolerance"], 0.02)]
    yield "request tolerance differs", [(["request", "tolerances"], {"score": 0.5})]
    yield "request tolerance true", [(["request", "tolerances"], {"score": True})]
    yield "request tolerance text", [(["request", "tolerances"], {"score": "0.5"})]
    yield "request tolerances a list", [(["request", "tolerances"], [0.5])]
    yield "mde flip rate", [([*e, "mde", "flip_rate"], 0.2)]
    yield "mde flip rate null", [([*e, "mde", "flip_rate"], None)]
    yield "mde power", [([*e, "mde", "power"], 0.9)]
    yield "equivalent label", [(["classification"], "equivalent")]
    yield "inconclusive label", [(["classification"], "inconclusive")]
    yield "no rows", [(["sample_rows"], None)]
    yield "rows out of order", [(["sample_rows", 0, 0], 42), (["sample_rows", 1, 0], 41)]
    yield "row missing", [(["sample_rows", 19], DELETE)]
    yield "row flip contradicts", [(["sample_rows", 0, 3], False)]
    yield "row other-other flip", [(["sample_rows", 0, 1], "other")]
    yield "row same-label flip", [(["sample_rows", 0, 2], "recorded")]
    yield "row recorded count", [(["sample_rows", 19, 1], "other")]
    yield "recorded seed unsampled", [(["recorded_seed", "sampled"], False)]
    yield "recorded seed outside", [(["recorded_seed"], {"seed": 7, "sampled": False})]
    yield (
        "recorded seed outside, claims sampled",
        [
            (["recorded_seed", "seed"], 7),
        ],
    )
    yield "recorded seed differs", [(["recorded_seed", "flip"], False)]
    yield "recorded seed other row", [(["recorded_seed", "seed"], 59)]
    yield "recorded seed delta null", [(["recorded_seed", "delta"], None)]
    yield "no recorded seed", [(["recorded_seed"], None)]
    yield "served twice", [(["served_by", 1, "call"], "approval-1")]
    yield "served sum", [(["served_by", 0, "record"], 19)]
    yield (
        "served intervention in baseline",
        [
            (["served_by", 0, "record"], 19),
            (["served_by", 0, "intervention"], 1),
        ],
    )
    yield "served new calls from record", [(["served_by", 0, "call"], "new calls")]
    yield (
        "unfaithful substitute",
        [
            (["served_by", 0, "record"], 0),
            (["served_by", 0, "substitute"], 20),
            (["served_by", 0, "call"], "agent/approval#1"),
            (["substitute_fidelity"], {"approval": {"checked": 3, "faithful": False}}),
        ],
    )
    yield (
        "faithful substitute",
        [
            (["served_by", 0, "record"], 0),
            (["served_by", 0, "substitute"], 20),
            (["served_by", 0, "call"], "agent/approval#1"),
            (["substitute_fidelity"], {"approval": {"checked": 3, "faithful": True}}),
        ],
    )
    yield (
        "substitute without a scope",
        [
            (["served_by", 0, "record"], 0),
            (["served_by", 0, "substitute"], 20),
            (["served_by", 0, "call"], "approval"),
            (["substitute_fidelity"], {"": {"checked": 1, "faithful": False}}),
        ],
    )
    yield "substitute fidelity null", [(["substitute_fidelity"], None)]
    yield "resolution too fine to grid", [(["disclosure", "resolution"], 5e-324)]
    yield "resolution coarse", [(["disclosure", "resolution"], 0.5)]
    yield (
        "terms overflow",
        [
            (["disclosure", "terms", 0, "bits"], 1.7e308),
            (["disclosure", "terms", 1, "bits"], 1.7e308),
        ],
    )
    yield (
        "seed near the largest integer",
        [
            (["samples", "seed"], 2**53 - 1),
            (["samples", "seeds"], f"{2**53 - 1}..{2**53 + 18}"),
        ],
    )


def _cut_cases() -> Iterator[tuple[str, list[Op]]]:
    """Rule 7: a replay from a cut (``docs/cuts.md``)."""
    cut = {"name": "before-authority", "call_id": "main/before-authority#0", "calls_before": 3}
    named = (["request", "from_cut"], "before-authority")
    yield "replayed from a cut", [named, (["cut"], cut)]
    yield "a cut the request does not name", [(["cut"], cut)]
    yield "a request naming a cut not reported", [named]
    yield "a cut of another name", [(["request", "from_cut"], "before-drop"), (["cut"], cut)]
    yield "a cut by another call", [named, (["cut"], {**cut, "call_id": "main/approval#0"})]
    unscoped = {**cut, "call_id": "before-authority"}
    yield "a cut call id without a scope", [named, (["cut"], unscoped)]
    served = {"arm": "intervened", "call": cut["call_id"], "record": 0, "substitute": 20}
    served |= {"intervention": 0, "unservable": 0, "unused": 0, "absent": 0}
    yield "a cut served by substitute", [named, (["cut"], cut), (["served_by", 0], served)]
    yield "a cut name a pattern refuses", [(["request", "from_cut"], "-x"), (["cut"], cut)]


def _substitute_cases() -> Iterator[tuple[str, list[Op]]]:
    """Rule 8: substitute answers to requests the record does not hold (the golden v2
    has 13 samples of intervened new calls served by substitute)."""
    answer = {"boundaries": ["m"], "samples": 13}
    answers = ["substitute_answers"]
    allowed = (["request", "authoritative_substitutes"], ["m"])
    yield "substitute answers, unauthorised", [(answers, answer)]
    yield "substitute answers, authorised", [(answers, answer), allowed]
    yield "substitute answers, capped", [(answers, answer), (["classification"], "inconclusive")]
    yield "substitute answers, none", [(answers, {"boundaries": [], "samples": 0})]
    yield "substitute answers, no count", [(answers, {**answer, "samples": 0}), allowed]
    yield "substitute answers, no names", [(answers, {"boundaries": [], "samples": 3})]
    yield "substitute answers, twice", [(answers, {**answer, "boundaries": ["m", "m"]}), allowed]
    yield "substitute answers, too many", [(answers, {**answer, "samples": 14}), allowed]
    yield "substitute answers, no served_by", [(answers, answer), (["served_by"], None)]
    yield (
        "authoritative repeated",
        [allowed, (["request", "authoritative_substitutes"], ["m", "m"])],
    )


def _finding_cases(base: dict[str, Any]) -> Iterator[tuple[str, list[Op]]]:
    """Valid predicates for each branch of the finding (``ledger.certificates.finding``)
    that the other cases do not reach."""
    live = "the branch read live-state fields of a served response after the departure point"
    unverifiable = "an effect's idempotency token can no longer be re-verified"
    unserved = "an effect could not be served from the effect store"
    for name, reason, step, fields in (
        ("live state read", live, "decide-1", ["balance"]),
        ("effects unverifiable", f"{unverifiable}; {unserved}", None, []),
    ):
        auditability = {"class": "observable-only", "first_unverifiable_step": step}
        auditability |= {"live_state_fields": fields, "reason": reason}
        yield (
            f"observable-only, {name}",
            [
                (["classification"], "observable-only"),
                (["auditability"], auditability),
                (["effect"], None),
            ],
        )
    yield (
        "baseline not reproduced, two layers",
        [
            *UNREPRODUCED,
            (["baseline", "layers", "score"], {"delta": -0.004, "ok": False, "tolerance": 0.001}),
            (["baseline", "layers", "proposal"], {"changed_fields": ["/total"], "equal": False}),
            (["baseline", "layers", "proposal", "ok"], False),
        ],
    )
    yield "a bundle replaced", [(["intervention", "target", "field"], "bundle:limits")]
    for strategy in ("NULLIFY", "PERTURB", "REVISION", "CODE"):
        yield (
            f"strategy {strategy}",
            [
                (["request", "strategy"], strategy),
                (["intervention", "strategy"], strategy),
            ],
        )
    below_grid: list[Op] = [
        (["request", "tolerances"], {"score": 1e-9}),
        (["effect", "score_tolerance"], 1e-9),
        (["disclosure", "resolution"], 0.0001),
    ]
    yield "a score tolerance below the grid", below_grid
    by_score = _consistent(base, 20, 0, {"interval": (0.01, 0.02)})
    yield "a score tolerance below the grid, by the score alone", [*by_score, *below_grid]
    for n, k, interval in (
        (20, 0, (0.01, 0.02)),  # influential by the score alone
        (20, 1, (-0.03, -0.01)),  # the same, with one flip
        (20, 0, (-0.003, 0.004)),  # inconclusive on the score alone
        (30, 1, (-0.003, 0.004)),  # on both
    ):
        knobs = {"interval": interval, "flip_tolerance": 0.5}
        yield f"flips {k} of {n}, interval {interval}", _consistent(base, n, k, knobs)


# A consistent v2 predicate of an audit whose new calls were answered by governed
# inference: the golden's 13 intervened samples of new calls that a substitute answered
# are answered by the model endpoint instead, every row carries the inference column, and
# the inference section counts them (the preparation asked once, the baseline and the
# placebo never leave the record).
INFERENCE_SECTION: dict[str, Any] = {
    "grants": [
        {
            "boundary": "llm",
            "endpoint": "local-llm",
            "model": "qwen2.5-0.5b-instruct-q4_k_m.gguf",
            "vary": ["seed", "temperature"],
            "caps": {
                "calls": 64,
                "input_tokens": 65536,
                "output_tokens": 8192,
                "wall_seconds": 600,
            },
        }
    ],
    "seeded": True,
    "arms": {
        "preparation": {"asked": 1, "from_record": 0, "input_tokens": 212, "output_tokens": 9},
        "baseline": {"asked": 0, "from_record": 0, "input_tokens": 0, "output_tokens": 0},
        "intervened": {"asked": 13, "from_record": 0, "input_tokens": 2756, "output_tokens": 117},
        "placebo": {"asked": 0, "from_record": 0, "input_tokens": 0, "output_tokens": 0},
    },
}


def inference_ops(base: dict[str, Any]) -> list[Op]:
    """Operations that turn the v2 golden into ``INFERENCE_SECTION``'s audit."""
    ops: list[Op] = []
    for index, row in enumerate(base["served_by"]):
        answered = row["substitute"] if row["call"] == "new calls" else 0
        ops.append((["served_by", index, "inference"], answered))
        if answered:
            ops.append((["served_by", index, "substitute"], 0))
    return [*ops, (["inference"], INFERENCE_SECTION)]


def _inference_cases(base: dict[str, Any]) -> Iterator[tuple[str, str, list[Op]]]:
    """The inference section and column: schema mutations at their nodes, and each served-by
    rule of the column broken on its own."""
    ops = inference_ops(base)
    yield "rule", "inference", ops
    governed = apply(base, ops)
    nodes = [(["inference"], governed["inference"])]
    nodes += [
        (["served_by", i, "inference"], row["inference"])
        for i, row in enumerate(governed["served_by"])
    ]
    for start, value in nodes:
        for path, node in _nodes(value, start):
            where = "/" + "/".join(map(str, path))
            for index, variant in enumerate(_variants(node)):
                yield "schema", f"inference schema {where} #{index}", [*ops, (path, variant)]
    new = next(i for i, row in enumerate(governed["served_by"]) if row["inference"])
    s = ["served_by"]
    yield "rule", "inference column on some rows only", [*ops, ([*s, 0, "inference"], DELETE)]
    yield (
        "rule",
        "inference column on the new calls only",
        [
            *ops,
            *[
                ([*s, i, "inference"], DELETE)
                for i in range(len(governed["served_by"]))
                if i != new
            ],
        ],
    )
    yield "rule", "inference without a grant", [*ops, (["inference"], DELETE)]
    yield "rule", "inference null", [*ops, (["inference"], None)]
    yield (
        "rule",
        "inference column of zeros without a grant",
        [
            *ops,
            ([*s, new, "substitute"], 13),
            ([*s, new, "inference"], 0),
            (["inference"], DELETE),
        ],
    )
    yield (
        "rule",
        "inference granted, none answered",
        [
            *ops,
            ([*s, new, "substitute"], 13),
            ([*s, new, "inference"], 0),
        ],
    )
    yield "rule", "inference column beyond the sample count", [*ops, ([*s, new, "inference"], 14)]
    yield (
        "rule",
        "inference answered a call the record knows",
        [
            *ops,
            ([*s, 3, "unused"], 0),
            ([*s, 3, "inference"], 13),
        ],
    )
    yield (
        "rule",
        "inference in the baseline",
        [
            *ops,
            ([*s, 0, "record"], 19),
            ([*s, 0, "inference"], 1),
        ],
    )
    yield (
        "rule",
        "ambient input the record does not hold",
        [
            *ops,
            ([*s, new, "call"], "ambient:env#0"),
        ],
    )


def _v1_rule_cases() -> Iterator[tuple[str, list[Op]]]:
    e = ["effect"]
    yield "disclosure bits off", [(["disclosure", "bits"], 1.0)]
    yield "digest equality contradicts", [(["intervention", "unchanged_digest_equal"], False)]
    yield "seeds misspelt", [(["samples", "seeds"], "41..61")]
    yield "baseline not reproduced", [(["baseline", "reproduced"], False)]
    yield "no intervention", [(["intervention"], None)]
    yield "changes differ", [(["intervention", "actual_changes"], ["/model/other"])]
    yield "placebo failed", [(["placebo", "passed"], False)]
    yield "observable-only", [(["auditability", "class"], "observable-only")]
    yield "no samples", [(["samples"], None)]
    yield "edges unordered", [([*e, "histogram", "edges", 1], 0.9)]
    yield "counts sum", [([*e, "histogram", "counts", 0], 7)]
    yield "mean off grid", [([*e, "mean_delta"], -0.0405)]
    yield "mean outside", [([*e, "mean_delta"], 0.5)]
    yield "flip rate outside", [([*e, "flip_rate"], 0.99)]
    yield "no effect", [(["effect"], None)]
    yield "resolution too fine to grid", [(["disclosure", "resolution"], 5e-324)]


def _consistent(base: dict[str, Any], n: int, k: int, knobs: dict[str, Any]) -> list[Op]:
    """Operations that make the v2 golden report ``k`` flips in ``n`` samples, every
    figure recomputed, so that only the label follows from the rules' own arithmetic."""
    effect = copy.deepcopy(base["effect"])
    seed = knobs.get("seed", 41)
    effect["confidence"] = knobs.get("confidence", effect["confidence"])
    effect["equivalence"]["alpha"] = knobs.get("alpha", effect["equivalence"]["alpha"])
    effect["mde"]["power"] = knobs.get("power", effect["mde"]["power"])
    effect["flip_tolerance"] = knobs.get("flip_tolerance", effect["flip_tolerance"])
    effect["flips"], effect["flip_rate"] = k, k / n
    effect["flip_interval"] = list(clopper_pearson(k, n, effect["confidence"]))
    alpha = effect["equivalence"]["alpha"]
    effect["equivalence"]["flip_upper"] = clopper_pearson(k, n, 1 - 2 * alpha)[1]
    effect["baseline_rate"], effect["intervened_rate"] = 1, (n - k) / n
    effect["mde"]["flip_rate"] = flip_mde(n, power=effect["mde"]["power"])
    effect["layer_changes"] = {name: min(v, n) for name, v in effect["layer_changes"].items()}
    if knobs.get("categorical"):
        for key in ("mean_delta", "delta_interval", "histogram"):
            effect[key] = None
        effect["outcome"] = "categorical"
        effect["equivalence"]["delta_interval"] = None
        effect["mde"]["delta"] = None
    elif "interval" in knobs:
        lo, hi = knobs["interval"]
        effect["delta_interval"], effect["mean_delta"] = [lo, hi], round((lo + hi) / 2, 3)
        effect["equivalence"]["delta_interval"] = [
            round(lo + 0.001, 3),
            round(hi - 0.001, 3),
        ]
    if effect["histogram"] is not None:
        counts = [0] * len(effect["histogram"]["counts"])
        counts[0] = n
        effect["histogram"]["counts"] = counts
    effect_ops: list[Op] = [(["effect"], effect)]
    rows = [[seed + i, "recorded", "other" if i < k else "recorded", i < k] for i in range(n)]
    recorded: dict[str, Any]
    if seed <= 41 < seed + n:
        _, b, i, f = rows[41 - seed]
        delta = None if knobs.get("categorical") else 0.0
        recorded = {"seed": 41, "sampled": True, "flip": f, "baseline": b, "intervened": i}
        recorded["delta"] = delta
    else:
        recorded = {"seed": 41, "sampled": False}
    served = copy.deepcopy(base["served_by"])
    for row in served:
        column = "intervention" if row["intervention"] else "record"
        if row["call"] == "new calls":
            column = "absent"
        for name in ("record", "substitute", "intervention", "unservable", "unused", "absent"):
            row[name] = n if name == column else 0
    label = effect_label(
        delta_interval=effect["delta_interval"],
        equivalence_interval=effect["equivalence"]["delta_interval"],
        score_tolerance=effect["score_tolerance"],
        flips=k,
        flip_upper=effect["equivalence"]["flip_upper"],
        flip_tolerance=effect["flip_tolerance"],
    )
    return [
        *effect_ops,
        (["samples"], {"count": n, "seed": seed, "seeds": f"{seed}..{seed + n - 1}"}),
        (["sample_rows"], rows),
        (["recorded_seed"], recorded),
        (["served_by"], served),
        (["classification"], label),
    ]


def figure_cases(base: dict[str, Any]) -> Iterator[tuple[str, list[Op]]]:
    rng = random.Random(20261201)  # noqa: S311 (seeded, reproducible cases, no secret)
    plans: list[tuple[int, int, dict[str, Any]]] = [
        (1, 0, {}),
        (1, 1, {}),
        (2, 0, {}),
        (2, 1, {}),
        (2, 2, {}),
        (3, 1, {"confidence": 0.99}),
        (20, 0, {"interval": (-0.001, 0.001)}),
        (20, 0, {"interval": (-0.001, 0.001), "flip_tolerance": 0.5}),
        (20, 1, {"categorical": True}),
        (20, 0, {"categorical": True, "flip_tolerance": 0.9}),
        (200, 0, {"interval": (-0.002, 0.002), "flip_tolerance": 0.05}),
        (400, 0, {"categorical": True, "flip_tolerance": 0.01}),
        (400, 3, {"seed": 7}),
        (5, 5, {"seed": 100}),
    ]
    for _ in range(24):
        n = rng.choice([2, 3, 5, 8, 13, 20, 37, 64, 99, 150])
        knobs = {
            "confidence": rng.choice([0.8, 0.9, 0.95, 0.99, 0.999]),
            "alpha": rng.choice([0.01, 0.05, 0.1, 0.25]),
            "power": rng.choice([0.5, 0.8, 0.9, 0.95]),
            "flip_tolerance": rng.choice([0.01, 0.05, 0.2, 0.6]),
            "seed": rng.choice([0, 1, 30, 41, 42]),
        }
        if rng.random() < 0.3:
            knobs["categorical"] = True
        plans.append((n, rng.randint(0, n), knobs))
    for n, k, knobs in plans:
        ops = _consistent(base, n, k, knobs)
        name = f"figures n={n} k={k} {json.dumps(knobs, sort_keys=True)}"
        yield name, ops
        effect = ops[0][1]
        for factor, side in ((1 + 3e-10, "inside"), (1 + 3e-9, "outside")):
            nudged = copy.deepcopy(effect)
            nudged["flip_interval"][1] = min(1.0, nudged["flip_interval"][1] * factor)
            nudged["equivalence"]["flip_upper"] *= 1 / factor
            yield f"{name} nudged {side}", [(["effect"], nudged), *ops[1:]]
        if effect["mde"]["flip_rate"] is not None:
            nudged = copy.deepcopy(effect)
            nudged["mde"]["flip_rate"] *= 1 + 3e-9
            yield f"{name} mde nudged", [(["effect"], nudged), *ops[1:]]


def _v3_rule_cases() -> Iterator[tuple[str, list[Op]]]:
    """Rules v3 has of its own (the golden v3: N = 20, intervened new calls substituted
    in some samples, no recorded boundary substituted)."""
    e, s = ["effect"], ["served_by"]
    yield "disclosure bits off", [(["disclosure", "bits"], 600.0)]
    yield "equivalence not derived", [([*e, "equivalence", "delta_interval"], [-0.048, -0.033])]
    yield "equivalence nudged", [([*e, "equivalence", "delta_interval", 1], -0.033 + 3e-9)]
    yield "mde not derived", [([*e, "mde", "delta"], 0.013)]
    yield "mean off grid", [([*e, "mean_delta"], -0.0405)]
    yield "mean outside", [([*e, "mean_delta"], -0.02)]
    yield "interval off grid", [([*e, "delta_interval", 0], -0.0495)]
    yield "categorical with numbers", [([*e, "outcome"], "categorical")]
    yield (
        "categorical",
        [
            ([*e, "outcome"], "categorical"),
            ([*e, "mean_delta"], None),
            ([*e, "delta_interval"], None),
            ([*e, "equivalence", "delta_interval"], None),
            ([*e, "mde", "delta"], None),
        ],
    )
    yield "a histogram", [([*e, "histogram"], None)]
    yield "layer changes counted", [([*e, "layer_changes", "score"], 20)]
    yield "equivalent label", [(["classification"], "equivalent")]
    yield "flips", [([*e, "flips"], 12)]
    yield "sample rows", [(["sample_rows"], None)]
    yield "recorded seed unsampled", [(["recorded_seed", "sampled"], False)]
    yield "recorded seed outside", [(["recorded_seed"], {"seed": 7, "sampled": False})]
    yield "recorded seed flip contradicts", [(["recorded_seed", "flip"], False)]
    yield "recorded seed with its delta", [(["recorded_seed", "delta"], 0.0)]
    yield "served twice", [([*s, 1, "arm"], "baseline")]
    yield "served all and some", [([*s, 0, "unused"], "some")]
    yield "served one some", [([*s, 0, "record"], "some")]
    yield "served nothing", [([*s, 0, "record"], "none")]
    yield "served counted", [([*s, 0, "record"], 20)]
    yield (
        "served intervention in baseline",
        [([*s, 0, "record"], "some"), ([*s, 0, "intervention"], "some")],
    )
    yield "served new calls from record", [([*s, 2, "record"], "some")]
    yield "served new calls unused", [([*s, 2, "unused"], "some")]
    yield "served by call", [([*s, 0, "calls"], "approval-1")]
    yield "substituted without a mark", [(["substituted"], ["approval"])]
    yield (
        "substitute mark, none substituted",
        [([*s, 0, "record"], "some"), ([*s, 0, "substitute"], "some")],
    )
    marked = [([*s, 0, "record"], "some"), ([*s, 0, "substitute"], "some")]
    yield "substituted, faithful", [*marked, (["substituted"], ["approval"])]
    yield (
        "substituted, unfaithful",
        [
            *marked,
            (["substituted"], ["approval"]),
            (["substitute_fidelity"], {"approval": {"checked": 3, "faithful": False}}),
        ],
    )
    yield (
        "another boundary unfaithful",
        [
            *marked,
            (["substituted"], ["approval"]),
            (["substitute_fidelity"], {"risk": {"checked": 3, "faithful": False}}),
        ],
    )
    yield "substituted null", [(["substituted"], None)]
    yield "substituted twice", [*marked, (["substituted"], ["approval", "approval"])]
    yield "no served-by, substituted", [(["served_by"], None)]
    yield "no served-by", [(["served_by"], None), (["substituted"], None)]
    yield "no samples", [(["samples"], None)]
    yield "inference column on one row", [([*s, 0, "inference"], "none")]
    inference = [([*s, i, "inference"], "none") for i in range(4)]
    yield "inference column of nones", inference
    yield (
        "inference without a grant",
        [*inference, ([*s, 2, "inference"], "some"), ([*s, 2, "substitute"], "none")],
    )
    yield (
        "inference under a grant",
        [
            *inference,
            ([*s, 2, "inference"], "some"),
            ([*s, 2, "substitute"], "none"),
            (["inference"], INFERENCE_SECTION),
        ],
    )
    cut = {"name": "approval", "call_id": "agent/approval#0", "calls_before": 3}
    named = (["request", "from_cut"], "approval")
    yield "replayed from a cut", [named, (["cut"], cut)]
    yield (
        "a cut whose boundary was substituted",
        [named, (["cut"], cut), *marked, (["substituted"], ["approval"])],
    )
    yield "a cut of another name", [(["request", "from_cut"], "before-drop"), (["cut"], cut)]
    answer = {"boundaries": ["m"], "samples": 13}
    allowed = (["request", "authoritative_substitutes"], ["m"])
    yield "substitute answers, authorised", [(["substitute_answers"], answer), allowed]
    yield "substitute answers, unauthorised", [(["substitute_answers"], answer)]
    yield "substitute answers, all", [(["substitute_answers"], {**answer, "samples": 20}), allowed]
    yield (
        "substitute answers, too many",
        [(["substitute_answers"], {**answer, "samples": 21}), allowed],
    )
    yield (
        "substitute answers, no mark",
        [(["substitute_answers"], answer), allowed, ([*s, 2, "substitute"], "none")],
    )


def _tight_ops(v2: dict[str, Any], v3: dict[str, Any], ops: list[Op]) -> list[Op]:
    """``ops`` of the v2 golden stated tight, as operations on the v3 golden (the label
    re-derived from the derived intervals, the disclosure the v3 golden's)."""
    tight = tight_predicate(apply(v2, ops))
    tight["disclosure"] = v3["disclosure"]
    effect = tight["effect"]
    if effect is not None:
        tight["classification"] = effect_label(
            delta_interval=effect["delta_interval"],
            equivalence_interval=effect["equivalence"]["delta_interval"],
            score_tolerance=effect["score_tolerance"],
            flips=effect["flips"],
            flip_upper=effect["equivalence"]["flip_upper"],
            flip_tolerance=effect["flip_tolerance"],
        )
    out: list[Op] = [([key], value) for key, value in tight.items() if v3.get(key) != value]
    return out + [([key], DELETE) for key in v3 if key not in tight]


def _v3_figure_cases(v2: dict[str, Any], v3: dict[str, Any]) -> Iterator[tuple[str, list[Op]]]:
    rng = random.Random(20261207)  # noqa: S311 (seeded, reproducible cases, no secret)
    plans: list[tuple[int, int, dict[str, Any]]] = [
        (2, 0, {"interval": (-0.001, 0.001)}),
        (2, 1, {"interval": (-0.2, 0.3)}),
        (20, 0, {"interval": (0.0, 0.0)}),
        (20, 0, {"interval": (-0.001, 0.001), "flip_tolerance": 0.5}),
        (20, 1, {"categorical": True}),
        (200, 0, {"interval": (-0.002, 0.002), "flip_tolerance": 0.05}),
        (1000, 0, {"interval": (-0.004, 0.003), "flip_tolerance": 0.05}),
        (3, 0, {"interval": (-1.0, 0.2)}),  # one end clamped at -1
        (3, 1, {"interval": (-0.3, 1.0)}),
        (2, 0, {"interval": (-1.0, 1.0)}),  # both: nothing is known of the spread
    ]
    for _ in range(24):
        n = rng.choice([2, 3, 5, 8, 13, 20, 37, 64, 99, 150, 1000])
        lo = rng.randint(-300, 100) / 1000
        knobs = {
            "confidence": rng.choice([0.8, 0.9, 0.95, 0.99, 0.999]),
            "alpha": rng.choice([0.01, 0.05, 0.1, 0.25]),
            "power": rng.choice([0.5, 0.8, 0.9, 0.95]),
            "flip_tolerance": rng.choice([0.01, 0.05, 0.2, 0.6]),
            "interval": (lo, lo + rng.randint(0, 200) / 1000),
        }
        plans.append((n, rng.randint(0, n // 10), knobs))
    for n, k, knobs in plans:
        name = f"tight figures n={n} k={k} {json.dumps(knobs, sort_keys=True)}"
        yield name, _tight_ops(v2, v3, _consistent(v2, n, k, knobs))


def _canonical(value: Any) -> Any:
    return json.loads(rfc8785.dumps(value))


def _judge(predicate: Any, predicate_type: str) -> dict[str, Any]:
    """The verdict, and for a predicate that passes, the finding it states."""
    try:
        problems = predicate_problems(predicate, predicate_type)
    except (ValueError, TypeError, ArithmeticError):
        return {"raises": True, "problems": []}
    if problems:
        return {"raises": False, "problems": problems}
    return {
        "raises": False,
        "problems": [],
        "finding": finding(predicate, predicate_type, checked=True),
    }


def cases() -> Iterator[dict[str, Any]]:
    rules = {"v1": _v1_rule_cases, "v2": _v2_rule_cases, "v3": _v3_rule_cases}
    for version in ("v1", "v2", "v3"):
        base = golden(version)
        generated: list[tuple[str, str, list[Op]]] = [("golden", "golden", [])]
        generated += [("schema", n, ops) for n, ops in schema_cases(version, base)]
        generated += [("rule", n, ops) for n, ops in rules[version]()]
        if version == "v2":
            generated += [("figures", n, ops) for n, ops in figure_cases(base)]
        if version == "v3":
            v2 = golden("v2")
            generated += [("figures", n, ops) for n, ops in _v3_figure_cases(v2, base)]
        rng = random.Random(f"predicate-corpus-{version}")  # noqa: S311 (seeded cases)
        pool = [ops for kind, _, ops in generated if kind in ("schema", "rule")]
        for index in range(RANDOM_STACKS[version]):
            stack = [op for ops in rng.sample(pool, rng.choice([2, 3])) for op in ops]
            generated.append(("random", f"random #{index}", stack))
        if version == "v2":  # after the random stacks, which they would reshuffle
            generated += [("rule", n, ops) for n, ops in _cut_cases()]
            generated += [("rule", n, ops) for n, ops in _substitute_cases()]
            generated += list(_inference_cases(base))
            generated += [("finding", n, ops) for n, ops in _finding_cases(base)]
        for kind, name, ops in generated:
            try:
                ops = [(path, _canonical(value)) for path, value in ops]
                predicate = _canonical(apply(base, ops))
            except (KeyError, IndexError, TypeError, ValueError, rfc8785.CanonicalizationError):
                continue  # a stacked operation whose path an earlier one removed, or no JSON
            yield {
                "version": version,
                "kind": kind,
                "name": name,
                "ops": [[path, value] for path, value in ops],
                **_judge(predicate, TYPES[version]),
            }


def render() -> str:
    corpus = {
        "types": TYPES,
        "goldens": {version: golden(version) for version in TYPES},
        "delete": DELETE,
        "cases": list(cases()),
    }
    return json.dumps(corpus, separators=(",", ":"), sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--check"]:
        if not TARGET.is_file() or TARGET.read_text() != text:
            print(
                f"{TARGET.name} is stale: run scripts/export-predicate-corpus.py", file=sys.stderr
            )
            return 1
        return 0
    if argv:
        print("usage: export-predicate-corpus.py [--check]", file=sys.stderr)
        return 2
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
