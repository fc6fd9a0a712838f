"""The one intervention: what it is, its rules and their messages, in one frozen model.

Every front end uses this type: the command line and the service read it from wire
parameters (``Intervention.from_json``), the Python API builds it by keyword
(``Intervention(Strategy.REPLACE, call_id=..., field=..., value=...)``), the audit
request holds it, and ``apply_intervention`` / ``placebo_of`` consume it. There is no
second shape to convert to or from.

The strategies:

* ``nullify`` / ``replace`` / ``perturb`` on one recorded call, aimed at either a
  ``field`` (a JSON Pointer into the response) or a declared ``bundle``;
  ``replace`` needs a ``value`` (any JSON value, ``null`` included: on the wire absent
  is not null; the Python constructor's default ``value=None`` is a null value);
  ``perturb`` a ``delta`` (a finite, non-zero number between -1e6 and 1e6);
* ``revision``: a declared revision point and one of its identities, ``NAME=IDENTITY``
  on the wire, ``(name, identity)`` in Python;
* ``code`` (``Strategy.CODE``): a candidate release; it takes no parameter (its
  candidate travels in the request, ``AuditRequest.candidate``). Only the Python API
  builds one: on the wire a strategy is one of the four names above.

Invariants: an invalid intervention cannot be built, by any route (constructor,
``from_json``, ``model_validate``, a body that embeds it). Strict: nothing is coerced
(``"1"`` or ``true`` is not a delta, ``"REPLACE"`` is not a strategy); a parameter the
strategy does not take is refused; names are non-blank printable text of bounded
length. Failures are ``BadInput`` with one line from ``MESSAGES``, for the first
problem in parameter order; pydantic's own text quotes the input and never leaves
this module.

Supervisor side only: the replay worker never imports this (it would load pydantic);
it receives the trajectory the intervention was applied to.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    ValidationError,
    WithJsonSchema,
    field_serializer,
    model_validator,
)

from ledger import CanonicalizationError, canonical_json

from .._errors import BadInput
from ._model import Strategy
from ._pointer import is_pointer

__all__ = ["CODE_TARGET", "MAX_DELTA", "MESSAGES", "Intervention"]

MAX_DELTA = 1e6
#: How a code revision names its target call and field: the agent's code as a whole.
CODE_TARGET = "#code"

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
# the parameters, in the order their problems are reported
_PARAMETERS = ("call_id", "field", "bundle", "value", "delta", "revision")
for _name in _PARAMETERS:
    MESSAGES[f"extra:{_name}"] = f"that strategy takes no {_name.replace('_', ' ')}"

_ON_CALL = ("call_id", "field", "bundle")
# what each strategy takes, and of that what it needs
_TAKES: dict[Strategy, tuple[str, ...]] = {
    Strategy.NULLIFY: _ON_CALL,
    Strategy.REPLACE: (*_ON_CALL, "value"),
    Strategy.PERTURB: (*_ON_CALL, "delta"),
    Strategy.REVISION: ("revision",),
    Strategy.CODE: (),
}
_NEEDS: dict[Strategy, tuple[str, ...]] = {
    Strategy.NULLIFY: ("call_id",),
    Strategy.REPLACE: ("call_id", "value"),
    Strategy.PERTURB: ("call_id", "delta"),
    Strategy.REVISION: ("revision",),
    Strategy.CODE: (),
}
# the strategies a wire name may give; a code revision is built only in Python
_WIRE = frozenset(s.value for s in Strategy if s is not Strategy.CODE)


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


def _revision(value: Any) -> Any:
    """``NAME=IDENTITY`` (wire) or ``(name, identity)`` (Python) as the pair; each must
    read back as the other (a name holding ``=`` would not)."""
    if value is None:
        return None
    if isinstance(value, tuple) and len(value) == 2 and all(type(p) is str for p in value):
        text = "=".join(value)
    elif type(value) is str:
        text = value
    else:
        raise ValueError("not a revision")
    name, sep, identity = text.partition("=")
    if not sep or not name.strip() or not identity.strip() or not 3 <= len(text) <= 256:
        raise ValueError("not NAME=IDENTITY")
    _printable(text)
    if isinstance(value, tuple) and (name, identity) != value:
        raise ValueError("does not read back")
    return (name, identity)


_Name = Annotated[str, AfterValidator(_printable)]
CallId = Annotated[_Name, Field(min_length=1, max_length=256)]
Pointer = Annotated[_Name, Field(min_length=1, max_length=256), AfterValidator(_pointer)]
BundleName = Annotated[_Name, Field(min_length=1, max_length=128)]
JsonValue = Annotated[Any, AfterValidator(_json)]
Delta = Annotated[float, AfterValidator(_delta)]
Revision = Annotated[
    tuple[str, str],
    BeforeValidator(_revision),
    WithJsonSchema({"type": "string", "pattern": "^[^=]+=.+$", "examples": ["model=r2"]}),
]


def _strategy(given: Any) -> Strategy:
    if isinstance(given, Strategy):
        return given
    if type(given) is str and given in _WIRE:
        return Strategy(given)
    raise BadInput(MESSAGES["strategy"])


def _problem(error: Any) -> str:
    """The message key of one pydantic error: the parameter its location names."""
    loc = [part for part in error.get("loc", ()) if isinstance(part, str)]
    return next((part for part in reversed(loc) if part in _PARAMETERS), "shape")


class Intervention(BaseModel):
    """One declared intervention (see the module docstring for its rules)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    strategy: Strategy
    call_id: CallId | None = None  # field strategies: the recorded call
    field: Pointer | None = None  # a JSON Pointer into the response: "/confidence", "/a/b"
    bundle: BundleName | None = None  # a declared bundle of fields of one call, changed as one
    value: JsonValue = None  # REPLACE
    delta: Delta | None = None  # PERTURB
    revision: Revision | None = None  # REVISION: (point, new identity)

    def __init__(
        self,
        strategy: Strategy,
        *,
        call_id: str | None = None,
        field: str | None = None,
        value: Any = None,
        delta: float | None = None,
        revision: tuple[str, str] | None = None,
        bundle: str | None = None,
    ) -> None:
        given = {
            "call_id": call_id,
            "field": field,
            "bundle": bundle,
            "delta": delta,
            "revision": revision,
        }
        data: dict[str, Any] = {"strategy": strategy}
        data.update((name, v) for name, v in given.items() if v is not None)
        if strategy is Strategy.REPLACE or value is not None:
            data["value"] = value  # a replace's value may be null: here it is always given
        super().__init__(**data)

    @model_validator(mode="wrap")
    @classmethod
    def _rules(cls, data: Any, handler: ModelWrapValidatorHandler[Intervention]) -> Intervention:
        if isinstance(data, Intervention):
            return data
        if not isinstance(data, dict):
            raise BadInput(MESSAGES["shape"])
        strategy = _strategy(data.get("strategy"))
        takes = _TAKES[strategy]
        problems = [p for p in _NEEDS[strategy] if p not in data]
        try:
            model = handler({**{k: data[k] for k in takes if k in data}, "strategy": strategy})
        except ValidationError as exc:
            problems += [_problem(e) for e in exc.errors(include_input=False, include_url=False)]
        if problems:
            order = (*_PARAMETERS, "shape")
            raise BadInput(MESSAGES[min(problems, key=order.index)]) from None
        extra = next((k for k in data if k != "strategy" and k not in takes), None)
        if extra is not None:
            raise BadInput(MESSAGES.get(f"extra:{extra}", MESSAGES["unknown"]))
        if "call_id" in takes and (model.field is None) == (model.bundle is None):
            raise BadInput(MESSAGES["target"])
        if strategy is Strategy.REPLACE and model.bundle and not isinstance(model.value, dict):
            raise BadInput(MESSAGES["value"])
        return model

    @field_serializer("revision")
    def _revision_text(self, revision: tuple[str, str] | None) -> str | None:
        return None if revision is None else "=".join(revision)

    @classmethod
    def from_json(cls, data: Any) -> Intervention:
        """From wire parameters (a JSON object's worth), or ``BadInput`` with one line
        from ``MESSAGES``."""
        return cls.model_validate(data)

    def to_json(self) -> dict[str, Any]:
        """The wire parameters ``from_json`` reads back: those given, the strategy's
        name, a revision as ``NAME=IDENTITY`` (a replace's value always, null too)."""
        out: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        if self.strategy is Strategy.REPLACE:
            out["value"] = self.value  # as given: nulls inside it are values too
        return out

    def to_dict(self) -> dict[str, Any]:
        """Metadata only: a REPLACE value is never included (its digest is)."""
        return {
            "strategy": self.strategy.value,
            "call_id": self.call_id,
            "field": self.field,
            "delta": self.delta,
            "revision": list(self.revision) if self.revision else None,
            "bundle": self.bundle,
        }

    @property
    def target_label(self) -> str:
        """How the certificate names the target: a field, a bundle, an identity, or the
        agent's code."""
        if self.strategy is Strategy.CODE:
            return CODE_TARGET
        if self.bundle:
            return f"bundle:{self.bundle}"
        return self.field or "#identity"
