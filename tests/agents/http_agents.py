"""An asynchronous agent that asks a hosted model through the real openai client (or the
real anthropic client), whose HTTP client is the wire adapter's (``enclave.adapters.http``).

The "hosted model" is a local HTTP server (``serve_model``) that speaks the OpenAI chat
completions and the Anthropic messages APIs: a deterministic rule over the prompt — a risk
of 0.5 or more is rejected. It is reachable
only while a capture runs; a replay that sent anything would find no server (and, in the
sandbox, no network).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openai import AsyncOpenAI

from enclave.adapters.http import async_client, http_boundary
from enclave.capture import AgentSpec, BoundarySpec, Context, policy
from ledger import StepKind

# sealed content of every answer: must never appear outside the payload store's ciphertext
CANARY = "CANARY-HTTP-MODEL-8e2f41"
MODEL_NAME = "local-risk-model"

_live_risk: dict[str, float] = {}


class _Model(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = body["messages"][-1]["content"]
        risk = float(prompt.rpartition(" ")[2])
        verdict = "REJECT" if risk >= 0.5 else "APPROVE"
        if self.path.endswith("/messages"):
            answer = _anthropic_message(verdict)
        else:
            answer = _chat_completion(verdict)
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req-" + str(id(self)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        del format, args


def _chat_completion(verdict: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": MODEL_NAME,
        "system_fingerprint": CANARY,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": verdict},
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }


def _anthropic_message(verdict: str) -> dict[str, Any]:
    return {
        "id": "msg_01" + CANARY,
        "type": "message",
        "role": "assistant",
        "model": MODEL_NAME,
        "content": [{"type": "text", "text": verdict}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }


@contextmanager
def serve_model(risk: float = 0.8) -> Iterator[str]:
    """A live world for one capture: the model server (its base URL) and the risk tool."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _live_risk["value"] = risk
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        _live_risk.clear()
        server.shutdown()
        server.server_close()


async def live_risk(request: Mapping[str, Any]) -> dict[str, Any]:
    if "value" not in _live_risk:
        raise RuntimeError("live risk tool called outside capture")
    return {"risk": _live_risk["value"], "note": CANARY}


RISK = BoundarySpec(
    kind=StepKind.TOOL,
    name="risk",
    request={"applicant": policy("internal")},
    response={"risk": policy("confidential"), "note": policy("restricted")},
    json_schema={
        "type": "object",
        "properties": {
            "risk": {"type": "number", "minimum": 0, "maximum": 1},
            "note": {"type": "string"},
        },
    },
)
MODEL = http_boundary("risk-model")


async def _decide(ctx: Context, inputs: Mapping[str, Any], library: str) -> dict[str, Any]:
    tool = await ctx.acall(RISK, {"applicant": inputs["applicant"]}, live=live_risk)
    risk, note = float(tool["risk"]), str(tool["note"])
    model = AsyncOpenAI(
        api_key="placeholder-key",  # the local server asks for none
        base_url=str(inputs["base_url"]),
        http_client=async_client(ctx, MODEL, library=library),
        max_retries=0,
    )
    completion = await model.chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": f"risk of the applicant {risk}"}]
    )
    decision = str(completion.choices[0].message.content)
    return {
        "score": risk,
        "decision": decision,
        "proposal": {"decision": decision, "note_length": len(note)},
        "evidence": [],
    }


async def _decide_httpx(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return await _decide(ctx, inputs, "httpx")


async def _decide_httpx2(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    return await _decide(ctx, inputs, "httpx2")


async def _decide_wrapped(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # as frameworks do: whatever a step raised comes back as the framework's own error
    try:
        return await _decide(ctx, inputs, "httpx")
    except Exception as exc:
        raise RuntimeError("the framework's run failed") from exc


def agent(
    name: str, function: Any, *, module: str = __name__, clients: tuple[str, ...] = ("openai",)
) -> AgentSpec:
    return AgentSpec(
        name=f"{module}:{name}",
        version="1.0.0",
        function=function,
        inputs={"applicant": policy("internal"), "base_url": policy("internal")},
        outcome={
            "score": policy("internal"),
            "decision": policy("internal"),
            "proposal": policy("internal"),
            "evidence": policy("internal"),
        },
        boundaries=(RISK, MODEL),
        frameworks=(*clients, "enclave.adapters.http"),
    )


# the openai client on an httpx client, and on its own library, httpx2
HTTP_AGENT = agent("HTTP_AGENT", _decide_httpx)
HTTP2_AGENT = agent("HTTP2_AGENT", _decide_httpx2)
WRAPPING_AGENT = agent("WRAPPING_AGENT", _decide_wrapped)
