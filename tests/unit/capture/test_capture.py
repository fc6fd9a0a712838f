"""Capture: every retained field decrypts to exactly what the agent saw, holes stay holes,
failed runs leave nothing behind, and no canary leaves the enclave in any encoding.

All tests run on real homes (SQLite ledger file, keyring, payload store) in tmp_path.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import itertools
import json
import logging
import subprocess
import sys
import zlib
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from enclave import DecryptionFailed, Home, Runtime
from enclave.capture import (
    AgentCrashed,
    AgentSpec,
    Answer,
    BoundarySpec,
    Context,
    Recorder,
    SpecError,
    capture,
    decode_payload,
    policy,
)
from enclave.incidents import ALL, claims, procurement
from ledger import NotFound, Retention, RunStatus, StepKind, canonical_json
from tests.support.canary import (
    INCIDENT_CANARIES,
    encodings_found,
    find_canaries,
    needles,
    scan_tree,
)

FIXED = datetime(2026, 11, 2, 9, 30, 0, tzinfo=UTC)
TEST_CANARY = "CANARY-TEST-c0ffee"
ALL_CANARIES = (*INCIDENT_CANARIES, TEST_CANARY)


# -- helpers ------------------------------------------------------------------------


def open_runtime(root: Path) -> Runtime:
    home = Home.open(root) if (root / ".replay-enclave-home").exists() else Home.init(root)
    runtime = Runtime.open(home)
    runtime.clock = lambda: FIXED
    return runtime


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    rt = open_runtime(tmp_path / "home")
    try:
        yield rt
    finally:
        rt.close()


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


class Tap(Context):
    """An independent second run of an agent against its live world, remembering every
    crossing's request and response as the agent saw them (no crypto, no ledger)."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self._seed = seed
        self._clock_read = False
        self.crossings: list[tuple[str, dict[str, Any], dict[str, Any]]] = []

    def call(
        self, spec: BoundarySpec, request: Mapping[str, Any], *, live: Any, alias: str | None = None
    ) -> Mapping[str, Any]:
        result = live(request)
        response = dict(result.response if isinstance(result, Answer) else result)
        self.crossings.append((spec.name, dict(request), response))
        return dict(response)

    def cut(self, name: str, compute: Any) -> Any:
        state = json.loads(json.dumps(compute()))  # JSON's types, as the recorder returns
        self.crossings.append((name, {}, {"state": state}))
        return state

    def now(self) -> datetime:
        if not self._clock_read:
            self._clock_read = True
            self.crossings.append(("clock", {}, {"time": iso(FIXED)}))
        return FIXED

    def random(self) -> Any:
        import random

        self.crossings.append(("random", {}, {"seed": self._seed}))
        return random.Random(self._seed)


def originals(
    agent: AgentSpec, inputs: Mapping[str, Any], seed: int
) -> tuple[list[str], dict[tuple[int, str, str], Any]]:
    """Step names in order and {(seq, side, path): value} recomputed from the live world."""
    tap = Tap(seed)
    outcome = agent.function(tap, dict(inputs))
    steps = [("inputs", {}, dict(inputs)), *tap.crossings, ("outcome", {}, dict(outcome))]
    values: dict[tuple[int, str, str], Any] = {}
    for seq, (_name, request, response) in enumerate(steps):
        for side, fields in (("request", request), ("response", response)):
            for name, value in fields.items():
                values[(seq, side, "/" + name)] = value
    return [name for name, _, _ in steps], values


def decrypt_specimen(
    runtime: Runtime, tenant: str, specimen_id: str
) -> dict[tuple[int, str, str], bytes]:
    """Inside the enclave: grant for this specimen -> redeem -> decrypt every field."""
    wrapped = runtime.payloads.wrapped_key(tenant, specimen_id)
    grant = runtime.keys.issue_grant(
        tenant, specimen_id, wrapped, job_id="job-test", ttl_seconds=60, now=FIXED
    )
    key = grant.redeem(now=FIXED)
    return runtime.payloads.read_fields(tenant, specimen_id, data_key=key)


