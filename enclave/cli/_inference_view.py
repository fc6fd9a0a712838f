"""Governed inference on the command line: ``audit --inference GRANT`` read as grants, and
a certificate's ``inference`` section as a person reads it.

What is shown is the section's own metadata — the grants (boundary, the operator's
endpoint name, the pinned model identity, what may vary, the caps) and per arm the counts
of answers asked of the endpoint and served from the audit's record, and the tokens. No
prompt or answer reaches this module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import BadInput

if TYPE_CHECKING:
    from ..replay.inference import InferenceGrant

__all__ = ["INFERENCE_ARMS", "inference_rows", "parse_grants"]

INFERENCE_ARMS = ("preparation", "baseline", "intervened", "placebo")


def parse_grants(texts: Sequence[str]) -> tuple[InferenceGrant, ...]:
    """Each ``--inference`` value, a JSON object, as a grant; a message names the key at
    fault and never echoes the value."""
    from ..replay.inference import InferenceGrant

    grants = []
    for text in texts:
        try:
            data = json.loads(text)
        except ValueError:
            raise BadInput("--inference takes a grant as a JSON object") from None
        try:
            grants.append(InferenceGrant.from_dict(data))
        except BadInput as exc:
            raise BadInput(f"--inference: {exc}") from None
    return tuple(grants)


def _grant_row(grant: Mapping[str, Any]) -> str:
    caps = grant["caps"]
    vary = ", ".join(grant.get("vary") or ()) or "nothing"
    return (
        f"model {grant['model']} at endpoint {grant['endpoint']}; varies {vary}; "
        f"caps {caps['calls']} calls, {caps['input_tokens']} input and "
        f"{caps['output_tokens']} output tokens, {caps['wall_seconds']} s"
    )


def _arm_row(tally: Mapping[str, Any]) -> str:
    return (
        f"asked {tally['asked']}, from record {tally['from_record']}; "
        f"tokens {tally['input_tokens']} in, {tally['output_tokens']} out"
    )


def inference_rows(section: Mapping[str, Any]) -> dict[str, str]:
    """A certificate's ``inference`` section as field/value rows: one per grant, whether
    the supervisor seeded the paired draws, one per arm."""
    rows = {f"grant {g['boundary']}": _grant_row(g) for g in section["grants"]}
    rows["seeded"] = (
        "yes: each paired sample's provider seed is set by the supervisor"
        if section["seeded"]
        else "no: the provider's own draws"
    )
    arms = section["arms"]
    rows.update({arm: _arm_row(arms[arm]) for arm in INFERENCE_ARMS if arm in arms})
    return rows
