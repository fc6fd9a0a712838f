"""Validity of interventions and of the values the agent sees at replay.

Each known-answer test compares an audit's answer with the truth, computed by running
the agent live with the intervention applied to the live answer
(``tests.agents.validity_values_agents.live_decision``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from enclave import BadInput, Home, Refused, Runtime
from enclave.capture import load_agent
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.runs import apply_intervention, open_specimen, placebo_of, replay_run
from ledger import canonical_json
from tests.agents import replay_agents
from tests.agents import validity_values_agents as agents


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = Runtime.open(Home.init(tmp_path / "home"))
    yield rt
    rt.close()


def now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def opened(runtime: Runtime, specimen: str) -> Any:
    return open_specimen(runtime, specimen, job_id="values-test", lease_seconds=60, now=now())


def same_shape(a: Any, b: Any) -> bool:
    """Equal, with identical types and key order at every level."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_shape(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_shape(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return bool(a == b)


# -- 1. payload values round-trip as the agent produced them --------------------------------

_text = st.text(max_size=12).filter(lambda s: not any(0xD800 <= ord(c) < 0xE000 for c in s))
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(min_value=-(2**53), max_value=2**53).map(float)  # integral floats
    | _text
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=5),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_payload_codec_keeps_types_and_key_order(value: Any) -> None:
    from enclave.capture import decode_payload, encode_payload

    canonical_json(value)  # the capture accepts it
    assert same_shape(decode_payload(encode_payload(value)), value)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_payloads_sealed_before_still_decode(value: Any) -> None:
    from enclave.capture import decode_payload
    from ledger import loads

    legacy = canonical_json(value)  # how a field was sealed before
    assert decode_payload(legacy) == loads(legacy)


def test_replay_serves_values_as_captured(runtime: Runtime) -> None:
    specimen = replay_agents.capture_specimen(runtime, agents.SHAPE_AGENT)
    step = opened(runtime, specimen).trajectory.step_by_call("main/quote#0")
    live = agents._quote_answer({}).response
    for name in ("amount", "ranking"):
        assert same_shape(step.response[name], live[name]), name


def test_baseline_of_a_type_and_order_sensitive_agent_reproduces(runtime: Runtime) -> None:
    inputs = replay_agents.baseline_inputs()
    truth = agents.live_decision(agents.SHAPE_AGENT, inputs, seed=5, change=agents.unchanged)
    assert truth == "HIGH"  # float amount and "zeta" first: 0.2 + 0.3 + 0.3 + 0.1
    specimen = replay_agents.capture_specimen(runtime, agents.SHAPE_AGENT, inputs, seed=5)
    spec = opened(runtime, specimen)
    run = replay_run(
        trajectory=spec.trajectory,
        agent=load_agent(spec.record.agent_name),
        seed=5,
        variant="baseline",
        audit_time=now(),
    )
    assert run.failure is None, run.failure
    assert run.layers is not None
    assert run.layers["decision"] == truth
    assert run.layers["score"] == pytest.approx(spec.trajectory.outcome["score"], abs=1e-12)


# -- 2. a revision swap reaches every call of its revision point ---------------------------

REVISION_M2 = Intervention(Strategy.REVISION, revision=("model", "m2"))


def test_revision_marks_every_call_of_the_point(runtime: Runtime) -> None:
    specimen = replay_agents.capture_specimen(runtime, agents.TWICE_AGENT)
    trajectory = opened(runtime, specimen).trajectory
    applied = apply_intervention(
        trajectory,
        REVISION_M2,
        agent=agents.TWICE_AGENT,
        digester=runtime.digests.for_tenant("acme"),
    )
    calls = ("main/advisor#0", "main/advisor#1")
    assert applied.declared_changes == tuple(f"{c}#identity" for c in calls)
    assert sorted(applied.actual_changes) == sorted(applied.declared_changes)
    assert applied.unchanged_digest_equal
    for call in calls:
        step = applied.trajectory.step_by_call(call)
        assert (step.resolved, step.intervened, step.serve_by_substitute) == ("m2", True, True)
    placebo = placebo_of(trajectory, applied)
    for call in calls:
        step = placebo.step_by_call(call)
        assert (step.resolved, step.intervened, step.serve_by_substitute) == ("m1", True, True)
    others = [s for s in placebo.steps if s.call_id not in calls]
    assert others and not any(s.intervened or s.serve_by_substitute for s in others)


