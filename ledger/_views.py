"""Core views of the tables read-only listings read, without SQLModel.

``ledger.tables`` declares every table as a SQLModel class, and importing it loads
SQLModel, pydantic and SQLAlchemy's ORM (about half a second). Reading needs none of
that: the listings of certificates, release reports and analysts select through these
views instead, plain SQLAlchemy Core (``sa.table``) with the same table and column names
and column types. ``tests/unit/ledger/test_tables.py`` checks that they agree with
``ledger.tables``. Writes keep using the table classes.
"""

from __future__ import annotations

import sqlalchemy as sa

__all__ = ["ANALYSTS_VIEW", "CERTIFICATES_VIEW", "RELEASE_REPORTS_VIEW"]

CERTIFICATES_VIEW = sa.table(
    "certificates",
    sa.column("audit_id", sa.Text),
    sa.column("specimen_id", sa.Text),
    sa.column("tenant_id", sa.Text),
    sa.column("envelope_digest", sa.Text),
    sa.column("classification", sa.Text),
    sa.column("issued_at", sa.Text),
    sa.column("envelope_json", sa.Text),
)

RELEASE_REPORTS_VIEW = sa.table(
    "release_reports",
    sa.column("report_id", sa.Text),
    sa.column("envelope_digest", sa.Text),
    sa.column("selection_digest", sa.Text),
    sa.column("issued_at", sa.Text),
    sa.column("gate_passed", sa.Boolean),
    sa.column("specimens", sa.Integer),
    sa.column("tenant_id", sa.Text),
    sa.column("envelope_json", sa.Text),
)

ANALYSTS_VIEW = sa.table(
    "analysts",
    sa.column("name", sa.Text),
    sa.column("tenant", sa.Text),
    sa.column("roles_json", sa.Text),
    sa.column("token_hash", sa.Text),
    sa.column("created_at", sa.Text),
    sa.column("disabled", sa.Boolean),
)
