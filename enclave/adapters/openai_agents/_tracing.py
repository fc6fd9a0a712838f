"""The SDK's tracing at replay: a ``TraceProvider`` that records and exports nothing.

The SDK builds its default provider lazily, on the first run of a process, with a
backend exporter (an HTTP client for the traces endpoint, its proxy and certificate
settings read from the environment, its transport imported). A replay must never reach
for any of it, and a replay worker is a fresh process: ``agents.tracing.
set_trace_provider(SilentTraceProvider())`` puts this one in its place before the run
first asks for a provider. It registers no processor, so nothing can be exported; every
trace and span is the SDK's own no-op; it reads no clock, no environment and draws no id.
"""

from __future__ import annotations

from typing import Any

from agents.tracing import Span, Trace, TracingProcessor
from agents.tracing.config import TracingConfig
from agents.tracing.provider import TraceProvider
from agents.tracing.scope import Scope
from agents.tracing.spans import NoOpSpan, TSpanData
from agents.tracing.traces import NoOpTrace

__all__ = ["SilentTraceProvider"]


class SilentTraceProvider(TraceProvider):
    """Tracing off for good: processors are refused, traces and spans are no-ops."""

    def register_processor(self, processor: TracingProcessor) -> None:
        del processor  # nothing is exported from a replay

    def set_processors(self, processors: list[TracingProcessor]) -> None:
        del processors

    def get_current_trace(self) -> Trace | None:
        return Scope.get_current_trace()

    def get_current_span(self) -> Span[Any] | None:
        return Scope.get_current_span()

    def set_disabled(self, disabled: bool) -> None:
        del disabled  # always disabled

    def time_iso(self) -> str:
        return "1970-01-01T00:00:00+00:00"

    def gen_trace_id(self) -> str:
        return "trace_" + "0" * 32

    def gen_span_id(self) -> str:
        return "span_" + "0" * 24

    def gen_group_id(self) -> str:
        return "group_" + "0" * 24

    def create_trace(
        self,
        name: str,
        trace_id: str | None = None,
        group_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        disabled: bool = False,
        tracing: TracingConfig | None = None,
    ) -> Trace:
        return NoOpTrace()  # type: ignore[no-untyped-call]  # the SDK's __init__ is unannotated

    def create_span(
        self,
        span_data: TSpanData,
        span_id: str | None = None,
        parent: Trace | Span[Any] | None = None,
        disabled: bool = False,
    ) -> Span[TSpanData]:
        return NoOpSpan(span_data)
