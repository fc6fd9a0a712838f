"""Durable audits on real databases: a SQLite file and a real PostgreSQL server.

Claims, leases, expiry and re-claim; fencing of stale commits (job rows and ledger
appends); idempotent submit; re-delivered jobs keep their identity; a dead job fails
its audit closed; the full lifecycle gives the in-process audit's classification and
exactly one certificate, even when a finalizer is re-delivered after appending it.
"""

from __future__ import annotations

import dataclasses
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import enclave.jobs as jobs
from enclave import BadInput, Home, Refused, Runtime
from enclave.jobs import (
    AuditStatus,
    Conflict,
    FencedLedger,
    StageOptions,
    audit_status,
    cancel_audit,
    certificate,
    claim,
    complete,
    enqueue,
    execute,
    fail,
    heartbeat,
    job_id_for,
    list_audits,
    parse_time,
    reap,
    run_worker,
    submit_audit,
    write_tx,
)
from enclave.jobs import issue_time as _issue_time
from enclave.jobs import lineage as _lineage
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.certificates import RuntimeLedgerLookup
from enclave.replay.stages import finalize_audit
from ledger import schema_heads
from ledger.certificates import envelope_digest, load_public_key_pem, verify_certificate

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
ISOLATION = "auto"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# home, runtime, specimens: tests/fixtures/homes.py (SQLite and PostgreSQL)


def revision_request(specimen_id: str, *, samples: int = 4, seed: int = 1) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="purchase-order-review",
        requester="analyst-1",
        samples=samples,
        seed=seed,
        # as the shipped revision policy declares: the approval rule's substitute is the rule
        authoritative_substitutes=("approval-policy",),
    )


def submit(runtime: Runtime, specimens: dict[str, str], **kwargs: Any) -> AuditStatus:
    request = kwargs.pop("request", None) or revision_request(specimens["procurement"])
    return submit_audit(runtime, request, tenant_id="acme", now=kwargs.pop("now", T0), **kwargs)


def job_rows(runtime: Runtime, audit_id: str) -> list[dict[str, Any]]:
    with runtime.ledger.engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT * FROM jobs WHERE audit_id = :a ORDER BY created_at, id"),
            {"a": audit_id},
        ).all()
    return [dict(r._mapping) for r in rows]


def conclusions(runtime: Runtime, audit_id: str) -> list[str]:
    return [
        e.kind for e in runtime.ledger.entries(subject=audit_id) if e.kind in jobs.CONCLUSION_KINDS
    ]


def factory(home: Home) -> Any:
    return lambda: Runtime.open(home, env={})


# -- schema ---------------------------------------------------------------------------


def test_migrated_schema_matches_tables(runtime: Runtime) -> None:
    metadata = sa.MetaData()
    for name in jobs.JOB_TABLES:
        SQLModel.metadata.tables[name].to_metadata(metadata)

    def include_name(name: str | None, type_: str, _parent: Any) -> bool:
        return type_ != "table" or name in jobs.JOB_TABLES

    with runtime.ledger.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_name": include_name, "compare_type": True}
        )
        assert compare_metadata(context, metadata) == []
        versions = {r[0] for r in conn.execute(sa.text("SELECT version_num FROM alembic_version"))}
    assert versions == set(schema_heads())  # one head: 0004 merged jobs and governance


# -- queue ----------------------------------------------------------------------------


def test_claim_lease_expiry_and_reclaim(runtime: Runtime, specimens: dict[str, str]) -> None:
    status = submit(runtime, specimens)
    engine = runtime.ledger.engine
    first = claim(engine, worker_id="w-a", now=at(0), lease_seconds=10)
    assert first is not None and first.kind == "audit" and first.audit_id == status.audit_id
    assert (first.attempts, first.fencing_token, first.lease_owner) == (1, 1, "w-a")
    assert first.lease_expires_at == at(10)
    assert claim(engine, worker_id="w-b", now=at(9.9), lease_seconds=10) is None  # still leased
    # a heartbeat keeps it
    assert heartbeat(engine, first.job_id, 1, now=at(8), lease_seconds=10) == at(18)
    assert claim(engine, worker_id="w-b", now=at(17), lease_seconds=10) is None
    # expired: another worker takes it over with a new token; same durable identity
    second = claim(engine, worker_id="w-b", now=at(18), lease_seconds=10)
    assert second is not None
    assert (second.job_id, second.idempotency_key) == (first.job_id, first.idempotency_key)
    assert (second.attempts, second.fencing_token, second.lease_owner) == (2, 2, "w-b")
    with pytest.raises(Conflict):
        heartbeat(engine, first.job_id, first.fencing_token, now=at(19), lease_seconds=10)
    assert heartbeat(engine, second.job_id, 2, now=at(19), lease_seconds=10) == at(29)
    # kinds filter
    assert claim(engine, worker_id="w-c", now=at(100), lease_seconds=5, kinds=["replay"]) is None


