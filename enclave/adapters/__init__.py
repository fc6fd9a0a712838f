"""Capture and replay seams for agents built on other frameworks: one module each.

``enclave.adapters.http``: the wire layer. An HTTP transport that sends every request of
an ``httpx``/``httpx2`` client (the openai and anthropic clients and everything built on
them) through the run's ``ctx``: recorded at capture, served from the record at replay.

``enclave.adapters.langgraph``: a compiled LangGraph graph (a LangChain ``create_agent``
agent, a ``StateGraph`` with ``ToolNode`` s), unchanged: its tools through ``ctx``.

``enclave.adapters.openai_agents``: an OpenAI Agents SDK ``Agent``, unchanged: its
function tools, handoffs and (declared hosted) its model through ``ctx``.

``enclave.adapters.mcp``: every request an MCP client session sends a server (in
process, a stdio subprocess or a URL): recorded at capture, served at replay with no
server started; the Agents SDK adapter routes ``Agent.mcp_servers`` through it.

``enclave.adapters.pydantic_ai``: a pydantic-ai ``Agent``, unchanged: its function tools
and (declared hosted) its model through ``ctx``.
"""