def data_key(runtime: Runtime, tenant: str, specimen_id: str) -> bytes:
    wrapped = runtime.payloads.wrapped_key(tenant, specimen_id)
    grant = runtime.keys.issue_grant(
        tenant, specimen_id, wrapped, job_id="job-key", ttl_seconds=60, now=FIXED
    )
    return grant.redeem(now=FIXED)


def capture_baseline(runtime: Runtime, incident: Any, **overrides: Any) -> Any:
    baseline = incident.BASELINE_INPUT
    kwargs: dict[str, Any] = {"tenant_id": baseline["tenant"], "seed": baseline["seed"]}
    kwargs.update(overrides)
    return capture(runtime, incident.AGENT, baseline["inputs"], **kwargs)


def run_count(runtime: Runtime) -> int:
    with runtime.ledger.engine.connect() as conn:
        return int(conn.exec_driver_sql("SELECT count(*) FROM runs").scalar_one())


# -- the canary scanner itself ---------------------------------------------------------


CANARY = "CANARY-UNIT-7e3a90"


@pytest.mark.parametrize(
    "encode",
    [
        lambda c: c.encode(),
        lambda c: c.encode("utf-16-le"),
        lambda c: c.encode("utf-16-be"),
        lambda c: c.encode("utf-16"),  # with BOM
        lambda c: c.encode().hex().encode(),
        lambda c: c.encode().hex().upper().encode(),
        lambda c: "".join(f"%{b:02X}" for b in c.encode()).encode(),
        lambda c: "".join(f"%{b:02x}" for b in c.encode()).encode(),
        lambda c: json.dumps(c, ensure_ascii=True).encode().replace(b"C", b"\\u0043"),
        lambda c: "".join(f"\\u{ord(x):04x}" for x in c).encode(),
        lambda c: "".join(f"\\u{ord(x):04X}" for x in c).encode(),
        lambda c: base64.b64encode(c.encode()),
        lambda c: base64.b64encode(b"a" + c.encode()),
        lambda c: base64.b64encode(b"ab" + c.encode()),
        lambda c: base64.b64encode(b"abc" + c.encode() + b"tail"),
        lambda c: base64.urlsafe_b64encode(b"\xff\xfe" + c.encode() + b"\xff"),
        lambda c: gzip.compress(b"log line " + c.encode() + b"\n" * 100),
        lambda c: zlib.compress(json.dumps({"v": c}).encode()),
        lambda c: gzip.compress(base64.b64encode(b"x" + c.encode())),
        lambda c: gzip.compress(gzip.compress(c.encode("utf-16-le"))),
    ],
    ids=[
        "utf8",
        "utf16le",
        "utf16be",
        "utf16bom",
        "hex",
        "HEX",
        "pct",
        "pct-lower",
        "json-mixed",
        "json-u",
        "json-U",
        "b64-0",
        "b64-1",
        "b64-2",
        "b64-3",
        "b64url",
        "gzip",
        "zlib",
        "gzip-b64",
        "gzip-gzip-utf16",
    ],
)
def test_scanner_finds_each_encoding(encode: Any) -> None:
    planted = b"\x00prefix bytes {" + encode(CANARY) + b"} suffix\xff"
    assert find_canaries(planted, [CANARY, "CANARY-OTHER-000000"]) == [CANARY]


def test_scanner_finds_gzip_member_in_the_middle_of_a_file() -> None:
    data = b"header" * 50 + gzip.compress(CANARY.encode()) + b"trailer" * 50
    assert "gzip@300" in encodings_found(data, [CANARY])[CANARY][0]


def test_scanner_does_not_flag_clean_data() -> None:
    noise = bytes(range(256)) * 64
    clean = [
        b"",
        noise,
        gzip.compress(noise),
        CANARY[:-1].encode(),  # a truncated canary is not the canary
        base64.b64encode(CANARY[:-3].encode()),
        json.dumps({"digest": "hmac-sha256:" + "ab" * 32}).encode(),
        CANARY.lower().encode(),
    ]
    for data in clean:
        assert find_canaries(data, [CANARY]) == []


def test_scanner_needles_cover_three_base64_alignments() -> None:
    names = {name for name, _ in needles(CANARY)}
    assert {"base64+0", "base64+1", "base64+2"} <= names
    with pytest.raises(ValueError):
        needles("")


