"""The database payload store against a hostile database operator, on a real PostgreSQL:
rows moved between specimens or tenants, wrapped keys swapped, every byte edited, a
connection killed or a concurrent writer clashing mid-capture, erasure that fails half
way, and ``payloads migrate`` from an inconsistent source. Whatever is done to the rows,
a read fails as tampering and never returns plaintext; no plaintext reaches any table,
the WAL, the server log or an exception; an erased specimen leaves no key behind."""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import subprocess
import traceback
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlalchemy as sa

from enclave import (
    DecryptionFailed,
    EnclaveError,
    GrantRefused,
    Home,
    InfrastructureError,
    Runtime,
    erase_specimen,
)
from enclave.capture import AgentSpec, BoundarySpec, Context, capture, policy
from enclave.cli import capture_incidents
from enclave.incidents import ALL
from enclave.keys import WrappedKey
from enclave.store import DatabasePayloadStore
from ledger import Ledger, RunStatus, StepKind
from tests.fixtures.postgres import _bindir
from tests.support import cli_runner
from tests.support.canary import INCIDENT_CANARIES, find_canaries, needles
from tests.unit.ledger.test_ledger import error_chain

pytestmark = pytest.mark.postgres

NOW = datetime(2026, 11, 2, 9, 30, 0, tzinfo=UTC)
# unique to this run: the WAL and the server log are shared by every database of the
# session's server, so only a marker nobody else wrote can be looked for there
RUN_CANARY = f"CANARY-DBSTORE-{secrets.token_hex(6)}"
ALL_CANARIES = (*INCIDENT_CANARIES, RUN_CANARY)
KEY = bytes(range(32))
WRAPPED = WrappedKey(provider="local", kek_id="acme", kek_version=1, blob="AAAA")
STEPS = {
    0: [("response", "/a", b'"alpha"'), ("response", "/b", b"[1,2,3]")],
    1: [("request", "/q", b'{"k":"v"}'), ("response", "/r", b"0.5")],
    2: [("identity", "/who", b'"bob"')],
}
WANT = {(seq, side, path): plain for seq, fields in STEPS.items() for side, path, plain in fields}


# -- a small agent whose every step carries the run's canary ------------------------------

PROBE = BoundarySpec(
    kind=StepKind.TOOL,
    name="probe",
    request={"q": policy("confidential")},
    response={"a": policy("confidential")},
)
# called with the step number before each crossing (a test's way into the capture)
HOOKS: list[Callable[[int], None]] = []


def _probe(request: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"a": f"{request['q']}-answered"}


