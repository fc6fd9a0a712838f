"""What an intervention policy lets an audit set, per strategy (``_policy``): the
authorised alternates, the range of a perturbation, the revision point and identities.
Checks name the offending key, never a value."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger import CanonicalizationError, canonical_json

from .._errors import BadInput
from ..replay import Strategy
from ..replay.targets import parse_pointer

__all__ = ["IDENTITY_FIELD", "PolicyParams", "check_params", "params_of"]

IDENTITY_FIELD = "#identity"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:/#-]{0,127}")
_FIELD = re.compile(r"/[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_MAX_ALTERNATES = 64


@dataclass(frozen=True, kw_only=True)
class PolicyParams:
    alternates: tuple[Any, ...] = ()
    delta: tuple[float, float] | None = None
    revision_point: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.alternates:
            out["alternates"] = list(self.alternates)
        if self.delta is not None:
            out["delta"] = list(self.delta)
        if self.revision_point is not None:
            out["revision_point"] = self.revision_point
        return out


def _is_field(target: str) -> bool:
    """A JSON Pointer to a response member, each of its names a plain field name."""
    keys = parse_pointer(target)
    return bool(keys) and all(_FIELD.fullmatch("/" + key) for key in keys or ())


def check_params(strategy: Strategy, target: str, params: PolicyParams) -> None:
    if strategy is Strategy.CODE:  # a candidate release is no policy's to authorise
        raise BadInput("policy strategy must be nullify, replace, perturb or revision")
    if strategy is Strategy.REVISION:
        if target != IDENTITY_FIELD:
            raise BadInput(f"a revision policy's field must be {IDENTITY_FIELD}")
    elif not _is_field(target):
        raise BadInput("policy field must be a response field pointer like /name or /a/b")
    wants = {
        Strategy.NULLIFY: set(),
        Strategy.REPLACE: {"alternates"},
        Strategy.PERTURB: {"delta"},
        Strategy.REVISION: {"alternates", "revision_point"},
    }[strategy]
    given = set(params.to_dict())
    if given != wants:
        names = ", ".join(sorted(wants)) or "no parameters"
        raise BadInput(f"a {strategy.value} policy takes exactly: {names}")
    if params.alternates:
        if len(params.alternates) > _MAX_ALTERNATES:
            raise BadInput(f"policy params.alternates holds at most {_MAX_ALTERNATES} values")
        try:
            encoded = [canonical_json(v) for v in params.alternates]
        except CanonicalizationError:
            raise BadInput(
                "policy params.alternates holds a value with no canonical form"
            ) from None
        if len(set(encoded)) != len(encoded):
            raise BadInput("policy params.alternates repeats a value")
    if strategy is Strategy.REVISION:
        if not all(isinstance(v, str) and _NAME.fullmatch(v) for v in params.alternates):
            raise BadInput("revision alternates must be identity names")
        if not isinstance(params.revision_point, str) or not _NAME.fullmatch(params.revision_point):
            raise BadInput("policy params.revision_point must be a revision point name")
    if params.delta is not None:
        low, high = params.delta
        if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
            raise BadInput("policy params.delta must be [min, max] with finite min < max")


def params_of(raw: Mapping[str, Any]) -> PolicyParams:
    alternates = raw.get("alternates", [])
    if not isinstance(alternates, list):
        raise BadInput("policy params.alternates must be a list")
    delta = raw.get("delta")
    bounds: tuple[float, float] | None = None
    if delta is not None:
        if (
            not isinstance(delta, list)
            or len(delta) != 2
            or any(isinstance(v, bool) or not isinstance(v, int | float) for v in delta)
        ):
            raise BadInput("policy params.delta must be [min, max]")
        bounds = (float(delta[0]), float(delta[1]))
    point = raw.get("revision_point")
    return PolicyParams(alternates=tuple(alternates), delta=bounds, revision_point=point)
