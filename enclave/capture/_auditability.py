"""How far a specimen can be audited, decided once at seal from its declarations.

An *irreversible* effect (``BoundarySpec.irreversible``) can be repeated in a replay only
as a dry run, through its boundary's declared substitute (the dry-run adapter). Walking
the recorded steps in order:

1. a cut step is remembered as the last cut so far;
2. an irreversible effect is *covered* when its boundary declares a dry-run substitute
   and a cut was recorded before it;
3. the first effect that is not covered seals the specimen
   ``not-auditable-beyond <last cut before it>`` (``start`` when none was), naming that
   effect's call; when every one is covered the specimen is ``auditable``.

This is a fact about the specimen, not about an audit: an audit's own class
(counterfactual-admissible, observable-only, not-assessed) is still decided per branch
(``enclave.replay._verdict``). Metadata only: names and call ids the ledger shows anyway.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ledger import StepKind, StepRecord

from ._spec import AgentSpec

__all__ = ["AUDITABLE", "NOT_AUDITABLE_BEYOND", "START", "sealed_auditability"]

AUDITABLE = "auditable"
NOT_AUDITABLE_BEYOND = "not-auditable-beyond"
START = "start"  # no cut was recorded before the uncovered effect


def sealed_auditability(agent: AgentSpec, steps: Iterable[StepRecord]) -> dict[str, Any]:
    """``{"class", "cut", "effect"}``: ``auditable`` (cut and effect None), or
    ``not-auditable-beyond <cut>`` with the cut's name and the uncovered effect's call."""
    dry_run = {b.name: b.substitute is not None for b in agent.boundaries if b.irreversible}
    last_cut: str | None = None
    for step in steps:
        if step.kind is StepKind.CUT:
            last_cut = step.name
        elif step.name in dry_run and step.effect is not None:
            if not (dry_run[step.name] and last_cut is not None):
                cut = last_cut or START
                return {
                    "class": f"{NOT_AUDITABLE_BEYOND} {cut}",
                    "cut": cut,
                    "effect": step.call_id,
                }
    return {"class": AUDITABLE, "cut": None, "effect": None}