def _probing(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    for step in range(4):
        for hook in HOOKS:
            hook(step)
        ctx.call(PROBE, {"q": f"{inputs['text']}-{step}"}, live=_probe)
    return {"score": 0.5, "decision": "OK"}


def _crashing(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(PROBE, {"q": inputs["text"]}, live=_probe)
    raise RuntimeError(f"boom {inputs['text']}")


def agent(function: Any) -> AgentSpec:
    return AgentSpec(
        name="db-probe",
        version="0.1.0",
        function=function,
        inputs={"text": policy("restricted")},
        outcome={"score": policy("internal"), "decision": policy("internal")},
        boundaries=(PROBE,),
    )


INPUTS = {"text": f"secret {RUN_CANARY}"}


# -- homes, servers, dumps ----------------------------------------------------------------


def make_home(root: Path, url: str, *, payloads: str = "database") -> Home:
    home = Home.init(root)
    config = f'[keys]\nprovider = "local"\n\n[ledger]\nurl = "{url}"\n'
    if payloads != "files":
        config += f'\n[payloads]\nstore = "{payloads}"\n'
    (home.root / "config.toml").write_text(config)
    return home


@pytest.fixture
def pg_home(tmp_path: Path, postgres_url: str) -> Home:
    return make_home(tmp_path / "home", postgres_url)


@pytest.fixture
def runtime(pg_home: Home) -> Iterator[Runtime]:
    rt = Runtime.open(pg_home, env={})
    rt.clock = lambda: NOW
    try:
        yield rt
    finally:
        rt.close()


def admin(url: str) -> psycopg.Connection[Any]:
    """A plain connection to the test's database: the operator's own session."""
    parsed = sa.engine.make_url(url)
    return psycopg.connect(
        host=parsed.host,
        port=parsed.port,
        user=parsed.username,
        dbname=parsed.database,
        autocommit=True,
    )


def sql(url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with admin(url) as conn, conn.cursor() as cur:
        cur.execute(statement.encode(), params or None)
        return list(cur.fetchall()) if cur.description else []


def kill_other_sessions(url: str) -> int:
    """Terminate every other backend of the test's database (the writer's included)."""
    rows = sql(
        url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    return sum(1 for (done,) in rows if done)


def pg_dump(url: str) -> bytes:
    """Every byte ``pg_dump`` writes for the database: schema and all tables' rows."""
    bindir = _bindir()
    assert bindir is not None
    parsed = sa.engine.make_url(url)
    done = subprocess.run(
        [
            str(bindir / "pg_dump"),
            "-h",
            str(parsed.host),
            "-p",
            str(parsed.port),
            "-U",
            str(parsed.username),
            "--no-owner",
            str(parsed.database),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert b"COPY public.payload_chunks" in done.stdout
    return done.stdout


def every_table(url: str) -> bytes:
    """Each table of the database read back as text, every column (bytea as hex)."""
    out = []
    with admin(url) as conn, conn.cursor() as cur:
        cur.execute(
            b"SELECT schemaname, tablename FROM pg_tables "
            b"WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        )
        tables = cur.fetchall()
        assert len(tables) > 5
        for schema, table in tables:
            cur.execute(f'SELECT t::text FROM "{schema}"."{table}" AS t'.encode())  # noqa: S608
            out += [row[0].encode() for row in cur.fetchall()]
    return b"\n".join(out)


def server_files(url: str) -> tuple[list[Path], Path]:
    """(the server's WAL segments, its log file)."""
    (data,) = sql(url, "SHOW data_directory")[0]
    folder = Path(data)
    segments = [p for p in sorted((folder / "pg_wal").iterdir()) if p.is_file()]
    assert segments
    return segments, folder.parent / "server.log"


def raw_hits(data: bytes, canary: str) -> list[str]:
    """The encodings of ``canary`` found in ``data`` (no decompression: large files)."""
    return [name for name, pattern in needles(canary) if pattern in data]


def payload_rows(url: str, specimen: str) -> tuple[int, int]:
    keys = sql(url, "SELECT count(*) FROM payload_keys WHERE specimen_id = %s", specimen)
    chunks = sql(url, "SELECT count(*) FROM payload_chunks WHERE specimen_id = %s", specimen)
    return int(keys[0][0]), int(chunks[0][0])


def data_key(runtime: Runtime, tenant: str, specimen: str) -> bytes:
    """Inside the enclave: the specimen's data key through a single-use grant."""
    wrapped = runtime.payloads.wrapped_key(tenant, specimen)
    grant = runtime.keys.issue_grant(
        tenant, specimen, wrapped, job_id="job-test", ttl_seconds=60, now=NOW
    )
    return grant.redeem(now=NOW)


def decrypt(runtime: Runtime, tenant: str, specimen: str) -> dict[tuple[int, str, str], bytes]:
    key = data_key(runtime, tenant, specimen)
    return runtime.payloads.read_fields(tenant, specimen, data_key=key)


def chain_text(exc: BaseException) -> str:
    parts = []
    for item in error_chain(exc):
        parts += [str(item), repr(item), repr(getattr(item, "args", ()))]
    parts.append("".join(traceback.format_exception(exc)))
    return "\n".join(parts)


def capture_probe(runtime: Runtime, specimen: str, *, durable: bool = True) -> str:
    return capture(
        runtime,
        agent(_probing),
        INPUTS,
        tenant_id="acme",
        seed=1,
        durable=durable,
        specimen_id=specimen,
    ).specimen_id


@pytest.fixture
def hooks() -> Iterator[list[Callable[[int], None]]]:
    try:
        yield HOOKS
    finally:
        HOOKS.clear()


# -- 1. every blob is bound to its place ----------------------------------------------------


def test_wrapped_key_rows_swapped_between_specimens_fail(
    runtime: Runtime, postgres_url: str
) -> None:
    """The operator swaps two specimens' wrapped keys: neither opens (the wrapping is
    bound to its specimen), and the other specimen's real data key does not open these
    chunk rows either."""
    one, two = capture_probe(runtime, "sp-one"), capture_probe(runtime, "sp-two")
    want_one = decrypt(runtime, "acme", one)
    key_two = data_key(runtime, "acme", two)
    assert find_canaries(b"".join(want_one.values()), [RUN_CANARY]) == [RUN_CANARY]
    swap = (
        "UPDATE payload_keys SET wrapped_key = CASE specimen_id "
        "WHEN 'sp-one' THEN (SELECT wrapped_key FROM payload_keys WHERE specimen_id = 'sp-two') "
        "ELSE (SELECT wrapped_key FROM payload_keys WHERE specimen_id = 'sp-one') END "
        "WHERE specimen_id IN ('sp-one', 'sp-two')"
    )
    sql(postgres_url, swap)
    for specimen in (one, two):
        with pytest.raises((GrantRefused, DecryptionFailed)):
            decrypt(runtime, "acme", specimen)
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        runtime.payloads.read_fields("acme", one, data_key=key_two)
    sql(postgres_url, swap)  # swapped back: both read again
    assert decrypt(runtime, "acme", one) == want_one


@pytest.mark.parametrize(
    "move",
    [
        "UPDATE {table} SET specimen_id = 'sp-elsewhere' WHERE specimen_id = 'sp-one'",
        "UPDATE {table} SET tenant_id = 'globex' WHERE specimen_id = 'sp-one'",
    ],
    ids=["other-specimen", "other-tenant"],
)
def test_a_whole_specimen_moved_elsewhere_does_not_open(
    runtime: Runtime, postgres_url: str, move: str
) -> None:
    """Key row and every chunk row moved together to another specimen id or tenant: even
    with the right data key in hand the frames do not open at their new place."""
    one = capture_probe(runtime, "sp-one")
    key = data_key(runtime, "acme", one)
    assert runtime.payloads.read_fields("acme", one, data_key=key)
    capture(runtime, agent(_probing), INPUTS, tenant_id="globex", seed=1, specimen_id="sp-g")
    for table in ("payload_keys", "payload_chunks"):
        sql(postgres_url, move.format(table=table))
    tenant, specimen = ("globex", "sp-one") if "tenant" in move else ("acme", "sp-elsewhere")
    assert payload_rows(postgres_url, specimen)[0] == 1
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        runtime.payloads.read_fields(tenant, specimen, data_key=key)
    with pytest.raises((GrantRefused, DecryptionFailed)):
        decrypt(runtime, tenant, specimen)
    with pytest.raises(DecryptionFailed):
        runtime.payloads.read_fields("acme", "sp-one", data_key=key)


def test_chunk_rows_of_two_specimens_interleaved_fail(runtime: Runtime, postgres_url: str) -> None:
    """Under one tenant, specimen one's odd chunk rows replaced by specimen two's rows of
    the same numbers (the same shape: same agent, same steps): reads fail for both."""
    one, two = capture_probe(runtime, "sp-one"), capture_probe(runtime, "sp-two")
    keys = {s: data_key(runtime, "acme", s) for s in (one, two)}
    count = payload_rows(postgres_url, one)[1]
    assert count == payload_rows(postgres_url, two)[1] >= 5  # durable: a row per step
    sql(
        postgres_url,
        "UPDATE payload_chunks AS a SET frames = b.frames FROM payload_chunks AS b "
        "WHERE a.specimen_id = 'sp-one' AND b.specimen_id = 'sp-two' "
        "AND a.chunk_no = b.chunk_no AND a.chunk_no % 2 = 1",
    )
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        runtime.payloads.read_fields("acme", one, data_key=keys[one])
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        runtime.payloads.read_fields("acme", one, data_key=keys[two])
    assert runtime.payloads.read_fields("acme", two, data_key=keys[two])


@pytest.fixture
def store(postgres_url: str) -> Iterator[DatabasePayloadStore]:
    ledger = Ledger.open(postgres_url)
    try:
        ledger.migrate()
        yield DatabasePayloadStore(engine=ledger.engine)
    finally:
        ledger.close()


def write(store: DatabasePayloadStore, specimen: str, *, durable: bool = True) -> None:
    writer = store.open_writer("acme", specimen, wrapped=WRAPPED, data_key=KEY, durable=durable)
    for seq, fields in STEPS.items():
        writer.add_step(seq, fields)
    writer.close()


def chunk_rows(url: str, specimen: str) -> list[tuple[int, bytes]]:
    rows = sql(
        url,
        "SELECT chunk_no, frames FROM payload_chunks WHERE specimen_id = %s ORDER BY chunk_no",
        specimen,
    )
    return [(int(n), bytes(f)) for n, f in rows]


def test_every_single_byte_edit_and_every_cut_of_every_chunk_fails(
    store: DatabasePayloadStore, postgres_url: str
) -> None:
    """Each byte of each chunk row flipped (low bit, high bit) and each chunk cut at
    every length: a read raises ``DecryptionFailed`` and nothing else, never a result."""
    write(store, "sp-1")
    rows = chunk_rows(postgres_url, "sp-1")
    assert len(rows) == 4 and store.read_fields("acme", "sp-1", data_key=KEY) == WANT
    update = "UPDATE payload_chunks SET frames = %s WHERE specimen_id = 'sp-1' AND chunk_no = %s"
    opened: list[tuple[int, str]] = []
    with admin(postgres_url) as conn:
        for number, frames in rows:
            edits = [
                (f"flip{mask:#x}@{at}", frames[:at] + bytes([frames[at] ^ mask]) + frames[at + 1 :])
                for at in range(len(frames))
                for mask in (0x01, 0x80)
            ]
            edits += [(f"cut@{at}", frames[:at]) for at in range(len(frames))]
            for label, edited in edits:
                conn.execute(update.encode(), (edited, number))
                try:
                    store.read_fields("acme", "sp-1", data_key=KEY)
                except DecryptionFailed as exc:
                    assert str(exc) == "decryption failed"
                else:
                    opened.append((number, label))
            conn.execute(update.encode(), (frames, number))
    assert opened == []
    assert store.read_fields("acme", "sp-1", data_key=KEY) == WANT


def test_a_foreign_chunk_row_appended_or_negative_fails(
    store: DatabasePayloadStore, postgres_url: str
) -> None:
    """Rows the writer never made: one numbered -1 before the first, one after the last
    holding a copy of a real chunk, one holding another specimen's whole sealed chunk."""
    write(store, "sp-1")
    write(store, "sp-2", durable=False)
    (only,) = chunk_rows(postgres_url, "sp-2")
    rows = chunk_rows(postgres_url, "sp-1")
    insert = (
        "INSERT INTO payload_chunks (tenant_id, specimen_id, chunk_no, frames) "
        "VALUES ('acme', 'sp-1', %s, %s)"
    )
    for number, frames in ((-1, rows[0][1]), (len(rows), rows[1][1]), (len(rows), only[1])):
        sql(postgres_url, insert, number, frames)
        with pytest.raises(DecryptionFailed, match="^decryption failed$"):
            store.read_fields("acme", "sp-1", data_key=KEY)
        sql(
            postgres_url,
            "DELETE FROM payload_chunks WHERE specimen_id = 'sp-1' AND chunk_no = %s",
            number,
        )
    assert store.read_fields("acme", "sp-1", data_key=KEY) == WANT


# -- 2. plaintext never leaves ----------------------------------------------------------------


def test_no_plaintext_in_any_table_the_wal_the_log_or_an_error(
    runtime: Runtime, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Every incident and a canary-carrying probe captured (batched and durable), a
    crashed run and a run whose chunk insert is refused: the canaries are in what was
    captured, and in no table (a ``pg_dump`` and each table read back as text), no WAL
    segment, the server's log, a log record or an exception."""
    caplog.set_level(logging.DEBUG)
    ids = capture_incidents(runtime)
    probes = [
        capture_probe(runtime, "sp-durable"),
        capture_probe(runtime, "sp-batch", durable=False),
    ]
    for incident in ALL:
        tenant = incident.BASELINE_INPUT["tenant"]
        plain = b"".join(decrypt(runtime, tenant, ids[incident.AGENT.name]).values())
        assert find_canaries(plain, [incident.CANARY]) == [incident.CANARY]
    for specimen in probes:
        plain = b"".join(decrypt(runtime, "acme", specimen).values())
        assert RUN_CANARY.encode() in plain
    errors: list[BaseException] = []
    with pytest.raises(EnclaveError):
        capture(runtime, agent(_crashing), INPUTS, tenant_id="acme", seed=1, specimen_id="sp-x")
    # a chunk insert refused by the database, with the row's values in the driver's text
    sql(
        postgres_url,
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'refused %', encode(NEW.frames, 'escape'); END $$",
    )
    sql(
        postgres_url,
        "CREATE TRIGGER refuse_chunks BEFORE INSERT ON payload_chunks "
        "FOR EACH ROW EXECUTE FUNCTION refuse()",
    )
    with pytest.raises(InfrastructureError) as refused:
        capture_probe(runtime, "sp-refused")
    errors.append(refused.value)
    sql(postgres_url, "DROP TRIGGER refuse_chunks ON payload_chunks")
    assert payload_rows(postgres_url, "sp-refused") == (0, 0)
    assert runtime.ledger.run_status("sp-refused") is RunStatus.INCOMPLETE

    assert find_canaries(pg_dump(postgres_url), ALL_CANARIES) == []
    assert find_canaries(every_table(postgres_url), ALL_CANARIES) == []
    assert b"sp-durable" in every_table(postgres_url)  # the scans see this run's rows
    segments, log_file = server_files(postgres_url)
    assert any(b"sp-durable" in segment.read_bytes() for segment in segments)
    for segment in segments:
        assert raw_hits(segment.read_bytes(), RUN_CANARY) == [], segment.name
    if log_file.exists():
        assert raw_hits(log_file.read_bytes(), RUN_CANARY) == []
    for error in errors:
        text = chain_text(error)
        assert find_canaries(text.encode(), ALL_CANARIES) == [], text
    logged = "\n".join(
        f"{r.getMessage()} {r.__dict__} {r.exc_text or ''}" for r in caplog.records
    ).encode()
    assert find_canaries(logged, ALL_CANARIES) == []


def test_an_agent_crash_on_the_database_store_keeps_no_plaintext_in_its_error(
    runtime: Runtime, postgres_url: str
) -> None:
    """An agent crashes with the payload in its message: the capture's error names the
    type only, nothing of the run is left in the database, and no exception reachable
    from the error (``__cause__`` or ``__context__``, suppressed or not) holds the
    payload."""
    with pytest.raises(EnclaveError) as crashed:
        capture(runtime, agent(_crashing), INPUTS, tenant_id="acme", seed=1, specimen_id="sp-x")
    assert RUN_CANARY not in str(crashed.value)
    assert payload_rows(postgres_url, "sp-x") == (0, 0)
    assert runtime.ledger.run_status("sp-x") is RunStatus.INCOMPLETE
    leaked = [
        type(item).__name__
        for item in error_chain(crashed.value)
        if RUN_CANARY in f"{item} {item!r} {getattr(item, 'args', ())!r}"
    ]
    assert leaked == []


def test_a_hostile_wrapped_key_row_fails_without_echoing_it(
    runtime: Runtime, postgres_url: str
) -> None:
    """The operator writes a key row that is not a wrapped key (here: holding a canary):
    reading it fails with a fixed message, and neither the error nor its chain repeats
    what the row holds."""
    specimen = capture_probe(runtime, "sp-one")
    for hostile in (
        f'"{RUN_CANARY}"',
        f'{{"provider": "local", "kek_id": "acme", "kek_version": "{RUN_CANARY}", "blob": "x"}}',
        f'{{"{RUN_CANARY}": 1}}',
        f"[{RUN_CANARY}",
        f'["{RUN_CANARY}"]',
    ):
        sql(postgres_url, "UPDATE payload_keys SET wrapped_key = %s", hostile)
        with pytest.raises(EnclaveError) as caught:
            decrypt(runtime, "acme", specimen)
        assert find_canaries(chain_text(caught.value).encode(), [RUN_CANARY]) == []


# -- 3. erasure is crypto-shredding -------------------------------------------------------------


def key_material(runtime: Runtime, specimen: str) -> tuple[str, bytes]:
    wrapped = runtime.payloads.wrapped_key("acme", specimen)
    return wrapped.blob, data_key(runtime, "acme", specimen)


def assert_no_key_material(url: str, specimen: str, blob: str, key: bytes) -> None:
    assert payload_rows(url, specimen) == (0, 0)
    for dump in (pg_dump(url), every_table(url)):
        assert blob.encode() not in dump
        for form in (key, key.hex().encode(), base64.b64encode(key), base64.b64encode(key)[:40]):
            assert form not in dump


def test_erase_leaves_no_key_or_ciphertext_anywhere_in_the_database(
    runtime: Runtime, postgres_url: str
) -> None:
    gone, kept = capture_probe(runtime, "sp-gone"), capture_probe(runtime, "sp-kept")
    blob, key = key_material(runtime, gone)
    chunks = [frames for _, frames in chunk_rows(postgres_url, gone)]
    erase_specimen(runtime, gone, now=NOW)
    assert_no_key_material(postgres_url, gone, blob, key)
    dump = pg_dump(postgres_url)
    assert not any(frames.hex().encode() in dump for frames in chunks)
    with pytest.raises(DecryptionFailed):
        runtime.payloads.wrapped_key("acme", gone)
    with pytest.raises(DecryptionFailed):
        runtime.payloads.read_fields("acme", gone, data_key=key)  # the key, kept aside
    assert RUN_CANARY.encode() in b"".join(decrypt(runtime, "acme", kept).values())


def test_an_erasure_the_database_refused_half_way_is_finished_later(
    runtime: Runtime, postgres_url: str
) -> None:
    """The ledger records the erasure, then the payload delete fails: the key and the
    chunk rows stay together, and the retention sweep destroys both afterwards."""
    from enclave.retention import RetentionPolicy, sweep

    gone = capture_probe(runtime, "sp-gone")
    blob, key = key_material(runtime, gone)
    sql(
        postgres_url,
        "CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'kept'; END $$",
    )
    sql(
        postgres_url,
        "CREATE TRIGGER keep_chunks BEFORE DELETE ON payload_chunks "
        "FOR EACH ROW EXECUTE FUNCTION keep()",
    )
    with pytest.raises(InfrastructureError) as failed:
        erase_specimen(runtime, gone, now=NOW)
    assert "kept" not in chain_text(failed.value)
    keys, chunks = payload_rows(postgres_url, gone)
    assert keys == 1 and chunks >= 5  # one transaction: nothing deleted
    sql(postgres_url, "DROP TRIGGER keep_chunks ON payload_chunks")
    sweep(runtime, RetentionPolicy(periods={}), now=NOW)
    assert_no_key_material(postgres_url, gone, blob, key)


# -- 4. fail closed -------------------------------------------------------------------------


def test_a_connection_killed_mid_capture_leaves_nothing(
    runtime: Runtime, postgres_url: str, hooks: list[Callable[[int], None]]
) -> None:
    """Durable capture: the writer's connection (and every other) is terminated between
    two steps. The capture fails with one line naming no value, the run is incomplete,
    and neither a key row nor a chunk row of it is left to read."""
    killed: list[int] = []

    def kill(step: int) -> None:
        if step == 2:
            assert payload_rows(postgres_url, "sp-killed")[1] >= 2  # chunks committed so far
            killed.append(kill_other_sessions(postgres_url))

    hooks.append(kill)
    with pytest.raises(InfrastructureError) as failed:
        capture_probe(runtime, "sp-killed")
    assert killed and killed[0] >= 1
    assert "\n" not in str(failed.value)
    assert find_canaries(chain_text(failed.value).encode(), ALL_CANARIES) == []
    assert payload_rows(postgres_url, "sp-killed") == (0, 0)
    assert runtime.ledger.run_status("sp-killed") is RunStatus.INCOMPLETE
    hooks.clear()
    again = capture_probe(runtime, "sp-after")  # the store recovers
    assert RUN_CANARY.encode() in b"".join(decrypt(runtime, "acme", again).values())


@pytest.mark.parametrize("durable", [True, False], ids=["durable", "batched"])
def test_a_concurrent_writer_clash_fails_closed(
    runtime: Runtime,
    postgres_url: str,
    hooks: list[Callable[[int], None]],
    durable: bool,
) -> None:
    """Another writer puts its own chunk rows at the numbers this capture is about to
    use (the unique key clashes). The capture fails naming no value, and afterwards no
    row of the specimen reads as anything."""

    def clash(step: int) -> None:
        if step == 1:
            for number in range(0, 12):
                sql(
                    postgres_url,
                    "INSERT INTO payload_chunks (tenant_id, specimen_id, chunk_no, frames) "
                    "VALUES ('acme', 'sp-clash', %s, %s) ON CONFLICT DO NOTHING",
                    number,
                    f"{RUN_CANARY}-intruder".encode(),
                )

    hooks.append(clash)
    with pytest.raises(InfrastructureError) as failed:
        capture_probe(runtime, "sp-clash", durable=durable)
    assert "\n" not in str(failed.value)
    assert find_canaries(chain_text(failed.value).encode(), ALL_CANARIES) == []
    assert payload_rows(postgres_url, "sp-clash") == (0, 0)
    assert runtime.ledger.run_status("sp-clash") is RunStatus.INCOMPLETE
    with pytest.raises(DecryptionFailed):
        runtime.payloads.wrapped_key("acme", "sp-clash")


def test_a_second_writer_for_a_specimen_is_refused_and_a_dead_one_never_reads(
    store: DatabasePayloadStore, postgres_url: str
) -> None:
    """While one writer is mid-run a second one for the same specimen is refused
    without touching the first's rows; a writer that dies before the seal (no discard)
    leaves rows that never read as a specimen, not even a shorter one."""
    from enclave import BadInput

    first = store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=KEY, durable=True)
    first.add_step(0, STEPS[0])
    with pytest.raises(BadInput):
        store.open_writer("acme", "sp-1", wrapped=WRAPPED, data_key=bytes(32), durable=True)
    first.add_step(1, STEPS[1])
    before = chunk_rows(postgres_url, "sp-1")
    assert len(before) == 2
    with pytest.raises(DecryptionFailed):
        store.read_fields("acme", "sp-1", data_key=KEY)  # not sealed yet
    first.add_step(2, STEPS[2])
    first._rows.close()  # the process dies: no seal, no discard
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        store.read_fields("acme", "sp-1", data_key=KEY)
    # the rows of a dead run, topped with the end frame of a sealed twin, still fail
    twin = store.open_writer("acme", "sp-2", wrapped=WRAPPED, data_key=KEY, durable=True)
    for seq, fields in STEPS.items():
        twin.add_step(seq, fields)
    twin.close()
    end = chunk_rows(postgres_url, "sp-2")[-1][1]
    sql(
        postgres_url,
        "INSERT INTO payload_chunks (tenant_id, specimen_id, chunk_no, frames) "
        "VALUES ('acme', 'sp-1', 3, %s)",
        end,
    )
    with pytest.raises(DecryptionFailed, match="^decryption failed$"):
        store.read_fields("acme", "sp-1", data_key=KEY)


# -- 5. payloads migrate with a hostile source ------------------------------------------------


def env_with(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    return {**env, "COLUMNS": "250", **extra}


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_runner.run_cli(home, *args, env=env_with())


@pytest.fixture
def files_home(tmp_path: Path, postgres_url: str) -> Iterator[tuple[Home, Runtime]]:
    """A home whose ledger is the PostgreSQL database and whose payloads are files."""
    home = make_home(tmp_path / "home", postgres_url, payloads="files")
    rt = Runtime.open(home, env={})
    rt.clock = lambda: NOW
    try:
        yield home, rt
    finally:
        rt.close()


def assert_refused(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode != 0, done.stdout
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert find_canaries((done.stdout + done.stderr).encode(), ALL_CANARIES) == []


def test_migrate_refuses_a_database_copy_that_is_another_specimen(
    files_home: tuple[Home, Runtime], postgres_url: str
) -> None:
    """The database already holds a sealed specimen under the id this home's files hold,
    with another wrapped key and other frames (not a partial copy of an earlier run of
    the migration). Moving to the database refuses: the home stays on files, and the
    database's specimen is neither erased nor replaced."""
    home, runtime = files_home
    specimen = capture_probe(runtime, "sp-dup")
    mine = decrypt(runtime, "acme", specimen)
    runtime.close()
    ledger = Ledger.open(postgres_url)
    try:
        theirs = DatabasePayloadStore(engine=ledger.engine)
        write(theirs, "sp-dup")
        before_key = theirs.wrapped_key("acme", "sp-dup")
        before_rows = chunk_rows(postgres_url, "sp-dup")
        done = cli(home.root, "payloads", "migrate", "--to", "database")
        assert_refused(done)
        assert Home(home.root).bound_payloads() == "files"
        assert theirs.wrapped_key("acme", "sp-dup") == before_key
        assert chunk_rows(postgres_url, "sp-dup") == before_rows
        assert theirs.read_fields("acme", "sp-dup", data_key=KEY) == WANT
    finally:
        ledger.close()
    with Runtime.open(home, env={}) as again:
        assert decrypt(again, "acme", specimen) == mine


def test_migrate_refuses_a_truncated_source_file_without_echoing_it(
    files_home: tuple[Home, Runtime], postgres_url: str
) -> None:
    """A payload file cut inside a frame, whose frame keys carry a canary: the move
    refuses with one line that repeats none of it, and the home keeps its files."""
    home, runtime = files_home
    good = capture_probe(runtime, "sp-good")
    cut = capture_probe(runtime, "sp-cut")
    runtime.close()
    path = home.payloads_dir / "acme" / cut / "payloads.ct"
    raw = path.read_bytes()
    label = f"0/response/{RUN_CANARY}".encode()
    hostile = len(label).to_bytes(4, "big") + label + (64).to_bytes(4, "big") + b"\0" * 10
    path.write_bytes(raw[:-7] + hostile)
    hostile_bytes = path.read_bytes()
    done = cli(home.root, "payloads", "migrate", "--to", "database")
    assert_refused(done)
    assert Home(home.root).bound_payloads() == "files"
    assert path.read_bytes() == hostile_bytes
    assert (home.payloads_dir / "acme" / good / "payloads.ct").exists()
    with Runtime.open(home, env={}) as again:
        assert RUN_CANARY.encode() in b"".join(decrypt(again, "acme", good).values())
    assert find_canaries(pg_dump(postgres_url), [RUN_CANARY]) == []


def test_migrate_cut_at_a_frame_boundary_still_reads_as_tampered(
    files_home: tuple[Home, Runtime],
) -> None:
    """A sealed specimen's file loses its end frame before the move (copied as an
    unsealed run, as it is): in the database it fails to read, never reads as a
    shorter valid specimen."""
    home, runtime = files_home
    cut = capture_probe(runtime, "sp-cut")
    runtime.close()
    path = home.payloads_dir / "acme" / cut / "payloads.ct"
    raw = path.read_bytes()
    end = raw.rfind(b"#end") - 4
    assert end > 0
    path.write_bytes(raw[:end])
    done = cli(home.root, "payloads", "migrate", "--to", "database", "--json")
    if done.returncode == 0:
        assert json.loads(done.stdout)["unsealed"] == 1
    with Runtime.open(home, env={}) as again:
        with pytest.raises(DecryptionFailed):
            decrypt(again, "acme", cut)


def test_migrate_does_not_carry_an_erased_specimens_key_into_the_database(
    files_home: tuple[Home, Runtime], postgres_url: str
) -> None:
    """The ledger records a specimen as erased but its files survived (the process died
    between the ledger entry and the delete). Moving the payloads to the shared
    database must not copy that specimen's wrapped key and ciphertext there."""
    home, runtime = files_home
    gone, kept = capture_probe(runtime, "sp-gone"), capture_probe(runtime, "sp-kept")
    blob, key = key_material(runtime, gone)
    runtime.ledger.mark_erased(gone, erased_at=NOW.isoformat())  # the delete never ran
    runtime.close()
    done = cli(home.root, "payloads", "migrate", "--to", "database")
    assert done.returncode == 0, done.stderr
    assert Home(home.root).bound_payloads() == "database"
    assert payload_rows(postgres_url, kept)[0] == 1
    assert_no_key_material(postgres_url, gone, blob, key)
