"""An agent whose module, imported by the supervisor for the intervention proof, raises
an enclave error of its own making — class, code and text chosen to carry the canary —
when ``BOUNDARY_IMPORT_RAISE`` is set (never at capture)."""

from __future__ import annotations

import os

from enclave import EnclaveError
from enclave.capture import AgentSpec
from tests.agents import boundary_reply_agents as hostile
from tests.agents import replay_agents as base

if os.environ.get("BOUNDARY_IMPORT_RAISE"):

    class _Smuggled(EnclaveError):
        code = f"import-{hostile.CANARY}"

    raise _Smuggled(f"text-{hostile.CANARY}")

AGENT = AgentSpec(
    name="tests.agents.boundary_import_agent:AGENT",
    version="1.0.0",
    function=lambda ctx, inputs: base._plain(ctx, inputs, None),  # noqa: SLF001
    inputs=base.INPUTS,
    outcome=base.OUTCOME,
    boundaries=(base.LOOKUP,),
)
