"""The hosted form of the pydantic-ai router (``pydantic_ai_agent.py``): ``OpenAIChatModel``
on a local OpenAI-compatible server (``local_model``: llama.cpp's server with a small real
model), declared a boundary (``model="router-model"``), so its typed answers are recorded
at capture and served at replay. It answers in the provider's structured-output mode
(``NativeOutput``): a model that small does not call tools. A module of its own: the
provider's client is no part of the in-process router's runs.

    PYTHONPATH=examples replay-enclave capture pydantic_ai_hosted_agent:HOSTED --input run.json
"""

from __future__ import annotations

from httpx2 import Limits
from local_model import API_KEY, MODEL, URL
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic_ai import Agent, NativeOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai_agent import Routing

from enclave.adapters.pydantic_ai import agent_spec

# each run has an event loop of its own: the client keeps no connection open past a run
client = AsyncOpenAI(
    base_url=URL,
    api_key=API_KEY,
    max_retries=0,
    http_client=DefaultAsyncHttpxClient(limits=Limits(max_keepalive_connections=0)),
)
hosted_router = Agent(
    OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client)),
    output_type=NativeOutput(Routing),
    instructions="Route the ticket: ESCALATE an unhappy customer, else QUEUE.",
    model_settings={"temperature": 0.0, "max_tokens": 128},  # greedy decoding
)

HOSTED = agent_spec(
    hosted_router,
    name="pydantic-ai-router-hosted",
    version="1.0.0",
    decision="decision",
    model="router-model",
    # the provider's client and its transport core: imported once by the replay worker's
    # template, not in every run
    frameworks=("openai", "pydantic_ai.models.openai", "httpcore2"),
)
