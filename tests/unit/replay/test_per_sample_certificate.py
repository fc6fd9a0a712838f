"""An audit that asks for per-sample detail (``AuditRequest.detail``, where a policy
grants it) is certified with every count: a v2 predicate with a row per sample and exact
served-by counts per arm and call, stating the larger bound it was charged — and it
verifies like any certificate, ledger included. The default stays tight (v3)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from enclave import Home, Runtime
from enclave.cli import capture_incidents
from enclave.replay import AuditRequest, Intervention, Strategy, run_audit
from enclave.replay.certificates import RuntimeLedgerLookup
from enclave.replay.disclosure import BIN_EDGES
from ledger.certificates import (
    PREDICATE_TYPE,
    PREDICATE_TYPE_V2,
    load_public_key_pem,
    verify_certificate,
)
from tests.support.canary import INCIDENT_CANARIES, find_canaries

SAMPLES = 6


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, dict[str, Any]]]:
    runtime = Runtime.open(Home.init(tmp_path_factory.mktemp("per-sample") / "home"), env={})
    specimens = capture_incidents(runtime)
    envelopes = {}
    for detail in ("coarse", "per-sample"):
        request = AuditRequest(
            specimen_id=specimens["procurement"],
            intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
            purpose="purchase-order-review",
            requester="analyst-1",
            samples=SAMPLES,
            detail=detail,
        )
        outcome = run_audit(runtime, request, now=datetime.now(UTC))
        assert outcome.envelope is not None, outcome.failure
        envelopes[detail] = outcome.envelope
    yield runtime, envelopes
    runtime.close()


def _statement(envelope: dict[str, Any]) -> dict[str, Any]:
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement


def test_per_sample_detail_is_a_v2_certificate_that_verifies(
    audited: tuple[Runtime, dict[str, Any]],
) -> None:
    runtime, envelopes = audited
    key = load_public_key_pem(Path(f"{runtime.home.signing_key_path}.pub").read_bytes())
    lookup = RuntimeLedgerLookup(runtime.ledger)
    kinds = {d: _statement(e)["predicateType"] for d, e in envelopes.items()}
    assert kinds == {"coarse": PREDICATE_TYPE, "per-sample": PREDICATE_TYPE_V2}
    for detail, envelope in envelopes.items():
        report = verify_certificate(envelope, public_key=key, ledger_lookup=lookup)
        assert report.ok, (detail, report.first_failure)
        assert not find_canaries(json.dumps(envelope).encode(), INCIDENT_CANARIES)


def test_it_states_every_count_and_its_larger_bound(
    audited: tuple[Runtime, dict[str, Any]],
) -> None:
    _, envelopes = audited
    detailed = _statement(envelopes["per-sample"])["predicate"]
    tight = _statement(envelopes["coarse"])["predicate"]
    assert len(detailed["sample_rows"]) == SAMPLES and "sample_rows" not in tight
    # per arm and call, the samples counted exactly, never a coarse mark
    rows = detailed["served_by"]
    assert rows and all("call" in row for row in rows)
    for row in rows:
        counts = [v for k, v in row.items() if k not in ("arm", "call")]
        assert all(isinstance(v, int) for v in counts) and sum(counts) == SAMPLES, row
    assert sum(detailed["effect"]["histogram"]["counts"]) == SAMPLES
    bound, small = detailed["disclosure"], tight["disclosure"]
    terms = {t["field"] for t in bound["terms"]}
    assert {"/sample_rows", "/effect/histogram"} <= terms
    assert bound["bins"] == len(BIN_EDGES) - 1 and "bins" not in small
    assert bound["bits"] > small["bits"]
    # everything else is the same audit: the same label, on the same figures
    assert detailed["classification"] == tight["classification"]
    assert detailed["effect"]["mean_delta"] == tight["effect"]["mean_delta"]