def test_scan_tree_reports_only_files_with_canaries(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "clean.txt").write_bytes(b"nothing here")
    (tmp_path / "a" / "b" / "log.gz").write_bytes(gzip.compress(CANARY.encode()))
    (tmp_path / "a" / "wide.txt").write_bytes(CANARY.encode("utf-16"))
    found = scan_tree(tmp_path, [CANARY])
    assert found == {
        str(tmp_path / "a" / "b" / "log.gz"): [CANARY],
        str(tmp_path / "a" / "wide.txt"): [CANARY],
    }


# -- every encrypted field decrypts to exactly the original --------------------------


@pytest.mark.parametrize("incident", ALL, ids=lambda m: m.AGENT.name)
def test_each_incident_round_trips_every_field(runtime: Runtime, incident: Any) -> None:
    baseline = incident.BASELINE_INPUT
    tenant = baseline["tenant"]
    result = capture_baseline(runtime, incident)
    names, values = originals(incident.AGENT, baseline["inputs"], baseline["seed"])

    record = runtime.ledger.get_specimen(result.specimen_id)
    assert [s.name for s in record.steps] == names
    digester = runtime.digests.for_tenant(tenant)
    decrypted = decrypt_specimen(runtime, tenant, result.specimen_id)

    encrypted = {
        (f.seq, f.side, f.path) for f in record.fields if f.retention is Retention.ENCRYPTED
    }
    assert encrypted, "an incident without encrypted fields proves nothing"
    # run-time identities (every effect's idempotency token) are sealed beside the fields;
    # the ledger holds their keyed digest
    identities = {k: v for k, v in decrypted.items() if k[1] == "identity"}
    assert set(decrypted) - set(identities) == encrypted
    effects = {s.seq: s.effect for s in record.steps if s.effect is not None}
    assert set(identities) == {(seq, "identity", "/idempotency_token") for seq in effects}
    call_ids = {s.seq: s.call_id for s in record.steps}
    for (seq, side, path), token in identities.items():
        canon = canonical_json(decode_payload(token))
        sealed_digest = digester.digest(b"identity/idempotency_token:" + canon)
        place = (call_ids[seq], side, path)
        assert effects[seq].idempotency_token == digester.published(
            sealed_digest, specimen_id=result.specimen_id, locator=place, purpose="identity"
        )
    assert {(f.seq, f.side, f.path) for f in record.fields} == set(values)

    def published(internal: str, seq: int, side: str, path: str, purpose: str) -> str:
        # the ledger keeps digests keyed per specimen, place and purpose (docs/digests.md)
        place = (call_ids[seq], side, path)
        return digester.published(
            internal, specimen_id=result.specimen_id, locator=place, purpose=purpose
        )

    internal: dict[tuple[int, str, str], str] = {}
    for f in record.fields:
        where = (f.seq, f.side, f.path)
        if f.retention is Retention.ENCRYPTED:
            assert decode_payload(decrypted[where]) == values[where], where
            assert f.payload_ref is not None
        if f.retention is Retention.WITHHELD:
            assert f.keyed_digest is None and f.payload_ref is None
        else:
            internal[where] = digester.digest(canonical_json(values[where]))
            assert f.keyed_digest == published(internal[where], *where, "field"), where
    assert result.holes == sum(1 for f in record.fields if f.retention is Retention.WITHHELD)
    # a step digest is the published form of the keyed digest of its canonical
    # {path: internal field digest | "withheld"}
    for step in record.steps:
        for side, expected in (
            ("request", step.request_digest),
            ("response", step.response_digest),
        ):
            fields = [f for f in record.fields if f.seq == step.seq and f.side == side]
            digest_map = {f.path: internal.get((f.seq, f.side, f.path), "withheld") for f in fields}
            step_internal = digester.digest(canonical_json(digest_map))
            assert published(step_internal, step.seq, side, "", "step") == expected, (
                step.seq,
                side,
            )
    assert runtime.ledger.run_status(result.specimen_id) is RunStatus.SEALED
    assert runtime.ledger.verify().ok