def test_revision_audit_finds_the_decisive_second_call(runtime: Runtime) -> None:
    inputs = replay_agents.baseline_inputs()
    before = agents.live_decision(agents.TWICE_AGENT, inputs, seed=5, change=agents.unchanged)
    after = agents.live_decision(
        agents.TWICE_AGENT, inputs, seed=5, change=agents.model_revision("m2")
    )
    assert (before, after) == ("HIGH", "LOW")  # the truth: the swap flips the decision
    specimen = replay_agents.capture_specimen(runtime, agents.TWICE_AGENT, inputs, seed=5)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=REVISION_M2,
        purpose="revision validity",
        requester="test",
        samples=4,
    )
    outcome = run_audit(runtime, request, now=now())
    assert outcome.failure is None, outcome.failure
    assert outcome.effect is not None and outcome.effect.flip_rate == 1.0


# -- 3. nested targets by JSON Pointer ------------------------------------------------------

ACCOUNT_CALL = "main/account#0"


def _apply_limits(runtime: Runtime, intervention: Intervention) -> Any:
    specimen = replay_agents.capture_specimen(runtime, agents.LIMITS_AGENT)
    return apply_intervention(
        opened(runtime, specimen).trajectory,
        intervention,
        agent=agents.LIMITS_AGENT,
        digester=runtime.digests.for_tenant("acme"),
    )


def test_a_nested_leaf_target_declares_exactly_that_leaf(runtime: Runtime) -> None:
    iv = Intervention(Strategy.REPLACE, call_id=ACCOUNT_CALL, field="/limits/daily", value=0.3)
    applied = _apply_limits(runtime, iv)
    leaf = f"{ACCOUNT_CALL}#response/limits/daily"
    assert applied.declared_changes == applied.actual_changes == (leaf,)
    assert applied.unchanged_digest_equal
    limits = applied.trajectory.step_by_call(ACCOUNT_CALL).response["limits"]
    assert limits == {"daily": 0.3, "weekly": 0.9, "a/b~c": 0.5}
    assert list(limits) == ["daily", "weekly", "a/b~c"]  # the agent's key order is kept


def test_pointer_escapes_name_a_key_holding_slash_and_tilde(runtime: Runtime) -> None:
    iv = Intervention(Strategy.NULLIFY, call_id=ACCOUNT_CALL, field="/limits/a~1b~0c")
    applied = _apply_limits(runtime, iv)
    assert applied.declared_changes == (f"{ACCOUNT_CALL}#response/limits/a~1b~0c",)
    assert applied.trajectory.step_by_call(ACCOUNT_CALL).response["limits"]["a/b~c"] == 0


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("/limits/daily", 1.5, "out_of_bounds"),  # the nested schema's maximum
        ("/limits/hourly", 0.1, "unknown_schema"),  # no nested property declared
        ("/owner/name", "x", "unknown_schema"),  # a string has no members
    ],
    ids=["nested-bounds", "undeclared-leaf", "member-of-a-scalar"],
)
def test_nested_targets_are_checked_against_the_nested_schema(
    runtime: Runtime, field: str, value: Any, code: str
) -> None:
    iv = Intervention(Strategy.REPLACE, call_id=ACCOUNT_CALL, field=field, value=value)
    with pytest.raises(Refused) as info:
        _apply_limits(runtime, iv)
    assert info.value.code == code


def test_replacing_an_object_that_changes_two_leaves_is_refused(runtime: Runtime) -> None:
    two = {"daily": 0.1, "weekly": 0.2, "a/b~c": 0.5}
    iv = Intervention(Strategy.REPLACE, call_id=ACCOUNT_CALL, field="/limits", value=two)
    with pytest.raises(Refused) as info:
        _apply_limits(runtime, iv)
    assert info.value.code == "undeclared_change"


