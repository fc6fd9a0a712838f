"""How the CLI speaks: Rich tables for people, one JSON object for machines, one line
on stderr for errors. Nothing here ever receives payload content."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import BadInput

if TYPE_CHECKING:
    from rich.console import Console


class _OnFirstUse:
    """A Rich console made when first printed to: ``--json`` and ``--help`` never load
    Rich's renderers at all."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def made(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.made(), name)


# emoji=False: what is printed is shown as it is — an id or a name holding ``:name:`` is
# not turned into an emoji — and the first print does not load Rich's emoji table
# (thousands of entries, several milliseconds of every table command's start).
_stdout = _OnFirstUse(emoji=False)
console: Console = _stdout  # type: ignore[assignment]  # a stand-in with its interface


def rich_console() -> Console:
    """The console itself, for Rich objects that take one (progress bars)."""
    return _stdout.made()


# Cells are folded onto more lines, never cut with an ellipsis: a cut cell hides the
# very word (a classification, an id) someone came to read.
_BORDERS = 3  # per column: a separator and one space of padding on each side
_NARROWEST = 10  # below this a folded column is harder to read than a vertical layout


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


def table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    whole: Sequence[str] = (),
) -> None:
    """A table; the ``whole`` columns are never wrapped. When the terminal is too narrow
    to keep them whole beside the rest, each row is shown as its own field/value block."""
    cells = [["" if cell is None else str(cell) for cell in row] for row in rows]
    widths = {
        c: max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns) if c in whole
    }
    others = len(columns) - len(widths)
    needed = sum(widths.values()) + _BORDERS * len(columns) + 1 + _NARROWEST * others
    if widths and needed > console.width:
        for row in cells:
            pairs(f"{title}: {row[0]}", dict(zip(columns[1:], row[1:], strict=True)))
        return
    from rich.markup import escape
    from rich.table import Table

    # cells are data, never markup: a name holding "[/x]" is shown as typed
    grid = Table(title=escape(title))
    for column in columns:
        if column in widths:
            grid.add_column(column, no_wrap=True, min_width=widths[column])
        else:
            grid.add_column(column, overflow="fold")
    for row in cells:
        grid.add_row(*(escape(cell) for cell in row))
    console.print(grid)


def exported(paths: Sequence[Path], folder: Path, noun: str, *, json_out: bool) -> None:
    """What an export wrote: each ``<id>.dsse.json`` and the bundle beside it."""
    bundles = [p.with_name(p.name.replace(".dsse.json", ".bundle.json")) for p in paths]
    if json_out:
        emit_json({"exported": [str(p) for p in paths], "bundles": [str(p) for p in bundles]})
    else:
        console.print(f"exported {len(paths)} {noun}(s) to {folder}")


def pairs(title: str, data: Mapping[str, Any]) -> None:
    table(title, ("field", "value"), ((k, v) for k, v in data.items()))


def check_writable(path: Path, option: str) -> None:
    """Refuse, before any work is recorded, an output path that cannot become a file."""
    if path.is_dir() or not path.parent.is_dir():
        raise BadInput(f"{option} must name a file in an existing folder")
