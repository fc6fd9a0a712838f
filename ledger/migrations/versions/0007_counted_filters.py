"""Covering indexes for counting filtered specimen listings.

A listing page answers with ``total``, the count of the tenant's specimens its filters
select. The auditability filter reads two facts (``effects_reverifiable``,
``effects_expire_at``) that lived only in the table rows, so every count read each row of
the tenant, manifest and all. With the facts in an index after the tenant (and agent),
a count reads index entries only; the rows are still read for the page itself, which is
bounded by its limit.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_FACTS = ["effects_reverifiable", "effects_expire_at"]


def upgrade() -> None:
    op.create_index("ix_specimens_tenant_facts", "specimens", ["tenant_id", *_FACTS])
    op.create_index(
        "ix_specimens_tenant_agent_facts", "specimens", ["tenant_id", "agent_name", *_FACTS]
    )


def downgrade() -> None:
    op.drop_index("ix_specimens_tenant_agent_facts", table_name="specimens")
    op.drop_index("ix_specimens_tenant_facts", table_name="specimens")
