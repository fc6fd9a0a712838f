"""The witness's memory: per origin, the size and root it last cosigned, in a SQLite
file of its own (not a ledger's database: a witness is another party), advanced only
by compare-and-set so that racing requests cannot roll it back."""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["WitnessStore"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS witness_latest ("
    "origin TEXT PRIMARY KEY, tree_size INTEGER NOT NULL, root BLOB NOT NULL)"
)


class WitnessStore:
    """``ledger.certificates.tlog.WitnessState`` over a SQLite file."""

    def __init__(self, path: Path) -> None:
        # each statement commits on its own; one statement is one atomic step
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def latest(self, origin: str) -> tuple[int, bytes] | None:
        row = self._db.execute(
            "SELECT tree_size, root FROM witness_latest WHERE origin = ?", (origin,)
        ).fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def advance(self, origin: str, seen: tuple[int, bytes] | None, new: tuple[int, bytes]) -> bool:
        size, root = new
        if seen is None:
            try:
                self._db.execute(
                    "INSERT INTO witness_latest (origin, tree_size, root) VALUES (?, ?, ?)",
                    (origin, size, root),
                )
            except sqlite3.IntegrityError:
                return False
            return True
        done = self._db.execute(
            "UPDATE witness_latest SET tree_size = ?, root = ? "
            "WHERE origin = ? AND tree_size = ? AND root = ?",
            (size, root, origin, seen[0], seen[1]),
        )
        return done.rowcount == 1
