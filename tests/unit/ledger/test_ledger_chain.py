"""The hash chain: the documented rule, tamper detection, concurrent writers."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
import rfc8785
import sqlalchemy as sa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ledger import (
    GENESIS_HASH,
    CanonicalizationError,
    Classification,
    Ledger,
    LedgerPosition,
    body_json,
    canonical_digest,
    canonical_json,
    compute_entry_hash,
    hash_envelope,
    read_saved_head,
)
from tests.unit.ledger import test_ledger as base
from tests.unit.ledger.merkle_reference import independent_leaves, perfect_nodes
from tests.unit.ledger.test_ledger import CountingClock, make_specimen

# the same real-database fixtures (SQLite file, PostgreSQL server) as test_ledger.py
ledger_url = base.ledger_url
ledger_db = base.ledger_db


def independent_hash(index: int, kind: str, subject: str, body: Any, prev: str, at: str) -> str:
    """The documented rule, computed with the reference RFC 8785 library, not ledger code."""
    data = rfc8785.dumps(
        {
            "index": index,
            "kind": kind,
            "subject": subject,
            "body": body,
            "prev_hash": prev,
            "recorded_at": at,
        }
    )
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fill(led: Ledger, n: int) -> list[LedgerPosition]:
    return led.append_many(
        [("note", f"subject-{i % 3}", {"i": i, "tag": "x" * i}) for i in range(n)]
    )


def run_sql(led: Ledger, sql: str, **params: Any) -> None:
    with led.engine.begin() as conn:
        conn.execute(sa.text(sql), params)


def rechain_from(led: Ledger, start: int) -> None:
    """What a careful attacker does after an edit: recompute every later hash, the tip
    and the whole Merkle tree."""
    with led.engine.begin() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT entry_index, kind, subject, body_json, recorded_at FROM ledger_entries "
                "ORDER BY entry_index"
            )
        ).all()
        prev = GENESIS_HASH
        for index, kind, subject, body_json, at in rows:
            if index >= start:
                new = independent_hash(index, kind, subject, json.loads(body_json), prev, at)
                conn.execute(
                    sa.text(
                        "UPDATE ledger_entries SET prev_hash = :p, entry_hash = :h "
                        "WHERE entry_index = :i"
                    ),
                    {"p": prev, "h": new, "i": index},
                )
            prev = conn.execute(
                sa.text("SELECT entry_hash FROM ledger_entries WHERE entry_index = :i"),
                {"i": index},
            ).scalar_one()
        conn.execute(sa.text("UPDATE ledger_tip SET head_hash = :h WHERE id = 1"), {"h": prev})
        # and the Merkle tree of the rewritten entries, every subtree recomputed
        nodes = perfect_nodes(independent_leaves(conn))
        conn.execute(sa.text("DELETE FROM ledger_tree"))
        conn.execute(
            sa.text("INSERT INTO ledger_tree (level, node_index, hash) VALUES (:l, :i, :h)"),
            [{"l": lv, "i": ix, "h": h} for (lv, ix), h in nodes.items()],
        )


# -- the rule -----------------------------------------------------------------------------


def test_entries_follow_the_documented_rule(ledger_db: Ledger) -> None:
    positions = fill(ledger_db, 4) + [ledger_db.append("audit.requested", "spec-1", {"n": 1.5})]
    assert [p.index for p in positions] == [0, 1, 2, 3, 4]
    prev = GENESIS_HASH
    for position in positions:
        entry = ledger_db.entry(position.index)
        assert entry.prev_hash == prev
        assert (
            entry.entry_hash
            == position.entry_hash
            == independent_hash(
                entry.index, entry.kind, entry.subject, entry.body, prev, entry.recorded_at
            )
        )
        prev = entry.entry_hash
    assert ledger_db.head() == positions[-1]
    report = ledger_db.verify()
    assert report.ok and report.length == 5 and report.head == positions[-1]


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(0, 2**40),
    kind=st.text(min_size=1),
    subject=st.text(),
    body=st.dictionaries(st.text(), _json, max_size=5),
    at=st.text(),
)
def test_fast_hash_equals_canonical_digest_of_envelope(
    index: int, kind: str, subject: str, body: dict[str, Any], at: str
) -> None:
    try:
        body_json = rfc8785.dumps(body)
        expected = canonical_digest(
            hash_envelope(
                index=index,
                kind=kind,
                subject=subject,
                body=body,
                prev_hash=GENESIS_HASH,
                recorded_at=at,
            )
        )
    except (CanonicalizationError, rfc8785.CanonicalizationError):
        return  # lone surrogates: no canonical form, nothing to compare
    fast = compute_entry_hash(
        index=index,
        kind=kind,
        subject=subject,
        body_json=body_json,
        prev_hash=GENESIS_HASH,
        recorded_at=at,
    )
    assert fast == expected


_any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats()
    | st.text()
    | st.sampled_from(list(Classification)),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@example(body={"a": "\ud800"})
@example(body={"a": 2**53})
@example(body={"\ue000": 1, "z": [1e21, 1e-7, -0.0]})
@example(body={"a": [[[[[]]]]], "b": (1, "x")})
@given(body=st.dictionaries(st.text(), _any_json, max_size=5))
def test_batch_body_bytes_equal_canonical_json(body: dict[str, Any]) -> None:
    try:
        expected = canonical_json(body)
    except CanonicalizationError:
        with pytest.raises(CanonicalizationError):
            body_json(body)
        return
    assert body_json(body) == expected


def test_append_many_is_atomic(ledger_db: Ledger) -> None:
    fill(ledger_db, 2)
    head = ledger_db.head()
    with pytest.raises(CanonicalizationError):
        ledger_db.append_many([("note", "a", {"ok": 1}), ("note", "b", {"bad": float("nan")})])
    assert ledger_db.head() == head
    assert len(ledger_db.entries()) == 2


# -- tampering ------------------------------------------------------------------------------


def test_edited_body_is_caught_at_its_index(ledger_db: Ledger) -> None:
    fill(ledger_db, 6)
    run_sql(
        ledger_db,
        "UPDATE ledger_entries SET body_json = :b WHERE entry_index = 2",
        b='{"i":2,"tag":"yy"}',
    )
    report = ledger_db.verify()
    assert not report.ok
    assert report.first_bad_index == 2
    assert report.reason is not None and "hash" in report.reason


def test_deleted_middle_row_is_caught(ledger_db: Ledger) -> None:
    fill(ledger_db, 6)
    run_sql(ledger_db, "DELETE FROM ledger_entries WHERE entry_index = 3")
    report = ledger_db.verify()
    assert (report.ok, report.first_bad_index) == (False, 3)
    assert report.reason is not None and "missing" in report.reason


def test_truncated_tail_is_caught_by_tip_and_by_saved_head(
    ledger_db: Ledger, ledger_url: str
) -> None:
    positions = fill(ledger_db, 8)
    assert read_saved_head(ledger_db.head_path) == positions[-1]  # type: ignore[arg-type]
    run_sql(ledger_db, "DELETE FROM ledger_entries WHERE entry_index >= 4")
    report = ledger_db.verify()
    assert (report.ok, report.first_bad_index) == (False, 4)
    # now also move the tip back: the chain alone looks fine, the saved head does not
    run_sql(
        ledger_db,
        "UPDATE ledger_tip SET length = 4, head_hash = :h WHERE id = 1",
        h=positions[3].entry_hash,
    )
    headless = Ledger.open(ledger_url)
    try:
        # the Merkle tree still covers the removed entries (its stored subtrees, of four
        # entries and more: a tail shorter than that leaves none behind)
        report = headless.verify()
        assert (report.ok, report.first_bad_index) == (False, 4)
        assert "reaches past the chain" in (report.reason or "")
        for level, first in ((2, 1), (3, 0)):  # every stored subtree past entry 3
            run_sql(
                ledger_db,
                "DELETE FROM ledger_tree WHERE level = :l AND node_index >= :i",
                l=level,
                i=first,
            )
        assert headless.verify().ok  # honest limit of a log without a saved head
    finally:
        headless.close()
    report = ledger_db.verify()  # uses the head saved at head_path
    assert (report.ok, report.first_bad_index) == (False, 4)
    assert report.reason is not None and "saved head" in report.reason
    assert "saved_head" in report.checked


def test_edit_and_rechain_is_caught_by_saved_head(ledger_db: Ledger, ledger_url: str) -> None:
    positions = fill(ledger_db, 6)
    run_sql(
        ledger_db,
        "UPDATE ledger_entries SET body_json = :b WHERE entry_index = 2",
        b='{"i":2,"tag":"forged"}',
    )
    rechain_from(ledger_db, 2)
    headless = Ledger.open(ledger_url)
    try:
        assert headless.verify().ok  # a consistent rechain fools the chain alone
        report = headless.verify(positions[-1])
    finally:
        headless.close()
    assert (report.ok, report.first_bad_index) == (False, 5)
    assert report.reason is not None and "saved head" in report.reason
    assert not ledger_db.verify().ok


def test_rechained_seal_entry_is_caught_by_specimen_check(
    ledger_db: Ledger, ledger_url: str
) -> None:
    fill(ledger_db, 2)
    ledger_db.seal_specimen(make_specimen("spec-1"))
    fill(ledger_db, 2)
    with ledger_db.engine.connect() as conn:
        body = json.loads(
            conn.execute(
                sa.text("SELECT body_json FROM ledger_entries WHERE entry_index = 2")
            ).scalar_one()
        )
    body["manifest_digest"] = "sha256:" + "e" * 64
    run_sql(
        ledger_db,
        "UPDATE ledger_entries SET body_json = :b WHERE entry_index = 2",
        b=rfc8785.dumps(body).decode(),
    )
    rechain_from(ledger_db, 2)
    headless = Ledger.open(ledger_url)
    try:
        report = headless.verify()
    finally:
        headless.close()
    assert (report.ok, report.first_bad_index) == (False, 2)
    assert report.reason is not None and "sealed entry" in report.reason


def test_edited_specimen_manifest_is_caught(ledger_db: Ledger) -> None:
    fill(ledger_db, 1)
    ledger_db.seal_specimen(make_specimen("spec-1"))
    run_sql(
        ledger_db,
        "UPDATE specimens SET manifest_json = :m WHERE id = 'spec-1'",
        m='{"run":"spec-1","steps":[]}',
    )
    report = ledger_db.verify()
    assert (report.ok, report.first_bad_index) == (False, 1)
    assert report.reason is not None and "manifest" in report.reason


# -- saved head -------------------------------------------------------------------------------


def test_saved_head_file_is_private_and_current(ledger_db: Ledger) -> None:
    path = ledger_db.head_path
    assert path is not None
    assert read_saved_head(path) is None
    fill(ledger_db, 3)
    position = ledger_db.seal_specimen(make_specimen("spec-1"))
    assert read_saved_head(path) == position == ledger_db.head()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir() if "head" in p.name) == [
        "head.json",
        "head.json.lock",
    ]
    path.write_text('{"index": "3"}')
    with pytest.raises(ValueError):
        read_saved_head(path)


def test_a_frozen_holder_of_the_head_lock_stops_no_other_writer(ledger_db: Ledger) -> None:
    """A process stopped while it holds the saved head's lock (SIGSTOP, a paused VM, an
    fsync that never returns) keeps it for as long as it stays frozen: a writer waits a
    bounded time, appends, and leaves the head to a later save, never moving it back."""
    import fcntl
    import time

    from ledger.transactions import LOCK_WAIT_SECONDS

    path = ledger_db.head_path
    assert path is not None
    before = fill(ledger_db, 2)[-1]
    holder = os.open(f"{path}.lock", os.O_RDWR)  # another open file: flock conflicts
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        during = ledger_db.append("note", "while-frozen", {"i": 1})
        waited = time.monotonic() - started
        assert during.index > before.index and ledger_db.head() == during
        assert read_saved_head(path) == before  # left as it was, not moved back
        assert waited < LOCK_WAIT_SECONDS + 5
    finally:
        os.close(holder)
    after = ledger_db.append("note", "thawed", {"i": 2})
    assert read_saved_head(path) == after == ledger_db.head()


# -- concurrency -------------------------------------------------------------------------------


def test_threads_extend_one_chain(ledger_db: Ledger) -> None:
    results: dict[int, list[LedgerPosition]] = {}
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        mine: list[LedgerPosition] = []
        try:
            for i in range(15):
                if i % 3 == 0:
                    mine += ledger_db.append_many(
                        [("note", f"w{worker}", {"i": i, "j": j}) for j in range(4)]
                    )
                else:
                    mine.append(ledger_db.append("note", f"w{worker}", {"i": i}))
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)
        results[worker] = mine

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    indexes = sorted(p.index for ps in results.values() for p in ps)
    assert indexes == list(range(4 * (10 + 5 * 4)))
    for mine in results.values():
        assert [p.index for p in mine] == sorted(p.index for p in mine)
    report = ledger_db.verify()
    assert report.ok and report.length == len(indexes)
    assert read_saved_head(ledger_db.head_path) == ledger_db.head()  # type: ignore[arg-type]


def _child_append(url: str, head_path: str, worker: int, rounds: int) -> None:
    led = Ledger.open(url, head_path=Path(head_path), clock=CountingClock())
    try:
        for i in range(rounds):
            if i % 4 == 0:
                led.append_many([("note", f"p{worker}", {"i": i, "j": j}) for j in range(3)])
            else:
                led.append("note", f"p{worker}", {"i": i})
    finally:
        led.close()


@pytest.mark.slow
def test_processes_extend_one_chain(ledger_db: Ledger, ledger_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    rounds, workers = 24, 3
    procs = [
        ctx.Process(target=_child_append, args=(ledger_url, str(ledger_db.head_path), w, rounds))
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * workers
    per_worker = rounds // 4 * 3 + rounds - rounds // 4
    report = ledger_db.verify()
    assert report.ok and report.length == workers * per_worker
    for w in range(workers):
        assert len(ledger_db.entries(subject=f"p{w}")) == per_worker
    assert read_saved_head(ledger_db.head_path) == ledger_db.head()  # type: ignore[arg-type]
