"""What an audit may ask a model after departure: one grant per governed boundary.

A grant names the boundary (a model boundary of the specimen's agent), the provider
endpoint by the operator's name for it (``_endpoints``: the address and credential are
configuration, never part of a request), the pinned model identity (it must equal the
identity every recorded answer of the boundary carries), the sampling parameters that
may differ from the recorded ones (``vary``; ``seed`` there means the supervisor sets
the provider seed of each paired sample) and the audit's caps. Invalid grants cannot be
built; messages name the offending key, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import BadInput

__all__ = ["SAMPLING_PARAMETERS", "InferenceCaps", "InferenceGrant"]

# the request members that decide how an answer is drawn: equal to the recorded ones
# unless a grant names them in ``vary``
SAMPLING_PARAMETERS = frozenset(
    {
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "n",
        "seed",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "stop_sequences",
        "presence_penalty",
        "frequency_penalty",
        "repeat_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "stream",
        "reasoning_effort",
        "thinking",
    }
)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}")
_ENDPOINT = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/+-]{0,255}")
_CAP_KEYS = ("calls", "input_tokens", "output_tokens", "wall_seconds")
_MAX_CAP = 10**9


def _cap(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_CAP:
        raise BadInput(f"inference cap {key} must be a positive integer")
    return value


@dataclass(frozen=True)
class InferenceCaps:
    """Per audit, over every stage: calls asked of the endpoint, the tokens they read and
    wrote, and the seconds spent waiting for them."""

    calls: int
    input_tokens: int
    output_tokens: int
    wall_seconds: int

    def __post_init__(self) -> None:
        for key in _CAP_KEYS:
            _cap(getattr(self, key), key)

    def to_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in _CAP_KEYS}

    @classmethod
    def from_dict(cls, data: Any) -> InferenceCaps:
        if not isinstance(data, Mapping) or set(data) != set(_CAP_KEYS):
            raise BadInput("inference caps name calls, input_tokens, output_tokens, wall_seconds")
        return cls(**{key: _cap(data[key], key) for key in _CAP_KEYS})


@dataclass(frozen=True)
class InferenceGrant:
    boundary: str
    endpoint: str
    model: str
    caps: InferenceCaps
    vary: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.boundary, str) or not _NAME.fullmatch(self.boundary):
            raise BadInput("inference boundary must be a boundary name")
        if not isinstance(self.endpoint, str) or not _ENDPOINT.fullmatch(self.endpoint):
            raise BadInput("inference endpoint must be an operator's endpoint name")
        if not isinstance(self.model, str) or not _MODEL.fullmatch(self.model):
            raise BadInput("inference model must be a model identity")
        if not isinstance(self.caps, InferenceCaps):
            raise BadInput("inference caps are required")
        vary = self.vary
        if (
            not isinstance(vary, tuple)
            or not all(isinstance(v, str) and v in SAMPLING_PARAMETERS for v in vary)
            or len(set(vary)) != len(vary)
        ):
            raise BadInput("inference vary must name distinct sampling parameters")

    @property
    def seeded(self) -> bool:
        """The supervisor sets each paired sample's provider seed."""
        return "seed" in self.vary

    def to_dict(self) -> dict[str, Any]:
        return {
            "boundary": self.boundary,
            "endpoint": self.endpoint,
            "model": self.model,
            "vary": sorted(self.vary),
            "caps": self.caps.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> InferenceGrant:
        keys = {"boundary", "endpoint", "model", "vary", "caps"}
        if (
            not isinstance(data, Mapping)
            or not {"boundary", "endpoint", "model", "caps"} <= set(data)
            or set(data) - keys
        ):
            raise BadInput("an inference grant names boundary, endpoint, model, caps (and vary)")
        vary = data.get("vary", [])
        if not isinstance(vary, list):
            raise BadInput("inference vary must name distinct sampling parameters")
        return cls(
            boundary=data["boundary"],
            endpoint=data["endpoint"],
            model=data["model"],
            caps=InferenceCaps.from_dict(data["caps"]),
            vary=tuple(vary),
        )
