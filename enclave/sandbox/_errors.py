"""Errors of the sandbox, rooted in :class:`enclave._errors.EnclaveError`.

Texts carry reason codes and metadata only (an audit event name, an exception
class name, a signal name) and never anything taken from agent data.
"""

from __future__ import annotations

from enclave._errors import AgentFailed, InfrastructureError


class Contaminated(AgentFailed):
    """The replayed code tried to go live, broke a limit, or failed.

    ``reason`` is one of the stable codes in :data:`enclave.sandbox.REASONS`;
    ``detail`` is metadata only (for example ``"socket.connect"``).
    """

    code = "contaminated"

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"replay contaminated: {reason} ({detail})")
        self.reason = reason
        self.detail = detail


class AskRefused(AgentFailed):
    """A run asked for something its policy does not allow: raised by a handle's
    ``on_ask``; the worker is then contaminated (``network``: a live call)."""

    code = "contaminated"


class SandboxUnavailable(InfrastructureError):
    """The requested isolation layer cannot be used on this machine."""

    code = "sandbox_unavailable"


class WorkerClosed(AgentFailed):
    """A call on a worker handle that is closed or already contaminated: the agent's
    run there is over."""

    code = "worker_closed"
