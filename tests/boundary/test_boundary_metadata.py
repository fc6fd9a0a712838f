"""Capture-time metadata is not a channel, and the code replayed is the code captured.

Written as an agent author would attack: the agent's own code chooses aliases, agent
scope names, boundary names, resolved identities, idempotency tokens and capture failure
codes at run time. Whatever of that the ledger shows in clear must be declared statically
in the ``AgentSpec``/``BoundarySpec``; anything chosen at run time is a keyed digest in
the ledger and plaintext only in the encrypted payload store (erased with it).

Code identity: a specimen records the digest of its agent's module files and the
interpreter; an audit of a specimen whose agent code changed since capture is refused
(``code_changed``) unless the audit declares that code revision.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import EnclaveError, Home, Refused, Runtime, erase_specimen, utc_now
from enclave.capture import (
    AgentSpec,
    Answer,
    BoundarySpec,
    CodeIdentity,
    Context,
    SpecError,
    capture,
    code_identity,
    decode_payload,
    policy,
)
from enclave.incidents import procurement
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.runs import open_specimen
from ledger import RunStatus, StepKind
from tests.support.canary import find_canaries, scan_tree
from tests.unit.capture.test_capture import decrypt_specimen

CANARY = "CANARY-META-6f19c2"
EXE = shutil.which("replay-enclave")


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path / "home"), env={})
    yield rt
    rt.close()


# -- a hostile agent: its metadata is chosen at run time from its secret input ---------

LOOKUP = BoundarySpec(
    kind=StepKind.TOOL,
    name="lookup",
    request={"q": policy("restricted")},
    response={"a": policy("internal")},
    aliases=("lookup@prod",),
    identities=("lookup-svc@1",),
)
CHARGE = BoundarySpec(
    kind=StepKind.EFFECT,
    name="charge",
    request={"account": policy("restricted")},
    response={"ok": policy("internal")},
)


def _outcome() -> dict[str, Any]:
    return {"score": 0.5, "decision": "OK"}


def _alias_and_identity(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    secret = inputs["secret"]
    ctx.call(
        LOOKUP,
        {"q": secret},
        live=lambda r: Answer({"a": 1}, resolved=f"svc@{r['q']}-resolved"),
        alias=f"{secret}-alias",
    )
    return _outcome()


def _declared_metadata(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(
        LOOKUP,
        {"q": inputs["secret"]},
        live=lambda r: Answer({"a": 1}, resolved="lookup-svc@1"),
        alias="lookup@prod",
    )
    return _outcome()


def _scope(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    with ctx.agent_scope(f"{inputs['secret']}-scope"):
        ctx.call(LOOKUP, {"q": "x"}, live=lambda r: {"a": 1})
    return _outcome()


def _runtime_boundary(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    made = BoundarySpec(
        kind=StepKind.TOOL, name=f"{inputs['secret']}-name", request={}, response={}
    )
    ctx.call(made, {}, live=lambda r: {})
    return _outcome()


def _token(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # the idempotency token is built from an encrypted request field
    ctx.call(
        CHARGE,
        {"account": inputs["secret"]},
        live=lambda r: Answer({"ok": True}, idempotency_token=f"tok-{r['account']}"),
    )
    return _outcome()


def _list_alias(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(LOOKUP, {"q": "x"}, live=lambda r: {"a": 1}, alias=[inputs["secret"]])  # type: ignore[arg-type]
    return _outcome()


def _times(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    # a valid time and a token expiry whose digits the agent chooses
    chosen = datetime(2031, 7, 4, 12, 34, 56, 789012, tzinfo=UTC)
    ctx.call(
        LOOKUP,
        {"q": "x"},
        live=lambda r: Answer({"a": 1}, valid_time=chosen),
    )
    ctx.call(
        CHARGE,
        {"account": "a"},
        live=lambda r: Answer(
            {"ok": True}, idempotency_token="t", token_expires_at=chosen + timedelta(seconds=1)
        ),
    )
    return _outcome()


class _Chosen(EnclaveError):
    code = f"{CANARY}-code"


def _failure_code(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    raise _Chosen("chosen")


def _agent(function: Any, **extra: Any) -> AgentSpec:
    return AgentSpec(
        name="meta-agent",
        version="0.1.0",
        function=function,
        inputs={"secret": policy("restricted")},
        outcome={"score": policy("internal"), "decision": policy("internal")},
        boundaries=(LOOKUP, CHARGE),
        **extra,
    )


SECRET = {"secret": f"{CANARY}-input"}


def _db_bytes(runtime: Runtime) -> bytes:
    """The ledger database with its write-ahead log (recent rows live there first)."""
    return b"".join(p.read_bytes() for p in sorted(runtime.home.root.glob("ledger.db*")))


def _show(root: Path, specimen_id: str, *extra: str) -> str:
    assert EXE is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    env["COLUMNS"] = "250"
    out = subprocess.run(
        [EXE, "specimens", "show", specimen_id, "--home", str(root), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(EXE is None, reason="the console script is not installed")
def test_run_time_alias_and_resolved_identity_never_shown_in_clear(runtime: Runtime) -> None:
    result = capture(runtime, _agent(_alias_and_identity), SECRET, tenant_id="t1", seed=1)
    root = runtime.home.root
    # 1. the ledger file, `specimens show` and its --json: no canary in any encoding
    assert find_canaries(_db_bytes(runtime), [CANARY]) == []
    text, as_json = _show(root, result.specimen_id), _show(root, result.specimen_id, "--json")
    assert find_canaries((text + as_json).encode(), [CANARY]) == []
    assert "hmac-sha256:" in text and "sha256:" in text.split("code", 1)[1]
    # 2. they are keyed digests in the ledger
    record = runtime.ledger.get_specimen(result.specimen_id)
    (step,) = [s for s in record.steps if s.name == "lookup"]
    assert step.alias is not None and step.alias.startswith("hmac-sha256:")
    assert step.resolved is not None and step.resolved.startswith("hmac-sha256:")
    assert step.alias != step.resolved
    # 3. inside the enclave the replay gets the plaintext back from the payload store
    opened = open_specimen(
        runtime, result.specimen_id, job_id="j-1", lease_seconds=60, now=utc_now()
    )
    (served,) = [s for s in opened.trajectory.steps if s.name == "lookup"]
    assert served.alias == f"{CANARY}-input-alias"
    assert served.resolved == f"svc@{CANARY}-input-resolved"


def test_declared_alias_and_identity_stay_readable(runtime: Runtime) -> None:
    result = capture(runtime, _agent(_declared_metadata), SECRET, tenant_id="t1", seed=1)
    record = runtime.ledger.get_specimen(result.specimen_id)
    (step,) = [s for s in record.steps if s.name == "lookup"]
    assert (step.alias, step.resolved) == ("lookup@prod", "lookup-svc@1")
    (manifest_step,) = [s for s in record.manifest["steps"] if s["name"] == "lookup"]
    assert (manifest_step["alias"], manifest_step["resolved"]) == ("lookup@prod", "lookup-svc@1")


def test_reference_incident_identities_are_declared(runtime: Runtime) -> None:
    base: dict[str, Any] = procurement.BASELINE_INPUT
    result = capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id="acme", seed=base["seed"]
    )
    record = runtime.ledger.get_specimen(result.specimen_id)
    shown = {s.name: (s.alias, s.resolved) for s in record.steps}
    assert shown["decider"] == ("decider", "r1")
    assert shown["supplier-docs"] == ("supplier-index@prod", "snap-20261102")
    assert not any((v or "").startswith("hmac-sha256:") for pair in shown.values() for v in pair)


@pytest.mark.parametrize(
    "function", [_scope, _runtime_boundary, _list_alias], ids=["scope", "boundary", "list-alias"]
)
def test_run_time_scope_boundary_or_odd_alias_is_refused(runtime: Runtime, function: Any) -> None:
    with pytest.raises(SpecError):
        capture(runtime, _agent(function), SECRET, tenant_id="t1", seed=1, specimen_id="sp-m1")
    assert runtime.ledger.run_status("sp-m1") is RunStatus.INCOMPLETE
    assert scan_tree(runtime.home.root, [CANARY]) == {}


def test_declared_scope_is_kept(runtime: Runtime) -> None:
    def scoped(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
        with ctx.agent_scope("planner"):
            ctx.call(LOOKUP, {"q": "x"}, live=lambda r: {"a": 1})
        return _outcome()

    result = capture(runtime, _agent(scoped, scopes=("planner",)), SECRET, tenant_id="t1", seed=1)
    record = runtime.ledger.get_specimen(result.specimen_id)
    assert [s.call_id for s in record.steps if s.name == "lookup"] == ["planner/lookup#0"]


def test_effect_token_is_a_keyed_digest_and_dies_with_the_specimen(runtime: Runtime) -> None:
    result = capture(runtime, _agent(_token), SECRET, tenant_id="t1", seed=1)
    record = runtime.ledger.get_specimen(result.specimen_id)
    (step,) = [s for s in record.steps if s.name == "charge"]
    assert step.effect is not None
    assert step.effect.idempotency_token.startswith("hmac-sha256:")
    assert find_canaries(_db_bytes(runtime), [CANARY]) == []
    # plaintext lives only in the encrypted store, where the replay can read it
    opened = open_specimen(
        runtime, result.specimen_id, job_id="j-1", lease_seconds=60, now=utc_now()
    )
    (served,) = [s for s in opened.trajectory.steps if s.name == "charge"]
    assert served.idempotency_token == f"tok-{CANARY}-input"
    erase_specimen(runtime, result.specimen_id, now=utc_now())
    assert scan_tree(runtime.home.root, [CANARY]) == {}


def test_answer_times_are_sealed_or_coarse(runtime: Runtime) -> None:
    result = capture(runtime, _agent(_times), SECRET, tenant_id="t1", seed=1)
    record = runtime.ledger.get_specimen(result.specimen_id)
    lookup, charge = (next(s for s in record.steps if s.name == n) for n in ("lookup", "charge"))
    assert lookup.valid_time.startswith("hmac-sha256:")
    assert "789012" not in record.manifest_digest + str(record.manifest)
    assert charge.effect is not None
    assert charge.effect.token_expires_at == "2031-07-04T12:34:57Z"
    decrypted = decrypt_specimen(runtime, "t1", result.specimen_id)
    sealed = decode_payload(decrypted[(lookup.seq, "identity", "/valid_time")])
    assert sealed == "2031-07-04T12:34:56.789012Z"


def test_capture_failure_code_is_not_agent_chosen(runtime: Runtime) -> None:
    with pytest.raises(EnclaveError):
        capture(runtime, _agent(_failure_code), SECRET, tenant_id="t1", seed=1, specimen_id="sp-f")
    with runtime.ledger.engine.connect() as conn:
        (code,) = conn.exec_driver_sql("SELECT failure_code FROM runs WHERE id='sp-f'").one()
    assert code == "agent_crashed"
    assert find_canaries(_db_bytes(runtime), [CANARY]) == []


# -- code identity ---------------------------------------------------------------------

AGENT_SOURCE = """
from enclave.capture import AgentSpec, BoundarySpec, policy
from ledger import StepKind

