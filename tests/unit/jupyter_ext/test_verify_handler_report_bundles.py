"""``POST /enclave/verify`` with a release report bundle: the Jupyter server checks it as
``ledger.certificates.verify_report_bundle`` does (six named checks, each member as its
own certificate bundle) against the log key configured there; without a log key it says
it did not check. The bundles are the report bundle parity corpus's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import is_bundle
from tests.support.canary import find_canaries
from tests.unit.jupyter_ext.test_verify_handler_bundles import post, server_config
from tests.unit.release import report_bundle_corpus

pytest_plugins = ["pytest_jupyter.jupyter_server"]

CORPUS = json.loads(report_bundle_corpus.TARGET.read_text())
CASES = {case["name"]: case for case in CORPUS["cases"]}


@pytest.fixture
def log_key() -> str:
    return str(CORPUS["log_key"])


@pytest.fixture
def jp_server_config(log_key: str, tmp_path: Path) -> dict[str, Any]:
    return server_config(CORPUS["issuer_pem"], log_key, tmp_path)


JUDGED = sorted(name for name, case in CASES.items() if case["log_key"] == CORPUS["log_key"])


@pytest.mark.parametrize("name", JUDGED)
async def test_each_report_bundle_is_judged_as_the_verifier_judges_it(
    jp_fetch: Any, name: str
) -> None:
    case = CASES[name]
    document = report_bundle_corpus.expand(CORPUS, case["bundle"])
    answer = await post(jp_fetch, document)
    expected = case["python"]
    if is_bundle(document):  # a certificate bundle's media type takes its own route
        assert answer["checks"][0]["name"] == "envelope"
        return
    assert answer["ok"] is expected["ok"]
    assert [{k: c[k] for k in ("name", "ok", "detail")} for c in answer["checks"]] == expected[
        "checks"
    ]
    assert [c["step"] for c in answer["checks"]] == list(range(1, len(answer["checks"]) + 1))
    assert answer["finding"] is None


@pytest.mark.parametrize("log_key", [""])
async def test_without_a_log_key_the_server_says_it_did_not_check(jp_fetch: Any) -> None:
    answer = await post(jp_fetch, report_bundle_corpus.expand(CORPUS, CASES["valid"]["bundle"]))
    assert set(answer) == {"skipped"} and "log key" in answer["skipped"]


async def test_a_lie_in_the_bundle_is_not_echoed(jp_fetch: Any) -> None:
    """What the bundle says beside its signed parts never comes back."""
    bundle = report_bundle_corpus.expand(CORPUS, CASES["valid"]["bundle"])
    canary = "CANARY-report-bundle-7e1a"
    bundle["report_entry"]["entry"] = canary
    bundle["certificates"][0]["note"] = canary
    answer = await post(jp_fetch, bundle)
    assert answer["ok"] is False
    assert find_canaries(json.dumps(answer).encode(), [canary]) == []
