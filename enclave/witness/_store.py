"""The witness's memory: per origin, the size and root it last cosigned (a SQLite file
of its own, apart from any ledger it watches), advanced only by compare-and-set."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

__all__ = ["WitnessStore"]

_METADATA = sa.MetaData()
_LATEST = sa.Table(
    "witness_latest",
    _METADATA,
    sa.Column("origin", sa.String, primary_key=True),
    sa.Column("tree_size", sa.BigInteger, nullable=False),
    sa.Column("root", sa.LargeBinary(32), nullable=False),
)


class WitnessStore:
    """``ledger.certificates.tlog.WitnessState`` over a SQLite file."""

    def __init__(self, path: Path) -> None:
        self._engine = sa.create_engine(f"sqlite:///{path}")
        _METADATA.create_all(self._engine)

    def close(self) -> None:
        self._engine.dispose()

    def latest(self, origin: str) -> tuple[int, bytes] | None:
        with self._engine.connect() as conn:
            row = conn.execute(
                sa.select(_LATEST.c.tree_size, _LATEST.c.root).where(_LATEST.c.origin == origin)
            ).first()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def advance(self, origin: str, seen: tuple[int, bytes] | None, new: tuple[int, bytes]) -> bool:
        size, root = new
        with self._engine.begin() as conn:
            if seen is None:
                try:
                    conn.execute(
                        sa.insert(_LATEST).values(origin=origin, tree_size=size, root=root)
                    )
                except sa.exc.IntegrityError:
                    return False
                return True
            done = conn.execute(
                sa.update(_LATEST)
                .where(
                    _LATEST.c.origin == origin,
                    _LATEST.c.tree_size == seen[0],
                    _LATEST.c.root == seen[1],
                )
                .values(tree_size=size, root=root)
            )
            return done.rowcount == 1