def test_a_write_that_also_touches_a_nested_sibling_is_refused(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # white-box: wrap the private writer where the intervention module looks it up
    # (named as a target, as monkeypatch names it, not imported past the front)
    target = "enclave.replay._interventions._write"
    real_write = sys.modules[target.rpartition(".")[0]]._write

    def sloppy(container: Any, keys: Any, value: Any) -> Any:
        out = real_write(container, keys, value)
        if "limits" not in out:  # the inner call of the recursion
            return out
        return {**out, "limits": {**out["limits"], "weekly": 0.1}}  # "tidies" a sibling

    monkeypatch.setattr(target, sloppy)
    iv = Intervention(Strategy.REPLACE, call_id=ACCOUNT_CALL, field="/limits/daily", value=0.3)
    with pytest.raises(Refused) as info:
        _apply_limits(runtime, iv)
    assert info.value.code == "undeclared_change"


def test_a_bundle_of_nested_leaves_declares_each_leaf(runtime: Runtime) -> None:
    iv = Intervention(
        Strategy.REPLACE,
        call_id=ACCOUNT_CALL,
        bundle="caps",
        value={"/limits/daily": 0.1, "/limits/weekly": 0.2},
    )
    applied = _apply_limits(runtime, iv)
    assert applied.declared_changes == (
        f"{ACCOUNT_CALL}#response/limits/daily",
        f"{ACCOUNT_CALL}#response/limits/weekly",
    )
    assert sorted(applied.actual_changes) == sorted(applied.declared_changes)
    assert applied.unchanged_digest_equal


def test_nested_perturb_audit_matches_the_live_answer(runtime: Runtime) -> None:
    inputs = replay_agents.baseline_inputs()

    def lower_daily(call: str, spec: Any, request: Any, response: Any) -> Any:
        if call != ACCOUNT_CALL:
            return response
        return {**response, "limits": {**response["limits"], "daily": 0.8 - 0.5}}

    before = agents.live_decision(agents.LIMITS_AGENT, inputs, seed=5, change=agents.unchanged)
    after = agents.live_decision(agents.LIMITS_AGENT, inputs, seed=5, change=lower_daily)
    assert (before, after) == ("HIGH", "LOW")
    specimen = replay_agents.capture_specimen(runtime, agents.LIMITS_AGENT, inputs, seed=5)
    iv = Intervention(Strategy.PERTURB, call_id=ACCOUNT_CALL, field="/limits/daily", delta=-0.5)
    request = AuditRequest(
        specimen_id=specimen, intervention=iv, purpose="nested", requester="test", samples=4
    )
    outcome = run_audit(runtime, request, now=now())
    assert outcome.failure is None, outcome.failure
    assert outcome.effect is not None and outcome.effect.flip_rate == 1.0


# -- 4. one intervention model: one rule and one message, whichever front end -------------

CANARY = "CANARY-IVM-51c2"
CALL = "main/lookup#0"
_FIELD_TARGET = {"call_id": CALL, "field": "/value"}

# (wire parameters, the MESSAGES key every front end must answer with)
BAD_INTERVENTIONS: list[tuple[dict[str, Any], str]] = [
    ({"strategy": "REPLACE", **_FIELD_TARGET, "value": 0.5}, "strategy"),
    ({"strategy": f"explode-{CANARY}", **_FIELD_TARGET}, "strategy"),
    ({**_FIELD_TARGET}, "strategy"),
    ({"strategy": "perturb", **_FIELD_TARGET, "delta": True}, "delta"),
    ({"strategy": "perturb", **_FIELD_TARGET, "delta": "1"}, "delta"),
    ({"strategy": "perturb", **_FIELD_TARGET, "delta": f"{CANARY}"}, "delta"),
    ({"strategy": "perturb", **_FIELD_TARGET, "delta": float("nan")}, "delta"),
    ({"strategy": "perturb", **_FIELD_TARGET, "delta": float("inf")}, "delta"),
    ({"strategy": "perturb", **_FIELD_TARGET, "delta": 0}, "delta"),
    ({"strategy": "replace", **_FIELD_TARGET}, "value"),
    ({"strategy": "nullify", "call_id": "", "field": "/value"}, "call_id"),
    ({"strategy": "nullify", "call_id": "   ", "field": "/value"}, "call_id"),
    ({"strategy": "nullify", "call_id": f"{CANARY}\x1b[2J", "field": "/value"}, "call_id"),
    ({"strategy": "nullify", "call_id": CALL, "field": f"/{CANARY}/~2"}, "field"),
    ({"strategy": "revision", "revision": f"model{CANARY}"}, "revision"),
    ({"strategy": "revision", "revision": "model= "}, "revision"),
    ({"strategy": "nullify", **_FIELD_TARGET, "revision": "model=r2"}, "extra:revision"),
    ({"strategy": "nullify", **_FIELD_TARGET, "delta": 0.1}, "extra:delta"),
]
_IDS = [
    "upper-case",
    "unknown-strategy",
    "no-strategy",
    "delta-true",
    "delta-string",
    "delta-text",
    "delta-nan",
    "delta-inf",
    "delta-zero",
    "replace-no-value",
    "empty-call",
    "blank-call",
    "control-call",
    "bad-escape",
    "revision-form",
    "revision-blank",
    "revision-on-field",
    "delta-on-nullify",
]


def _message_for(key: str) -> str:
    from enclave.replay.requests import MESSAGES

    return MESSAGES[key]


@pytest.mark.parametrize(("data", "key"), BAD_INTERVENTIONS, ids=_IDS)
def test_the_model_refuses_with_one_line_that_never_echoes(data: dict[str, Any], key: str) -> None:
    for parse in (Intervention.from_json, Intervention.model_validate):
        with pytest.raises(BadInput) as info:
            parse(data)
        assert str(info.value) == _message_for(key)
        assert "\n" not in str(info.value) and CANARY not in str(info.value)


def _cli_args(data: dict[str, Any]) -> list[str]:
    import json

    options = {"strategy": "--strategy", "call_id": "--call", "field": "--field"}
    args: list[str] = []
    for name, item in data.items():
        if name in options:
            args += [options[name], item]
        elif name == "revision":
            args += ["--revision", item]
        else:  # value and delta are JSON on the command line
            args += [f"--{name}", json.dumps(item)]
    return args


@pytest.mark.parametrize(("data", "key"), BAD_INTERVENTIONS, ids=_IDS)
def test_the_cli_gives_the_same_line(tmp_path: Path, data: dict[str, Any], key: str) -> None:
    from tests.support.cli_runner import run_cli

    home = Home.init(tmp_path / "home").root
    done = run_cli(home, "audit", "sp-none", "--purpose", "validity", *_cli_args(data))
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: {_message_for(key)}\n"
    assert CANARY not in done.stdout + done.stderr


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, str]]]:
    import warnings

    from starlette.exceptions import StarletteDeprecationWarning

    from enclave import utc_now
    from enclave.governance import add_analyst
    from enclave.service import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        from fastapi.testclient import TestClient

    home = Home.init(tmp_path_factory.mktemp("service") / "home")
    rt = Runtime.open(home, env={})
    try:
        _, token = add_analyst(rt, "alice", tenant="acme", roles=["auditor"], now=utc_now())
    finally:
        rt.close()
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        yield client, {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(("data", "key"), BAD_INTERVENTIONS, ids=_IDS)
def test_the_service_gives_the_same_line(
    service: tuple[Any, dict[str, str]], data: dict[str, Any], key: str
) -> None:
    import json

    client, auth = service
    body = {"specimen_id": "sp-none", "samples": 4, "seed": 1, "purpose": "validity", **data}
    response = client.post(
        "/api/v1/audits",
        headers={**auth, "Content-Type": "application/json"},
        content=json.dumps(body).encode(),  # NaN and Infinity as Python's json writes them
    )
    assert response.status_code == 400, response.text
    assert response.json() == {"error": {"code": "bad_input", "message": _message_for(key)}}
    assert CANARY not in response.text


def test_an_intervention_round_trips_through_its_wire_form() -> None:
    cases = [
        Intervention(Strategy.REPLACE, call_id=CALL, field="/a/b~1c", value=None),
        Intervention(Strategy.PERTURB, call_id=CALL, field="/value", delta=-0.25),
        Intervention(Strategy.NULLIFY, call_id=CALL, bundle="caps"),
        Intervention(Strategy.REPLACE, call_id=CALL, bundle="caps", value={"/a": 1.0}),
        Intervention(Strategy.REVISION, revision=("model", "r2")),
    ]
    for iv in cases:
        assert Intervention.from_json(iv.to_json()) == iv
    assert cases[0].to_json() == {
        "strategy": "replace",
        "call_id": CALL,
        "field": "/a/b~1c",
        "value": None,
    }
    assert cases[-1].to_json() == {"strategy": "revision", "revision": "model=r2"}
    with pytest.raises(BadInput):
        Intervention(Strategy.REVISION, revision=("model=x", "r2"))  # would not parse back


_NAMES = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=24)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_DELTAS = st.floats(-1e6, 1e6, allow_nan=False).filter(lambda d: d != 0)
_TARGETS = st.one_of(
    st.builds(lambda p: {"field": "/" + p.replace("~", "~0").replace("/", "~1")}, _NAMES),
    st.builds(lambda b: {"bundle": b}, _NAMES),
)


