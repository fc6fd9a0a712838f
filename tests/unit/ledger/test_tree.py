"""The ledger's Merkle tree on SQLite and PostgreSQL: its roots are RFC 9162's over the
entries (computed here from the documented rule with the reference RFC 8785 library),
its proofs verify, ``verify`` catches a tree that drifted from the entries, and a
ledger whose entries predate the tree gets it from the migration."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from ledger import Ledger
from ledger.certificates.tlog import (
    ProofInvalid,
    root_of_leaves,
    verify_consistency,
    verify_inclusion,
)
from tests.unit.ledger import merkle_reference
from tests.unit.ledger import test_ledger as base
from tests.unit.ledger.test_ledger import CountingClock

ledger_url = base.ledger_url
ledger_db = base.ledger_db

MIGRATIONS = Path(__file__).parents[3] / "ledger" / "migrations"


def independent_leaves(led: Ledger) -> list[bytes]:
    with led.engine.connect() as conn:
        return merkle_reference.independent_leaves(conn)


def grow(led: Ledger, batches: list[int]) -> None:
    count = 0
    for size in batches:
        led.append_many([("note", f"s-{i % 4}", {"i": count + i}) for i in range(size)])
        count += size


def run_sql(led: Ledger, sql: str, **params: Any) -> None:
    with led.engine.begin() as conn:
        conn.execute(sa.text(sql), params)


def test_roots_and_proofs_at_every_size(ledger_db: Ledger) -> None:
    assert ledger_db.tree_root() == (0, hashlib.sha256(b"").digest())
    # batches that cross perfect-subtree boundaries in every way
    grow(ledger_db, [1, 2, 1, 5, 8, 3, 13, 1])
    leaves = independent_leaves(ledger_db)
    n = len(leaves)
    assert n == 34
    roots = {size: ledger_db.tree_root(size)[1] for size in range(1, n + 1)}
    assert ledger_db.tree_root() == (n, roots[n])
    for size in range(1, n + 1):
        assert roots[size] == root_of_leaves(leaves[:size])
        for index in range(size):
            proof = ledger_db.prove_inclusion(index, size)
            verify_inclusion(leaves[index], index, size, proof, roots[size])
        for old in range(1, size + 1):
            proof = ledger_db.prove_consistency(old, size)
            verify_consistency(old, size, roots[old], roots[size], proof)
    with pytest.raises(ProofInvalid):
        verify_inclusion(leaves[3], 4, n, ledger_db.prove_inclusion(4, n), roots[n])


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("tree_root", (35,)),
        ("prove_inclusion", (5, 5)),
        ("prove_inclusion", (-1, 3)),
        ("prove_consistency", (0, 3)),
        ("prove_consistency", (4, 3)),
        ("prove_consistency", (1, 99)),
    ],
)
def test_sizes_the_ledger_never_had_are_refused(
    ledger_db: Ledger, call: str, args: tuple[int, ...]
) -> None:
    grow(ledger_db, [34])
    with pytest.raises(ValueError, match="size|tree"):
        getattr(ledger_db, call)(*args)


@pytest.mark.parametrize(
    ("sql", "reason", "index"),
    [
        # an interior subtree edited: proofs through it would not verify
        ("UPDATE ledger_tree SET hash = :h WHERE level = 2 AND node_index = 1", "differs", 4),
        ("DELETE FROM ledger_tree WHERE level = 2 AND node_index = 2", "differs", 8),
        # a subtree no entry completes yet
        ("INSERT INTO ledger_tree (level, node_index, hash) VALUES (0, 12, :h)", "past", 12),
    ],
)
def test_verify_catches_a_tree_apart_from_the_entries(
    ledger_db: Ledger, sql: str, reason: str, index: int
) -> None:
    grow(ledger_db, [7, 5])
    assert ledger_db.verify().ok
    run_sql(ledger_db, sql, h=b"\x07" * 32)
    report = ledger_db.verify()
    assert not report.ok
    assert report.checked[-1] == "tree"
    assert reason in (report.reason or "") and report.first_bad_index == index


def test_incremental_verify_checks_the_new_part_of_the_tree(ledger_db: Ledger) -> None:
    grow(ledger_db, [9])
    assert ledger_db.verify(record=True).ok
    grow(ledger_db, [6])
    assert ledger_db.verify(incremental=True).ok
    run_sql(
        ledger_db,
        "UPDATE ledger_tree SET hash = :h WHERE level = 2 AND node_index = 2",
        h=b"\x01" * 32,
    )
    report = ledger_db.verify(incremental=True)
    assert not report.ok and report.first_bad_index == 8 and report.verified_from == 9


def test_the_migration_builds_the_tree_of_entries_already_there(
    ledger_url: str, tmp_path: Path
) -> None:
    led = Ledger.open(ledger_url, head_path=tmp_path / "head.json", clock=CountingClock())
    led.migrate()
    grow(led, [6000, 17])  # more than one batch of the migration's
    leaves = independent_leaves(led)
    # back to the schema before the tree: its entries stay, the tree goes
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with led.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0010_inference_answers")
    led.close()
    led = Ledger.open(ledger_url, head_path=tmp_path / "head.json", clock=CountingClock())
    led.migrate()
    assert led.tree_root() == (len(leaves), root_of_leaves(leaves))
    assert led.verify().ok
    grow(led, [3])
    assert led.tree_root()[1] == root_of_leaves(independent_leaves(led))
    led.close()


def test_leaves_and_pairs_are_read_from_their_entries_not_stored(ledger_db: Ledger) -> None:
    grow(ledger_db, [20, 17])  # 37 entries: 0b100101
    with ledger_db.engine.connect() as conn:
        levels = conn.execute(sa.text("SELECT level, count(*) FROM ledger_tree GROUP BY level"))
        counts = dict(levels.all())
    # one row per completed subtree of four entries and more; leaves and pairs are read
    # from their entries
    assert counts == {2: 37 // 4, 3: 37 // 8, 4: 37 // 16, 5: 37 // 32}
    leaves = independent_leaves(ledger_db)
    assert ledger_db.tree_root() == (37, root_of_leaves(leaves))
    for index in (0, 35, 36):  # a proof's sibling leaf and pair come from their entries
        path = ledger_db.prove_inclusion(index, 37)
        verify_inclusion(leaves[index], index, 37, path, root_of_leaves(leaves))


def test_the_leaf_migration_round_trips(ledger_url: str, tmp_path: Path) -> None:
    led = Ledger.open(ledger_url, head_path=tmp_path / "head.json", clock=CountingClock())
    led.migrate()
    grow(led, [2100, 9])  # more than one batch of the downgrade's
    root = led.tree_root()
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with led.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0012_signed_checkpoints")
        low = "SELECT level, node_index, hash FROM ledger_tree WHERE level < 2"
        # every leaf and pair written back from their entries, as the older code reads them
        written = {(int(lv), int(ix)): bytes(h) for lv, ix, h in conn.execute(sa.text(low))}
        leaves = merkle_reference.independent_leaves(conn)
        assert written == {
            **{(0, i): leaf for i, leaf in enumerate(leaves)},
            **{(1, i): root_of_leaves(leaves[2 * i : 2 * i + 2]) for i in range(1054)},
        }
        command.upgrade(config, "head")
        assert conn.execute(sa.text(low)).all() == []
    assert led.tree_root() == root and led.verify().ok
    led.close()
