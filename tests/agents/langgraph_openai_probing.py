"""A LangGraph agent whose ``ChatOpenAI`` is built as the provider's docs build it: it
probes TCP keepalive options on a throwaway TCP socket whenever this module is imported
(see ``langgraph_openai_agents``)."""

from __future__ import annotations

from tests.agents.langgraph_openai_agents import build, chat_model

PROBING = build("PROBING", chat_model(), module=__name__)
