"""What an agent declares about itself: its boundaries, their fields, its revisions.

A ``BoundarySpec`` is one kind of boundary crossing (a tool, a model, a retrieval
index...). Every top-level request/response field must have a ``FieldPolicy``: its
classification and how it is retained. Undeclared fields are refused, never guessed.

Identities the ledger shows in clear are declared here, before any run: boundary names
(``AgentSpec.boundaries``), agent scopes (``AgentSpec.scopes``), aliases
(``BoundarySpec.aliases``) and resolved identities (``BoundarySpec.identities`` and the
alternatives of a ``RevisionPoint``). A value agent code chooses at run time carries
whatever it likes, so capture refuses an undeclared boundary or scope, and keeps an
undeclared alias or identity — and every idempotency token and an answer's own valid
time — as a keyed digest in the ledger with its plaintext in the encrypted payload store.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledger import (
    CanonicalizationError,
    Classification,
    Retention,
    StepKind,
    canonical_json,
)

__all__ = [
    "AgentSpec",
    "Answer",
    "BoundarySpec",
    "DeclaredField",
    "FieldPolicy",
    "RevisionPoint",
    "Substitute",
    "policy",
]


@dataclass(frozen=True, slots=True)
class FieldPolicy:
    classification: Classification
    retention: Retention = Retention.ENCRYPTED
    live_state: bool = False  # e.g. lock ids, sequence numbers: valid only at capture time


def policy(
    classification: str, retention: str = "encrypted", *, live_state: bool = False
) -> FieldPolicy:
    """Shorthand: ``policy("confidential")``, ``policy("internal", "digest")``."""
    return FieldPolicy(Classification(classification), Retention(retention), live_state)


@dataclass(frozen=True, slots=True)
class Answer:
    """What a live boundary returns at capture time."""

    response: Mapping[str, Any]
    resolved: str | None = None  # the identity an alias resolved to (model revision...)
    valid_time: datetime | None = None
    idempotency_token: str | None = None  # effects only
    token_expires_at: datetime | None = None


# A deterministic substitute serves a call the record cannot serve during replay (e.g. a
# pure policy function of the request, or a frozen model table keyed by revision).
Substitute = Callable[[Mapping[str, Any], str | None], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class DeclaredField:
    """One declared request or response field, with what capture re-uses every step."""

    name: str
    path: str  # "/" + name
    rule: FieldPolicy
    map_key: str  # '"<path>":"' — the head of its entry in a step's field-digest map


def declared_fields(declared: Mapping[str, FieldPolicy]) -> tuple[DeclaredField, ...]:
    """In RFC 8785 key order (UTF-16 code units of the path), so that a step's
    field-digest map is canonical when its entries are joined in this order."""
    out = []
    for name, rule in declared.items():
        path = "/" + name
        try:
            key = canonical_json(path).decode()
        except CanonicalizationError:
            raise ValueError("a declared field name has no canonical JSON form") from None
        out.append(DeclaredField(name, path, rule, key + ':"'))
    return tuple(sorted(out, key=lambda f: f.path.encode("utf-16-be")))


@dataclass(frozen=True, slots=True)
class BoundarySpec:
    kind: StepKind
    name: str
    request: Mapping[str, FieldPolicy]
    response: Mapping[str, FieldPolicy]
    schema_id: str | None = None
    schema_version: str | None = None
    json_schema: Mapping[str, Any] | None = None  # of the response, for interventions
    substitute: Substitute | None = None
    side_effecting: bool = False
    # an effect that cannot be undone (a dropped partition, a payment): a replay may only
    # dry-run it, through ``substitute``; decides the sealed auditability (``docs/cuts.md``)
    irreversible: bool = False
    # named sets of response fields an audit may change together, reported as one
    bundles: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # shown in clear when used; any other alias or resolved identity is a keyed digest
    aliases: tuple[str, ...] = ()
    identities: tuple[str, ...] = ()
    # World reads. A boundary that reads state effects change — every READBACK, a boundary
    # declaring ``reads_world=True`` or naming ``reads_after`` — is served from the record
    # only while the run met exactly the recorded effects before it (``reads_effects``).
    # ``reads_after`` narrows that to the named effect boundaries (the state this boundary
    # reads is written by those alone); ``effect_independent=True`` opts a boundary out
    # (a static reference table read through a readback): its recorded answer is served
    # whatever the effects — a declaration the agent's author answers for.
    reads_after: tuple[str, ...] = ()
    reads_world: bool = False
    effect_independent: bool = False
    request_fields: tuple[DeclaredField, ...] = field(init=False, repr=False, compare=False)
    response_fields: tuple[DeclaredField, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a boundary needs a name")
        for declared in (self.aliases, self.identities):
            if not isinstance(declared, tuple) or not all(
                isinstance(v, str) and v for v in declared
            ):
                raise ValueError("declared aliases and identities are tuples of names")
        if not isinstance(self.reads_after, tuple) or not all(
            isinstance(v, str) and v for v in self.reads_after
        ):
            raise ValueError("reads_after is a tuple of effect boundary names")
        for flag in ("reads_world", "effect_independent"):
            if type(getattr(self, flag)) is not bool:
                raise TypeError(f"{flag} is True or False")
        if self.effect_independent and (self.reads_world or self.reads_after):
            raise ValueError(
                "an effect_independent boundary declares no reads_world or reads_after"
            )
        if (self.kind is StepKind.EFFECT or self.irreversible) and not self.side_effecting:
            object.__setattr__(self, "side_effecting", True)
        object.__setattr__(self, "request_fields", declared_fields(self.request))
        object.__setattr__(self, "response_fields", declared_fields(self.response))

    @property
    def reads_effects(self) -> bool:
        """Does replay serve this boundary's recorded answers only after exactly the
        recorded effects (every effect, or those ``reads_after`` names)?"""
        if self.effect_independent:
            return False
        return self.kind is StepKind.READBACK or self.reads_world or bool(self.reads_after)

    @property
    def live_state_fields(self) -> tuple[str, ...]:
        return tuple(name for name, p in self.response.items() if p.live_state)


@dataclass(frozen=True, slots=True)
class RevisionPoint:
    """A call whose resolved identity an audit may swap (``--revision model=r2``)."""

    call_name: str
    alternatives: tuple[str, ...]


AMBIENT_PREFIX = "ambient:"  # ambient inputs' step names (``_ambient``): reserved

# boundaries every context provides (``ctx.env``, ``ctx.read``): an agent may not declare them
RESERVED_NAMES = frozenset({"env", "read"})


@dataclass(frozen=True)
class AgentSpec:
    """A registered agent: ``function(ctx, inputs) -> outcome``, or an ``async def``
    one (run to completion on a fresh event loop, ``run``)."""

    name: str
    version: str
    function: Callable[..., Mapping[str, Any]]
    inputs: Mapping[str, FieldPolicy]
    outcome: Mapping[str, FieldPolicy]
    strategies: tuple[str, ...] = ("nullify", "replace", "perturb")
    revisions: Mapping[str, RevisionPoint] = field(default_factory=dict)
    retention_class: str = "standard"
    score_bounds: tuple[float, float] | None = (0.0, 1.0)  # bounded numeric outcome
    boundaries: tuple[BoundarySpec, ...] = ()
    # agent scope names (``ctx.agent_scope``) besides "main"; any other is refused
    scopes: tuple[str, ...] = ()
    # further modules (helpers the agent imports) whose files join its code identity
    code_modules: tuple[str, ...] = ()
    # replay cuts (``ctx.cut``), in the order the run reaches them; any other is refused
    cuts: tuple[str, ...] = ()
    # environment variables whose values are never recorded, besides the default
    # patterns (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET*``, ``*PASSWORD*``): present or
    # absent only, a placeholder at replay (``docs/agents.md``)
    credentials: tuple[str, ...] = ()
    # installed packages the agent is built on (not its own code): the replay worker
    # imports them once, before any run (``enclave/replay/_frameworks.py``)
    frameworks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        declared = (self.scopes, self.code_modules, self.cuts, self.credentials, self.frameworks)
        for names in declared:
            if not isinstance(names, tuple) or not all(isinstance(n, str) and n for n in names):
                raise ValueError(
                    "declared scopes, code modules, cuts, credentials and frameworks are "
                    "tuples of names"
                )
        named = (*self.scopes, *self.cuts, *(b.name for b in self.boundaries))
        if any(name.startswith(AMBIENT_PREFIX) for name in named):
            raise ValueError("names beginning 'ambient:' are reserved for ambient inputs")
        if any("/" in name or "#" in name for name in (*self.scopes, *self.cuts)):
            raise ValueError("a scope or cut name may not hold '/' or '#' (they delimit call ids)")
        if len(set(self.cuts)) != len(self.cuts):
            raise ValueError("a cut is declared once")
        taken = RESERVED_NAMES | {b.name for b in self.boundaries} | {"clock", "random", "start"}
        if taken & set(self.cuts):
            raise ValueError("a cut may not share its name with a boundary")
        if any(b.name in RESERVED_NAMES for b in self.boundaries):
            raise ValueError("boundary names env and read are reserved (ctx.env, ctx.read)")
        effects = {b.name for b in self.boundaries if b.side_effecting}
        if any(set(b.reads_after) - effects for b in self.boundaries):
            raise ValueError("reads_after must name effect boundaries the agent declares")

    def run(self, ctx: Any, inputs: dict[str, Any]) -> Any:
        """One run of the agent with ``ctx``: its outcome. An asynchronous agent runs on
        an event loop of its own, which ends with the run (no task outlives it)."""
        outcome = self.function(ctx, inputs)
        if not inspect.iscoroutine(outcome):
            return outcome
        from ._ambient import suspended  # (it builds on this module)

        runner = asyncio.Runner()
        with suspended():  # the loop's own set-up reads the environment: not the agent's
            runner.get_loop()
        try:
            # the agent's task runs in the caller's context: observed as the run is
            return runner.run(outcome, context=contextvars.copy_context())
        finally:
            with suspended():
                runner.close()

    def boundary(self, name: str) -> BoundarySpec:
        for spec in self.boundaries:
            if spec.name == name:
                return spec
        raise KeyError(name)
