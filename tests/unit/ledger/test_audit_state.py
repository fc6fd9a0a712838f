"""One closed vocabulary for an audit's state (``ledger.AuditState``), and its copies.

Python code derives its lists from the enum; the copies that cannot import it are held
to the same set here: the Alembic revision that created the ``audits`` table (frozen
history), the notebook client (``jupyter_ext`` stays off the ledger front) and the
JupyterLab extension's TypeScript client. A database row outside the
vocabulary is refused by the table's CHECK constraint.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
import sqlalchemy as sa
from sqlmodel import SQLModel

from enclave import Runtime, jobs
from jupyter_ext import AuditStatus as ClientAuditStatus
from jupyter_ext import BadResponse
from ledger import ACTIVE_AUDIT_STATES, TERMINAL_AUDIT_STATES, AuditState

ROOT = Path(__file__).resolve().parents[3]
TS_API = ROOT / "labextension" / "src" / "enclave" / "api.ts"
MIGRATION = ROOT / "ledger" / "migrations" / "versions" / "0002_jobs.py"
STAMP = "2025-03-01T12:00:00.000000Z"


def _quoted(text: str) -> set[str]:
    return set(re.findall(r"'([^']*)'", text))


def test_the_vocabulary() -> None:
    assert [s.value for s in AuditState] == [
        "QUEUED",
        "RUNNING",
        "FINALIZING",
        "COMPLETED",
        "FAILED",
        "CANCELLED",
    ]
    assert all(s.name == s.value for s in AuditState)  # stored text = name = value


def test_active_and_terminal_partition_the_states() -> None:
    assert ACTIVE_AUDIT_STATES | TERMINAL_AUDIT_STATES == set(AuditState)
    assert not ACTIVE_AUDIT_STATES & TERMINAL_AUDIT_STATES
    assert ACTIVE_AUDIT_STATES == {AuditState.QUEUED, AuditState.RUNNING, AuditState.FINALIZING}


# -- copies that cannot import the enum --------------------------------------------------


def _typescript(pattern: str) -> set[str]:
    found = re.search(pattern, TS_API.read_text(), re.DOTALL)
    assert found is not None, f"{TS_API.name}: {pattern!r} not found"
    return _quoted(found.group(1))


def test_the_typescript_client_names_the_same_states() -> None:
    union = _typescript(r"interface AuditStatus \{[^}]*?\bstatus:\s*([^;]+);")
    assert union == {s.value for s in AuditState}
    terminal = _typescript(r"export const TERMINAL = new Set\(\[([^\]]*)\]\)")
    assert terminal == {s.value for s in TERMINAL_AUDIT_STATES}


def _migration() -> ModuleType:
    spec = importlib.util.spec_from_file_location("jobs_revision_0002", MIGRATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_applied_migration_allows_the_same_states() -> None:
    assert _quoted(_migration()._AUDIT_STATUSES) == {s.value for s in AuditState}


def _audits() -> sa.Table:
    return SQLModel.metadata.tables[jobs.AuditRow.__tablename__]


def test_the_tables_check_lists_the_states() -> None:
    checks = [
        c
        for c in _audits().constraints
        if isinstance(c, sa.CheckConstraint) and c.name == "ck_audits_status"
    ]
    assert len(checks) == 1
    assert _quoted(str(checks[0].sqltext)) == {s.value for s in AuditState}


# -- the code writes only members ---------------------------------------------------------


def _sources(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).glob("*.py"))


def _literals(tree: ast.AST) -> set[str]:
    """String constants outside docstrings."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def test_jobs_and_service_spell_no_state_by_hand() -> None:
    states = {s.value for s in AuditState}
    for path in _sources("enclave/jobs", "enclave/service"):
        spelled = _literals(ast.parse(path.read_text())) & states
        assert not spelled, f"{path.relative_to(ROOT)} spells {sorted(spelled)}; use AuditState"


def test_the_states_the_jobs_code_writes_are_exactly_the_vocabulary() -> None:
    """Every ``AuditState.X`` the jobs package names is a member, and every member is
    reached by some transition (no state is dead)."""
    named = set()
    for path in _sources("enclave/jobs"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "AuditState"
            ):
                named.add(node.attr)
    assert named == set(AuditState.__members__)


def test_the_notebook_client_knows_the_same_states() -> None:
    """``jupyter_ext`` imports nothing from the enclave or the ledger front, so it keeps
    its own copy; held to the enum through its front: every state is accepted, exactly
    the terminal ones are terminal, anything else is a ``BadResponse``."""
    for state in AuditState:
        status = ClientAuditStatus.from_dict({"audit_id": "a-1", "status": state.value})
        assert status.terminal is (state in TERMINAL_AUDIT_STATES)
    with pytest.raises(BadResponse):
        ClientAuditStatus.from_dict({"audit_id": "a-1", "status": "PAUSED"})


def test_a_status_outside_the_vocabulary_cannot_be_built() -> None:
    with pytest.raises(ValueError):
        AuditState("PAUSED")


# -- the database refuses a row outside it -------------------------------------------------


def _row(audit_id: str, status: str) -> dict[str, object]:
    return {
        "id": audit_id,
        "tenant_id": "acme",
        "specimen_id": "sp-1",
        "requester": "analyst-1",
        "purpose": "purchase-order-review",
        "request_json": "{}",
        "status": status,
        "progress_done": 0,
        "progress_total": 4,
        "created_at": STAMP,
        "updated_at": STAMP,
    }


def test_the_database_refuses_an_unknown_state(runtime: Runtime) -> None:
    table = _audits()
    engine = runtime.ledger.engine
    with engine.begin() as conn:
        conn.execute(sa.insert(table).values(**_row("a-known", AuditState.QUEUED)))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(sa.insert(table).values(**_row("a-unknown", "PAUSED")))
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
        conn.execute(
            sa.update(table).where(table.c.id == "a-known").values(status="queued")
        )  # the vocabulary is case-sensitive
    assert jobs.audit_status(runtime, "a-known").status is AuditState.QUEUED


def test_a_row_smuggled_past_the_check_is_not_reported_as_a_state(runtime: Runtime) -> None:
    if runtime.ledger.engine.dialect.name != "sqlite":
        pytest.skip("only SQLite can switch its CHECK constraints off")
    table = _audits()
    with runtime.ledger.engine.begin() as conn:
        conn.exec_driver_sql("PRAGMA ignore_check_constraints = ON")
        conn.execute(sa.insert(table).values(**_row("a-smuggled", "PAUSED")))
        conn.exec_driver_sql("PRAGMA ignore_check_constraints = OFF")
    with pytest.raises(ValueError):
        jobs.audit_status(runtime, "a-smuggled")
