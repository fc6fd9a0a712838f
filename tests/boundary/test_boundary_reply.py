"""What crosses back from the worker is bounded and typed; every certificate states its
disclosure bound (DESIGN "who is trusted": agent code may try to smuggle content out
through anything that reaches a certificate, a log, the ledger or an HTTP body).

Each agent in ``tests/agents/boundary_reply_agents.py`` is captured harmlessly and, when
replayed, tries one way out: a failure code, a call id, a proposal key, score digits,
a patched reply, an out-of-range integer. Every audit must either fail closed with a
reason from the closed set, or issue a certificate whose agent-influenced values are
quantised and named only from the specimen's own vocabulary. Then a canary sweep over
the certificates, the home (ledger database included), CLI output and ledger rows.
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from enclave import Home, Runtime
from enclave.capture import AgentSpec
from enclave.replay import (
    AuditOutcome,
    AuditRequest,
    Intervention,
    Strategy,
    Tolerances,
    run_audit,
)
from enclave.replay.disclosure import (
    BIN_EDGES,
    MIN_RESOLUTION,
    VocabularySize,
    disclosure_bound,
    histogram,
    quantize,
    resolution_for,
)
from enclave.replay.layers import LAYERS, compare_layers
from enclave.replay.reply import (
    FAILURE_REASONS,
    ReplyInvalid,
    ValueOutOfRange,
    Vocabulary,
    parse_runs,
    parse_samples,
)
from enclave.replay.stages import SampleSummary
from enclave.sandbox import SandboxLimits
from ledger.certificates.statistics import clopper_pearson
from tests.agents import boundary_reply_agents as hostile
from tests.agents import replay_agents as agents
from tests.support import cli_runner
from tests.support.canary import find_canaries, scan_tree

CANARIES = (hostile.CANARY, agents.CANARY)
REPLACE_VALUE = Intervention(Strategy.REPLACE, call_id="main/lookup#0", field="/value", value=0.2)
LIMITS = SandboxLimits(wall_seconds=30.0)
RESOLUTION = 1e-4  # the default: at most 4 significant digits on [-1, 1]

HOSTILE: dict[str, AgentSpec] = {
    "failure-code": hostile.FAILURE_CODE_AGENT,
    "new-scope": hostile.NEW_SCOPE_AGENT,
    "proposal-key": hostile.PROPOSAL_KEY_AGENT,
    "score-digits": hostile.SCORE_DIGITS_AGENT,
    "patch-reply": hostile.PATCH_REPLY_AGENT,
    "patch-flood": hostile.PATCH_FLOOD_AGENT,
    "big-int": hostile.BIG_INT_AGENT,
    "plain": agents.PLAIN_AGENT,
}


@dataclass
class World:
    runtime: Runtime
    home: Path
    specimens: dict[str, str] = field(default_factory=dict)
    outcomes: dict[str, AuditOutcome] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # name -> exception text


def _now() -> datetime:
    return datetime.now(UTC) + timedelta(minutes=5)


def _request(specimen: str, samples: int = 4) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen,
        intervention=REPLACE_VALUE,
        purpose="boundary review",
        requester="test",
        samples=samples,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("boundary")
    runtime = Runtime.open(Home.init(base / "home"))
    state = World(runtime=runtime, home=base / "home")
    try:
        for name, agent in HOSTILE.items():
            specimen = agents.capture_specimen(runtime, agent)
            state.specimens[name] = specimen
            try:
                state.outcomes[name] = run_audit(
                    runtime, _request(specimen), now=_now(), limits=LIMITS
                )
            except Exception as exc:  # noqa: BLE001 - recorded: the tests say which may not raise
                state.errors[name] = f"{type(exc).__name__}: {exc}"
        yield state
    finally:
        runtime.close()


def _predicate(outcome: AuditOutcome) -> dict[str, Any]:
    assert outcome.envelope is not None, outcome.to_dict()
    envelope = outcome.envelope
    statement = json.loads(base64.b64decode(envelope["payload"]))
    predicate: dict[str, Any] = statement["predicate"]
    return predicate


def _failed_bodies(world: World, audit_id: str) -> list[dict[str, Any]]:
    return [e.body for e in world.runtime.ledger.entries(kind="audit.failed", subject=audit_id)]


def _on_grid(value: float, resolution: float = RESOLUTION) -> bool:
    steps = value / resolution
    return abs(steps - round(steps)) < 1e-6 and -1 <= value <= 1


# -- failure reasons -----------------------------------------------------------------------


def test_agent_failure_code_and_text_never_cross(world: World) -> None:
    outcome = world.outcomes["failure-code"]
    assert outcome.classification == "failed"
    assert outcome.failure == "agent_error"
    assert outcome.failure in FAILURE_REASONS
    bodies = _failed_bodies(world, outcome.audit_id)
    assert [b["reason"] for b in bodies] == ["agent_error"]
    shown = json.dumps([outcome.to_dict(), bodies]).encode()
    assert find_canaries(shown, CANARIES) == []


# -- names only from the specimen's vocabulary -----------------------------------------------


def test_a_call_made_only_in_replay_is_reported_by_position(world: World) -> None:
    outcome = world.outcomes["new-scope"]
    assert outcome.classification == "observable-only", outcome.to_dict()
    predicate = _predicate(outcome)
    step = predicate["auditability"]["first_unverifiable_step"]
    assert step == "new_call #0"
    assert find_canaries(json.dumps(predicate).encode(), CANARIES) == []


def test_proposal_keys_come_from_the_recorded_proposal_only(world: World) -> None:
    outcome = world.outcomes["proposal-key"]
    assert outcome.classification == "baseline-not-reproduced", outcome.to_dict()
    predicate = _predicate(outcome)
    # a count in the certificate: the agent's own key names it nowhere (v3)
    assert predicate["baseline"]["layers"]["proposal"]["changed_fields"] == 1
    assert find_canaries(json.dumps(predicate).encode(), CANARIES) == []


# -- numbers: quantised, clamped ------------------------------------------------------------


def test_baseline_score_delta_is_quantised(world: World) -> None:
    outcome = world.outcomes["score-digits"]
    assert outcome.classification == "baseline-not-reproduced", outcome.to_dict()
    layer = _predicate(outcome)["baseline"]["layers"]["score"]
    assert layer["ok"] is False
    assert _on_grid(layer["delta"])
    assert layer["delta"] == pytest.approx(round(hostile.DIGITS, 4), abs=1e-12)


def test_effect_carries_no_per_sample_values(world: World) -> None:
    # no per-sample rows, no histogram: layer changes and served-by marks are coarse (v3)
    outcome = world.outcomes["plain"]
    assert outcome.classification in {"influential", "equivalent", "inconclusive"}
    predicate = _predicate(outcome)
    effect = predicate["effect"]
    assert not {"deltas", "histogram"} & set(effect) and "sample_rows" not in predicate
    assert set(effect["layer_changes"].values()) <= {"none", "some", "all"}
    rows = predicate["served_by"]
    assert {v for r in rows for k, v in r.items() if k not in ("arm", "calls")} <= {
        "none",
        "some",
        "all",
    }
    for value in (
        effect["mean_delta"],
        *effect["delta_interval"],
        *effect["equivalence"]["delta_interval"],
        effect["mde"]["delta"],
        predicate["placebo"]["max_abs_delta"],
    ):
        assert _on_grid(value), value


def test_certificate_size_does_not_grow_with_the_samples(world: World) -> None:
    # a v3 certificate has no per-sample rows: 400 samples state what 4 do, in as many
    # bytes give or take the digits of the counts, and a bound larger only by log2(N)
    specimen = world.specimens["plain"]
    sizes, bits = [], []
    for samples in (4, 400):
        outcome = run_audit(world.runtime, _request(specimen, samples), now=_now(), limits=LIMITS)
        predicate = _predicate(outcome)
        assert "sample_rows" not in predicate
        sizes.append(len(json.dumps(predicate, sort_keys=True)))
        bits.append(predicate["disclosure"]["bits"])
    assert abs(sizes[1] - sizes[0]) < 512, sizes
    assert bits[1] - bits[0] < 8 * math.log2(401 / 5), bits


# -- the reply is validated by the supervisor -------------------------------------------------


@pytest.mark.parametrize("name", ["patch-reply", "patch-flood"])
def test_a_reply_patched_from_inside_fails_closed(world: World, name: str) -> None:
    assert name not in world.errors, world.errors.get(name)
    outcome = world.outcomes[name]
    assert outcome.classification == "failed"
    assert outcome.failure == "worker_reply_invalid"
    assert outcome.envelope is None
    assert [b["reason"] for b in _failed_bodies(world, outcome.audit_id)] == [
        "worker_reply_invalid"
    ]


def test_an_integer_beyond_json_range_fails_with_a_ledger_entry(world: World) -> None:
    assert "big-int" not in world.errors, world.errors.get("big-int")
    outcome = world.outcomes["big-int"]
    assert outcome.classification == "failed"
    assert outcome.failure == "value_out_of_range"
    assert [b["reason"] for b in _failed_bodies(world, outcome.audit_id)] == ["value_out_of_range"]


# -- the disclosure bound --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["plain", "new-scope", "proposal-key", "score-digits"])
def test_every_certificate_states_a_finite_disclosure_bound(world: World, name: str) -> None:
    predicate = _predicate(world.outcomes[name])
    disclosure = predicate["disclosure"]
    terms = disclosure["terms"]
    assert terms and all(math.isfinite(t["bits"]) and t["bits"] >= 0 for t in terms)
    assert disclosure["bits"] == pytest.approx(sum(t["bits"] for t in terms), abs=1e-6)
    assert disclosure["resolution"] == RESOLUTION
    fields = {t["field"] for t in terms}
    assert {"/classification", "/effect/mean_delta", "/served_by", "/substituted"} <= fields
    assert not {"/effect/histogram", "/sample_rows"} & fields
    # every number an agent can influence is on the grid, a count, or a function of a count
    effect, n = predicate["effect"], 4
    if effect is not None:
        for value in (effect["mean_delta"], *effect["delta_interval"]):
            assert _on_grid(value), value
        for rate in ("flip_rate", "baseline_rate", "intervened_rate"):
            assert (effect[rate] * n) == pytest.approx(round(effect[rate] * n), abs=1e-9)
        lo, hi = clopper_pearson(round(effect["flip_rate"] * n), n)
        assert effect["flip_interval"] == [lo, hi]
        assert _on_grid(predicate["placebo"]["max_abs_delta"])
    score = (predicate["baseline"] or {}).get("layers", {}).get("score", {})
    assert score.get("delta") is None or _on_grid(score["delta"])


def test_the_bound_follows_the_formula(world: World) -> None:
    predicate = _predicate(world.outcomes["plain"])
    terms = {t["field"]: t["bits"] for t in predicate["disclosure"]["terms"]}
    n = predicate["samples"]["count"]
    assert terms["/effect/mean_delta"] == pytest.approx(math.log2(2 / RESOLUTION + 1), abs=0.01)
    assert terms["/effect/flip_rate"] == pytest.approx(math.log2(n + 1), abs=0.01)
    assert terms["/effect/layer_changes"] == pytest.approx(7 * math.log2(3), abs=0.01)
    # per arm, the recorded calls' set of marks (5 or 6 of them) and the new calls' (3)
    served = math.log2(2**5 - 1) + 2 * math.log2(2**6 - 1) + 3 * math.log2(2**3 - 1)
    assert terms["/served_by"] == pytest.approx(served, abs=0.02)


# -- the sweep ---------------------------------------------------------------------------------


def test_no_canary_in_the_home_or_the_ledger(world: World) -> None:
    assert scan_tree(world.home, CANARIES) == {}
    rows = [e.body for e in world.runtime.ledger.entries()]
    assert find_canaries(json.dumps(rows).encode(), CANARIES) == []
    texts = json.dumps([o.to_dict() for o in world.outcomes.values()] + list(world.errors.values()))
    assert find_canaries(texts.encode(), CANARIES) == []


def test_cli_audit_output_and_verify_show_no_canary_and_the_bound(
    tmp_path: Path, world: World
) -> None:
    home = tmp_path / "home"
    with Runtime.open(Home.init(home)) as runtime:
        raising = agents.capture_specimen(runtime, hostile.FAILURE_CODE_AGENT)
        plain = agents.capture_specimen(runtime, agents.PLAIN_AGENT)
    env = {**os.environ, "COLUMNS": "250"}
    root = Path(__file__).resolve().parents[2]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return cli_runner.run_cli(home, *args, env=env, cwd=root)

    common = ["--call", "main/lookup#0", "--field", "/value", "--strategy", "replace"]
    common += ["--value", "0.2", "--samples", "3", "--purpose", "boundary review"]
    failed = cli("audit", raising, *common)
    shown = (failed.stdout + failed.stderr).encode()
    assert failed.returncode != 0
    assert find_canaries(shown, CANARIES) == []
    assert "agent_error" in failed.stdout + failed.stderr
    done = cli("audit", plain, *common)
    assert done.returncode == 0, done.stderr
    assert "disclosure bound" in done.stdout
    certificate = next((home / "certificates").glob("*.dsse.json"))
    verified = cli("verify", str(certificate))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "disclosure bound" in verified.stdout
    assert find_canaries((done.stdout + verified.stdout).encode(), CANARIES) == []
    assert scan_tree(home, CANARIES) == {}


def test_an_agent_module_raising_on_import_is_one_closed_refusal(tmp_path: Path) -> None:
    from tests.agents import boundary_import_agent

    home = tmp_path / "home"
    with Runtime.open(Home.init(home)) as runtime:
        specimen = agents.capture_specimen(runtime, boundary_import_agent.AGENT)
    done = subprocess.run(
        [sys.executable, "-c", "from enclave.cli import main; main()", "audit", specimen,
         "--call", "main/lookup#0", "--field", "/value", "--strategy", "replace",
         "--value", "0.2", "--samples", "2", "--purpose", "boundary review", "--json",
         "--home", str(home)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "BOUNDARY_IMPORT_RAISE": "1"},
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode != 0
    assert "the agent could not be loaded" in done.stderr
    assert find_canaries((done.stdout + done.stderr).encode(), CANARIES) == []
    with Runtime.open(Home(home)) as runtime:
        reasons = [e.body["reason"] for e in runtime.ledger.entries(kind="audit.failed")]
    assert reasons == ["agent_unusable"]
    assert scan_tree(home, CANARIES) == {}


# -- the durable service path: failure codes, HTTP bodies, the database --------------------

LOOKUP_POLICY = b"""id = "test.lookup.value.replace"
version = 1
tenant = "acme"
provider = "risk-office"
tool = "lookup"
schema_id = "lookup"
schema_version = "1"
field = "/value"
strategy = "replace"

