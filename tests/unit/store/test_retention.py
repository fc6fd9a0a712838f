"""Retention classes, the library class and the retention sweep: expired specimens are
crypto-shredded through the ledger, library members and held specimens are kept, a dry
run changes nothing, a retired member goes at the next sweep, erasure still wins."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from enclave import BadInput, DecryptionFailed, Home, Refused, Runtime
from enclave.capture import capture
from enclave.cli import demo_audits
from enclave.incidents import claims, procurement
from enclave.release import Selector, select, tag_specimen
from enclave.replay import AuditRequest, run_audit
from enclave.retention import (
    PAGE,
    RetentionPolicy,
    SweepStopped,
    effective_retention_of,
    parse_period,
    retire_specimen,
    sweep,
)
from tests.fixtures.homes import backend_home
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree
from tests.support.cli_runner import run_cli
from tests.support.reads_world import seal_many

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BASE: dict[str, Any] = dict(procurement.BASELINE_INPUT)
POLICY = RetentionPolicy.from_config({"retention": {"standard": "400d", "long": "800d"}})


def _runtime(home: Home) -> Runtime:
    return Runtime.open(home, env={})


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Home:
    """An embedded home with payload files, or a PostgreSQL ledger holding the payloads."""
    payloads = "database" if request.param == "postgres" else "files"
    return backend_home(request, tmp_path / "home", request.param, payloads=payloads)


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = _runtime(Home.init(tmp_path / "home"))
    yield rt
    rt.close()


def _capture(runtime: Runtime, at: datetime, retention_class: str = "standard") -> str:
    """A procurement specimen sealed at ``at`` (the runtime's clock is the seal's)."""
    runtime.clock = lambda: at
    base = BASE
    agent = dataclasses.replace(procurement.AGENT, retention_class=retention_class)
    specimen = capture(runtime, agent, base["inputs"], tenant_id=base["tenant"], seed=base["seed"])
    return specimen.specimen_id


def _hold(runtime: Runtime, specimen_id: str) -> None:
    """Put a sealed specimen under legal hold (there is no command for it yet)."""
    specimens = sa.table("specimens", sa.column("id"), sa.column("legal_hold"))
    with runtime.ledger.engine.begin() as conn:
        conn.execute(
            sa.update(specimens).where(specimens.c.id == specimen_id).values(legal_hold=True)
        )


def _stored(runtime: Runtime, specimen_id: str) -> bool:
    try:
        runtime.payloads.wrapped_key(BASE["tenant"], specimen_id)
    except DecryptionFailed:
        return False
    return True


def _payloads(runtime: Runtime) -> dict[str, str]:
    """Every stored payload byte, as digests: the home's payload files and the rows of
    the database payload store (whichever the home uses)."""
    home = runtime.home
    out = {
        str(p.relative_to(home.payloads_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.payloads_dir.rglob("*"))
        if p.is_file()
    }
    with runtime.ledger.engine.connect() as conn:
        for tenant, specimen, key in conn.execute(
            sa.text("SELECT tenant_id, specimen_id, wrapped_key FROM payload_keys")
        ):
            out[f"key:{tenant}/{specimen}"] = hashlib.sha256(key.encode()).hexdigest()
        for tenant, specimen, no, frames in conn.execute(
            sa.text("SELECT tenant_id, specimen_id, chunk_no, frames FROM payload_chunks")
        ):
            out[f"chunk:{tenant}/{specimen}/{no}"] = hashlib.sha256(frames).hexdigest()
    return out


def _audit(specimen_id: str) -> AuditRequest:
    _title, request = demo_audits({"procurement": specimen_id})[0]
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=request.intervention,
        purpose="review",
        requester="test",
        samples=4,
        seed=1,
    )


# -- periods ----------------------------------------------------------------------------


def test_periods_parse() -> None:
    assert parse_period("400d") == timedelta(days=400)
    assert parse_period("36h") == timedelta(hours=36)
    assert parse_period("30d12h") == timedelta(days=30, hours=12)
    for bad in ("", "400", "d", "4w", " 400d", "400d ", "-1d", "0d", "0h", "1.5d", "99999d", 400):
        with pytest.raises(BadInput) as info:
            parse_period(bad)
        said = str(info.value)
        assert "\n" not in said and said.startswith(
            "the home's config.toml [retention] is malformed"
        )
    policy = RetentionPolicy.from_config({"retention": {"standard": "400d"}})
    assert policy.expires_at("standard", "2026-01-01T00:00:00Z") == T0 + timedelta(days=400)
    assert policy.expires_at("other", "2026-01-01T00:00:00Z") is None  # kept forever
    assert RetentionPolicy.from_config({}).periods == {}
    for config in (
        {"retention": "400d"},
        {"retention": {"library": "10d"}},  # the library class is kept until retired
        {"retention": {"Standard!": "10d"}},
        {"retention": {"standard": 400}},
    ):
        with pytest.raises(BadInput):
            RetentionPolicy.from_config(config)


# -- the sweep --------------------------------------------------------------------------


def test_sweep_erases_exactly_the_expired(home: Home) -> None:
    runtime = _runtime(home)
    try:
        expired = _capture(runtime, T0)
        member = _capture(runtime, T0)
        held = _capture(runtime, T0)
        long_kept = _capture(runtime, T0, "long")
        unnamed = _capture(runtime, T0, "unconfigured")
        recent = _capture(runtime, T0 + timedelta(days=300))
        tag_specimen(runtime, member, ["release-gate/po"], now=T0)
        _hold(runtime, held)
        now = T0 + timedelta(days=401)
        assert effective_retention_of(runtime, member, "standard") == "library"
        assert effective_retention_of(runtime, expired, "standard") == "standard"

        # a dry run names what is due and changes nothing
        head, stored = runtime.ledger.head(), _payloads(runtime)
        assert any(expired in name for name in stored)
        dry = sweep(runtime, POLICY, now=now, dry_run=True)
        assert dry.erased == (expired,) and dry.dry_run and dry.ledger_index is None
        assert runtime.ledger.head() == head and _payloads(runtime) == stored
        assert _stored(runtime, expired)

        seen: list[tuple[int, int]] = []
        done = sweep(runtime, POLICY, now=now, progress=lambda d, t: seen.append((d, t)))
        assert done.erased == (expired,)
        assert done.counts() == {
            "erased": 1,
            "finished": 0,
            "kept_library": 1,
            "kept_legal_hold": 1,
            "not_expired": 3,  # long, unconfigured (no period: forever), recent
        }
        assert seen[-1] == (6, 6)
        assert not _stored(runtime, expired)  # crypto-shredded: the wrapped key is gone
        assert not any(expired in name for name in _payloads(runtime))  # and the ciphertext
        for kept in (member, held, long_kept, unnamed, recent):
            assert _stored(runtime, kept)
        assert [e.subject for e in runtime.ledger.entries(kind="specimen.erased")] == [expired]
        swept = runtime.ledger.entries(kind="retention.swept")
        assert [e.index for e in swept] == [done.ledger_index]
        assert swept[0].body == {**done.counts(), "swept_at": now.isoformat()}

        # idempotent: the second run erases nothing and records its own counts
        again = sweep(runtime, POLICY, now=now)
        assert again.erased == () and again.finished == ()
        assert again.counts()["not_expired"] == 3
        assert len(runtime.ledger.entries(kind="specimen.erased")) == 1
        assert len(runtime.ledger.entries(kind="retention.swept")) == 2

        # later the long class runs out too; library and hold still win
        later = sweep(runtime, POLICY, now=T0 + timedelta(days=801))
        assert set(later.erased) == {long_kept, recent}
        assert runtime.ledger.verify().ok
    finally:
        runtime.close()
    assert scan_tree(home.root, INCIDENT_CANARIES) == {}


def test_retired_member_is_swept_and_erasure_is_a_library_change(runtime: Runtime) -> None:
    old = _capture(runtime, T0)
    kept = _capture(runtime, T0)
    for specimen in (old, kept):
        tag_specimen(runtime, specimen, ["lib", "must-hold"], now=T0)
    now = T0 + timedelta(days=500)
    assert sweep(runtime, POLICY, now=now).erased == ()
    before = select(runtime, Selector(agent="procurement"))
    assert before.erased == ()

    with pytest.raises(BadInput):
        retire_specimen(runtime, old, reason="Not A Code")
    assert retire_specimen(runtime, old, reason="superseded") == ("lib", "must-hold")
    retired = runtime.ledger.entries(kind="library.retired", subject=old)
    assert [e.body for e in retired] == [{"specimen_id": old, "reason": "superseded"}]
    assert runtime.ledger.entries(kind="library.untagged", subject=old)
    assert effective_retention_of(runtime, old, "standard") == "standard"
    with pytest.raises(Refused) as info:
        retire_specimen(runtime, old, reason="again")
    assert info.value.code == "not_in_library"
    with pytest.raises(Refused):
        retire_specimen(runtime, "sp-no-such", reason="gone")

    assert sweep(runtime, POLICY, now=now).erased == (old,)  # its sealed class applies
    assert not _stored(runtime, old) and _stored(runtime, kept)
    after = select(runtime, Selector(agent="procurement"))
    assert after.erased == (old,) and after.specimens == (kept,)
    assert after.digest != before.digest
    assert select(runtime, Selector(tags=("lib",))).specimens == (kept,)
    with pytest.raises(Refused) as refused:
        run_audit(runtime, _audit(old), now=now)
    assert refused.value.code == "unresolvable"


def test_a_failed_erasure_stops_the_sweep_and_the_next_one_finishes_it(
    runtime: Runtime,
) -> None:
    first, second = _capture(runtime, T0), _capture(runtime, T0)
    real = runtime.payloads

    class FailsOnce:  # the real store, whose second erasure fails once
        calls = 0

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def erase(self, tenant_id: str, specimen_id: str) -> bool:
            FailsOnce.calls += 1
            if FailsOnce.calls == 2:
                raise OSError("disk gone")
            return real.erase(tenant_id, specimen_id)

    runtime.payloads = FailsOnce()
    now = T0 + timedelta(days=401)
    with pytest.raises(SweepStopped) as info:
        sweep(runtime, POLICY, now=now)
    assert info.value.erased == 1
    assert (
        str(info.value) == "retention sweep stopped after 1 erasure(s): internal failure (OSError)"
    )
    assert not runtime.ledger.entries(kind="retention.swept")  # not a complete sweep
    erased = [e.subject for e in runtime.ledger.entries(kind="specimen.erased")]
    assert sorted(erased) == sorted([first, second])  # both recorded, ledger first
    assert [_stored(runtime, s) for s in (second, first)] == [False, True]  # newest first

    runtime.payloads = real
    assert sweep(runtime, POLICY, now=now, dry_run=True).finished == (first,)
    assert _stored(runtime, first)
    done = sweep(runtime, POLICY, now=now)
    assert done.finished == (first,) and done.erased == ()
    assert not _stored(runtime, first)
    assert sweep(runtime, POLICY, now=now).finished == ()


def test_a_hold_or_erasure_made_during_the_sweep_is_respected(runtime: Runtime) -> None:
    """The sweep reads a page, then erases its rows one by one: a hold placed on a row,
    or an erasure made elsewhere, after the read but before its turn wins."""
    from enclave import erase_specimen

    last, middle, first = (_capture(runtime, T0) for _ in range(3))  # sealed in this order
    now = T0 + timedelta(days=401)

    def meanwhile(done: int, _total: int) -> None:
        if done == 1:  # the newest (``first``) is erased; the page is already read
            _hold(runtime, middle)
            erase_specimen(runtime, last, now=now)

    result = sweep(runtime, POLICY, now=now, progress=meanwhile)
    assert result.erased == (first,)
    assert result.counts()["kept_legal_hold"] == 1
    assert _stored(runtime, middle) and not _stored(runtime, last)
    erasures = runtime.ledger.entries(kind="specimen.erased")
    assert sorted(e.subject for e in erasures) == sorted([first, last])


def test_the_sweep_pages_through_many_specimens_once_each(runtime: Runtime) -> None:
    """More than two pages of synthetic (metadata-only) specimens: each expired one is
    erased exactly once, members and held ones are kept across page boundaries."""
    ids = seal_many(runtime.ledger, 2 * PAGE + 50)  # class "standard-90d", sealed 2025-03
    members, holds = ids[::10], ids[5::10]
    for specimen in members:
        tag_specimen(runtime, specimen, ["lib"], now=T0)
    for specimen in holds:
        _hold(runtime, specimen)
    policy = RetentionPolicy.from_config({"retention": {"standard-90d": "90d"}})
    seen: list[tuple[int, int]] = []
    done = sweep(runtime, policy, now=T0, progress=lambda d, t: seen.append((d, t)))
    expected = sorted(set(ids) - set(members) - set(holds))
    assert sorted(done.erased) == expected and len(done.erased) == len(expected)
    assert (done.kept_library, done.kept_legal_hold) == (len(members), len(holds))
    subjects = [e.subject for e in runtime.ledger.entries(kind="specimen.erased")]
    assert sorted(subjects) == expected
    assert seen[-1] == (len(ids), len(ids))
    assert sweep(runtime, policy, now=T0).erased == ()


# -- the command line -------------------------------------------------------------------


def _scan(*outs: subprocess.CompletedProcess[str]) -> None:
    text = "".join(o.stdout + o.stderr for o in outs)
    assert find_canaries(text.encode(), INCIDENT_CANARIES) == []


def _one_line_error(out: subprocess.CompletedProcess[str], code: int = 2) -> str:
    assert out.returncode == code, (out.returncode, out.stderr)
    assert out.stdout == "" and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: ")
    return out.stderr


def test_cli_sweep_retire_show_and_bad_config(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home")
    with _runtime(home) as runtime:
        stale = _capture(runtime, T0 - timedelta(days=1000))
        member = _capture(runtime, T0 - timedelta(days=1000))
        runtime.clock = lambda: datetime.now(UTC)
        base: dict[str, Any] = dict(claims.BASELINE_INPUT)
        fresh = capture(
            runtime, claims.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
        ).specimen_id
        tag_specimen(runtime, member, ["lib"], now=T0)
        tag_specimen(runtime, fresh, ["lib"], now=T0)
    config = home.root / "config.toml"
    config.write_text(config.read_text() + '\n[retention]\nstandard = "400d"\n')
    shown = run_cli(home.root, "specimens", "show", member, "--json")
    assert json.loads(shown.stdout)["effective_retention"] == "library"
    plain = run_cli(home.root, "specimens", "show", stale)
    assert "effective_retention" in plain.stdout and "standard" in plain.stdout

    dry = run_cli(home.root, "retention", "sweep", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == {
        "dry_run": True,
        "erased": 1,
        "finished": 0,
        "kept_legal_hold": 0,
        "kept_library": 2,
        "ledger_index": None,
        "not_expired": 0,
    }
    swept = run_cli(home.root, "retention", "sweep")
    assert swept.returncode == 0, swept.stderr
    assert "recorded at ledger entry" in swept.stdout
    retired = run_cli(home.root, "retention", "retire", member, "--reason", "superseded")
    assert retired.returncode == 0, retired.stderr
    again = run_cli(home.root, "retention", "sweep", "--json")
    assert json.loads(again.stdout)["erased"] == 1
    # erasure still wins over the library: the member goes, and a selection names it
    erase_fresh = run_cli(home.root, "specimens", "erase", fresh)
    assert erase_fresh.returncode == 0, erase_fresh.stderr
    with _runtime(home) as runtime:
        assert select(runtime, Selector(tags=("lib",))).erased == (fresh,)
        assert select(runtime, Selector(agent="procurement")).erased == tuple(
            sorted([stale, member])
        )
        assert [e.subject for e in runtime.ledger.entries(kind="specimen.erased")] == [
            stale,
            member,
            fresh,
        ]
        assert runtime.ledger.verify().ok

    not_member = _one_line_error(run_cli(home.root, "retention", "retire", stale))
    bad_reason = _one_line_error(
        run_cli(home.root, "retention", "retire", member, "--reason", "CANARY-Reason!")
    )
    assert "CANARY" not in bad_reason
    config.write_text(config.read_text() + 'long = "forever-CANARY"\n')
    bad = _one_line_error(run_cli(home.root, "retention", "sweep"))
    assert "config.toml [retention] is malformed" in bad and "CANARY" not in bad
    _scan(shown, plain, dry, swept, retired, again, erase_fresh)
    assert not_member and scan_tree(home.root, INCIDENT_CANARIES) == {}


def test_erasing_a_library_member_names_it_erased(runtime: Runtime) -> None:
    member = _capture(runtime, T0)
    tag_specimen(runtime, member, ["lib"], now=T0)
    from enclave import erase_specimen

    erase_specimen(runtime, member, now=T0)
    assert select(runtime, Selector(tags=("lib",))).erased == (member,)
    assert sweep(runtime, POLICY, now=T0 + timedelta(days=999)).counts()["kept_library"] == 0
