"""Choosing the payload store, capture and audit on the database store (SQLite and a
real PostgreSQL) with no plaintext in the database, and ``payloads migrate`` both ways,
including re-runs after every kind of interruption."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import BadInput, Home, InfrastructureError, Runtime
from enclave.capture import capture
from enclave.cli import erased_specimens
from enclave.incidents import claims
from enclave.keys import WrappedKey
from enclave.store import (
    DatabasePayloadStore,
    PayloadBackend,
    PayloadsMoving,
    PayloadStore,
    migrate,
    moving_payloads,
)
from ledger.tables import PayloadChunkRow, PayloadKeyRow, table_of
from tests.support import cli_runner
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree

payload_keys, payload_chunks = table_of(PayloadKeyRow), table_of(PayloadChunkRow)

NOW = datetime(2026, 11, 2, 9, 30, 0, tzinfo=UTC)
ENV_STORE = "REPLAY_ENCLAVE_PAYLOAD_STORE"


def env_with(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    return {**env, "COLUMNS": "250", **extra}


def cli(home: Path, *args: str, **extra: str) -> Any:
    return cli_runner.run_cli(home, *args, env=env_with(**extra))


def decrypt(runtime: Runtime, tenant: str, specimen_id: str) -> dict[tuple[int, str, str], bytes]:
    """Inside the enclave: grant for this specimen -> redeem -> decrypt every field."""
    wrapped = runtime.payloads.wrapped_key(tenant, specimen_id)
    grant = runtime.keys.issue_grant(
        tenant, specimen_id, wrapped, job_id="job-test", ttl_seconds=60, now=NOW
    )
    return runtime.payloads.read_fields(tenant, specimen_id, data_key=grant.redeem(now=NOW))


def capture_claims(runtime: Runtime, seed: int) -> str:
    base: dict[str, Any] = dict(claims.BASELINE_INPUT)
    assert base["tenant"] == "acme"
    sealed = capture(runtime, claims.AGENT, base["inputs"], tenant_id="acme", seed=seed)
    return sealed.specimen_id


def table_rows(engine: sa.Engine) -> tuple[int, int, bytes]:
    """(key rows, chunk rows, every byte of both tables) — a dump of the payload tables."""
    with engine.connect() as conn:
        keys = conn.execute(sa.select(payload_keys)).all()
        chunks = conn.execute(sa.select(payload_chunks)).all()
    dump = b"".join(
        str(value).encode() if not isinstance(value, bytes | memoryview) else bytes(value)
        for row in [*keys, *chunks]
        for value in row
    )
    return len(keys), len(chunks), dump


def files_in(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "payloads").rglob("*") if p.is_file())


def run_rows(home: Home) -> int:
    """Runs the ledger records (sealed or not)."""
    with Runtime.open(home, env={}) as runtime, runtime.ledger.engine.connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM runs")).scalar_one())


# -- a migration and payload use exclude each other -------------------------------------


def test_a_migration_refuses_while_a_capture_is_writing(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with Runtime.open(home, env={}) as runtime:
        capture_claims(runtime, 1)
        key, wrapped = runtime.keys.new_data_key("acme", "sp-open")
        writer = runtime.payloads.open_writer(
            "acme", "sp-open", wrapped=wrapped, data_key=key, durable=True
        )
        writer.add_step(0, [("response", "/body", b'"still being written"')])
        refused = cli(home.root, "payloads", "migrate", "--to", "database")
        assert refused.returncode != 0 and refused.stderr.count("\n") == 1, refused.stderr
        assert "in use" in refused.stderr and "Traceback" not in refused.stderr
        assert home.bound_payloads() == "files"
        writer.close()
        held = files_in(home.root)
        assert len(held) == 4  # two specimens, a key file and a ciphertext file each
    # every runtime of the home closed: the lock is free and the move goes ahead
    moved = cli(home.root, "payloads", "migrate", "--to", "database", "--json")
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["copied"] == 2 and home.bound_payloads() == "database"


def test_payload_use_refuses_while_the_payloads_move(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with Runtime.open(home, env={}) as runtime:
        first = capture_claims(runtime, 1)
    files, runs = files_in(home.root), run_rows(home)
    with Runtime.open(home, env={}) as runtime, moving_payloads(home.root):
        with pytest.raises(PayloadsMoving) as refused:
            capture_claims(runtime, 2)
        assert "\n" not in str(refused.value) and "being moved" in str(refused.value)
        with pytest.raises(PayloadsMoving):
            decrypt(runtime, "acme", first)
        with pytest.raises(PayloadsMoving):  # a second migration
            with moving_payloads(home.root):
                pass
    assert (files_in(home.root), run_rows(home)) == (files, runs)  # nothing recorded


def test_a_runtime_opened_before_a_move_refuses_after_it(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with Runtime.open(home, env={}) as runtime:
        capture_claims(runtime, 1)
    stale = Runtime.open(home, env={})  # bound to files, payloads not touched yet
    try:
        moved = cli(home.root, "payloads", "migrate", "--to", "database")
        assert moved.returncode == 0, moved.stderr
        runs = run_rows(home)
        with pytest.raises(PayloadsMoving) as refused:
            capture_claims(stale, 2)  # would write into the folder just emptied
        assert "moved to database" in str(refused.value)
        assert files_in(home.root) == [] and run_rows(home) == runs
    finally:
        stale.close()
    with Runtime.open(home, env={}) as fresh:
        capture_claims(fresh, 2)
        assert fresh.payloads.store == "database" and files_in(home.root) == []


# -- choosing the store ----------------------------------------------------------------


def test_a_new_home_binds_the_configured_store(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with (home.root / "config.toml").open("a") as config:
        config.write('\n[payloads]\nstore = "database"\n')
    with Runtime.open(home, env={}) as runtime:
        assert runtime.payloads.store == "database"
        specimen = capture_claims(runtime, 1)
        assert decrypt(runtime, "acme", specimen)
        assert runtime.payloads.specimens() == [("acme", specimen)]
    assert home.backend["payloads"] == "database"
    assert files_in(home.root) == []
    with Runtime.open(home, env={}) as runtime:  # bound: no configuration needed again
        assert runtime.payloads.store == "database"


def test_a_home_bound_before_payload_stores_keeps_its_files(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with (home.root / "config.toml").open("a") as config:
        config.write('\n[backend]\nledger = "embedded"\nkeys = "local"\n')
    with Runtime.open(home, env={}) as runtime:
        assert runtime.payloads.store == "files"
    assert "payloads" not in home.backend
    with pytest.raises(BadInput) as refused:
        Runtime.open(home, env={ENV_STORE: "database"})
    message = str(refused.value)
    assert "\n" not in message and "payloads migrate --to database" in message


def test_a_mismatch_or_unknown_store_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "home"
    assert cli(root, "init").returncode == 0
    assert cli(root, "ledger", "head", **{ENV_STORE: "files"}).returncode == 0
    done = cli(root, "ledger", "head", **{ENV_STORE: "database"})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "payloads migrate --to database" in done.stderr
    done = cli(root, "ledger", "head", **{ENV_STORE: "CANARY-STORE"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "CANARY" not in done.stderr and "Traceback" not in done.stderr
    done = cli(root, "payloads", "migrate", "--to", "CANARY-STORE")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "CANARY" not in done.stderr


def test_rebinding_rewrites_only_the_payload_lines(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with (home.root / "config.toml").open("a") as config:
        config.write('\n[payloads]\nstore = "files"\n')
    Runtime.open(home, env={}).close()
    before = (home.root / "config.toml").read_text()
    home.rebind_payloads("database")
    after = (home.root / "config.toml").read_text()
    assert home.bound_payloads() == "database" and home.payload_store({}) == "database"
    changed = [
        (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
    ]
    assert changed == [
        ('store = "files"', 'store = "database"'),
        ('payloads = "files"', 'payloads = "database"'),
    ]
    assert (home.root / "config.toml").stat().st_mode & 0o077 == 0


# -- end to end on the database store ------------------------------------------------------


def audit_procurement(home: Path, specimen: str, **extra: str) -> dict[str, Any]:
    done = cli(
        home,
        "audit",
        specimen,
        "--purpose",
        "payload store test",
        "--revision",
        "model=r2",
        "--samples",
        "10",
        "--seed",
        "1",
        "--authoritative-substitute",  # as the shipped revision policy declares
        "approval-policy",
        "--json",
        **extra,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_demo_on_the_database_store_then_migrated_both_ways(tmp_path: Path) -> None:
    """The demo captures and audits with every payload in the embedded database: no
    payload file, no plaintext anywhere in the home (database and WAL included). Then
    the payloads move to files and back, and the audits still replay."""
    home = tmp_path / "home"
    done = cli(home, "demo", "--json", **{ENV_STORE: "database"})
    assert done.returncode == 0, done.stderr
    demo = json.loads(done.stdout)
    assert {row["classification"] for row in demo["audits"]} >= {"influential"}
    procurement = demo["specimens"]["procurement"]
    assert files_in(home) == []
    engine = sa.create_engine(f"sqlite:///{home / 'ledger.db'}", poolclass=sa.NullPool)
    try:
        keys, chunks, dump = table_rows(engine)
        assert keys == 3 and chunks >= 3
        assert find_canaries(dump, INCIDENT_CANARIES) == []
        assert scan_tree(home) == {}

        moved = cli(home, "payloads", "migrate", "--to", "files", "--sole-home", "--json")
        assert moved.returncode == 0, moved.stderr
        summary = json.loads(moved.stdout)
        assert (summary["copied"], summary["removed"], summary["unsealed"]) == (3, 3, 0)
        assert table_rows(engine)[:2] == (0, 0)
        assert files_in(home).count("payloads.ct") == 3
        assert Home(home).bound_payloads() == "files"
        assert audit_procurement(home, procurement)["classification"] == "influential"
        assert scan_tree(home) == {}

        back = cli(home, "payloads", "migrate", "--to", "database")
        assert back.returncode == 0, back.stderr
        assert "payloads are in database: 3 specimen(s) copied" in back.stdout
        assert files_in(home) == []
        assert table_rows(engine)[0] == 3
        assert audit_procurement(home, procurement)["classification"] == "influential"
        again = cli(home, "payloads", "migrate", "--to", "database", "--json")
        assert (
            json.loads(again.stdout)["copied"] == 0 and json.loads(again.stdout)["specimens"] == 3
        )
        assert scan_tree(home) == {}
    finally:
        engine.dispose()


def test_capture_and_audit_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """Ledger and payloads in PostgreSQL: the home holds no payload, a dump of the
    payload tables no plaintext, and an audit replays from the database; the payloads
    move to files and back on the same server."""
    root = tmp_path / "home"
    home = Home.init(root)
    pg = {"REPLAY_ENCLAVE_LEDGER_URL": postgres_url}
    with Runtime.open(home, env={**pg, ENV_STORE: "database"}) as runtime:
        from enclave.incidents import procurement

        base: dict[str, Any] = dict(procurement.BASELINE_INPUT)
        sealed = capture(
            runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
        )
        other = capture_claims(runtime, 7)
        engine = runtime.ledger.engine
        keys, chunks, dump = table_rows(engine)
        assert keys == 2 and chunks >= 2
        assert find_canaries(dump, INCIDENT_CANARIES) == []
        assert decrypt(runtime, "acme", other)
    assert files_in(root) == [] and scan_tree(root) == {}
    assert audit_procurement(root, sealed.specimen_id, **pg)["classification"] == "influential"

    moved = cli(root, "payloads", "migrate", "--to", "files", "--sole-home", "--json", **pg)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["copied"] == 2
    back = cli(root, "payloads", "migrate", "--to", "database", "--json", **pg)
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout)["removed"] == 2 and files_in(root) == []
    assert audit_procurement(root, sealed.specimen_id, **pg)["classification"] == "influential"


# -- interrupted and failing migrations ---------------------------------------------------


class Interrupted(Exception):
    pass


class Failing:
    """A store that fails the way a killed process or a lost connection would."""

    def __init__(self, inner: PayloadBackend, **fail: int) -> None:
        self._inner, self._fail, self._calls = inner, fail, dict.fromkeys(fail, 0)

    def _tick(self, name: str) -> None:
        if name in self._fail:
            self._calls[name] += 1
            if self._calls[name] == self._fail[name]:
                raise Interrupted(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def frames(self, tenant_id: str, specimen_id: str) -> Iterator[tuple[bytes, bytes]]:
        for n, frame in enumerate(self._inner.frames(tenant_id, specimen_id)):
            if n == 3:  # a few frames in
                self._tick("frames")
            yield frame

    def import_specimen(
        self,
        tenant_id: str,
        specimen_id: str,
        *,
        wrapped: WrappedKey,
        frames: Iterable[tuple[bytes, bytes]],
    ) -> None:
        self._tick("import")
        if "drop_last" in self._fail:  # loses the last field frame on the way
            items = list(frames)
            frames = items[:-2] + items[-1:]
        self._inner.import_specimen(tenant_id, specimen_id, wrapped=wrapped, frames=frames)

    def erase(self, tenant_id: str, specimen_id: str) -> bool:
        self._tick("erase")
        return bool(self._inner.erase(tenant_id, specimen_id))


@pytest.fixture
def files_home(tmp_path: Path) -> Iterator[tuple[Home, list[str], dict[str, Any]]]:
    """A files home with three sealed specimens, and their decrypted fields."""
    home = Home.init(tmp_path / "home")
    with Runtime.open(home, env={}) as runtime:
        ids = [capture_claims(runtime, seed) for seed in (1, 2, 3)]
        fields = {sid: decrypt(runtime, "acme", sid) for sid in ids}
    yield home, ids, fields


def run(
    home: Home, target: str, *, source: Any = None, into: Any = None, progress: Any = None
) -> Any:
    with Runtime.open(home, env={}, payloads_as_bound=True) as runtime:
        stores: dict[str, Any] = {
            "files": PayloadStore(root=home.payloads_dir),
            "database": DatabasePayloadStore(engine=runtime.ledger.engine),
        }
        origin = "database" if target == "files" else "files"
        return migrate(
            source(stores[origin]) if source else stores[origin],
            into(stores[target]) if into else stores[target],
            names=(origin, target),
            bound_to_target=home.bound_payloads() == target,
            switch=lambda: home.rebind_payloads(target),
            erased=erased_specimens(runtime).__contains__,
            **({"progress": progress} if progress else {}),
        )


def all_readable(home: Home, fields: dict[str, Any], store: str) -> None:
    with Runtime.open(home, env={}) as runtime:
        assert runtime.payloads.store == store
        for sid, want in fields.items():
            assert decrypt(runtime, "acme", sid) == want


def test_killed_while_copying_then_rerun(files_home: Any) -> None:
    home, ids, fields = files_home

    def killed(done: int, total: int) -> None:
        if done == 2:
            raise Interrupted("killed")

    with pytest.raises(Interrupted):
        run(home, "database", progress=killed)
    assert home.bound_payloads() == "files"
    all_readable(home, fields, "files")  # nothing removed, still bound to files
    summary = cli(home.root, "payloads", "migrate", "--to", "database", "--json")
    assert summary.returncode == 0, summary.stderr
    out = json.loads(summary.stdout)
    assert (out["already_copied"], out["copied"], out["removed"]) == (2, 1, 3)
    assert files_in(home.root) == []
    all_readable(home, fields, "database")


def test_partial_copy_is_copied_again(files_home: Any) -> None:
    """Killed in the middle of the first specimen's frames: its partial copy (a key
    row, no end frame) is found unequal on the re-run and replaced."""
    home, ids, fields = files_home
    with pytest.raises(Interrupted):
        run(home, "database", source=lambda s: Failing(s, frames=1))
    assert home.bound_payloads() == "files"
    with Runtime.open(home, env={}) as runtime:
        assert table_rows(runtime.ledger.engine)[0] == 1
    out = run(home, "database")
    assert (out.already_copied, out.copied, out.removed) == (0, 3, 3)
    all_readable(home, fields, "database")


def test_killed_while_removing_old_copies_then_rerun(files_home: Any) -> None:
    home, ids, fields = files_home
    with pytest.raises(Interrupted):
        run(home, "database", source=lambda s: Failing(s, erase=2))
    assert home.bound_payloads() == "database"  # every copy was verified first
    assert files_in(home.root).count("payloads.ct") == 2
    all_readable(home, fields, "database")
    out = run(home, "database")
    assert (out.copied, out.removed, out.specimens) == (0, 2, 3)
    assert files_in(home.root) == []
    all_readable(home, fields, "database")


def test_a_copy_that_does_not_match_leaves_the_home_as_it_was(files_home: Any) -> None:
    home, ids, fields = files_home
    with pytest.raises(InfrastructureError) as failed:
        run(home, "database", into=lambda t: Failing(t, drop_last=99))
    assert "\n" not in str(failed.value) and "differs from its source" in str(failed.value)
    assert home.bound_payloads() == "files"
    all_readable(home, fields, "files")


def test_a_specimen_erased_between_runs_leaves_no_copy(files_home: Any) -> None:
    """Interrupted just before re-binding; one specimen is then erased (from the files,
    where the home still keeps it). The re-run erases its stale copy in the database
    instead of leaving a wrapped key and ciphertext behind."""
    from enclave import erase_specimen

    home, ids, fields = files_home
    original = home.rebind_payloads

    def killed(_store: str) -> None:
        raise Interrupted("killed")

    object.__setattr__(home, "rebind_payloads", killed)
    with pytest.raises(Interrupted):
        run(home, "database")
    object.__setattr__(home, "rebind_payloads", original)
    assert home.bound_payloads() == "files"
    with Runtime.open(home, env={}) as runtime:
        erase_specimen(runtime, ids[0], now=NOW)
        engine = runtime.ledger.engine
        assert table_rows(engine)[0] == 3  # the stale copy, still in the database
        out = run(home, "database")
        assert (out.stale_removed, out.already_copied, out.specimens) == (1, 2, 2)
        with engine.connect() as conn:
            left = conn.execute(sa.select(payload_keys.c.specimen_id)).scalars().all()
            chunks = conn.execute(
                sa.select(sa.func.count()).where(payload_chunks.c.specimen_id == ids[0])
            ).scalar_one()
    assert sorted(left) == sorted(ids[1:]) and chunks == 0
    all_readable(home, {sid: fields[sid] for sid in ids[1:]}, "database")


def test_moving_back_to_files(files_home: Any) -> None:
    home, ids, fields = files_home
    run(home, "database")
    out = cli(home.root, "payloads", "migrate", "--to", "files", "--sole-home")
    assert out.returncode == 0, out.stderr
    assert home.bound_payloads() == "files" and files_in(home.root).count("payloads.ct") == 3
    all_readable(home, fields, "files")
    with Runtime.open(home, env={}) as runtime:
        assert table_rows(runtime.ledger.engine)[:2] == (0, 0)


def test_homes_sharing_the_database_keep_each_others_payloads(tmp_path: Path) -> None:
    """A second home on the same ledger, still bound to (empty) files, moves to the
    database: it copies nothing, erases nothing of the first home's, and is re-bound."""
    first = Home.init(tmp_path / "first")
    with Runtime.open(first, env={ENV_STORE: "database"}) as runtime:
        ids = [capture_claims(runtime, seed) for seed in (1, 2)]
        fields = {sid: decrypt(runtime, "acme", sid) for sid in ids}
    second = Home.init(tmp_path / "second")
    shared = {"REPLAY_ENCLAVE_LEDGER_URL": f"sqlite:///{first.ledger_path}"}
    with Runtime.open(second, env=shared) as runtime:
        assert runtime.payloads.store == "files"
    done = cli(second.root, "payloads", "migrate", "--to", "database", "--json", **shared)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["copied"], out["stale_removed"], out["specimens"]) == (0, 0, 2)
    assert second.bound_payloads() == "database"
    all_readable(first, fields, "database")
    # moving back to files from either home would take the other's payloads with it:
    # refused unless the operator says no other home uses the database
    for home in (first, second):
        env = shared if home is second else {}
        refused = cli(home.root, "payloads", "migrate", "--to", "files", **env)
        assert refused.returncode != 0 and refused.stderr.count("\n") == 1
        assert "--sole-home" in refused.stderr and "Traceback" not in refused.stderr
        assert home.bound_payloads() == "database"
    all_readable(first, fields, "database")
