"""The supervisor's checks of a run's ask (``InferenceBroker``), each against the stand-in
model server that speaks the OpenAI API (``http_agents.serve_model``) and against the real
server: an ask a grant covers is asked once and then served from the audit's sealed
record; every other ask is refused before anything is sent; caps hold over stages; the
operator's credential goes to the endpoint and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from enclave import Runtime
from enclave.capture import capture
from enclave.replay import InferenceCaps, InferenceGrant
from enclave.replay.inference import Endpoint, InferenceBroker, InferenceRecord
from enclave.replay.runs import Trajectory, open_specimen
from enclave.sandbox import AskRefused
from tests.agents import http_agents as ha
from tests.inference.conftest import ModelServer, audit_time
from tests.support.answer_store import answer_store
from tests.support.canary import scan_tree

CREDENTIAL = "CANARY-ENDPOINT-KEY-51d0e7"
CAPS = InferenceCaps(calls=10, input_tokens=100_000, output_tokens=50_000, wall_seconds=300)


@pytest.fixture(params=["stand-in", "real"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(base URL, the model identity its answers carry)."""
    if request.param == "real":
        real: ModelServer = request.getfixturevalue("model_server")
        yield real.url, real.model
    else:
        with ha.serve_model() as url:
            yield url, ha.MODEL_NAME


def opened(runtime: Runtime, base_url: str) -> tuple[Trajectory, bytes]:
    inputs = {"applicant": "A-7", "base_url": base_url}
    with ha.serve_model():  # the risk tool's live answer
        specimen = capture(runtime, ha.HTTP_AGENT, inputs, tenant_id="acme", seed=5).specimen_id
    found = open_specimen(runtime, specimen, job_id="broker", lease_seconds=60, now=audit_time())
    return found.trajectory, found.record_key


@pytest.fixture(autouse=True)
def closing() -> Iterator[list[InferenceBroker]]:
    """Every broker a test builds, closed at its end (as a stage closes its own)."""
    built: list[InferenceBroker] = []
    _BUILT.append(built)
    yield built
    _BUILT.pop()
    for each in built:
        each.close()


_BUILT: list[list[InferenceBroker]] = []


def broker(
    runtime: Runtime,
    server: tuple[str, str],
    root: Path,
    caps: InferenceCaps = CAPS,
    vary: tuple[str, ...] = (),
    allowance: dict[str, int | float] | None = None,
) -> tuple[InferenceBroker, Trajectory]:
    base, model = server
    trajectory, key = opened(runtime, base)
    origin = base.removesuffix("/v1")
    endpoint = Endpoint(
        name="local", origin=origin, credential_env="MODEL_KEY", environ={"MODEL_KEY": CREDENTIAL}
    )
    grant = InferenceGrant(
        boundary="risk-model", endpoint="local", model=model, caps=caps, vary=vary
    )
    record = InferenceRecord(
        answer_store(runtime, root, trajectory.specimen_id),
        tenant_id="acme",
        specimen_id=trajectory.specimen_id,
        key=key,
    )
    built = InferenceBroker(
        grants=[grant],
        endpoints={"local": endpoint},
        trajectory=trajectory,
        record=record,
        seeds=frozenset({1, 2}),
        allowance=allowance,
    )
    _BUILT[-1].append(built)
    return built, trajectory


def ask_of(trajectory: Trajectory, content: str, **changes: Any) -> dict[str, Any]:
    """An ask as the engine sends it: the recorded request with another prompt."""
    (step,) = [s for s in trajectory.steps if s.name == "risk-model"]
    request = dict(step.request)
    body = {**request["body"]["json"], "messages": [{"role": "user", "content": content}]}
    request["body"] = {"json": {**body, **changes}}
    return {"boundary": "risk-model", "request": request}


TAG = {"seed": 1, "arm": "intervened"}