@st.composite
def _wire_interventions(draw: st.DrawFn) -> dict[str, Any]:
    strategy = draw(st.sampled_from(["nullify", "replace", "perturb", "revision"]))
    if strategy == "revision":
        point = draw(_NAMES.filter(lambda n: "=" not in n))
        return {"strategy": strategy, "revision": f"{point}={draw(_NAMES)}"}
    data: dict[str, Any] = {"strategy": strategy, "call_id": draw(_NAMES), **draw(_TARGETS)}
    if strategy == "replace":
        bundle = "bundle" in data
        data["value"] = draw(st.dictionaries(_NAMES, _JSON, max_size=3) if bundle else _JSON)
    if strategy == "perturb":
        data["delta"] = draw(_DELTAS)
    return data


@settings(max_examples=150, deadline=None)
@given(_wire_interventions())
def test_any_valid_wire_intervention_round_trips(data: dict[str, Any]) -> None:
    iv = Intervention.from_json(data)
    assert canonical_json(iv.to_json()) == canonical_json(data)
    assert Intervention.from_json(iv.to_json()) == iv
    rebuilt = Intervention(
        iv.strategy,
        call_id=iv.call_id,
        field=iv.field,
        bundle=iv.bundle,
        value=iv.value,
        delta=iv.delta,
        revision=iv.revision,
    )
    assert rebuilt == iv  # the Python constructor builds the same object


