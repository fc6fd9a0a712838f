"""Alembic migrations for the ledger schema; run with ``Ledger.migrate()``."""
