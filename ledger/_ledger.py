"""``Ledger``: the evidence ledger's one front door.

Invariants:

1. Metadata only: identities, digests, order, times, classifications, references.
2. Every write is one database transaction; a failure leaves nothing half-written.
3. Entries are only ever appended (``ledger._chain``), under the chain-tip lock, and
   ``specimen.*`` entries are written only by the methods that own them.
4. After each committed append, when ``head_path`` is set, the new head is saved there
   (``ledger._head``) so ``verify`` can catch truncation and rewritten history.
5. No database exception leaves this class: they become ``Conflict`` (the write clashes
   with what is recorded) or ``LedgerUnavailable``, without bound values.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ._canonical import loads
from ._chain import append_rows, caller_items, lock_tip
from ._engine import make_engine
from ._errors import Conflict, NotFound
from ._head import read_saved_head, save_head
from ._records import (
    EntryRecord,
    LedgerPosition,
    RunStatus,
    SpecimenRecord,
    SpecimenSummary,
    VerifyReport,
)
from ._signed import SignedCheckpoint, add_cosignatures, prove_entries, sign_checkpoint
from ._specimens import (
    check_record,
    count_specimens,
    insert_specimen,
    insert_specimens,
    load_specimen,
    sealed_body,
    specimen_page,
)
from ._statements import insert_new, select_entries, select_tip
from ._summaries import SpecimenFilter, SpecimenPage
from ._transactions import guarded, read, write
from ._tree import consistency_proof, inclusion_proof, tree_root
from ._verify import latest_checkpoint, record_checkpoint, verify_ledger
from .certificates.tlog import Checkpoint, NoteVerifier, TlogProof

__all__ = ["Ledger", "utc_clock"]

_MIGRATIONS = Path(__file__).with_name("migrations")
# Alembic's own bookkeeping table: not part of the ledger's metadata
_alembic_version = sa.table("alembic_version", sa.column("version_num"))
_MIGRATION_LOCK = 0x4C454447  # pg advisory lock key ("LEDG")
_REVISION = re.compile(r'^revision = "([^"]+)"$', re.MULTILINE)
_DOWN_REVISION = re.compile(r"^down_revision = (.*)$", re.MULTILINE)


@functools.cache
def schema_heads() -> frozenset[str]:
    """The heads of the revision scripts, read from their ``revision`` and
    ``down_revision`` lines: a ledger already there is opened without importing Alembic
    at all, and a new revision needs no second list kept by hand (a test compares this
    with Alembic's own answer)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (_MIGRATIONS / "versions").glob("*.py"):
        text = script.read_text()
        found = _REVISION.search(text)
        down = _DOWN_REVISION.search(text)
        if found is None or down is None:
            continue
        revisions.add(found.group(1))
        parents.update(re.findall(r'"([^"]+)"', down.group(1)))
    return frozenset(revisions - parents)


def utc_clock() -> str:
    """The system clock as ISO-8601 UTC text (the default at the process boundary)."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _sealed_run(record: SpecimenRecord) -> dict[str, str]:
    """The ``runs`` row of a run recorded only when its specimen is sealed."""
    return {
        "id": record.specimen_id,
        "tenant_id": record.tenant_id,
        "agent_name": record.agent_name,
        "agent_version": record.agent_version,
        "status": "sealed",
        "started_at": record.sealed_at,
        "ended_at": record.sealed_at,
    }


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string")
    return value


class Ledger:
    """The evidence ledger on one database (SQLite file or PostgreSQL, by URL)."""

    def __init__(
        self,
        *,
        engine: Engine,
        head_path: Path | None = None,
        clock: Callable[[], str] = utc_clock,
    ) -> None:
        self._engine = engine
        self._head_path = Path(head_path) if head_path is not None else None
        self._clock = clock

    @classmethod
    def open(
        cls, url: str, *, head_path: Path | None = None, clock: Callable[[], str] = utc_clock
    ) -> Ledger:
        """Open the ledger at ``url``; ``clock`` stamps ``recorded_at`` on entries."""
        return cls(engine=make_engine(url), head_path=head_path, clock=clock)

    @property
    def engine(self) -> Engine:
        return self._engine

    @property
    def head_path(self) -> Path | None:
        return self._head_path

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _saved(self, position: LedgerPosition) -> None:
        if self._head_path is not None:
            save_head(self._head_path, position)

    # -- schema ---------------------------------------------------------------------

    @guarded("migrate")
    def migrate(self) -> None:
        """Upgrade the schema to every Alembic head (independent revision branches,
        e.g. jobs and governance, all apply)."""
        if self._schema_heads() == schema_heads():
            return
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(_MIGRATIONS))
        with write(self._engine) as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_MIGRATION_LOCK)))
            config.attributes["connection"] = conn
            command.upgrade(config, "heads")

    def _schema_heads(self) -> frozenset[str]:
        with read(self._engine) as conn:
            if not sa.inspect(conn).has_table("alembic_version"):
                return frozenset()
            rows = conn.execute(sa.select(_alembic_version.c.version_num))
            return frozenset(str(row[0]) for row in rows)

    # -- tenants and runs -------------------------------------------------------------

    @staticmethod
    def _ensure_tenant(conn: sa.Connection, tenant_id: str) -> None:
        from .tables import TenantRow, table_of

        conn.execute(insert_new(conn, table_of(TenantRow)).values(id=tenant_id))

    @guarded("ensure_tenant")
    def ensure_tenant(self, tenant_id: str) -> None:
        _text(tenant_id, "tenant_id")
        with write(self._engine) as conn:
            self._ensure_tenant(conn, tenant_id)

    @guarded("begin_run")
    def begin_run(
        self,
        *,
        run_id: str,
        tenant_id: str,
        agent_name: str,
        agent_version: str,
        started_at: str,
    ) -> None:
        from .tables import RunRow, table_of

        for value, name in (
            (run_id, "run_id"),
            (tenant_id, "tenant_id"),
            (agent_name, "agent_name"),
            (agent_version, "agent_version"),
            (started_at, "started_at"),
        ):
            _text(value, name)
        with write(self._engine) as conn:
            self._ensure_tenant(conn, tenant_id)
            conn.execute(
                sa.insert(table_of(RunRow)).values(
                    id=run_id,
                    tenant_id=tenant_id,
                    agent_name=agent_name,
                    agent_version=agent_version,
                    status="running",
                    started_at=started_at,
                )
            )

    @guarded("mark_incomplete")
    def mark_incomplete(self, run_id: str, *, failure_code: str, ended_at: str) -> None:
        from .tables import RunRow, table_of

        _text(failure_code, "failure_code")
        _text(ended_at, "ended_at")
        with write(self._engine) as conn:
            status = self._run_status(conn, run_id)
            if status is not RunStatus.RUNNING:
                raise Conflict("only a running run can be marked incomplete")
            runs = table_of(RunRow)
            conn.execute(
                sa.update(runs)
                .where(runs.c.id == run_id)
                .values(status="incomplete", failure_code=failure_code, ended_at=ended_at)
            )

    @staticmethod
    def _run_status(conn: sa.Connection, run_id: str) -> RunStatus:
        from .tables import RunRow, table_of

        runs = table_of(RunRow)
        row = conn.execute(sa.select(runs.c.status).where(runs.c.id == run_id)).first()
        if row is None:
            raise NotFound("no such run")
        return RunStatus(row[0])

    @guarded("run_status")
    def run_status(self, run_id: str) -> RunStatus:
        with read(self._engine) as conn:
            return self._run_status(conn, run_id)

    # -- specimens ------------------------------------------------------------------

    @guarded("seal_specimen")
    def seal_specimen(self, record: SpecimenRecord) -> LedgerPosition:
        """Seal ``record`` in one transaction; the specimen id is the run id.

        A run begun with ``begin_run`` must still be running and belong to the same
        tenant; a run never begun is recorded as sealed at ``record.sealed_at``.
        """
        from .tables import RunRow, table_of

        check_record(record)
        body = sealed_body(record)
        with write(self._engine) as conn:
            tip = lock_tip(conn)
            self._ensure_tenant(conn, record.tenant_id)
            runs = table_of(RunRow)
            run = conn.execute(
                sa.select(runs.c.status, runs.c.tenant_id).where(runs.c.id == record.specimen_id)
            ).first()
            if run is None:
                conn.execute(sa.insert(runs), [_sealed_run(record)])
            elif run[0] != RunStatus.RUNNING.value or run[1] != record.tenant_id:
                raise Conflict("the run is not a running run of this tenant")
            else:
                conn.execute(
                    sa.update(runs)
                    .where(runs.c.id == record.specimen_id)
                    .values(status="sealed", ended_at=record.sealed_at)
                )
            positions, _ = append_rows(
                conn, tip, [("specimen.sealed", record.specimen_id, body)], self._clock()
            )
            insert_specimen(conn, record, positions[0].index)
        self._saved(positions[0])
        return positions[0]

    @guarded("seal_specimen")
    def seal_many(self, records: Sequence[SpecimenRecord]) -> list[LedgerPosition]:
        """Seal runs never begun with ``begin_run`` (an import, a backfill) in one
        transaction and one batched append: all of them or none. A record whose run is
        already known is a ``Conflict``; use ``seal_specimen`` for a begun run."""
        from .tables import RunRow, table_of

        records = list(records)
        for record in records:
            check_record(record)
        if len({r.specimen_id for r in records}) != len(records):
            raise ValueError("a specimen id repeats")
        if not records:
            return []
        with write(self._engine) as conn:
            tip = lock_tip(conn)
            for tenant in sorted({r.tenant_id for r in records}):
                self._ensure_tenant(conn, tenant)
            conn.execute(sa.insert(table_of(RunRow)), [_sealed_run(r) for r in records])
            items = [("specimen.sealed", r.specimen_id, sealed_body(r)) for r in records]
            positions, _ = append_rows(conn, tip, items, self._clock())
            insert_specimens(conn, [(r, p.index) for r, p in zip(records, positions, strict=True)])
        self._saved(positions[-1])
        return positions

    @guarded("get_specimen")
    def get_specimen(self, specimen_id: str) -> SpecimenRecord:
        with read(self._engine) as conn:
            return load_specimen(conn, specimen_id)

    @guarded("list_specimens")
    def list_specimens(
        self,
        *,
        tenant_id: str | None = None,
        agent_name: str | None = None,
        limit: int = 50,
        before: int | None = None,
    ) -> list[SpecimenSummary]:
        """One page, newest seal first (see ``specimen_page`` for what comes next)."""
        where = SpecimenFilter(tenant_id=tenant_id, agent_name=agent_name)
        return list(self.specimen_page(where, limit=limit, before=before).items)

    @guarded("list_specimens")
    def specimen_page(
        self, where: SpecimenFilter, *, limit: int = 50, before: int | None = None
    ) -> SpecimenPage:
        """Up to ``limit`` specimens matching ``where`` sealed before ledger index
        ``before``, newest first, in one bounded statement; ``next_before`` continues."""
        with read(self._engine) as conn:
            return specimen_page(conn, where, limit=limit, before=before)

    @guarded("count_specimens")
    def count_specimens(self, where: SpecimenFilter) -> int:
        """How many specimens match ``where`` (an index count; no rows are read)."""
        with read(self._engine) as conn:
            return count_specimens(conn, where)

    @guarded("mark_erased")
    def mark_erased(self, specimen_id: str, *, erased_at: str) -> LedgerPosition:
        """Flag the specimen erased and append ``specimen.erased`` (refused on legal hold)."""
        from .tables import SpecimenRow, table_of

        _text(erased_at, "erased_at")
        with write(self._engine) as conn:
            tip = lock_tip(conn)
            specimens = table_of(SpecimenRow)
            row = conn.execute(
                sa.select(specimens.c.tenant_id, specimens.c.erased, specimens.c.legal_hold).where(
                    specimens.c.id == specimen_id
                )
            ).first()
            if row is None:
                raise NotFound("no such specimen")
            if row[2]:
                raise Conflict("the specimen is under legal hold")
            if row[1]:
                raise Conflict("the specimen is already erased")
            conn.execute(
                sa.update(specimens)
                .where(specimens.c.id == specimen_id)
                .values(erased=True, erased_at=erased_at)
            )
            body = {"specimen_id": specimen_id, "tenant_id": row[0], "erased_at": erased_at}
            positions, _ = append_rows(
                conn, tip, [("specimen.erased", specimen_id, body)], self._clock()
            )
        self._saved(positions[0])
        return positions[0]

    # -- entries ----------------------------------------------------------------------

    def append(self, kind: str, subject: str, body: Mapping[str, Any]) -> LedgerPosition:
        return self.append_many([(kind, subject, body)])[0]

    @guarded("append")
    def append_many(
        self, items: Sequence[tuple[str, str, Mapping[str, Any]]]
    ) -> list[LedgerPosition]:
        """Append ``items`` in order, atomically, with one batched insert."""
        items = caller_items(items)
        if not items:
            return []
        with write(self._engine) as conn:
            tip = lock_tip(conn)
            positions, _ = append_rows(conn, tip, items, self._clock())
        self._saved(positions[-1])
        return positions

    @guarded("append")
    def append_checked(
        self,
        kind: str,
        subject: str,
        body: Mapping[str, Any],
        *,
        among: tuple[str, str | None],
        check: Callable[[list[EntryRecord]], None],
    ) -> LedgerPosition:
        """Append one entry only if ``check`` accepts the entries of ``among`` (kind,
        subject) as they stand while the chain's tip is locked.

        Every writer on every process and host serialises on that lock, so a rule over
        existing entries (a disclosure budget, one conclusion per audit) holds under
        concurrency. ``check`` raises to refuse; then nothing is written.
        """
        caller_items([(kind, subject, body)])
        with write(self._engine) as conn:
            tip = lock_tip(conn)
            check(self._select_entries(conn, *among))
            positions, _ = append_rows(conn, tip, [(kind, subject, body)], self._clock())
        self._saved(positions[-1])
        return positions[0]

    @guarded("head")
    def head(self) -> LedgerPosition | None:
        with read(self._engine) as conn:
            row = conn.execute(select_tip())
            length, head_hash = row.one()
        return None if int(length) == 0 else LedgerPosition(int(length) - 1, str(head_hash))

    def _size(self, conn: sa.Connection, size: int | None) -> int:
        length = int(conn.execute(select_tip()).one()[0])
        if size is None:
            return length
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= length:
            raise ValueError("the tree size is not one the ledger has had")
        return size

    @guarded("tree_root")
    def tree_root(self, size: int | None = None) -> tuple[int, bytes]:
        """The size and RFC 9162 root of the Merkle tree of the first ``size`` entries
        (by default all of them, read with the root in one snapshot)."""
        with read(self._engine, snapshot=True) as conn:
            size = self._size(conn, size)
            return size, tree_root(conn, size)

    @guarded("prove_inclusion")
    def prove_inclusion(self, index: int, size: int) -> list[bytes]:
        """The audit path of entry ``index`` in the tree of ``size`` entries."""
        with read(self._engine, snapshot=True) as conn:
            size = self._size(conn, size)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
                raise ValueError("the entry is not in a tree of that size")
            return inclusion_proof(conn, index, size)

    @guarded("prove_consistency")
    def prove_consistency(self, old: int, new: int) -> list[bytes]:
        """The proof that the tree of ``old`` entries is a prefix of the tree of ``new``."""
        with read(self._engine, snapshot=True) as conn:
            new = self._size(conn, new)
            if isinstance(old, bool) or not isinstance(old, int) or not 0 < old <= new:
                raise ValueError("a consistency proof needs 0 < old size <= new size")
            return consistency_proof(conn, old, new)

    @guarded("sign_checkpoint")
    def sign_checkpoint(
        self, *, origin: str, signer: NoteVerifier, sign: Callable[[bytes], bytes]
    ) -> SignedCheckpoint:
        """Sign the tree as it is now as a C2SP checkpoint (``ledger._signed``), holding
        the tip's lock so that no append comes between the proof and the signature;
        ``Conflict`` if the ledger does not extend the latest checkpoint signed."""
        with write(self._engine) as conn:
            lock_tip(conn)
            return sign_checkpoint(
                conn, origin=origin, signer=signer, sign=sign, signed_at=self._clock()
            )

    @guarded("add_cosignatures")
    def add_cosignatures(self, size: int, lines: str, *, signer: NoteVerifier) -> str:
        """Keep witnesses' cosignature ``lines`` (C2SP tlog-cosignature) with the
        checkpoint signed at ``size``; bundles proven against it then carry them.
        Returns the note with them."""
        with write(self._engine) as conn:
            return add_cosignatures(conn, size, lines, signer)

    @guarded("prove_entries")
    def prove_entries(
        self,
        entries: Sequence[EntryRecord],
        *,
        origin: str,
        signer: NoteVerifier,
        sign: Callable[[bytes], bytes],
    ) -> list[tuple[bytes, TlogProof]]:
        """Proofs that the log holds ``entries`` (each its canonical bytes and a C2SP
        tlog-proof), all against one signed checkpoint that covers them: the latest one
        when it does, else one signed now (``ledger._signed``)."""
        if not entries:
            raise ValueError("no entries to prove")
        with write(self._engine) as conn:
            lock_tip(conn)
            return prove_entries(
                conn, entries, origin=origin, signer=signer, sign=sign, signed_at=self._clock()
            )

    @staticmethod
    def _entry(row: Sequence[Any]) -> EntryRecord:
        body = loads(row[3])
        if not isinstance(body, dict):
            raise ValueError("stored entry body is not a JSON object")
        return EntryRecord(
            index=int(row[0]),
            kind=row[1],
            subject=row[2],
            body=body,
            prev_hash=row[4],
            entry_hash=row[5],
            recorded_at=row[6],
        )

    @guarded("entry")
    def entry(self, index: int) -> EntryRecord:
        from .tables import EntryRow, table_of

        with read(self._engine) as conn:
            row = conn.execute(
                select_entries().where(table_of(EntryRow).c.entry_index == index)
            ).first()
        if row is None:
            raise NotFound("no entry at that index")
        return self._entry(tuple(row))

    @guarded("entries")
    def entries(self, kind: str | None = None, subject: str | None = None) -> list[EntryRecord]:
        with read(self._engine) as conn:
            return self._select_entries(conn, kind, subject)

    def _select_entries(
        self, conn: sa.Connection, kind: str | None, subject: str | None
    ) -> list[EntryRecord]:
        from .tables import EntryRow, table_of

        entries = table_of(EntryRow)
        query = select_entries().order_by(entries.c.entry_index)
        if kind is not None:
            query = query.where(entries.c.kind == kind)
        if subject is not None:
            query = query.where(entries.c.subject == subject)
        rows = conn.execute(query).all()
        return [self._entry(tuple(row)) for row in rows]

    @guarded("verify")
    def verify(
        self,
        saved_head: LedgerPosition | None = None,
        *,
        incremental: bool = False,
        record: bool = False,
        signed: Checkpoint | None = None,
    ) -> VerifyReport:
        """Check the ledger (see ``ledger._verify``).

        ``saved_head`` defaults to the head saved at ``head_path``, if any. By default
        every entry is checked; ``incremental`` resumes after the latest recorded
        checkpoint (itself checked first). ``record`` saves the head of a run that
        passed as the next checkpoint — what the operator's verify action does.
        ``signed``, a checkpoint the log signed (its note verified by the caller),
        replaces the recorded checkpoint: the run proves the ledger extends it and
        checks the entries after it.
        """
        if saved_head is None and self._head_path is not None:
            saved_head = read_saved_head(self._head_path)
        with read(self._engine, snapshot=True) as conn:
            checkpoint = latest_checkpoint(conn) if incremental and signed is None else None
            report = verify_ledger(conn, saved_head, checkpoint=checkpoint, signed=signed)
        if record and report.ok and report.head is not None:
            with write(self._engine) as conn:
                record_checkpoint(conn, report.head, verified_at=self._clock())
        return report
