"""``create_agent`` agents on langchain-openai's ``ChatOpenAI`` (a hosted model), at a
fixed loopback address: the base URL is part of the model's identity in its requests, so
the capture and every replay worker must build the model alike.

``ChatOpenAI`` probes TCP keepalive options on a throwaway TCP socket each time one is
built, unless its socket options are given: ``SCREENER`` gives none
(``http_socket_options=()``); ``langgraph_openai_probing`` builds it as the provider's
docs do (in a module of its own: a replay imports the agent's module in every run).
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from enclave.adapters.langgraph import agent_spec

PORT = 8964  # this module's own: examples/local_model_server.py serves it during capture
MODEL = "screening-model-2026-11-01"


def chat_model(**options: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL,
        base_url=f"http://127.0.0.1:{PORT}/v1",
        api_key="local-placeholder",  # type: ignore[arg-type]
        max_retries=0,
        **options,
    )


def build(name: str, model: ChatOpenAI, module: str = __name__) -> Any:
    return agent_spec(
        create_agent(model, tools=[], system_prompt="Screen the application."),
        name=f"{module}:{name}",
        version="1.0.0",
        decision=lambda answer: str(answer).strip(),
        model="screener",
        # the provider's package, and the transport core its client imports when first
        # built: imported once by the replay worker's template, not by every run
        frameworks=("langchain_openai", "httpcore2"),
        module=module,
    )


SCREENER = build("SCREENER", chat_model(http_socket_options=()))
