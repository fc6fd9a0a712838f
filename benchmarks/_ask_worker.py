"""The sandboxed side of ``benchmarks/inference.py``: a trusted handler (preloaded into the
worker's template) that starts one fresh run per call, and the run asks the supervisor
once, as a replayed model call after departure does.

The run builds the request the way the wire adapter keys it (``request_key`` of the
``httpx.Request`` the client would send) and asks through ``enclave.sandbox.inside.ask``;
the template relays the ask with the tag this handler gives the run. Only the answer's
status and its token counts go back: the run's reply carries no content.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from enclave.adapters.http import request_key

Run = Callable[[], dict[str, Any]]


def handle(request: dict[str, Any], fresh: Callable[[Run, dict[str, Any]], dict[str, Any]]) -> Any:
    boundary, url, payload = request["boundary"], request["url"], request["payload"]
    tag = {"seed": int(request["seed"]), "arm": str(request["arm"])}

    def run() -> dict[str, Any]:
        from enclave.sandbox.inside import ask

        key = request_key(httpx.Request("POST", url, json=payload))
        if request.get("ask", True):
            answer = ask({"boundary": boundary, "request": key})
            usage = answer["body"]["json"]["usage"]
            return {"status": answer["status"], "completion_tokens": usage["completion_tokens"]}
        return {"status": 0, "completion_tokens": 0}  # the fork floor: a run that asks nothing

    return fresh(run, tag)