def test_an_ask_the_grant_covers_is_asked_once_then_served_from_the_record(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    asker, trajectory = broker(runtime, server, tmp_path)
    first = asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.1"))
    assert first["status"] == 200 and first["body"]["json"]["model"] == server[1]
    again = asker.answer(
        {"seed": 2, "arm": "baseline"}, ask_of(trajectory, "risk of the applicant 0.1")
    )
    assert again == first
    assert asker.arms["intervened"].asked == 1 and asker.arms["baseline"].from_record == 1
    assert asker.arms["intervened"].input_tokens > 0
    # sealed: the answer's file holds neither the prompt nor the credential
    assert scan_tree(tmp_path, ["risk of the applicant", CREDENTIAL]) == {}


@pytest.mark.parametrize(
    ("change", "tag"),
    [
        ({"model": "another-model"}, TAG),
        ({"temperature": 1.5}, TAG),
        ({"seed": 7}, TAG),  # a provider seed the grant does not let the run choose
        ({}, {"seed": 3, "arm": "intervened"}),  # a seed of no run of this stage
        ({}, {"seed": 1, "arm": "elsewhere"}),
    ],
)
def test_an_ask_outside_the_grant_is_refused_before_anything_is_sent(
    runtime: Runtime,
    server: tuple[str, str],
    tmp_path: Path,
    change: dict[str, Any],
    tag: dict[str, Any],
) -> None:
    asker, trajectory = broker(runtime, server, tmp_path)
    with pytest.raises(AskRefused):
        asker.answer(tag, ask_of(trajectory, "risk of the applicant 0.1", **change))
    assert asker.calls == 0 and not list(tmp_path.rglob("answers/*.ct"))


def test_asks_of_another_boundary_api_or_shape_are_refused(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    asker, trajectory = broker(runtime, server, tmp_path)
    good = ask_of(trajectory, "risk of the applicant 0.1")
    other_boundary = {**good, "boundary": "risk"}
    other_url = {**good, "request": {**good["request"], "url": "http://127.0.0.1/v1/embeddings"}}
    other_method = {**good, "request": {**good["request"], "method": "GET"}}
    not_json = {**good, "request": {**good["request"], "body": {"text": "hello"}}}
    extra = {**good, "also": 1}
    oversize = ask_of(trajectory, "x" * (1 << 20))
    for forged in (other_boundary, other_url, other_method, not_json, extra, oversize):
        with pytest.raises(AskRefused):
            asker.answer(TAG, forged)
    assert asker.calls == 0


def test_the_caps_hold_over_stages(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    one = InferenceCaps(calls=1, input_tokens=100_000, output_tokens=50_000, wall_seconds=300)
    asker, trajectory = broker(runtime, server, tmp_path, one)
    asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.1"))
    with pytest.raises(AskRefused):  # a second answer, even one the record holds
        asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.1"))
    tiny = InferenceCaps(calls=5, input_tokens=1, output_tokens=50_000, wall_seconds=300)
    asker, trajectory = broker(runtime, server, tmp_path / "tiny", tiny)
    with pytest.raises(AskRefused):  # the answer took the audit past its token cap
        asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.2"))
    assert not list((tmp_path / "tiny").rglob("answers/*.ct"))  # not kept: a re-run meets the cap


def test_a_batch_is_held_to_its_share_of_the_caps(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    # two batches at once, each allowed one answer of the audit's two: together, two
    for batch in ("first", "second"):
        asker, trajectory = broker(runtime, server, tmp_path / batch, allowance={"calls": 1})
        asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.1"))
        with pytest.raises(AskRefused):  # within the audit's caps, past the batch's share
            asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.1"))
    asker, trajectory = broker(runtime, server, tmp_path / "tokens", allowance={"input_tokens": 1})
    with pytest.raises(AskRefused):  # the answer took the batch past its token share
        asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.2"))
    assert not list((tmp_path / "tokens").rglob("answers/*.ct"))


def test_a_seeded_grant_pairs_the_arms_of_a_sample_and_draws_anew_per_sample(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    asker, trajectory = broker(runtime, server, tmp_path, vary=("seed",))
    ask = ask_of(trajectory, "risk of the applicant 0.1")
    first = asker.answer({"seed": 1, "arm": "intervened"}, ask)
    paired = asker.answer({"seed": 1, "arm": "placebo"}, ask)
    assert paired == first  # the same sample's arms: the same draw
    asker.answer({"seed": 2, "arm": "intervened"}, ask)
    assert asker.arms["intervened"].asked == 2  # another sample: its own provider seed
    assert asker.arms["placebo"].from_record == 1


def test_two_batches_asking_the_same_at_once_serve_the_answer_the_record_keeps(
    runtime: Runtime, server: tuple[str, str], tmp_path: Path
) -> None:
    # the other batch keeps its answer between this batch's look-up and its keep: the
    # record keeps the first, and this batch serves that one too, so every sample can be
    # re-derived from the record
    asker, trajectory = broker(runtime, server, tmp_path)
    record = asker._record  # noqa: SLF001 - the race is staged on the broker's own record
    theirs = {
        "status": 200,
        "headers": {},
        "body": {
            "json": {
                "model": server[1],
                "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "APPROVE"}}],
            }
        },
    }
    looked_up = record.get

    def racing(key: str) -> Any:
        record.get = looked_up  # type: ignore[method-assign]
        found = looked_up(key)
        record.put(key, theirs)  # the other batch, meanwhile
        return found

    record.get = racing  # type: ignore[method-assign]
    served = asker.answer(TAG, ask_of(trajectory, "risk of the applicant 0.1"))
    assert served == theirs
    assert asker.arms["intervened"].input_tokens == 7
    assert asker.arms["intervened"].output_tokens == 3
