"""How the CLI speaks: Rich tables for people, one JSON object for machines, one line
on stderr for errors. Nothing here ever receives payload content."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    grid = Table(title=title)
    for column in columns:
        grid.add_column(column)
    for row in rows:
        grid.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(grid)


def pairs(title: str, data: Mapping[str, Any]) -> None:
    table(title, ("field", "value"), ((k, v) for k, v in data.items()))
