"""How the CLI draws tables: the layout at 80 and 120 columns is pinned by golden files
(a listing of the three reference incidents' shape), so start-up work on the output
path cannot change what people read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "golden"

_DRAW = """
import sys
from enclave.cli._output import table
columns = ("specimen_id", "tenant", "agent", "highest_classification", "steps", "sealed_at",
           "erased")
rows = [
    ("sp-0e570721ced88bcd", "acme", "shard-maintenance@1.0.0", "restricted", 8,
     "2026-11-30T22:57:11.704047Z", False),
    ("sp-127e6e9a029b007d", "acme", "claims@1.0.0", "restricted", 5,
     "2026-11-30T22:57:11.624922Z", False),
    ("sp-a4419cbca073676f", sys.argv[1], "procurement@1.0.0", "confidential", 8,
     "2026-11-30T22:57:11.513261Z", True),
]
table("sealed specimens", columns, rows, whole=("specimen_id", "highest_classification"))
"""


def _draw(columns: int, tenant: str = "acme") -> str:
    done = subprocess.run(
        [sys.executable, "-c", _DRAW, tenant],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    assert done.returncode == 0, done.stderr[-400:]
    return done.stdout


@pytest.mark.parametrize("columns", [80, 120])
def test_table_layout_matches_golden(columns: int) -> None:
    """80 columns: too narrow for the whole ids beside the rest, so one field/value
    table per row; 120: one table, long cells folded onto a second line."""
    expected = (GOLDEN / f"specimens_table_{columns}.txt").read_text(encoding="utf-8")
    assert _draw(columns) == expected


def test_cells_are_shown_as_typed() -> None:
    shown = _draw(250, tenant=":thumbs_up:")
    assert ":thumbs_up:" in shown and "\N{THUMBS UP SIGN}" not in shown


@pytest.mark.parametrize("value", ["[/x]", "[bold]loud[/bold]", "[link=file:///etc]x[/link]"])
def test_a_cell_is_data_never_markup(value: str) -> None:
    """A value that reads as Rich markup is shown as typed: no crash on a closing tag
    nothing opened, no style or link taken from data."""
    done = subprocess.run(
        [sys.executable, "-c", _DRAW, value],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "250"},
    )
    assert done.returncode == 0, done.stderr[-300:]
    assert value in done.stdout


def test_the_demos_next_commands_are_never_broken_across_lines() -> None:
    """In a narrow terminal each suggested command stays on one line, to be pasted whole."""
    certificate = ".replay-enclave/certificates/au-" + "0" * 40 + ".dsse.json"
    draw = (
        "from pathlib import Path\n"
        "from enclave.cli._demo import _next_steps\n"
        f"_next_steps(Path('/somewhere/h'), {{'procurement': 'sp-1'}}, "
        f"[{{'certificate': {certificate!r}}}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", draw],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "60"},
    )
    assert done.returncode == 0, done.stderr[-300:]
    assert f"  replay-enclave verify {certificate} --home /somewhere/h\n" in done.stdout
