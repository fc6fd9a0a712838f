"""``POST /enclave/verify`` with a certificate bundle: the Jupyter server checks its seven
steps against the log key configured there (``EnclaveExtension.log_key``), as
``ledger.certificates.verify_bundle`` does; without a log key it says it did not check,
never that the bundle passed. The bundles are the parity corpus's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import BUNDLE_CHECK_NAMES, is_bundle
from tests.unit.certificates import bundle_corpus

pytest_plugins = ["pytest_jupyter.jupyter_server"]

CORPUS = json.loads(bundle_corpus.TARGET.read_text())
CASES = {case["name"]: case for case in CORPUS["cases"]}


@pytest.fixture
def log_key() -> str:
    return str(CORPUS["log_key"])


@pytest.fixture
def jp_server_config(log_key: str, tmp_path: Path) -> dict[str, Any]:
    issuer = tmp_path / "issuer.pub.pem"
    issuer.write_text(CORPUS["issuer_pem"])
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
        "EnclaveExtension": {
            "service_url": "http://127.0.0.1:9",
            "issuer_key": str(issuer),
            "log_key": log_key,
        },
    }


async def _post(jp_fetch: Any, document: Any) -> dict[str, Any]:
    response = await jp_fetch("enclave", "verify", method="POST", body=json.dumps(document))
    assert response.code == 200
    answer: dict[str, Any] = json.loads(response.body)
    return answer


async def test_a_valid_bundle_passes_the_seven_checks_with_its_finding(jp_fetch: Any) -> None:
    case = CASES["valid"]
    report = await _post(jp_fetch, bundle_corpus.expand(CORPUS, case))
    assert report["ok"] is True
    assert [c["name"] for c in report["checks"]] == list(BUNDLE_CHECK_NAMES)
    assert report["checks"] == case["python"]["checks"]
    assert report["finding"] and "paired run" in report["finding"]


# the corpus's other bundles the server can judge: those against its log key (an envelope
# that is not a bundle takes the envelope's route, tested in test_verify_handler)
JUDGED = sorted(
    name
    for name, case in CASES.items()
    if name != "valid"
    and case["log_key"] == CORPUS["log_key"]
    and is_bundle(bundle_corpus.expand(CORPUS, case))
)


@pytest.mark.parametrize("name", JUDGED)
async def test_each_corpus_bundle_is_judged_as_the_verifier_judges_it(
    jp_fetch: Any, name: str
) -> None:
    case = CASES[name]
    report = await _post(jp_fetch, bundle_corpus.expand(CORPUS, case))
    assert (report["ok"], report["checks"]) == (case["python"]["ok"], case["python"]["checks"])
    assert (report["finding"] is not None) is report["ok"]


@pytest.mark.parametrize("log_key", [""])
async def test_without_a_log_key_the_server_says_it_did_not_check(jp_fetch: Any) -> None:
    answer = await _post(jp_fetch, bundle_corpus.expand(CORPUS, CASES["valid"]))
    assert set(answer) == {"skipped"} and "log key" in answer["skipped"]


@pytest.mark.parametrize("log_key", ["not a verifier key"])
async def test_a_bad_log_key_is_a_configuration_error_not_a_verdict(jp_fetch: Any) -> None:
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as raised:
        await _post(jp_fetch, bundle_corpus.expand(CORPUS, CASES["valid"]))
    assert raised.value.code == 503
    assert b"not_configured" in raised.value.response.body  # type: ignore[union-attr]
