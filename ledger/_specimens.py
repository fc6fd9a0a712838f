"""Specimen rows: records to rows and back. Runs on a caller's connection/transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from ._canonical import canonical_digest, canonical_json, loads
from ._errors import NotFound
from ._facts import CLASSIFICATION_RANK, effect_facts
from ._records import (
    AdapterInfo,
    Classification,
    EffectInfo,
    FieldRecord,
    Retention,
    SpecimenRecord,
    StepKind,
    StepRecord,
)
from ._summaries import SpecimenFilter, SpecimenPage, count_sql, page_from_rows, page_sql

__all__ = [
    "check_record",
    "insert_specimen",
    "insert_specimens",
    "load_specimen",
    "count_specimens",
    "specimen_page",
    "sealed_body",
]


def check_record(record: SpecimenRecord) -> None:
    """Misuse checks before anything is written (``ValueError``)."""
    if not isinstance(record, SpecimenRecord):
        raise TypeError("seal_specimen takes a SpecimenRecord")
    if record.manifest_digest != canonical_digest(record.manifest):
        raise ValueError("manifest_digest does not match the canonical digest of the manifest")
    seqs = [step.seq for step in record.steps]
    if len(set(seqs)) != len(seqs):
        raise ValueError("step sequence numbers repeat")
    known = set(seqs)
    for f in record.fields:
        f.check()
        if f.seq not in known:
            raise ValueError("a field refers to a step that is not in the specimen")


def sealed_body(record: SpecimenRecord) -> dict[str, Any]:
    """The body of the ``specimen.sealed`` entry."""
    return {
        "specimen_id": record.specimen_id,
        "tenant_id": record.tenant_id,
        "manifest_digest": record.manifest_digest,
        "adapter": {
            "name": record.adapter.name,
            "version": record.adapter.version,
            "strategies": list(record.adapter.strategies),
            "source_ref": record.adapter.source_ref,
        },
    }


def insert_specimen(conn: sa.Connection, record: SpecimenRecord, sealed_index: int) -> None:
    insert_specimens(conn, [(record, sealed_index)])


def insert_specimens(conn: sa.Connection, sealed: Sequence[tuple[SpecimenRecord, int]]) -> None:
    """The rows of ``sealed`` (record, sealed index) pairs: three batched inserts."""
    from .tables import FieldRowModel, SpecimenRow, StepRow, table_of

    specimens, steps, fields = [], [], []
    for record, sealed_index in sealed:
        specimens.append(_specimen_row(record, sealed_index))
        steps += [_step_row(record.specimen_id, i, s) for i, s in enumerate(record.steps)]
        fields += [_field_row(record.specimen_id, i, f) for i, f in enumerate(record.fields)]
    conn.execute(sa.insert(table_of(SpecimenRow)), specimens)
    if steps:
        conn.execute(sa.insert(table_of(StepRow)), steps)
    if fields:
        conn.execute(sa.insert(table_of(FieldRowModel)), fields)


def _specimen_row(record: SpecimenRecord, sealed_index: int) -> dict[str, Any]:
    facts = effect_facts(step.effect for step in record.steps)
    classification = Classification(record.highest_classification).value
    return {
        "id": record.specimen_id,
        "tenant_id": record.tenant_id,
        "agent_name": record.agent_name,
        "agent_version": record.agent_version,
        "manifest_json": canonical_json(record.manifest).decode(),
        "manifest_digest": record.manifest_digest,
        "adapter_name": record.adapter.name,
        "adapter_version": record.adapter.version,
        "adapter_strategies": canonical_json(list(record.adapter.strategies)).decode(),
        "adapter_source_ref": record.adapter.source_ref,
        "highest_classification": classification,
        "retention_class": record.retention_class,
        "legal_hold": bool(record.legal_hold),
        "sealed_at": record.sealed_at,
        "sealed_index": sealed_index,
        "erased": False,
        "erased_at": None,
        "effects_reverifiable": facts.reverifiable,
        "effects_expire_at": facts.expire_at,
        "classification_rank": CLASSIFICATION_RANK[classification],
    }


def _step_row(specimen_id: str, ordinal: int, step: StepRecord) -> dict[str, Any]:
    effect = step.effect
    return {
        "specimen_id": specimen_id,
        "ordinal": ordinal,
        "seq": step.seq,
        "agent": step.agent,
        "call_id": step.call_id,
        "kind": StepKind(step.kind).value,
        "name": step.name,
        "alias": step.alias,
        "resolved": step.resolved,
        "schema_id": step.schema_id,
        "schema_version": step.schema_version,
        "request_digest": step.request_digest,
        "response_digest": step.response_digest,
        "valid_time": step.valid_time,
        "observed_time": step.observed_time,
        "effect_token": effect.idempotency_token if effect else None,
        "effect_token_expires_at": effect.token_expires_at if effect else None,
        "effect_reverifiable": effect.reverifiable if effect else None,
        "effect_live_state_fields": (
            canonical_json(list(effect.live_state_fields)).decode() if effect else None
        ),
    }


def _field_row(specimen_id: str, ordinal: int, item: FieldRecord) -> dict[str, Any]:
    return {
        "specimen_id": specimen_id,
        "ordinal": ordinal,
        "seq": item.seq,
        "side": item.side,
        "path": item.path,
        "classification": Classification(item.classification).value,
        "retention": Retention(item.retention).value,
        "keyed_digest": item.keyed_digest,
        "payload_ref": item.payload_ref,
        "live_state": bool(item.live_state),
    }


def _strings(text: str) -> tuple[str, ...]:
    value = loads(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("stored list is not a list of strings")
    return tuple(value)


def load_specimen(conn: sa.Connection, specimen_id: str) -> SpecimenRecord:
    from .tables import FieldRowModel, SpecimenRow, StepRow, table_of

    specimens, steps, fields = table_of(SpecimenRow), table_of(StepRow), table_of(FieldRowModel)
    row = conn.execute(sa.select(specimens).where(specimens.c.id == specimen_id)).mappings()
    spec = row.one_or_none()
    if spec is None:
        raise NotFound("no such specimen")
    step_rows = conn.execute(
        sa.select(steps).where(steps.c.specimen_id == specimen_id).order_by(steps.c.ordinal)
    ).mappings()
    field_rows = conn.execute(
        sa.select(fields).where(fields.c.specimen_id == specimen_id).order_by(fields.c.ordinal)
    ).mappings()
    manifest = loads(spec["manifest_json"])
    if not isinstance(manifest, dict):
        raise ValueError("stored manifest is not a JSON object")
    return SpecimenRecord(
        specimen_id=spec["id"],
        tenant_id=spec["tenant_id"],
        agent_name=spec["agent_name"],
        agent_version=spec["agent_version"],
        manifest=manifest,
        manifest_digest=spec["manifest_digest"],
        adapter=AdapterInfo(
            name=spec["adapter_name"],
            version=spec["adapter_version"],
            strategies=_strings(spec["adapter_strategies"]),
            source_ref=spec["adapter_source_ref"],
        ),
        highest_classification=Classification(spec["highest_classification"]),
        retention_class=spec["retention_class"],
        sealed_at=spec["sealed_at"],
        steps=tuple(_step_record(s) for s in step_rows),
        fields=tuple(_field_record(f) for f in field_rows),
        legal_hold=bool(spec["legal_hold"]),
        erased=bool(spec["erased"]),
    )


def _step_record(row: sa.RowMapping) -> StepRecord:
    effect = None
    if row["effect_token"] is not None:
        effect = EffectInfo(
            idempotency_token=row["effect_token"],
            token_expires_at=row["effect_token_expires_at"],
            reverifiable=bool(row["effect_reverifiable"]),
            live_state_fields=_strings(row["effect_live_state_fields"] or "[]"),
        )
    return StepRecord(
        seq=int(row["seq"]),
        agent=row["agent"],
        call_id=row["call_id"],
        kind=StepKind(row["kind"]),
        name=row["name"],
        alias=row["alias"],
        resolved=row["resolved"],
        schema_id=row["schema_id"],
        schema_version=row["schema_version"],
        request_digest=row["request_digest"],
        response_digest=row["response_digest"],
        valid_time=row["valid_time"],
        observed_time=row["observed_time"],
        effect=effect,
    )


def _field_record(row: sa.RowMapping) -> FieldRecord:
    return FieldRecord(
        seq=int(row["seq"]),
        side=row["side"],
        path=row["path"],
        classification=Classification(row["classification"]),
        retention=Retention(row["retention"]),
        keyed_digest=row["keyed_digest"],
        payload_ref=row["payload_ref"],
        live_state=bool(row["live_state"]),
    ).check()


def specimen_page(
    conn: sa.Connection, where: SpecimenFilter, *, limit: int, before: int | None
) -> SpecimenPage:
    """Newest seal first (descending ledger position), one bounded statement."""
    sql, params = page_sql(where, limit=limit, before=before)
    return page_from_rows(conn.execute(sa.text(sql), params).mappings().all(), limit)


def count_specimens(conn: sa.Connection, where: SpecimenFilter) -> int:
    sql, params = count_sql(where)
    return int(conn.execute(sa.text(sql), params).scalar_one())