def test_withheld_field_leaves_no_ciphertext_no_digest_no_canary(runtime: Runtime) -> None:
    baseline = procurement.BASELINE_INPUT
    tenant = baseline["tenant"]
    result = capture_baseline(runtime, procurement)
    record = runtime.ledger.get_specimen(result.specimen_id)
    memo = [f for f in record.fields if f.path == "/scoring_memo"]
    assert len(memo) == 1 and memo[0].retention is Retention.WITHHELD
    assert memo[0].keyed_digest is None and memo[0].payload_ref is None
    assert result.holes == 1
    decrypted = decrypt_specimen(runtime, tenant, result.specimen_id)
    assert (memo[0].seq, "response", "/scoring_memo") not in decrypted
    memo_canary = f"{procurement.CANARY}-memo"
    assert not any(memo_canary.encode() in plain for plain in decrypted.values())

    # neither the keyed nor an unkeyed digest of the memo is stored anywhere
    _, values = originals(procurement.AGENT, baseline["inputs"], baseline["seed"])
    canon = canonical_json(values[(memo[0].seq, "response", "/scoring_memo")])
    import hashlib

    keyed = runtime.digests.for_tenant(tenant).digest(canon).split(":")[1]
    unkeyed = hashlib.sha256(canon).hexdigest()
    home = runtime.home.root
    manifest = json.dumps(record.manifest)
    for marker in (keyed, unkeyed):
        assert marker not in manifest
        assert scan_tree(home, [marker]) == {}
    assert scan_tree(home, [memo_canary]) == {}
    step = next(s for s in record.manifest["steps"] if s["seq"] == memo[0].seq)
    assert {"side": "response", "path": "/scoring_memo", "digest": None}.items() <= next(
        f for f in step["fields"] if f["path"] == "/scoring_memo"
    ).items()


# -- a small test agent: digest-only fields, crashes, spec violations -----------------


ECHO = BoundarySpec(
    kind=StepKind.TOOL,
    name="echo",
    request={"q": policy("confidential")},
    response={"a": policy("confidential"), "h": policy("internal", "digest")},
)


def _echo(request: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"a": request["q"], "h": f"{TEST_CANARY}-hash-only"}


def _agent(function: Any) -> AgentSpec:
    return AgentSpec(
        name="echo-agent",
        version="0.1.0",
        function=function,
        inputs={"text": policy("restricted")},
        outcome={"score": policy("internal"), "decision": policy("internal")},
        boundaries=(ECHO,),
    )


