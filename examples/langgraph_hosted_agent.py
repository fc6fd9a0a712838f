"""The hosted form of a LangChain agent: ``create_agent`` with
``langchain_openai.ChatOpenAI`` pointed at ``examples/local_model_server.py`` (an
OpenAI-compatible server on loopback that answers APPROVE or REJECT), the model declared
a hosted boundary (``model="screener"``): its answers are recorded at capture and served
at replay, and the server is never asked again.

    python examples/local_model_server.py --port 8931 &
    PYTHONPATH=examples replay-enclave capture langgraph_hosted_agent:HOSTED --input run.json
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_openai import ChatOpenAI

from enclave.adapters.langgraph import agent_spec

screener = create_agent(
    ChatOpenAI(
        model="screening-model-2026-11-01",
        base_url=os.environ.get("LOCAL_MODEL_URL", "http://127.0.0.1:8931/v1"),
        api_key="local-placeholder",  # type: ignore[arg-type]
        max_retries=0,
        # no keepalive probe: built with its defaults, ChatOpenAI opens a throwaway TCP
        # socket to test them, and a replay worker ends any run that opens one
        http_socket_options=(),
    ),
    tools=[],
    system_prompt="Screen the application.",
)

HOSTED = agent_spec(
    screener,
    name="langgraph-screener",
    version="1.0.0",
    decision=lambda answer: str(answer).strip(),
    model="screener",
    # the provider's package and the transport core its client imports when first built:
    # imported once by the replay worker's template, not by every run
    frameworks=("langchain_openai", "httpcore2"),
)
