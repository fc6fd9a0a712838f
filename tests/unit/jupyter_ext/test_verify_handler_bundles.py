"""``POST /enclave/verify`` with a certificate bundle: the Jupyter server checks its seven
steps against the log key configured there (``EnclaveExtension.log_key``), as
``ledger.certificates.verify_bundle`` does; without a log key it says it did not check,
never that the bundle passed. The bundles are the parity corpus's."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.certificates import BUNDLE_CHECK_NAMES, is_bundle
from ledger.certificates.tlog import WitnessVerifier, cosign, parse_proof
from tests.unit.certificates import bundle_corpus

pytest_plugins = ["pytest_jupyter.jupyter_server"]

CORPUS = json.loads(bundle_corpus.TARGET.read_text())
CASES = {case["name"]: case for case in CORPUS["cases"]}


@pytest.fixture
def log_key() -> str:
    return str(CORPUS["log_key"])


def server_config(issuer_pem: str, log_key: str, tmp_path: Path) -> dict[str, Any]:
    """A Jupyter server trusting ``issuer_pem`` and ``log_key`` (no service behind it)."""
    issuer = tmp_path / "issuer.pub.pem"
    issuer.write_text(issuer_pem)
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
        "EnclaveExtension": {
            "service_url": "http://127.0.0.1:9",
            "issuer_key": str(issuer),
            "log_key": log_key,
        },
    }


@pytest.fixture
def jp_server_config(log_key: str, tmp_path: Path) -> dict[str, Any]:
    return server_config(CORPUS["issuer_pem"], log_key, tmp_path)


async def post(jp_fetch: Any, document: Any) -> dict[str, Any]:
    response = await jp_fetch("enclave", "verify", method="POST", body=json.dumps(document))
    assert response.code == 200
    answer: dict[str, Any] = json.loads(response.body)
    return answer


async def test_a_valid_bundle_passes_the_seven_checks_with_its_finding(jp_fetch: Any) -> None:
    case = CASES["valid"]
    report = await post(jp_fetch, bundle_corpus.expand(CORPUS, case))
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
    report = await post(jp_fetch, bundle_corpus.expand(CORPUS, case))
    assert (report["ok"], report["checks"]) == (case["python"]["ok"], case["python"]["checks"])
    assert (report["finding"] is not None) is report["ok"]


@pytest.mark.parametrize("log_key", [""])
async def test_without_a_log_key_the_server_says_it_did_not_check(jp_fetch: Any) -> None:
    answer = await post(jp_fetch, bundle_corpus.expand(CORPUS, CASES["valid"]))
    assert set(answer) == {"skipped"} and "log key" in answer["skipped"]


@pytest.mark.parametrize("log_key", ["not a verifier key"])
async def test_a_bad_log_key_is_a_configuration_error_not_a_verdict(jp_fetch: Any) -> None:
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as raised:
        await post(jp_fetch, bundle_corpus.expand(CORPUS, CASES["valid"]))
    assert raised.value.code == 503
    assert b"not_configured" in raised.value.response.body  # type: ignore[union-attr]


# --- witnesses: EnclaveExtension.witness_keys, as ``verify --witness`` ------------------

WITNESS = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
WITNESS_KEY = WitnessVerifier("witness.example/w1", WITNESS.public_key())


def _cosigned(bundle: dict[str, Any]) -> dict[str, Any]:
    """The bundle with the witness's cosignature on its checkpoint, in both proofs."""
    out = copy.deepcopy(bundle)
    for part in ("specimen_entry", "certificate_entry"):
        note = parse_proof(out[part]["proof"]).note
        text = note.rpartition("\n\n")[0] + "\n"
        line = cosign(text, WITNESS_KEY, WITNESS.sign, timestamp=1_765_000_000)
        assert out[part]["proof"].endswith(note)
        out[part]["proof"] += line
    return out


@pytest.fixture
def witness_keys() -> list[str]:
    return [WITNESS_KEY.encode()]


@pytest.fixture
def jp_server_config_witnessed(jp_server_config: dict[str, Any], witness_keys: list[str]) -> Any:
    jp_server_config["EnclaveExtension"]["witness_keys"] = witness_keys
    return jp_server_config


@pytest.mark.usefixtures("jp_server_config_witnessed")
async def test_a_configured_witness_must_have_cosigned(jp_fetch: Any) -> None:
    valid = bundle_corpus.expand(CORPUS, CASES["valid"])
    unwitnessed = await post(jp_fetch, valid)
    checks = {c["name"]: c for c in unwitnessed["checks"]}
    assert unwitnessed["ok"] is False and unwitnessed["finding"] is None
    assert checks["checkpoint"]["ok"] is False
    assert "cosigned by 0 of the witnesses, 1 required" in checks["checkpoint"]["detail"]
    witnessed = await post(jp_fetch, _cosigned(valid))
    assert witnessed["ok"] is True, witnessed
    assert "cosigned by 1 of 1 witnesses" in witnessed["checks"][4]["detail"]


@pytest.mark.usefixtures("jp_server_config_witnessed")
@pytest.mark.parametrize("witness_keys", [["not a witness key"]])
async def test_a_bad_witness_key_is_a_configuration_error(jp_fetch: Any) -> None:
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as raised:
        await post(jp_fetch, bundle_corpus.expand(CORPUS, CASES["valid"]))
    assert raised.value.code == 503
    assert b"not_configured" in raised.value.response.body  # type: ignore[union-attr]