[params]
alternates = [0.2]

[budget]
bits = 100000
window_seconds = 86400
"""


def test_service_path_carries_only_closed_codes_and_no_canary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import warnings

    from starlette.exceptions import StarletteDeprecationWarning

    from enclave.governance import (
        InterventionPolicy,
        activate_policy,
        add_analyst,
        load_policy,
        validate_policy,
    )
    from enclave.jobs import run_worker
    from enclave.service import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        from fastapi.testclient import TestClient

    # the policy's tool is declared by the test agents: register one as a platform would
    registered = {agents.PLAIN_AGENT.name: agents.PLAIN_AGENT.name}
    monkeypatch.setattr("enclave.governance._schemas.available_agents", lambda: registered)
    home = Home.init(tmp_path / "home")
    names = ("failure-code", "patch-reply", "plain")
    with Runtime.open(home, env={}) as runtime:
        specimens = {n: agents.capture_specimen(runtime, HOSTILE[n]) for n in names}
        now = datetime.now(UTC)
        policy = load_policy(runtime, InterventionPolicy.from_toml(LOOKUP_POLICY), now=now)
        assert validate_policy(runtime, policy.id, now=now).ok
        activate_policy(runtime, policy.id, now=now)
        _, token = add_analyst(
            runtime, "alice", tenant="acme", roles=["auditor", "restricted-clearance"], now=now
        )
    auth = {"Authorization": f"Bearer {token}"}
    bodies: list[bytes] = []
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:

        def call(method: str, url: str, **kw: Any) -> Any:
            response = client.request(method, url, headers=auth, **kw)
            bodies.append(response.content + json.dumps(dict(response.headers)).encode())
            return response

        ids = {}
        for name in names:
            body = {
                "specimen_id": specimens[name],
                "call_id": "main/lookup#0",
                "field": "/value",
                "strategy": "replace",
                "value": 0.2,
                "samples": 4,
                "seed": 1,
                "purpose": "boundary review",
            }
            accepted = call("POST", "/api/v1/audits", json=body)
            assert accepted.status_code == 202, accepted.text
            ids[name] = accepted.json()["audit_id"]
        run_worker(
            lambda: Runtime.open(home, env={}),
            worker_id="w1",
            stop=threading.Event(),
            once=True,
            limits=LIMITS,
        )
        status = {n: call("GET", f"/api/v1/audits/{ids[n]}").json() for n in names}
        assert status["failure-code"]["status"] == "FAILED"
        assert status["failure-code"]["failure_code"] == "agent_error"
        assert status["patch-reply"]["status"] == "FAILED"
        assert status["patch-reply"]["failure_code"] == "worker_reply_invalid"
        assert status["plain"]["status"] == "COMPLETED", status["plain"]
        plain = ids["plain"]
        summary = call("GET", f"/api/v1/certificates/{plain}/summary").json()
        assert summary["disclosure"]["bits"] > 0 and "deltas" not in summary["effect"]
        call("GET", f"/api/v1/certificates/{plain}")
        assert call("GET", f"/api/v1/certificates/{plain}/verify").json()["ok"] is True
        call("GET", "/api/v1/audits")
        call("GET", "/api/v1/ledger/entries")
    for sent in bodies:
        assert find_canaries(sent, CANARIES) == []
    with Runtime.open(home, env={}) as runtime:
        rows = [e.body for e in runtime.ledger.entries()]
        failed = {
            e.body["audit_id"]: e.body["reason"]
            for e in runtime.ledger.entries(kind="audit.failed")
        }
        (admitted,) = runtime.ledger.entries(kind="audit.admitted", subject=specimens["plain"])
    # the budget was charged no less than what the certificate states it can carry
    assert 0 < summary["disclosure"]["bits"] <= admitted.body["disclosure_bits"]
    assert failed == {
        ids["failure-code"]: "agent_error",
        ids["patch-reply"]: "worker_reply_invalid",
    }
    assert find_canaries(json.dumps(rows).encode(), CANARIES) == []
    assert scan_tree(home.root, CANARIES) == {}  # the database file, certificates, logs


# -- the pieces on their own: quantisation, the closed reply schema, the bound ----------------

VOCAB = Vocabulary(
    calls=frozenset({"main/lookup#0", "main/lease#0", "main/pay#0"}),
    effects=frozenset({"main/pay#0"}),
    live_state=frozenset({("main/lease#0", "/lease_id")}),
    proposal_fields=("decision",),
)


def _sample(seed: int = 1, **changes: Any) -> dict[str, Any]:
    sample = SampleSummary(seed=seed, delta=-0.03).to_dict()
    if "failure" not in changes:  # a completed sample's decisions, as labels
        sample.update(baseline_decision="other", intervened_decision="other")
    sample.update(changes)
    return sample


@given(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.sampled_from([1e-9, 1e-4, 0.001, 0.0123456, 0.05, 0.3, 1.0]),
)
def test_quantize_lands_on_the_grid_inside_the_bounds(value: float, tolerance: float) -> None:
    resolution = resolution_for(tolerance)
    assert resolution >= MIN_RESOLUTION and float(f"{resolution:.4g}") == resolution
    out = quantize(value, resolution)
    assert -1 <= out <= 1
    assert abs(out) == 1 or abs(out / resolution - round(out / resolution)) < 1e-6
    assert abs(out - min(1, max(-1, value))) <= resolution / 2 + 1e-12
    assert quantize(value + 0.5, resolution) >= out  # monotone


@given(st.lists(st.floats(min_value=-3, max_value=3, allow_nan=False), max_size=200))
def test_histogram_counts_every_value_once(values: list[float]) -> None:
    counts = histogram(values)
    assert len(counts) == len(BIN_EDGES) - 1 and sum(counts) == len(values)


def test_a_well_formed_reply_is_rebuilt_with_names_from_the_vocabulary() -> None:
    reads = [["main/lease#0", "/lease_id"]]
    reply = {
        "samples": [
            _sample(1, live_state_reads=reads, unverifiable_effects=["main/pay#0"]),
            _sample(2, failure="unservable", failure_variant="intervened", delta=None,
                    unserved_effects=[f"x-{hostile.CANARY}/pay#0", "main/pay#0", "y/z#1"]),
        ]
    }  # fmt: skip
    first, second = parse_samples(reply, [1, 2], VOCAB)
    assert first.live_state_reads == (("main/lease#0", "/lease_id"),)
    assert second.unserved_effects == ("new_call #0", "main/pay#0", "new_call #1")


@pytest.mark.parametrize(
    ("reply", "refusal"),
    [
        ({"samples": [_sample(), _sample(2)]}, ReplyInvalid),  # more than asked for
        ({"samples": [_sample(2)]}, ReplyInvalid),  # another seed
        ({"samples": [_sample()], "note": "x"}, ReplyInvalid),  # unknown top-level key
        ({"samples": [{**_sample(), "note": "x"}]}, ReplyInvalid),  # unknown sample key
        ({"samples": [_sample(flip=1)]}, ReplyInvalid),  # an int is not a bool
        ({"samples": [_sample(delta=True)]}, ReplyInvalid),  # a bool is not a number
        ({"samples": [_sample(delta="0.1")]}, ReplyInvalid),
        # a failed sample has no delta (a completed one may lack one: a categorical outcome)
        ({"samples": [_sample(failure="agent_error", failure_variant="intervened")]},
         ReplyInvalid),
        ({"samples": [_sample(delta=2**60)]}, ValueOutOfRange),
        ({"samples": [_sample(delta=math.inf)]}, ValueOutOfRange),
        ({"samples": [_sample(placebo_abs_delta=math.nan)]}, ValueOutOfRange),
        ({"samples": [_sample(failure=f"c-{hostile.CANARY}", failure_variant="baseline")]},
         ReplyInvalid),
        ({"samples": [_sample(failure="agent_error", failure_variant="other", delta=None)]},
         ReplyInvalid),
        ({"samples": [_sample(live_state_reads=[["main/lookup#0", "/value"]])]}, ReplyInvalid),
        ({"samples": [_sample(live_state_reads=[["main/lease#0", "/lease_id"]] * 2)]},
         ReplyInvalid),
        ({"samples": [_sample(unverifiable_effects=["main/lookup#0"])]}, ReplyInvalid),
        ({"samples": [_sample(unserved_effects=[f"n{i}" for i in range(40)])]}, ReplyInvalid),
        ({"samples": [_sample(unserved_effects=["a", "a"])]}, ReplyInvalid),
        ([], ReplyInvalid),
    ],
)  # fmt: skip
def test_a_malformed_sample_reply_is_refused_whole(reply: Any, refusal: type[Exception]) -> None:
    with pytest.raises(refusal) as caught:
        parse_samples(reply, [1], VOCAB)
    assert hostile.CANARY not in str(caught.value)
    assert caught.value.code in FAILURE_REASONS  # type: ignore[attr-defined]


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def _run(**changes: Any) -> dict[str, Any]:
    layers = {layer: None for layer in LAYERS}
    run = {
        "seed": 5,
        "variant": "baseline",
        "failure": None,
        "layers": {**layers, "score": 0.8, "proposal": {"decision": "HIGH"}},
        "live_state_reads": [],
        "unverifiable_effects": [],
        "unserved_effects": [],
        "served": [],
        "unused": [],
    }
    run.update(changes)
    return run


@pytest.mark.parametrize(
    ("run", "refusal"),
    [
        (_run(layers={"score": 0.8}), ReplyInvalid),  # layers are exactly the seven
        (_run(layers={**_run()["layers"], "proposal": {"amount": 2**60}}), ValueOutOfRange),
        (_run(layers={**_run()["layers"], "proposal": {"amount": -(2**60)}}), ValueOutOfRange),
        (_run(layers={**_run()["layers"], "score": math.nan}), ValueOutOfRange),
        (_run(layers={**_run()["layers"], "evidence": [_deep(40)]}),
         ReplyInvalid),
        (_run(failure="agent_error"), ReplyInvalid),  # a failure has no layers
        (_run(layers=None), ReplyInvalid),  # and no layers means a failure
        (_run(variant="intervened"), ReplyInvalid),
        (_run(failure_detail="x"), ReplyInvalid),
    ],
)  # fmt: skip
def test_a_malformed_gate_reply_is_refused(run: dict[str, Any], refusal: type[Exception]) -> None:
    with pytest.raises(refusal):
        parse_runs({"results": [run]}, [("baseline", 5)], VOCAB)


def test_the_gate_reply_parses_and_a_new_proposal_field_is_not_named() -> None:
    (gate,) = parse_runs({"results": [_run()]}, [("baseline", 5)], VOCAB)
    assert gate.layers is not None and gate.failure is None
    changed = compare_layers(
        {"proposal": {"decision": "HIGH"}, "score": 0.8},
        {"proposal": {"decision": "LOW", f"k-{hostile.CANARY}": 1}, "score": 5.0},
        Tolerances(score=0.001),
    )
    assert changed["proposal"]["changed_fields"] == ["decision", "new_field #0"]
    assert changed["score"]["delta"] == 1.0  # clamped to [-1, 1]


def test_the_bound_grows_with_samples_and_resolution_and_is_known_before_running() -> None:
    vocab = VocabularySize(calls=6, live_state=1)
    small = disclosure_bound(samples=20, tolerance=0.01, vocabulary=vocab)
    large = disclosure_bound(samples=1000, tolerance=0.01, vocabulary=vocab)
    fine = disclosure_bound(samples=20, tolerance=1e-9, vocabulary=vocab)
    assert small.bits < large.bits and small.bits < fine.bits
    assert math.isclose(small.bits, sum(b for _, b in small.terms), abs_tol=0.01)
    assert small.resolution == 0.01 and fine.resolution == MIN_RESOLUTION
    # 1000 samples add only the counts' log2(N) to what 20 state: nothing per sample,
    # against about 63,000 bits for full-precision per-sample deltas
    assert large.bits <= 256 and large.bits - small.bits < 10 * math.log2(1001 / 21)


def test_a_missing_ambient_read_keeps_its_closed_kind_name_and_is_only_unservable() -> None:
    run = _run(
        variant="intervened",
        failure="ambient_input",
        layers=None,
        served=[["main/lookup#0", "intervention"], ["ambient:file", "unservable"]],
    )
    (parsed,) = parse_runs({"results": [run]}, [("intervened", 5)], VOCAB)
    assert parsed.failure == "ambient_input"
    assert parsed.served == (("main/lookup#0", "intervention"), ("ambient:file", "unservable"))
    # any other mark of a closed name would be a channel: refused whole
    forged = _run(variant="intervened", served=[["ambient:env", "substitute"]])
    with pytest.raises(ReplyInvalid):
        parse_runs({"results": [forged]}, [("intervened", 5)], VOCAB)
