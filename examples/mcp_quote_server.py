"""A tiny MCP server for ``examples/mcp_agent.py``: suppliers' quotes over stdio.

python examples/mcp_quote_server.py   # speaks MCP on stdin/stdout
"""

from __future__ import annotations

from mcp.server import MCPServer
from pydantic import BaseModel

PRICES = {"acme": 100.0, "globex": 170.0}
RATINGS = {"acme": 0.9, "globex": 0.8}


class Quote(BaseModel):
    supplier: str
    price: float
    terms: str


server = MCPServer("quotes")


@server.tool()
def quote(supplier: str, quantity: int) -> Quote:
    """A supplier's current quote for the order."""
    discount = 0.95 if quantity >= 100 else 1.0
    return Quote(supplier=supplier, price=PRICES[supplier] * discount, terms="net 30")


@server.tool()
def rating(supplier: str) -> float:
    """The supplier's delivery rating, 0 to 1."""
    return RATINGS[supplier]


if __name__ == "__main__":
    server.run("stdio")
