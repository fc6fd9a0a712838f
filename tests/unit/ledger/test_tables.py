"""The table registry (``ledger.tables``): every table of the database is declared there
once, and the schema the Alembic chain builds is exactly the registry's."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

import ledger.tables as tables
from ledger import Ledger
from ledger.transactions import ANALYSTS_VIEW, CERTIFICATES_VIEW, RELEASE_REPORTS_VIEW

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = ROOT / "ledger" / "tables"
MIGRATIONS = ROOT / "ledger" / "migrations"


def test_the_migrated_schema_is_the_registry(tmp_path: Path) -> None:
    led = Ledger.open(f"sqlite:///{tmp_path / 'fresh.db'}", head_path=tmp_path / "head.json")
    try:
        led.migrate()
        with led.engine.connect() as conn:
            migrated = set(sa.inspect(conn).get_table_names()) - {"alembic_version"}
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            # no filter: a table the chain creates but the registry lacks is a difference too
            assert compare_metadata(context, tables.METADATA) == []
    finally:
        led.close()
    assert migrated == set(tables.TABLES)


def test_the_registry_lists_every_table_once() -> None:
    assert len(tables.TABLES) == len(set(tables.TABLES))
    assert set(tables.TABLES) == set(tables.METADATA.tables)
    for name in tables.__all__:
        assert getattr(tables, name) is not None


@pytest.mark.parametrize(
    "view", [ANALYSTS_VIEW, CERTIFICATES_VIEW, RELEASE_REPORTS_VIEW], ids=lambda v: v.name
)
def test_each_read_view_is_its_registry_table(view: sa.TableClause) -> None:
    """The Core views listings read through (so they do not load SQLModel) name the
    registry's table, and its columns in order with their types."""
    table = tables.METADATA.tables[view.name]
    assert [(c.name, type(c.type)) for c in view.c] == [(c.name, type(c.type)) for c in table.c]


def _declarations(path: Path, *, root: Path = ROOT) -> Iterator[str]:
    """Table declarations in ``path``: SQLModel ``table=True`` classes, SQLAlchemy
    ``Table(...)`` calls (``sa.Table``, ``sqlalchemy.Table``, an imported ``Table``) and
    ``MetaData()`` objects to hang them on."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {"sqlalchemy", "sqlmodel"}
    aliases: set[str] = set()  # names bound to sqlalchemy or sqlmodel modules
    imported: set[str] = set()  # ``Table``/``MetaData`` imported from them
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in modules:
                    aliases.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in modules:
            imported |= {a.asname or a.name for a in node.names if a.name in {"Table", "MetaData"}}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for keyword in node.keywords:
                if keyword.arg == "table" and getattr(keyword.value, "value", None) is True:
                    yield f"{path.relative_to(root)}:{node.lineno} class {node.name}"
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in imported:
                yield f"{path.relative_to(root)}:{node.lineno} {func.id}(...)"
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in {"Table", "MetaData"}
                and isinstance(func.value, ast.Name)
                and func.value.id in aliases
            ):
                yield f"{path.relative_to(root)}:{node.lineno} {func.value.id}.{func.attr}(...)"


def test_no_table_is_declared_outside_the_registry() -> None:
    found = []
    for package in ("enclave", "ledger", "jupyter_ext"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.is_relative_to(REGISTRY) or path.is_relative_to(MIGRATIONS):
                continue
            found += _declarations(path)
    assert found == []


def test_the_check_sees_declarations(tmp_path: Path) -> None:
    declared = [d for path in sorted(REGISTRY.glob("_*.py")) for d in _declarations(path)]
    assert len(declared) == len(tables.TABLES)  # one table=True class per table
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sqlalchemy as sa\n"
        "from sqlalchemy import Table\n"
        "from sqlmodel import SQLModel\n"
        "from rich.table import Table as Grid\n"
        "meta = sa.MetaData()\n"
        "one = sa.Table('one', meta)\n"
        "two = Table('two', meta)\n"
        "grid = Grid(title='not a database table')\n"
        "class Three(SQLModel, table=True): ...\n",
        encoding="utf-8",
    )
    assert sorted(_declarations(probe, root=tmp_path)) == [
        "probe.py:5 sa.MetaData(...)",
        "probe.py:6 sa.Table(...)",
        "probe.py:7 Table(...)",
        "probe.py:9 class Three",
    ]