def test_concurrent_claims_never_share_a_job(runtime: Runtime, specimens: dict[str, str]) -> None:
    status = submit(runtime, specimens)
    engine = runtime.ledger.engine
    with write_tx(engine) as conn:
        for n in range(24):
            enqueue(
                conn,
                audit_id=status.audit_id,
                kind="replay",
                payload={"batch_no": n},
                idempotency_key=f"{status.audit_id}:replay:{n}",
                now=T0,
                max_attempts=3,
            )
    claimed: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def grab(worker: str) -> None:
        try:
            while (job := claim(engine, worker_id=worker, now=at(1), lease_seconds=60)) is not None:
                with lock:
                    claimed.append(job.job_id)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=grab, args=(f"w-{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(claimed) == 25 and len(set(claimed)) == 25  # 24 replay jobs + the audit job
    assert {r["fencing_token"] for r in job_rows(runtime, status.audit_id)} == {1}


def test_fencing_rejects_a_stale_commit(runtime: Runtime, specimens: dict[str, str]) -> None:
    status = submit(runtime, specimens)
    engine = runtime.ledger.engine
    stale = claim(engine, worker_id="w-paused", now=at(0), lease_seconds=5)
    assert stale is not None
    successor = claim(engine, worker_id="w-next", now=at(6), lease_seconds=5)
    assert successor is not None and successor.fencing_token == stale.fencing_token + 1
    complete(engine, successor.job_id, successor.fencing_token, {"by": "successor"}, now=at(7))
    # the paused worker wakes up: every write it tries is rejected
    with pytest.raises(Conflict):
        complete(engine, stale.job_id, stale.fencing_token, {"by": "stale"}, now=at(8))
    with pytest.raises(Conflict):
        fail(engine, stale.job_id, stale.fencing_token, now=at(8), error_code="x", retry=True)
    before = runtime.ledger.head()
    fenced = FencedLedger(runtime.ledger, job_id=stale.job_id, fencing_token=stale.fencing_token)
    with pytest.raises(Conflict):
        fenced.append("grant.used", stale.job_id, {"job_id": stale.job_id})
    assert runtime.ledger.head() == before
    (row,) = [r for r in job_rows(runtime, status.audit_id) if r["id"] == stale.job_id]
    assert row["status"] == "done" and row["result_json"] == '{"by":"successor"}'
    assert row["lease_owner"] == "w-next" and row["fencing_token"] == 2


def test_idempotent_submit(runtime: Runtime, specimens: dict[str, str]) -> None:
    first = submit(runtime, specimens, idempotency_key="req-42")
    again = submit(runtime, specimens, idempotency_key="req-42", now=at(30))
    assert again == first
    other = revision_request(specimens["procurement"], samples=6)
    with pytest.raises(Conflict):
        submit(runtime, specimens, idempotency_key="req-42", request=other)
    assert [s.audit_id for s in list_audits(runtime, tenant_id="acme")] == [first.audit_id]
    assert len(job_rows(runtime, first.audit_id)) == 1
    assert len(runtime.ledger.entries(kind="audit.requested", subject=first.audit_id)) == 1
    # a different key is a different audit; tenant and requester filters
    second = submit(runtime, specimens, idempotency_key="req-43", now=at(1))
    assert [s.audit_id for s in list_audits(runtime, requester="analyst-1")] == [
        second.audit_id,
        first.audit_id,
    ]
    assert list_audits(runtime, tenant_id="other") == []
    newest = list_audits(runtime, limit=1)[0]
    after = (newest.created_at, newest.audit_id)
    assert list_audits(runtime, limit=1, after=after)[0].audit_id == first.audit_id


def test_submit_refuses_another_tenants_specimen(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    request = revision_request(specimens["procurement"])
    with pytest.raises(Refused):
        submit_audit(runtime, request, tenant_id="globex", now=T0)
    with pytest.raises(BadInput):
        submit_audit(runtime, revision_request("sp-missing"), tenant_id="acme", now=T0)
    assert list_audits(runtime) == []


def test_redelivered_job_reuses_its_identity(runtime: Runtime, specimens: dict[str, str]) -> None:
    status = submit(runtime, specimens)
    engine = runtime.ledger.engine
    key = f"{status.audit_id}:replay:0"
    with write_tx(engine) as conn:
        ids = {
            enqueue(
                conn,
                audit_id=status.audit_id,
                kind="replay",
                payload={"seeds": [1]},
                idempotency_key=key,
                now=T0,
                max_attempts=3,
            )
            for _ in range(3)
        }
    assert ids == {job_id_for(key)}
    assert [r["idempotency_key"] for r in job_rows(runtime, status.audit_id)].count(key) == 1


def test_dead_job_fails_the_audit_closed(runtime: Runtime, specimens: dict[str, str]) -> None:
    status = submit(runtime, specimens, max_attempts=2)
    engine = runtime.ledger.engine
    # attempt 1 fails with a retryable error and is given back after a backoff
    job = claim(engine, worker_id="w", now=at(0), lease_seconds=5)
    assert job is not None
    assert (
        fail(
            engine,
            job.job_id,
            job.fencing_token,
            now=at(1),
            error_code="ledger_unavailable",
            retry=True,
        ).status
        == "queued"
    )
    assert claim(engine, worker_id="w", now=at(1.1), lease_seconds=5) is None  # backoff
    # attempt 2 is the last; its worker dies, the lease lapses, the reaper ends it
    job = claim(engine, worker_id="w", now=at(2), lease_seconds=5)
    assert job is not None and job.attempts == 2
    assert reap(engine, now=at(6)) == []
    assert reap(engine, now=at(7)) == [status.audit_id]
    assert reap(engine, now=at(8)) == []
    assert claim(engine, worker_id="w", now=at(9), lease_seconds=5) is None
    final = audit_status(runtime, status.audit_id)
    assert (final.status, final.failure_code, final.has_certificate) == (
        "FAILED",
        "attempts_exhausted",
        False,
    )
    assert final.classification is None
    assert certificate(runtime, status.audit_id) is None
    assert job_rows(runtime, status.audit_id)[0]["status"] == "dead"
    with pytest.raises(Conflict):  # the dead attempt's worker cannot commit after all
        complete(engine, job.job_id, job.fencing_token, {}, now=at(10))
    assert conclusions(runtime, status.audit_id) == ["audit.failed"]


def test_cancel(runtime: Runtime, specimens: dict[str, str]) -> None:
    status = submit(runtime, specimens)
    engine = runtime.ledger.engine
    running = claim(engine, worker_id="w", now=at(0), lease_seconds=30)
    assert running is not None
    cancelled = cancel_audit(runtime, status.audit_id, now=at(1))
    assert cancelled.status == "CANCELLED" and not cancelled.has_certificate
    with pytest.raises(Conflict):
        heartbeat(engine, running.job_id, running.fencing_token, now=at(2), lease_seconds=30)
    with pytest.raises(Conflict):
        complete(engine, running.job_id, running.fencing_token, {}, now=at(2))
    assert claim(engine, worker_id="w", now=at(100), lease_seconds=30) is None
    assert cancel_audit(runtime, status.audit_id, now=at(3)) == cancelled  # idempotent
    assert conclusions(runtime, status.audit_id) == ["audit.cancelled"]
    # a worker run afterwards finds nothing to do
    stats = run_worker(factory(runtime.home), worker_id="w2", stop=threading.Event(), once=True)
    assert stats.to_dict() == {"done": 0, "retried": 0, "failed": 0, "lost": 0}


# -- full lifecycle (real sandboxed replays) ------------------------------------------------


def verify(runtime: Runtime, envelope: dict[str, Any]) -> bool:
    key = load_public_key_pem(Path(f"{runtime.home.signing_key_path}.pub").read_bytes())
    report = verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    return bool(report.ok)


def test_full_lifecycle_matches_the_in_process_audit(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    request = revision_request(specimens["procurement"])
    status = submit(runtime, specimens, request=request, batch_size=2)
    assert (status.status, status.progress_done, status.progress_total) == ("QUEUED", 0, 4)
    stats = run_worker(
        factory(runtime.home),
        worker_id="w1",
        stop=threading.Event(),
        once=True,
        lease_seconds=60,
        isolation=ISOLATION,
    )
    assert stats.to_dict() == {"done": 4, "retried": 0, "failed": 0, "lost": 0}  # 1 + 2 + 1
    final = audit_status(runtime, status.audit_id)
    assert (final.status, final.progress_done, final.progress_total) == ("COMPLETED", 4, 4)
    assert final.has_certificate and final.failure_code is None
    envelope = certificate(runtime, status.audit_id)
    assert envelope is not None and verify(runtime, envelope)
    (issued,) = runtime.ledger.entries(kind="certificate.issued", subject=status.audit_id)
    assert issued.body["envelope_digest"] == envelope_digest(envelope)
    assert conclusions(runtime, status.audit_id) == ["certificate.issued"]
    kinds = [r["kind"] for r in job_rows(runtime, status.audit_id)]
    assert sorted(kinds) == ["audit", "finalize", "replay", "replay"]
    assert {r["status"] for r in job_rows(runtime, status.audit_id)} == {"done"}
    in_process = run_audit(runtime, request, now=T0, isolation=ISOLATION)
    assert final.classification == in_process.classification == "influential"
    assert final.auditability == in_process.auditability.class_


def test_redelivered_finalizer_records_one_certificate(
    runtime: Runtime, specimens: dict[str, str]
) -> None:
    """The finalizer appends its certificate and dies before committing; its successor
    signs the same statement, reuses the entry, and the audit completes once."""
    request = revision_request(specimens["procurement"])
    status = submit(runtime, specimens, request=request, batch_size=4)
    engine = runtime.ledger.engine
    run_worker(
        factory(runtime.home),
        worker_id="w1",
        stop=threading.Event(),
        once=True,
        kinds=["audit", "replay"],
        isolation=ISOLATION,
    )
    first = claim(engine, worker_id="w-dies", now=datetime.now(UTC), lease_seconds=2)
    assert first is not None and first.kind == "finalize"
    # what the first finalizer did before it died: fix the issue time, append the certificate
    fenced_rt = dataclasses.replace(
        runtime,
        ledger=FencedLedger(runtime.ledger, job_id=first.job_id, fencing_token=first.fencing_token),
    )
    found = _lineage(engine, status.audit_id, request)
    assert found is not None
    issued_at = _issue_time(engine, first, datetime.now(UTC))
    outcome = finalize_audit(
        fenced_rt,
        request,
        audit_id=status.audit_id,
        preparation=found[0],
        batches=found[1],
        now=issued_at,
    )
    assert conclusions(runtime, status.audit_id) == ["certificate.issued"]
    assert not audit_status(runtime, status.audit_id).has_certificate  # nothing committed
    # the successor, after the lease lapsed
    second = claim(
        engine, worker_id="w-next", now=datetime.now(UTC) + timedelta(seconds=3), lease_seconds=30
    )
    assert second is not None and second.job_id == first.job_id
    assert parse_time(second.payload["issued_at"]) == issued_at
    assert (
        execute(
            runtime,
            second,
            clock=lambda: datetime.now(UTC),
            options=StageOptions(lease_seconds=30, isolation=ISOLATION),
        )
        == "done"
    )
    final = audit_status(runtime, status.audit_id)
    assert final.status == "COMPLETED"
    assert conclusions(runtime, status.audit_id) == ["certificate.issued"]
    envelope = certificate(runtime, status.audit_id)
    assert envelope == outcome.envelope and envelope is not None and verify(runtime, envelope)
    # and the first finalizer's late commit is rejected
    with pytest.raises(Conflict):
        complete(
            engine, first.job_id, first.fencing_token, outcome.to_dict(), now=datetime.now(UTC)
        )


@pytest.mark.parametrize("poll_seconds", [0.0, -1.0, float("nan"), float("inf"), 2.0**64])
def test_a_poll_interval_no_thread_can_wait_is_refused(
    runtime: Runtime, poll_seconds: float
) -> None:
    """Refused before any thread starts: 2**64 s once killed every thread on its first
    empty poll, and the worker then returned as if it had finished."""
    with pytest.raises(ValueError, match="poll_seconds"):
        run_worker(
            factory(runtime.home),
            worker_id="w-poll",
            stop=threading.Event(),
            once=True,
            poll_seconds=poll_seconds,
        )