def _good(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    return {"score": 0.5, "decision": "OK"}


def _crash(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    raise RuntimeError(f"boom {inputs['text']}")


def _interrupt(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    raise KeyboardInterrupt


def _undeclared_outcome(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    return {"score": 0.5, "decision": "OK", "secret": inputs["text"]}


def _undeclared_response(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=lambda r: {"a": 1, "h": 2, "extra": r["q"]})
    return {"score": 0.5, "decision": "OK"}


def _nan_outcome(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    return {"score": float("nan"), "decision": inputs["text"]}


def _huge_response(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=lambda r: {"a": 2**64, "h": r["q"]})
    return {"score": 0.5, "decision": "OK"}


def _score_out_of_bounds(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    return {"score": 1.5, "decision": "OK"}


TEXT = {"text": f"customer said {TEST_CANARY}"}


def test_digest_only_field_has_keyed_digest_and_no_ciphertext(runtime: Runtime) -> None:
    result = capture(runtime, _agent(_good), TEXT, tenant_id="t1", seed=1)
    record = runtime.ledger.get_specimen(result.specimen_id)
    (h,) = [f for f in record.fields if f.path == "/h"]
    assert h.retention is Retention.DIGEST_ONLY and h.payload_ref is None
    digester = runtime.digests.for_tenant("t1")
    internal = digester.digest(canonical_json(f"{TEST_CANARY}-hash-only"))
    (call_id,) = [s.call_id for s in record.steps if s.seq == h.seq]
    # the ledger keeps the published form (per specimen, place and purpose); the enclave,
    # holding the secret, recomputes it from the value
    assert h.keyed_digest == digester.published(
        internal,
        specimen_id=result.specimen_id,
        locator=(call_id, "response", "/h"),
        purpose="field",
    )
    decrypted = decrypt_specimen(runtime, "t1", result.specimen_id)
    assert (h.seq, "response", "/h") not in decrypted
    assert decode_payload(decrypted[(h.seq, "response", "/a")]) == TEXT["text"]
    assert scan_tree(runtime.home.root, [TEST_CANARY]) == {}


def test_keyed_digests_differ_between_tenants(runtime: Runtime) -> None:
    a = capture_baseline(runtime, procurement, tenant_id="acme")
    b = capture_baseline(runtime, procurement, tenant_id="globex")
    rec_a, rec_b = (
        runtime.ledger.get_specimen(a.specimen_id),
        runtime.ledger.get_specimen(b.specimen_id),
    )
    digests_a = {(f.seq, f.side, f.path): f.keyed_digest for f in rec_a.fields if f.keyed_digest}
    digests_b = {(f.seq, f.side, f.path): f.keyed_digest for f in rec_b.fields if f.keyed_digest}
    assert digests_a.keys() == digests_b.keys() and digests_a
    assert all(digests_a[k] != digests_b[k] for k in digests_a)
    assert all(
        sa.request_digest != sb.request_digest
        for sa, sb in zip(rec_a.steps, rec_b.steps, strict=True)
    )
    # same values, same tenant, another specimen: unrelated digests too (the ledger keeps
    # digests keyed per specimen, docs/digests.md), so the ledger shows no cross-specimen
    # equality; the enclave compares values, or recomputes the keyed form from them
    c = capture_baseline(runtime, procurement, tenant_id="acme")
    rec_c = runtime.ledger.get_specimen(c.specimen_id)
    digests_c = {(f.seq, f.side, f.path): f.keyed_digest for f in rec_c.fields if f.keyed_digest}
    assert digests_c.keys() == digests_a.keys()
    assert all(digests_a[k] != digests_c[k] for k in digests_a)
    assert rec_c.manifest_digest != rec_a.manifest_digest  # specimen ids differ


# Field names across the ranges where UTF-16 order and code point order disagree
# (BMP above U+E000 sorts after astral characters in UTF-16), plus ASCII and escapes.
FIELD_NAMES = st.text(
    st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(min_codepoint=0x0, max_codepoint=0x1F),
        st.sampled_from(["\u00e9", "\ue000", "\uff61", "\U0001f600", "\U00010000"]),
    ),
    min_size=1,
    max_size=4,
)
RETENTIONS = st.sampled_from(["encrypted", "digest", "withheld"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(declared=st.dictionaries(FIELD_NAMES, RETENTIONS, min_size=1, max_size=6), data=st.data())
def test_step_digest_is_the_keyed_digest_of_the_canonical_field_map(
    runtime: Runtime, declared: dict[str, str], data: st.DataObject
) -> None:
    spec = BoundarySpec(
        kind=StepKind.TOOL,
        name="names",
        request={},
        response={name: policy("internal", kept) for name, kept in declared.items()},
    )
    present = data.draw(st.sets(st.sampled_from(sorted(declared))))
    response = {name: f"value of {name}" for name in present}
    specimen = f"sp-names-{next(_SPECIMENS)}"
    key, wrapped = runtime.keys.new_data_key("t1", specimen)
    writer = runtime.payloads.open_writer(
        "t1", specimen, wrapped=wrapped, data_key=key, durable=False
    )
    digester = runtime.digests.for_tenant("t1")
    recorder = Recorder(
        tenant_id="t1", digester=digester, writer=writer, clock=runtime.clock, seed=0
    )
    assert recorder.call(spec, {}, live=lambda _request: response) == response
    writer.close()

    (step,) = recorder.steps
    expected_map = {
        "/" + name: "withheld"
        if declared[name] == "withheld"
        else digester.digest(canonical_json(response[name]))
        for name in present
    }
    assert step.record.response_digest == digester.digest(canonical_json(expected_map))
    assert step.record.request_digest == digester.digest(canonical_json({}))
    assert {f.path for f in step.fields} == set(expected_map)
    decrypted = runtime.payloads.read_fields("t1", specimen, data_key=key)
    assert {where: decode_payload(plain) for where, plain in decrypted.items()} == {
        (0, "response", "/" + name): response[name]
        for name in present
        if declared[name] == "encrypted"
    }


_SPECIMENS = itertools.count()


def test_field_name_without_canonical_form_is_refused_at_declaration() -> None:
    with pytest.raises(ValueError):
        BoundarySpec(
            kind=StepKind.TOOL, name="t", request={"\ud800": policy("internal")}, response={}
        )


def _assert_nothing_left(runtime: Runtime, specimen_id: str, tenant: str) -> None:
    assert runtime.ledger.run_status(specimen_id) is RunStatus.INCOMPLETE
    with pytest.raises(NotFound):
        runtime.ledger.get_specimen(specimen_id)
    assert runtime.ledger.list_specimens() == []
    assert not (runtime.home.payloads_dir / tenant / specimen_id).exists()
    assert runtime.ledger.verify().ok
    assert scan_tree(runtime.home.root, ALL_CANARIES) == {}


@pytest.mark.parametrize(
    ("function", "error"),
    [
        (_crash, AgentCrashed),
        (_undeclared_outcome, SpecError),
        (_undeclared_response, SpecError),
        (_nan_outcome, SpecError),
        (_huge_response, SpecError),
        (_score_out_of_bounds, SpecError),
    ],
    ids=["crash", "undeclared-outcome", "undeclared-response", "nan", "2**64", "score-bounds"],
)
def test_failed_run_is_incomplete_and_leaves_nothing(
    runtime: Runtime, function: Any, error: type[Exception]
) -> None:
    good = capture(runtime, _agent(_good), TEXT, tenant_id="t1", seed=1)  # a sealed neighbour
    head_before = runtime.ledger.head()
    with pytest.raises(error) as caught:
        capture(runtime, _agent(function), TEXT, tenant_id="t1", seed=1, specimen_id="sp-failed")
    assert TEST_CANARY not in str(caught.value)
    assert caught.value.__cause__ is None
    assert runtime.ledger.head() == head_before  # nothing appended to the chain
    assert runtime.ledger.run_status("sp-failed") is RunStatus.INCOMPLETE
    with pytest.raises(NotFound):
        runtime.ledger.get_specimen("sp-failed")
    assert [s.specimen_id for s in runtime.ledger.list_specimens()] == [good.specimen_id]
    assert not (runtime.home.payloads_dir / "t1" / "sp-failed").exists()
    assert runtime.ledger.verify().ok
    assert scan_tree(runtime.home.root, ALL_CANARIES) == {}
    # the neighbour is untouched
    assert decrypt_specimen(runtime, "t1", good.specimen_id)


def _string_score(ctx: Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    ctx.call(ECHO, {"q": inputs["text"]}, live=_echo)
    return {"score": "high", "decision": "OK"}


@pytest.mark.parametrize("function", [_string_score, _good], ids=["string", "number"])
def test_a_score_without_declared_bounds_is_refused_at_capture(
    runtime: Runtime, function: Any
) -> None:
    """A score nobody bounded would reach the audit as an unbounded layer (a string
    score was reported baseline-not-reproduced after an exact reproduction): capture
    refuses it with one line, before anything is sealed."""
    agent = dataclasses.replace(_agent(function), score_bounds=None)
    with pytest.raises(SpecError) as caught:
        capture(runtime, agent, TEXT, tenant_id="t1", seed=1, specimen_id="sp-unbounded")
    assert str(caught.value) == (
        "the outcome carries a score but the agent declares no score_bounds"
    )
    _assert_nothing_left(runtime, "sp-unbounded", "t1")


def test_interrupted_run_is_incomplete_and_leaves_nothing(runtime: Runtime) -> None:
    with pytest.raises(KeyboardInterrupt):
        capture(runtime, _agent(_interrupt), TEXT, tenant_id="t1", seed=1, specimen_id="sp-int")
    _assert_nothing_left(runtime, "sp-int", "t1")


def test_agent_crash_message_names_the_type_only(runtime: Runtime) -> None:
    with pytest.raises(AgentCrashed) as caught:
        capture(runtime, _agent(_crash), TEXT, tenant_id="t1", seed=1, specimen_id="sp-crash")
    assert (
        str(caught.value) == "the agent crashed (RuntimeError); the run is recorded as incomplete"
    )
    assert caught.value.__suppress_context__
    _assert_nothing_left(runtime, "sp-crash", "t1")


def test_bad_seed_is_refused_before_anything_is_written(runtime: Runtime) -> None:
    from enclave import BadInput

    for seed in (2**64, -(2**60), True, "7"):
        with pytest.raises(BadInput):
            capture(runtime, _agent(_good), TEXT, tenant_id="t1", seed=seed)  # type: ignore[arg-type]
    assert run_count(runtime) == 0
    assert runtime.ledger.head() is None
    assert not (runtime.home.payloads_dir / "t1").exists() or not any(
        (runtime.home.payloads_dir / "t1").iterdir()
    )


# -- ciphertext is bound to its place and its key ------------------------------------


def test_decryption_fails_opaquely_for_foreign_keys(runtime: Runtime) -> None:
    a = capture_baseline(runtime, claims, tenant_id="acme")
    b = capture_baseline(runtime, claims, tenant_id="acme")
    g = capture_baseline(runtime, claims, tenant_id="globex")
    key_b = data_key(runtime, "acme", b.specimen_id)
    key_g = data_key(runtime, "globex", g.specimen_id)
    messages = set()
    for key in (key_b, key_g, bytes(32)):
        with pytest.raises(DecryptionFailed) as caught:
            runtime.payloads.read_fields("acme", a.specimen_id, data_key=key)
        messages.add(str(caught.value))
    assert messages == {"decryption failed"}


# -- nothing leaks: files, WAL, API, CLI, logs ---------------------------------------


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", "from enclave.cli import main; main()", *args, "--home", str(home)],
        capture_output=True,
        timeout=120,
        check=False,
    )


def test_no_canary_anywhere_after_capturing_all_incidents(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    root = tmp_path / "home"
    runtime = open_runtime(root)
    try:
        ids = [capture_baseline(runtime, incident).specimen_id for incident in ALL]
        capture(runtime, _agent(_good), TEXT, tenant_id="t1", seed=1)
        with pytest.raises(AgentCrashed):
            capture(runtime, _agent(_crash), TEXT, tenant_id="t1", seed=1)

        # the canaries really are in what was captured (the scan can see them)
        for incident, specimen_id in zip(ALL, ids, strict=True):
            plain = b"".join(
                decrypt_specimen(runtime, incident.BASELINE_INPUT["tenant"], specimen_id).values()
            )
            assert find_canaries(plain, [incident.CANARY]) == [incident.CANARY]

        # with the ledger still open, so the WAL exists and is scanned too
        assert (root / "ledger.db-wal").exists()
        assert scan_tree(root, ALL_CANARIES) == {}

        # everything the ledger API hands out
        api = [runtime.ledger.get_specimen(s).manifest for s in ids]
        api += [e.body for e in runtime.ledger.entries()]
        api += [
            s.__dict__ if hasattr(s, "__dict__") else repr(s)
            for s in runtime.ledger.list_specimens()
        ]
        assert find_canaries(json.dumps(api, default=repr).encode(), ALL_CANARIES) == []

        outputs = [
            _cli(root, "specimens", "list"),
            _cli(root, "specimens", "list", "--json"),
            _cli(root, "ledger", "verify"),
            _cli(root, "ledger", "verify", "--json"),
            _cli(root, "ledger", "head", "--json"),
        ]
        for specimen_id in ids:
            outputs += [
                _cli(root, "specimens", "show", specimen_id),
                _cli(root, "specimens", "show", specimen_id, "--json"),
            ]
        for out in outputs:
            assert out.returncode == 0, out.stderr
            assert out.stdout
            assert find_canaries(out.stdout + out.stderr, ALL_CANARIES) == [], out.args
        shown = json.loads(_cli(root, "specimens", "show", ids[0], "--json").stdout)
        assert shown["manifest"]["specimen_id"] == ids[0]
    finally:
        runtime.close()

    assert scan_tree(root, ALL_CANARIES) == {}  # after the WAL is checkpointed
    logged = [
        (r.getMessage(), repr(r.args), r.exc_text or "", repr(getattr(r, "__dict__", {})))
        for r in caplog.records
    ]
    assert find_canaries(json.dumps(logged).encode(), ALL_CANARIES) == []
