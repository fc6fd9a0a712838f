"""The model captured at the wire (``wire_model=factory``), and what lets it through at
replay.

``WireModel`` wraps the model ``factory(ctx)`` builds, whose client is on the wire
adapter: each exchange with the endpoint is recorded as it was sent and answered
(capture), or served from the record (replay). A replay runs under ``replay_guard``:
model requests are disallowed (``override_allow_model_requests``), except the wire
model's own request and what it awaits. The allowance is a context variable of that
request, so no other task, nor the run's own code before or after the request, is
allowed meanwhile.
"""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import (
    Model,
    ModelRequestParameters,
    StreamedResponse,
    override_allow_model_requests,
)
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from ..._errors import BadInput
from ...capture import Context

__all__ = ["WireModel", "replay_guard"]

# Whether the current task is inside the wire model's request. A context variable: the
# task running the request sees it, and so do tasks the request itself starts; a task
# started before it (by a tool, by the run's own code) keeps its own value, False.
_IN_WIRE_REQUEST: ContextVar[bool] = ContextVar("replay_enclave_wire_request", default=False)


class _WireAllowance:
    """What ``pydantic_ai.models.ALLOW_MODEL_REQUESTS`` holds during a replay: true only
    inside the wire model's request. The framework's guard reads the setting as a truth
    value (``check_allow_model_requests``: ``if not ALLOW_MODEL_REQUESTS``), and it is one
    process-wide value: set to True around the request, it would also let through any
    model another task asks while the request awaits its answer."""

    def __bool__(self) -> bool:
        return _IN_WIRE_REQUEST.get()


@contextmanager
def replay_guard() -> Iterator[None]:
    """Model requests disallowed for the run, except the wire model's own."""
    with override_allow_model_requests(typing.cast(bool, _WireAllowance())):
        yield


class WireModel(WrapperModel):
    """The run's model captured at the wire: its requests go out through the client the
    factory built on the wire adapter, which records them (capture) or serves the record
    (replay). At replay its request, and no other, passes the framework's guard.

    A request that crossed none of the run's model ``boundaries`` went out on a client
    of its own (not ``async_client``): live and unrecorded at capture, so refused."""

    def __init__(self, wrapped: Model, *, ctx: Context, boundaries: tuple[str, ...]) -> None:
        super().__init__(wrapped)
        self._ctx = ctx
        self._boundaries = boundaries

    def _crossed(self) -> int:
        return sum(self._ctx.calls_started(name) for name in self._boundaries)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        before = self._crossed()
        token = _IN_WIRE_REQUEST.set(True)
        try:
            response = await self.wrapped.request(
                messages, model_settings, model_request_parameters
            )
        finally:
            _IN_WIRE_REQUEST.reset(token)
        if self._crossed() == before:
            raise BadInput(
                "the wire model's request crossed no model boundary: build its client "
                "on async_client(ctx, boundary)"
            )
        return response

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StreamedResponse]:
        raise NotImplementedError("streamed model requests are not captured; use agent.run")
        yield  # pragma: no cover - an async generator
