"""``replay-enclave audit --inference GRANT`` as a user runs it, on an agent that asks a
hosted model through the real openai client: the certificate's inference section is
printed (the pinned model and endpoint, the caps, per arm what was asked of the endpoint,
what came from the audit's record, the tokens), the served-by table has its inference
column, ``--json`` carries the same section as the signed certificate, and a malformed
grant is one line that echoes nothing."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.capture import capture
from tests.agents import http_agents as ha
from tests.support import cli_runner

cli = cli_runner.run_cli

CAPS = {"calls": 100, "input_tokens": 10000, "output_tokens": 10000, "wall_seconds": 60}
GRANT = {
    "boundary": "risk-model",
    "endpoint": "local",
    "model": ha.MODEL_NAME,
    "vary": ["seed"],
    "caps": CAPS,
}
AUDIT = (
    "--call",
    "main/risk#0",
    "--field",
    "/risk",
    "--strategy",
    "replace",
    "--value",
    "0.2",
    "--samples",
    "2",
    "--purpose",
    "did the risk score decide",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A home holding the agent's specimen, and the operator's endpoint ``local``: a
    server speaking the OpenAI API, up while the module's audits run."""
    root = tmp_path_factory.mktemp("cli-inference") / "home"
    runtime = Runtime.open(Home.init(root), env={})
    try:
        with ha.serve_model() as url:
            inputs = {"applicant": "A-7", "base_url": url}
            specimen = capture(runtime, ha.HTTP_AGENT, inputs, tenant_id="acme", seed=5)
    finally:
        runtime.close()
    with ha.serve_model() as endpoint:
        with (root / "config.toml").open("a") as fh:
            fh.write(f'\n[inference.endpoints.local]\nurl = "{endpoint.removesuffix("/v1")}"\n')
        yield root, specimen.specimen_id


def cells(out: str) -> dict[tuple[str, ...], str]:
    """Each table row of ``out`` keyed by its leading cells, valued by its last one."""
    rows = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.strip().strip("│").split("│")]
        if len(parts) >= 2:
            rows[tuple(parts[:-1])] = parts[-1]
    return rows


def predicate(path: str) -> dict[str, Any]:
    envelope = json.loads(Path(path).read_text())
    found: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    return found


def test_audit_prints_the_certificates_inference_section(served: tuple[Path, str]) -> None:
    home, specimen = served
    done = cli(home, "audit", specimen, *AUDIT, "--inference", json.dumps(GRANT))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "governed inference" in out
    rows = cells(out)
    grant = rows[("grant risk-model",)]
    assert grant.startswith(f"model {ha.MODEL_NAME} at endpoint local; varies seed;")
    assert "caps 100 calls, 10000 input and 10000 output tokens, 60 s" in grant
    assert rows[("seeded",)].startswith("yes")
    tallies = {arm: rows[(arm,)] for arm in ("preparation", "baseline", "intervened", "placebo")}
    assert all(t.startswith("asked ") and "from record " in t for t in tallies.values())
    assert tallies["baseline"].startswith("asked 0, from record 0")  # the record's own
    assert not tallies["intervened"].startswith("asked 0, from record 0;")
    # the served-by table's inference column: the intervened arm's recorded calls (the
    # model call among them) were answered by inference, in some or all of the cells
    served = rows[("intervened", "recorded calls")]
    assert "inference some" in served or "inference all" in served
    assert ha.CANARY not in out + done.stderr


def test_audit_json_carries_the_signed_inference_section(served: tuple[Path, str]) -> None:
    home, specimen = served
    done = cli(home, "audit", specimen, *AUDIT, "--inference", json.dumps(GRANT), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    section = predicate(out["certificate_path"])["inference"]
    assert out["inference"] == section
    assert section["grants"] == [GRANT]
    # the intervened arm met model calls the record does not hold: they were answered
    intervened = section["arms"]["intervened"]
    assert intervened["asked"] + intervened["from_record"] >= 1
    assert ha.CANARY not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "grant",
    [
        "not json SECRET-7f",
        json.dumps({"boundary": "risk-model", "endpoint": "local"}),
        json.dumps({**GRANT, "model": "SECRET model 7f"}),
        json.dumps(["SECRET-7f"]),
    ],
)
def test_a_malformed_grant_is_one_line_that_echoes_nothing(
    served: tuple[Path, str], grant: str
) -> None:
    home, specimen = served
    done = cli(home, "audit", specimen, *AUDIT, "--inference", grant)
    assert done.returncode == 2
    message = done.stderr.strip()
    assert "inference" in message and "\n" not in message and "Traceback" not in message
    assert "SECRET" not in done.stdout + done.stderr
