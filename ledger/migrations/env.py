"""Alembic environment for the ledger. Online only, on the connection the caller passes.

``Ledger.migrate()`` puts an open connection (already inside a write transaction) in
``config.attributes["connection"]``; every revision runs inside that transaction.
"""

from __future__ import annotations

from alembic import context

from ledger.tables import METADATA

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("ledger migrations run only through Ledger.migrate()")

context.configure(
    connection=connection,
    target_metadata=METADATA,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
