"""The finding: what a certificate found, in plain language, from its signed figures only.

Every view of a certificate opens with it (the command line, the notebook, the sidebar,
the viewer) and every verifier re-derives it from the predicate it verified, so a
reader never takes a sentence on trust: it is a function of the predicate's figures and
closed vocabularies and of nothing else. The browser's port
(``labextension/src/predicate/finding.ts``) gives the same sentence on every valid case
of the predicate parity corpus.

How figures are written, so that the sentence never claims more than the certificate:

* counts are exact ("13 of 20 paired runs"); the percentage of a count is rounded half
  up from the integers; interval ends are rounded outward to whole percents (the lower
  end down, the upper end up), so the stated interval holds the certified one;
* score deltas are written on the certificate's resolution grid (as many decimals as the
  resolution has) with a sign; a score tolerance finer than half the grid is "zero";
* a confidence level is a percentage to one decimal at most.

The label decides the sentence: ``influential`` (by flips, or by the score alone),
``equivalent``, ``inconclusive`` (with what kept it so), ``baseline-not-reproduced``,
``observable-only``; a v1 certificate states its own label. ``finding`` takes a
predicate that passed ``predicate_problems`` (it raises ``PredicateInvalid`` on one that
did not; a verifier that has just checked it says so); ``failed_finding`` is the
sentence of an audit that ended without a certificate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._errors import PredicateInvalid
from ._versions import PREDICATE_TYPE_V1, predicate_problems
from .statistics import MIN_FLIPS

__all__ = ["envelope_finding", "failed_finding", "finding"]

_EPS = 1e-9
_MINUS = "\N{MINUS SIGN}"
_DASH = "\N{EN DASH}"
_VERBS = {
    "NULLIFY": ("removing", "from"),
    "REPLACE": ("replacing", "in"),
    "PERTURB": ("perturbing", "in"),
}


def _capital(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]


def _runs(n: int) -> str:
    return f"{n} paired run" if n == 1 else f"{n} paired runs"


def _share(k: int, n: int) -> int:
    """``k`` out of ``n`` as a whole percentage, half up, from the integers."""
    return (200 * k + n) // (2 * n)


def _percent(value: float) -> str:
    """A rate or level as a percentage with at most one decimal, half up."""
    tenths = math.floor(value * 1000 + 0.5)
    return f"{tenths // 10}%" if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}%"


def _outward(interval: Sequence[float]) -> str:
    lo = math.floor(interval[0] * 100 + _EPS)
    hi = math.ceil(interval[1] * 100 - _EPS)
    return f"{lo}{_DASH}{hi}%"


def _up(rate: float) -> str:
    """An upper bound, rounded up to a tenth of a percent."""
    tenths = math.ceil(rate * 1000 - _EPS)
    return f"{tenths // 10}%" if tenths % 10 == 0 else f"{tenths // 10}.{tenths % 10}%"


def _decimals(resolution: float) -> int:
    """How many decimals the grid needs: the fewest that write ``resolution`` exactly."""
    for digits in range(13):
        scaled = resolution * 10**digits
        if abs(scaled - round(scaled)) <= _EPS * max(1.0, scaled):
            return digits
    return 12


def _delta(value: float, digits: int) -> str:
    # a v1 interval end is not bounded: a huge one is written as a power of ten
    text = f"{abs(value):.3e}" if abs(value) >= 1e15 else f"{abs(value):.{digits}f}"
    if text.strip("0.") == "":
        return text
    return (_MINUS if value < 0 else "+") + text


def _interval(interval: Sequence[float], digits: int) -> str:
    return f"{_delta(interval[0], digits)} to {_delta(interval[1], digits)}"


def _tolerance(tolerance: float, resolution: float, digits: int) -> str:
    if tolerance < resolution / 2:
        return "a tolerance of zero"
    return f"the tolerance of \N{PLUS-MINUS SIGN}{tolerance:.{digits}f}"


def _subject(p: Mapping[str, Any]) -> str:
    """The intervention as a noun phrase: ``replacing /model/revision in call decide-1``."""
    request, intervention = p["request"], p["intervention"] or {}
    strategy = intervention.get("strategy") or request["strategy"]
    if strategy == "CODE":
        return "running the candidate code in place of the recorded agent"
    target = intervention.get("target") or {}
    call, field = target.get("call_id") or request["call"], target.get("field")
    if strategy == "REVISION":
        return f"switching call {call} to another declared revision"
    verb, preposition = _VERBS[strategy]
    if not field:
        return f"{verb} call {call}"
    if field.startswith("bundle:"):
        field = f"the bundle {field[len('bundle:') :]}"
    return f"{verb} {field} {preposition} call {call}"


class _Figures:
    """The figures a sentence is made of, read once from the predicate."""

    def __init__(self, p: Mapping[str, Any]) -> None:
        effect, n = p["effect"], p["samples"]["count"]
        self.n = n
        self.flips = effect["flips"] if "flips" in effect else round(effect["flip_rate"] * n)
        self.level = _percent(effect.get("confidence", 0.95))
        self.flip_interval = effect["flip_interval"]
        self.resolution = p["disclosure"]["resolution"]
        self.digits = _decimals(self.resolution)
        self.mean = effect["mean_delta"]
        self.delta_interval = effect["delta_interval"]
        self.tolerance = effect.get("score_tolerance")
        self.flip_tolerance = effect.get("flip_tolerance")
        equivalence: Mapping[str, Any] = effect.get("equivalence") or {}
        self.alpha: float | None = equivalence.get("alpha")
        self.equivalence_interval: Sequence[float] | None = equivalence.get("delta_interval")
        self.flip_upper: float | None = equivalence.get("flip_upper")

    def decisions(self) -> str:
        """``in k of N paired runs (p%, C interval lo–hi%)``"""
        k, n = self.flips, self.n
        share = f"{_share(k, n)}%, {self.level} interval {_outward(self.flip_interval)}"
        return f"in {k} of {_runs(n)} ({share})"

    def moved(
        self, interval: Sequence[float] | None = None, level: str = "", note: str = ""
    ) -> str:
        """``by m (C interval a to b)``: the two-sided interval unless another is given."""
        shown = _interval(self.delta_interval if interval is None else interval, self.digits)
        return f"by {_delta(self.mean, self.digits)} ({level or self.level} interval {shown}{note})"

    def tolerance_text(self) -> str:
        assert self.tolerance is not None  # v2 only
        return _tolerance(self.tolerance, self.resolution, self.digits)

    def beyond(self) -> bool:
        lo, hi = self.delta_interval
        return bool(lo > self.tolerance or hi < -self.tolerance)

    def inside(self) -> bool:
        assert self.equivalence_interval is not None  # a numeric v2 outcome
        lo, hi = self.equivalence_interval
        return bool(-self.tolerance <= lo and hi <= self.tolerance and -1 < lo and hi < 1)


def _influential(subject: str, f: _Figures) -> str:
    if f.flips >= MIN_FLIPS:
        text = f"{_capital(subject)} changed the decision {f.decisions()}"
        if f.mean is not None:
            text += f"; the score moved {f.moved()}"
        return text + "."
    changed = "none" if f.flips == 0 else str(f.flips)
    return (
        f"{_capital(subject)} moved the score {f.moved()}, clear of {f.tolerance_text()}; "
        f"the decision changed in {changed} of {_runs(f.n)}."
    )


def _equivalent(subject: str, f: _Figures) -> str:
    assert f.alpha is not None and f.flip_tolerance is not None and f.flip_upper is not None
    text = (
        f"{_capital(subject)} made no difference beyond the declared tolerances: the decision "
        f"changed in none of {_runs(f.n)} (at most {_up(f.flip_upper)} at "
        f"{_percent(1 - f.alpha)} confidence, below the {_percent(f.flip_tolerance)} tolerance)"
    )
    if f.mean is not None:
        within = f", within {f.tolerance_text()}"
        moved = f.moved(f.equivalence_interval, _percent(1 - 2 * f.alpha), within)
        text += f"; the score moved {moved}"
    return text + "."


def _unauthorised(p: Mapping[str, Any]) -> list[str]:
    allowed = set(p["request"].get("authoritative_substitutes") or ())
    answers = p.get("substitute_answers") or {"boundaries": []}
    return [name for name in answers["boundaries"] if name not in allowed]


def _inconclusive(p: Mapping[str, Any], subject: str, f: _Figures) -> str:
    assert f.alpha is not None and f.flip_tolerance is not None and f.flip_upper is not None
    clauses = []
    if f.flips == 0:
        clause = f"no decision changed in {_runs(f.n)}"
        if f.flip_upper >= f.flip_tolerance:
            clause += (
                f", but a rate up to {_up(f.flip_upper)} cannot be ruled out at "
                f"{_percent(1 - f.alpha)} confidence (the tolerance is "
                f"{_percent(f.flip_tolerance)})"
            )
        clauses.append(clause)
    elif f.flips < MIN_FLIPS:
        clauses.append(
            f"the decision changed in {f.flips} of {_runs(f.n)} "
            f"(a conclusion needs at least {MIN_FLIPS})"
        )
    else:
        clauses.append(f"the decision changed {f.decisions()}")
    if f.mean is not None:
        clause = f"the score moved {f.moved()}"
        if not f.beyond() and not f.inside():
            clause += f", which neither clears nor stays within {f.tolerance_text()}"
        clauses.append(clause)
    text = f"Not enough evidence to tell whether {subject} makes a difference: "
    text += "; ".join(clauses) + "."
    capped = _unauthorised(p)
    if capped:
        text += (
            " The label is capped at inconclusive: a substitute answered requests the record "
            f"does not hold ({', '.join(capped)}), which the request did not declare "
            "authoritative."
        )
    return text


def _diverged(p: Mapping[str, Any]) -> str:
    layers = (p["baseline"] or {}).get("layers") or {}
    resolution = p["disclosure"]["resolution"]
    parts = []
    for name in sorted(layers):
        layer = layers[name]
        if layer.get("ok"):
            continue
        delta = layer.get("delta")
        if name == "score" and delta is not None:
            parts.append(f"the score moved by {_delta(delta, _decimals(resolution))}")
        else:
            parts.append(f"{name} differed")
    return f" ({', '.join(parts)})" if parts else ""


def _auditability(p: Mapping[str, Any]) -> str:
    auditability = p["auditability"]
    return f" {_capital(auditability['class'])}: {auditability['reason']}."


def _v2(p: Mapping[str, Any]) -> str:
    label, subject = p["classification"], _subject(p)
    if label == "baseline-not-reproduced":
        return (
            "Not assessed: the untouched baseline did not reproduce the recorded run"
            f"{_diverged(p)}, so the effect of {subject} was not measured."
        )
    if label == "observable-only":
        auditability = p["auditability"]
        text = (
            f"{_capital(subject)} was replayed, but no counterfactual conclusion is "
            f"certified: {auditability['reason']}"
        )
        step = auditability.get("first_unverifiable_step")
        return text + (f" (first unverifiable step: {step})." if step is not None else ".")
    figures = _Figures(p)
    if label == "influential":
        text = _influential(subject, figures)
    elif label == "equivalent":
        text = _equivalent(subject, figures)
    else:
        text = _inconclusive(p, subject, figures)
    return text + _auditability(p)


def _v1(p: Mapping[str, Any]) -> str:
    text = f"This v1 certificate classifies {_subject(p)} as {p['classification']}"
    if p["effect"] is not None and p["samples"] is not None:
        figures = _Figures(p)
        text += f"; the decision changed {figures.decisions()}; the score moved {figures.moved()}"
    return text + "." + _auditability(p)


def finding(predicate: Mapping[str, Any], predicate_type: str, *, checked: bool = False) -> str:
    """The finding of a predicate, checked first unless its caller has just checked it
    (``checked``): one that does not pass its checks states none (``PredicateInvalid``,
    naming locations and rules only)."""
    if not checked:
        problems = predicate_problems(predicate, predicate_type)
        if problems:
            raise PredicateInvalid(problems)
    return _v1(predicate) if predicate_type == PREDICATE_TYPE_V1 else _v2(predicate)


def envelope_finding(envelope: Mapping[str, Any], *, checked: bool = False) -> str:
    """The finding of a certificate's DSSE envelope (its statement's predicate), as
    ``finding``; a payload that is not a statement is ``PredicateInvalid``."""
    import base64
    import binascii
    import json

    try:
        statement = json.loads(base64.b64decode(str(envelope["payload"]), validate=True))
        predicate, predicate_type = statement["predicate"], str(statement["predicateType"])
    except (KeyError, TypeError, ValueError, binascii.Error):
        raise PredicateInvalid(["the envelope's payload is not a statement"]) from None
    return finding(predicate, predicate_type, checked=checked)


def failed_finding(reason: str) -> str:
    """The sentence of an audit that failed: no certificate, nothing established."""
    return (
        f"The audit failed ({reason}) and no certificate was issued: nothing is established "
        "about the intervention."
    )