LOOKUP = BoundarySpec(
    kind=StepKind.TOOL, name="lookup", request={"q": policy("internal")},
    response={"value": policy("internal")},
    json_schema={"type": "object", "properties": {"value": {"type": "number"}}},
    substitute=lambda request, resolved: {"value": 0.5},
)


def run(ctx, inputs):
    value = ctx.call(LOOKUP, {"q": "x"}, live=lambda r: {"value": 0.7})["value"]
    return {"score": OFFSET + value / 2, "decision": "OK" if value > 0.6 else "REVIEW"}


OFFSET = 0.0
AGENT = AgentSpec(
    name=__name__ + ":AGENT", version="1", function=run,
    inputs={"q": policy("internal")},
    outcome={"score": policy("internal"), "decision": policy("internal")},
    boundaries=(LOOKUP,),
)
"""


@pytest.fixture
def temp_agent(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    folder = tmp_path / "agentsrc"
    folder.mkdir()
    name = f"temp_agent_{os.getpid()}_{abs(hash(str(tmp_path))) % 10**8}"
    path = folder / f"{name}.py"
    path.write_text(AGENT_SOURCE)
    sys.path.insert(0, str(folder))
    try:
        yield name, path
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)


def _temp_capture(runtime: Runtime, name: str) -> str:
    module = importlib.import_module(name)
    return capture(runtime, module.AGENT, {"q": "x"}, tenant_id="t1", seed=1).specimen_id


def _request(specimen_id: str, **extra: Any) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.NULLIFY, call_id="main/lookup#0", field="/value"),
        purpose="code identity",
        requester="test",
        samples=2,
        **extra,
    )


def test_manifest_records_code_identity(runtime: Runtime, temp_agent: tuple[str, Path]) -> None:
    name, path = temp_agent
    specimen = _temp_capture(runtime, name)
    recorded = CodeIdentity.from_dict(runtime.ledger.get_specimen(specimen).manifest["code"])
    assert recorded == code_identity(f"{name}:AGENT", fresh=True)
    assert recorded.modules == (name,)
    assert recorded.interpreter.startswith(sys.implementation.name + "-")
    # the check passes while the file is unchanged
    open_specimen(runtime, specimen, job_id="j-1", lease_seconds=60, now=utc_now())


def test_changed_agent_file_refuses_the_audit(
    runtime: Runtime, temp_agent: tuple[str, Path]
) -> None:
    name, path = temp_agent
    specimen = _temp_capture(runtime, name)
    # the author ships code that recognises the replay and returns a chosen outcome
    path.write_text(AGENT_SOURCE.replace("OFFSET = 0.0", "OFFSET = 0.25"))
    with pytest.raises(Refused) as caught:
        run_audit(runtime, _request(specimen), now=utc_now(), audit_id="au-code")
    assert caught.value.code == "code_changed"
    assert "\n" not in str(caught.value)
    (failed,) = runtime.ledger.entries(kind="audit.failed", subject="au-code")
    assert failed.body["reason"] == "code_changed"
    assert runtime.ledger.entries(kind="grant.used") == []  # refused before any grant
    assert runtime.ledger.entries(kind="certificate.issued") == []


def test_declared_code_revision_is_admitted_and_only_that_one(
    runtime: Runtime, temp_agent: tuple[str, Path]
) -> None:
    name, path = temp_agent
    specimen = _temp_capture(runtime, name)
    path.write_text(AGENT_SOURCE.replace("OFFSET = 0.0", "OFFSET = 0.25"))
    candidate = code_identity(f"{name}:AGENT", fresh=True).digest
    assert candidate is not None
    now = utc_now()
    open_specimen(
        runtime, specimen, job_id="j-1", lease_seconds=60, now=now, code_revision=candidate
    )
    other = "sha256:" + "0" * 64
    with pytest.raises(Refused) as caught:
        open_specimen(
            runtime, specimen, job_id="j-2", lease_seconds=60, now=now, code_revision=other
        )
    assert caught.value.code == "code_changed"
    request = _request(specimen, code_revision=candidate)
    assert AuditRequest.from_dict(request.to_dict()) == request
    predicate = request.to_predicate(
        call_id="main/lookup#0", digester=runtime.digests.for_tenant("t1")
    )
    assert predicate["code_revision"] == candidate
    assert "code_revision" not in _request(specimen).to_dict()


def test_unchanged_code_with_a_declared_revision_is_no_change(
    runtime: Runtime, temp_agent: tuple[str, Path]
) -> None:
    name, _path = temp_agent
    specimen = _temp_capture(runtime, name)
    same = code_identity(f"{name}:AGENT", fresh=True).digest
    with pytest.raises(Refused) as caught:
        open_specimen(
            runtime, specimen, job_id="j-1", lease_seconds=60, now=utc_now(), code_revision=same
        )
    assert caught.value.code == "no_change"


def test_other_interpreter_refuses(
    runtime: Runtime, temp_agent: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _path = temp_agent
    specimen = _temp_capture(runtime, name)
    monkeypatch.setattr("enclave.capture._code_identity.INTERPRETER", "pypy-3.11.0")
    with pytest.raises(Refused) as caught:
        open_specimen(runtime, specimen, job_id="j-1", lease_seconds=60, now=utc_now())
    assert caught.value.code == "code_changed"


def test_code_revision_must_look_like_a_digest() -> None:
    from enclave import BadInput

    with pytest.raises(BadInput):
        _request("sp-1", code_revision="main")


@pytest.mark.skipif(EXE is None, reason="the console script is not installed")
def test_cli_audit_of_changed_code_is_one_line_refusal(
    tmp_path: Path, temp_agent: tuple[str, Path]
) -> None:
    assert EXE is not None
    name, path = temp_agent
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(path.parent), env.get("PYTHONPATH", "")])
    root = tmp_path / "cli-home"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [EXE, *args, "--home", str(root)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )

    assert cli("init").returncode == 0
    source = tmp_path / "input.json"
    source.write_text('{"tenant": "t1", "seed": 1, "inputs": {"q": "x"}}')
    captured = cli("capture", f"{name}:AGENT", "--input", str(source), "--json")
    assert captured.returncode == 0, captured.stderr
    specimen = json.loads(captured.stdout)["specimen_id"]
    path.write_text(AGENT_SOURCE.replace("OFFSET = 0.0", "OFFSET = 0.25"))
    out = cli(
        "audit",
        specimen,
        "--purpose",
        "code identity",
        "--call",
        "main/lookup#0",
        "--field",
        "/value",
        "--strategy",
        "nullify",
        "--samples",
        "2",
    )
    assert out.returncode != 0
    assert out.stdout.strip() == ""  # (a progress display may leave a bare newline)
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: "), out.stderr
    assert "code_changed" in out.stderr or "changed since capture" in out.stderr
    runtime = Runtime.open(Home.open(root), env={})
    try:
        (failed,) = runtime.ledger.entries(kind="audit.failed")
        assert failed.body["reason"] == "code_changed"
    finally:
        runtime.close()
