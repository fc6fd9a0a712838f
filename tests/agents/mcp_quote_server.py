"""A stdio MCP server for the MCP adapter's tests, run as a subprocess.

It serves the same ``quote`` and ``rating`` tools as the in-process server in
``tests/agents/mcp_agents.py`` and, on start, writes a marker file into the folder named
by the ``MCP_MARKERS`` environment variable: a replay that ever started it leaves one.
It imports nothing of the project (the subprocess sees only the variables it is given).
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from mcp.server import MCPServer
from pydantic import BaseModel

CANARY_TERMS = "CANARY-MCP-TERMS-5d0e8a"  # the same canary as the in-process server's
SUPPLIERS = ("acme", "globex")


class Quote(BaseModel):
    supplier: str
    price: float
    terms: str


server = MCPServer("quotes-stdio")


@server.tool()
def quote(supplier: str, quantity: int) -> Quote:
    """A supplier's current quote for the order."""
    price = 100.0 + 70.0 * SUPPLIERS.index(supplier) + (5.0 if quantity > 100 else 0.0)
    return Quote(supplier=supplier, price=price, terms=f"net 30 {CANARY_TERMS}")


@server.tool()
def rating(supplier: str) -> float:
    """The supplier's delivery rating, 0 to 1."""
    return round(0.9 - 0.1 * SUPPLIERS.index(supplier), 2)


if __name__ == "__main__":
    markers = os.environ.get("MCP_MARKERS")
    if markers:
        Path(markers).mkdir(exist_ok=True)
        Path(markers, f"started-{uuid.uuid4().hex}").write_text("started\n")
    server.run("stdio")
