"""The one intervention model: what every front end (CLI, service, notebook, governance)
accepts as an intervention, checked once, with one set of messages.

A pydantic v2 union discriminated on ``strategy``:

* ``nullify`` / ``replace`` / ``perturb`` on one recorded call, aimed at either a
  ``field`` (a JSON Pointer into the response) or a declared ``bundle``;
  ``replace`` needs a ``value`` (any JSON value, ``null`` included: absent is not null),
  ``perturb`` a ``delta`` (a finite, non-zero number between -1e6 and 1e6);
* ``revision``: ``NAME=IDENTITY`` (a declared revision point and one of its identities).

Strict: nothing is coerced (``"1"`` or ``true`` is not a delta, ``"REPLACE"`` is not a
strategy); a parameter the strategy does not take is refused; names are non-blank
printable text of bounded length. A code revision is not an intervention of its own
here: it travels beside one (``AuditRequest.code_revision``).

Failures are ``BadInput`` with one line from ``MESSAGES``, chosen by where the first
error is; pydantic's own text quotes the input and never leaves this module.

Supervisor side only: the replay worker never imports this (it would load pydantic).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from ledger import CanonicalizationError, canonical_json

from .._errors import BadInput
from ._pointer import is_pointer

__all__ = [
    "MESSAGES",
    "FieldIntervention",
    "InterventionModel",
    "RevisionIntervention",
    "parse_intervention",
]

MAX_DELTA = 1e6

# One line per place an intervention can be wrong; none quotes what was sent.
MESSAGES = {
    "shape": "an intervention is an object with a strategy",
    "strategy": "the strategy must be nullify, replace, perturb or revision",
    "call_id": "a field intervention needs a call id: 1-256 printable characters",
    "field": "the field must be a JSON Pointer such as /name or /a/b (~0, ~1 escapes)",
    "bundle": "the bundle must be a declared bundle name: 1-128 printable characters",
    "target": "a field intervention names exactly one of a field or a bundle",
    "value": "replace needs a value: any JSON value (a bundle: an object of field values)",
    "delta": "perturb needs a delta: a finite, non-zero number between -1e6 and 1e6",
    "revision": "a revision looks like NAME=IDENTITY, e.g. model=r2",
    "unknown": "the request holds a parameter no intervention takes",
}
_PARAMETERS = ("call_id", "field", "bundle", "value", "delta", "revision")
for _name in _PARAMETERS:
    MESSAGES[f"extra:{_name}"] = f"that strategy takes no {_name.replace('_', ' ')}"


def _printable(value: str) -> str:
    if not value.strip() or not value.isprintable():
        raise ValueError("not printable text")
    return value


def _pointer(value: str) -> str:
    if not is_pointer(value):
        raise ValueError("not a pointer")
    return value


def _json(value: Any) -> Any:
    try:
        canonical_json(value)
    except CanonicalizationError:
        raise ValueError("no canonical JSON form") from None
    return value


def _delta(value: float) -> float:
    if not math.isfinite(value) or value == 0 or abs(value) > MAX_DELTA:
        raise ValueError("out of range")
    return value


def _revision(value: str) -> str:
    name, sep, identity = value.partition("=")
    if not sep or not name.strip() or not identity.strip():
        raise ValueError("not NAME=IDENTITY")
    return value


_Name = Annotated[str, AfterValidator(_printable)]
CallId = Annotated[_Name, Field(min_length=1, max_length=256)]
Pointer = Annotated[_Name, Field(min_length=1, max_length=256), AfterValidator(_pointer)]
BundleName = Annotated[_Name, Field(min_length=1, max_length=128)]
JsonValue = Annotated[Any, AfterValidator(_json)]
Delta = Annotated[float, AfterValidator(_delta)]
Revision = Annotated[_Name, Field(min_length=3, max_length=256), AfterValidator(_revision)]

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class _OnCall(BaseModel):
    model_config = _STRICT

    call_id: CallId
    field: Pointer | None = None
    bundle: BundleName | None = None

    @model_validator(mode="after")
    def _one_target(self) -> _OnCall:
        if (self.field is None) == (self.bundle is None):
            raise ValueError("target")
        return self


class Nullify(_OnCall):
    strategy: Literal["nullify"]


class Replace(_OnCall):
    strategy: Literal["replace"]
    value: JsonValue

    @model_validator(mode="after")
    def _bundle_value(self) -> Replace:
        if self.bundle is not None and not isinstance(self.value, dict):
            raise ValueError("value")
        return self


class Perturb(_OnCall):
    strategy: Literal["perturb"]
    delta: Delta


class RevisionIntervention(BaseModel):
    model_config = _STRICT

    strategy: Literal["revision"]
    revision: Revision

    @property
    def point(self) -> tuple[str, str]:
        name, _, identity = self.revision.partition("=")
        return name, identity


FieldIntervention = Nullify | Replace | Perturb
InterventionModel = Annotated[
    Nullify | Replace | Perturb | RevisionIntervention, Field(discriminator="strategy")
]
_ADAPTER: TypeAdapter[Any] = TypeAdapter(InterventionModel)


def _message(error: Mapping[str, Any]) -> str:
    loc = [part for part in error.get("loc", ()) if isinstance(part, str)]
    kind = str(error.get("type", ""))
    if kind in ("union_tag_invalid", "union_tag_not_found") or loc[:1] == ["strategy"]:
        return MESSAGES["strategy"]
    if kind == "model_type" and not loc:
        return MESSAGES["shape"]
    # the union's tag comes first in a location: the parameter is the last name in it
    name = next((part for part in reversed(loc) if part in _PARAMETERS), None)
    if kind == "extra_forbidden":
        return MESSAGES[f"extra:{name}"] if name else MESSAGES["unknown"]
    if name is not None:
        return MESSAGES[name]
    # a model-level check: its ValueError text is the message key
    text = str(error.get("ctx", {}).get("error", ""))
    return MESSAGES.get(text, MESSAGES["shape"])


def parse_intervention(data: Any) -> Nullify | Replace | Perturb | RevisionIntervention:
    """The intervention ``data`` describes (a JSON object's worth of parameters), or
    ``BadInput`` with one line from ``MESSAGES``."""
    try:
        model: Nullify | Replace | Perturb | RevisionIntervention = _ADAPTER.validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_input=False, include_url=False)
        raise BadInput(_message(errors[0]) if errors else MESSAGES["shape"]) from None
    return model
