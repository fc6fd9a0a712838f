"""Hash-linked ``Ledger.append_many`` vs raw ``sqlite3`` executemany of the same rows.

Both sides write to a fresh SQLite file with the same pragmas (WAL, synchronous=FULL,
secure_delete=ON) into an equivalent table (same columns, primary key, unique hash,
two secondary indexes), in one transaction. The ledger side also canonicalises every
body, computes every hash link, takes the chain-tip lock and moves the tip; the raw
side inserts the finished rows the ledger produced. Best of ``repeats`` runs each.

    python -m benchmarks._ledger_append [n]
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ledger import Ledger

__all__ = ["measure"]

_RAW_SCHEMA = (
    "CREATE TABLE ledger_entries (entry_index BIGINT NOT NULL PRIMARY KEY, kind TEXT NOT NULL, "
    "subject TEXT NOT NULL, body_json TEXT NOT NULL, prev_hash TEXT NOT NULL, "
    "entry_hash TEXT NOT NULL, recorded_at TEXT NOT NULL, "
    "CONSTRAINT uq_ledger_entries_hash UNIQUE (entry_hash))",
    "CREATE INDEX ix_ledger_entries_kind ON ledger_entries (kind)",
    "CREATE INDEX ix_ledger_entries_subject ON ledger_entries (subject)",
)
_RAW_INSERT = (
    "INSERT INTO ledger_entries (entry_index, kind, subject, body_json, prev_hash, "
    "entry_hash, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _items(n: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (
            "bench.note",
            f"specimen-{i % 100:03d}",
            {"i": i, "digest": f"sha256:{i:064x}", "layer": "proposal", "ok": i % 2 == 0},
        )
        for i in range(n)
    ]


def _ledger_run(root: Path, items: list[tuple[str, str, dict[str, Any]]]) -> tuple[float, list]:
    led = Ledger.open(f"sqlite:///{root / 'ledger.db'}", clock=lambda: "2025-03-01T12:00:00Z")
    try:
        led.migrate()
        start = time.perf_counter()
        led.append_many(items)
        elapsed = time.perf_counter() - start
        with led.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT entry_index, kind, subject, body_json, prev_hash, entry_hash, "
                "recorded_at FROM ledger_entries ORDER BY entry_index"
            ).all()
    finally:
        led.close()
    return elapsed, [tuple(r) for r in rows]


def _raw_run(root: Path, rows: list[tuple[Any, ...]]) -> float:
    conn = sqlite3.connect(root / "raw.db", isolation_level=None)
    try:
        for pragma in ("journal_mode = WAL", "synchronous = FULL", "secure_delete = ON"):
            conn.execute(f"PRAGMA {pragma}")
        for statement in _RAW_SCHEMA:
            conn.execute(statement)
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_RAW_INSERT, rows)
        conn.execute("COMMIT")
        return time.perf_counter() - start
    finally:
        conn.close()


def measure(n: int = 20000, *, repeats: int = 5) -> dict[str, float]:
    """Rows per second for both paths and their ratio (ledger / raw)."""
    items = _items(n)
    ledger_best = raw_best = float("inf")
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="ledger-bench-") as tmp:
            elapsed, rows = _ledger_run(Path(tmp), items)
            ledger_best = min(ledger_best, elapsed)
            raw_best = min(raw_best, _raw_run(Path(tmp), rows))
    ledger_rate, raw_rate = n / ledger_best, n / raw_best
    return {
        "rows": float(n),
        "ledger_append_many_rows_per_s": ledger_rate,
        "raw_sqlite3_executemany_rows_per_s": raw_rate,
        "ratio": ledger_rate / raw_rate,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    result = measure(n)
    print(f"{'path':<36}{'rows/s':>14}")
    print(
        f"{'Ledger.append_many (hash-linked)':<36}{result['ledger_append_many_rows_per_s']:>14,.0f}"
    )
    print(f"{'raw sqlite3 executemany':<36}{result['raw_sqlite3_executemany_rows_per_s']:>14,.0f}")
    print(f"{'ratio (ledger / raw)':<36}{result['ratio']:>14.2f}")


if __name__ == "__main__":
    main()
