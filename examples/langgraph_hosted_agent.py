"""The hosted form of a LangChain agent: ``create_agent`` with
``langchain_openai.ChatOpenAI`` pointed at a local OpenAI-compatible server
(``local_model``: llama.cpp's server with a small real model, or the stand-in
``examples/local_model_server.py``), the model declared a hosted boundary
(``model="screener"``): its answers are recorded at capture and served at replay, and the
server is never asked again.

    python examples/local_model_server.py --port 8931 &
    PYTHONPATH=examples replay-enclave capture langgraph_hosted_agent:HOSTED --input run.json
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_openai import ChatOpenAI
from local_model import API_KEY, MODEL, URL

from enclave.adapters.langgraph import agent_spec

screener = create_agent(
    ChatOpenAI(
        model=MODEL,
        base_url=os.environ.get("LOCAL_MODEL_URL", URL),
        api_key=API_KEY,  # type: ignore[arg-type]
        max_retries=0,
        temperature=0.0,
        max_completion_tokens=24,
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