def test_a_code_revision_is_built_in_python_only() -> None:
    code = Intervention(Strategy.CODE)
    assert code.to_json() == {"strategy": "code"}
    with pytest.raises(BadInput) as info:
        Intervention.from_json(code.to_json())  # its candidate travels in the request
    assert str(info.value) == _message_for("strategy")
    with pytest.raises(BadInput) as info:
        Intervention(Strategy.CODE, call_id=CALL)
    assert str(info.value) == _message_for("extra:call_id")


def test_an_invalid_intervention_cannot_be_built_by_any_route() -> None:
    import pydantic

    class Body(pydantic.BaseModel):
        intervention: Intervention

    bad = {"strategy": "perturb", **_FIELD_TARGET, "delta": float("nan")}
    for build in (
        lambda: Intervention(Strategy.PERTURB, call_id=CALL, field="/value", delta=float("nan")),
        lambda: Intervention.model_validate(bad),
        lambda: Body.model_validate({"intervention": bad}),
    ):
        with pytest.raises(BadInput) as info:
            build()
        assert str(info.value) == _message_for("delta")
    iv = Intervention(Strategy.NULLIFY, call_id=CALL, field="/value")
    with pytest.raises(pydantic.ValidationError):
        iv.call_id = "main/other#0"  # type: ignore[misc]  # frozen


def test_the_replay_worker_does_not_load_pydantic() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import enclave.replay.worker._engine, enclave.replay.worker._entry\n"
        "import enclave.replay._model\n"
        "print('pydantic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"


class _InProcess(httpx.BaseTransport):
    """An ``httpx`` transport that hands each request to the service's test client: the
    notebook client speaks ``httpx``, the test client may be built on another library."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self._client.request(
            request.method, str(request.url), headers=dict(request.headers), content=request.read()
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)


@pytest.mark.parametrize(("data", "key"), BAD_INTERVENTIONS, ids=_IDS)
def test_the_notebook_client_gives_the_same_line(
    service: tuple[Any, dict[str, str]], data: dict[str, Any], key: str
) -> None:
    from jupyter_ext import AuditRequestBody, EnclaveClient, ServiceRefused

    if data.get("strategy") == "REPLACE":
        pytest.skip("the notebook names strategies in upper case, as its panels show them")
    delta = data.get("delta")
    if isinstance(delta, float) and not math.isfinite(delta):
        pytest.skip("the client's JSON encoder cannot send NaN or Infinity at all")
    http, auth = service
    client = EnclaveClient(
        base_url="http://testserver",
        token=auth["Authorization"].removeprefix("Bearer "),
        transport=_InProcess(http),  # the service in process
    )
    kwargs = {k: v for k, v in data.items() if k != "value"}
    if "value" in data:
        kwargs |= {"value": data["value"], "has_value": True}
    body = AuditRequestBody(specimen_id="sp-none", purpose="validity", samples=4, **kwargs)
    with pytest.raises(ServiceRefused) as info:
        client.request_audit(body)
    assert (info.value.status, info.value.code) == (400, "bad_input")
    assert info.value.message == _message_for(key)
    assert CANARY not in str(info.value)
