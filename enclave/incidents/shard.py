"""Shard maintenance: planner -> executor -> verifier.

The executor first reserves a lock (recorded: ``L-4471``, 30 s TTL, the lock id is live
state), then picks a shard by the parity of the lock id's hash (odd: the planner's
preferred shard, even: its alternate), then drops a partition there. By audit time the
lock token has expired and a live gateway would hand out a new lock of the other parity,
so the honest answer to "what if the planner had chosen the alternate shard" is a
refusal: observable-only.

Cut: ``before-drop`` (before the irreversible effect) holds the plan and the lock id.
``drop_partition`` has no dry-run substitute, so the specimen is sealed
``not-auditable-beyond before-drop`` (``enclave.capture._auditability``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ledger import StepKind

from ..capture import AgentSpec, Answer, BoundarySpec, Context, policy

CANARY = "CANARY-SHARD-51aa7e"
LOCK_TTL_SECONDS = 30


def lock_parity(lock_id: str) -> int:
    return bin(int.from_bytes(hashlib.sha256(lock_id.encode()).digest(), "big")).count("1") % 2


PLANNER = BoundarySpec(
    kind=StepKind.MODEL,
    name="planner-model",
    request={"task": policy("restricted")},
    response={
        "preferred_shard": policy("internal"),
        "alternate_shard": policy("internal"),
        "reasoning": policy("confidential"),
    },
    schema_id="planner-plan",
    schema_version="1",
    aliases=("planner",),
    identities=("planner-r5",),
    json_schema={
        "type": "object",
        "properties": {"preferred_shard": {"type": "string", "enum": ["shard-a", "shard-b"]}},
    },
)
HANDOFF = BoundarySpec(
    kind=StepKind.MESSAGE,
    name="plan-handoff",
    request={"preferred": policy("internal"), "alternate": policy("internal")},
    response={"accepted": policy("internal")},
    substitute=lambda request, resolved: {"accepted": True},
)
RESERVE_LOCK = BoundarySpec(
    kind=StepKind.EFFECT,
    name="reserve_lock",
    request={"resource": policy("internal")},
    response={"lock_id": policy("internal", live_state=True), "ttl_seconds": policy("internal")},
    schema_id="lock-gateway",
    schema_version="1",
    identities=("lock-gateway@3",),
)
DROP = BoundarySpec(
    kind=StepKind.EFFECT,
    name="drop_partition",
    request={
        "shard": policy("internal"),
        "partition": policy("internal"),
        "lock_id": policy("internal"),
    },
    response={"status": policy("internal"), "receipt": policy("internal")},
    schema_id="partition-admin",
    schema_version="2",
    identities=("partition-admin@2",),
    irreversible=True,  # and no dry-run substitute: the specimen is not auditable past its cut
)
READBACK = BoundarySpec(
    kind=StepKind.READBACK,
    name="partition-readback",
    request={"shard": policy("internal"), "partition": policy("internal")},
    response={"present": policy("internal")},
    json_schema={"type": "object", "properties": {"present": {"type": "boolean"}}},
)


class LiveWorld:
    def __init__(self, now_fn: Any) -> None:
        self._now = now_fn

    def plan(self, request: Mapping[str, Any]) -> Answer:
        return Answer(
            {
                "preferred_shard": "shard-a",
                "alternate_shard": "shard-b",
                "reasoning": f"shard-a is colder. {CANARY}-reasoning",
            },
            resolved="planner-r5",
        )

    def reserve_lock(self, request: Mapping[str, Any]) -> Answer:
        now = self._now()
        return Answer(
            {"lock_id": "L-4471", "ttl_seconds": LOCK_TTL_SECONDS},
            resolved="lock-gateway@3",
            idempotency_token="lock-tok-4471",  # noqa: S106 - an effect receipt, not a secret
            token_expires_at=now + timedelta(seconds=LOCK_TTL_SECONDS),
        )

    def drop(self, request: Mapping[str, Any]) -> Answer:
        return Answer(
            {"status": "dropped", "receipt": f"rcpt-{request['shard']}-{request['partition']}"},
            resolved="partition-admin@2",
            idempotency_token=f"drop-tok-{request['shard']}",
        )

    def readback(self, request: Mapping[str, Any]) -> Answer:
        return Answer({"present": False})


def run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    started = ctx.now()  # the clock is read through ctx, never inside a live call
    world = LiveWorld(lambda: started)

    def plan_and_lock() -> dict[str, Any]:
        with ctx.agent_scope("planner"):
            plan = ctx.call(PLANNER, {"task": inputs["task"]}, live=world.plan, alias="planner")
            ctx.call(
                HANDOFF,
                {"preferred": plan["preferred_shard"], "alternate": plan["alternate_shard"]},
                live=lambda req: {"accepted": True},
            )
        with ctx.agent_scope("executor"):
            lock = ctx.call(RESERVE_LOCK, {"resource": inputs["cluster"]}, live=world.reserve_lock)
            return {
                "preferred": plan["preferred_shard"],
                "alternate": plan["alternate_shard"],
                "lock_id": lock["lock_id"],
            }

    with ctx.agent_scope("executor"):
        state = ctx.cut("before-drop", plan_and_lock)
        odd = lock_parity(state["lock_id"]) == 1
        shard = state["preferred"] if odd else state["alternate"]
        dropped = shard == inputs["cold_shard"]
        if dropped:
            ctx.call(
                DROP,
                {"shard": shard, "partition": inputs["partition"], "lock_id": state["lock_id"]},
                live=world.drop,
            )
    with ctx.agent_scope("verifier"):
        check = ctx.call(
            READBACK, {"shard": shard, "partition": inputs["partition"]}, live=world.readback
        )
    score = 1.0 if dropped and not check["present"] else 0.0
    decision = "DROPPED" if dropped else "SKIPPED"
    return {
        "score": score,
        "decision": decision,
        "proposal": {"decision": decision, "shard": shard},
        "evidence": [shard],
    }


AGENT = AgentSpec(
    name="shard-maintenance",
    version="1.0.0",
    function=run,
    inputs={
        "cluster": policy("internal"),
        "partition": policy("internal"),
        "cold_shard": policy("internal"),
        "task": policy("restricted"),
    },
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    boundaries=(PLANNER, HANDOFF, RESERVE_LOCK, DROP, READBACK),
    scopes=("planner", "executor", "verifier"),
    cuts=("before-drop",),
)

BASELINE_INPUT = {
    "tenant": "acme",
    "seed": 3,
    "inputs": {
        "cluster": "orders-db",
        "partition": "2024-q1",
        "cold_shard": "shard-a",
        "task": f"Drop the 2024-q1 partition on the cold shard. {CANARY}-task",
    },
}
