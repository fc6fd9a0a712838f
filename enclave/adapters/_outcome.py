"""What a framework agent's run reports, as every adapter declares it."""

from __future__ import annotations

from ..capture import FieldPolicy, policy

__all__ = ["outcome_policies"]


def outcome_policies(proposal: FieldPolicy, *, scored: bool) -> dict[str, FieldPolicy]:
    """The outcome's fields: the decision, its evidence and (for a scored agent) the score
    as the ledger keeps them, ``internal``; the framework's typed output, the proposal,
    under ``proposal`` — the content classification, sealed."""
    fields = {"decision": policy("internal"), "proposal": proposal, "evidence": policy("internal")}
    if scored:
        fields["score"] = policy("internal")
    return fields
