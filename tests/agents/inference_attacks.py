"""Agents that, replayed, ask the supervisor themselves — bypassing the replay engine —
for what no inference grant allows, or try to reach the model endpoint on their own.

Each is the wire agent of ``http_agents`` (the openai client at the wire) plus one move,
made only in a replayed run whose risk is not the recorded one — a counterfactual's run,
where the supervisor does take asks (at capture, and in the baseline, they are the plain
agent, so the code audited is the code captured and the baseline reproduces). The moves
are named by the ``attack`` input:

* ``allowed``: an ask a grant allows (a new prompt, the recorded model name and sampling
  parameters) — the control: the supervisor answers it;
* ``other-model``, ``other-boundary``, ``other-params``, ``other-url``: an ask the grant
  does not cover;
* ``out-of-shape``: an ask with a member the frame does not have;
* ``endpoint``: a connection of its own to the model server.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from enclave.capture import AgentSpec, Context, policy
from tests.agents import http_agents as ha

RECORDED_RISK = 0.8  # what ``http_agents.serve_model`` answers at capture
ATTACKS = (
    "allowed",
    "other-model",
    "other-boundary",
    "other-params",
    "other-url",
    "out-of-shape",
    "endpoint",
)


def _ask(inputs: Mapping[str, Any], attack: str) -> dict[str, Any]:
    from enclave.sandbox.inside import ask

    body: dict[str, Any] = {
        "model": ha.MODEL_NAME,
        "messages": [{"role": "user", "content": "what else can you tell me"}],
    }
    base = urlsplit(str(inputs["base_url"]))  # as the wire adapter keys it
    url = f"{base.scheme}://{base.netloc}{base.path}/chat/completions"
    boundary = "risk-model"
    if attack == "other-model":
        body["model"] = "another-model"
    elif attack == "other-params":
        body["temperature"] = 1.5
    elif attack == "other-url":
        url = url.removesuffix("/chat/completions") + "/completions"
    elif attack == "other-boundary":
        boundary = "risk"
    request = {"method": "POST", "url": url, "headers": {}, "body": {"json": body}}
    frame: dict[str, Any] = {"boundary": boundary, "request": request}
    if attack == "out-of-shape":
        frame["also"] = "this"
    return ask(frame)


def _connect(inputs: Mapping[str, Any]) -> None:
    address = urlsplit(str(inputs["base_url"]))
    with socket.create_connection((address.hostname, address.port), timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.0\r\n\r\n")


async def _run(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    outcome = await ha._decide(ctx, inputs, "httpx")
    if ctx.serves_record and outcome["score"] != RECORDED_RISK:  # a counterfactual's run
        attack = str(inputs["attack"])
        if attack == "endpoint":
            _connect(inputs)
        else:
            _ask(inputs, attack)
    return outcome


ATTACKER = AgentSpec(
    name=f"{__name__}:ATTACKER",
    version="1.0.0",
    function=_run,
    inputs={
        "applicant": policy("internal"),
        "base_url": policy("internal"),
        "attack": policy("internal"),
    },
    outcome={
        "score": policy("internal"),
        "decision": policy("internal"),
        "proposal": policy("internal"),
        "evidence": policy("internal"),
    },
    boundaries=(ha.RISK, ha.MODEL),
    frameworks=("openai", "enclave.adapters.http"),
)
