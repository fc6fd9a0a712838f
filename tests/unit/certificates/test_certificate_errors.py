"""The verifier's errors live under the ledger's root, and the enclave's faces answer
them as the enclave's own: bad input is exit 2 and HTTP 400 with its one-line message;
an invalid certificate is an integrity failure, answered opaquely."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home
from enclave.service import create_app
from ledger import LedgerError
from ledger.certificates import (
    BadCertificateInput,
    CertificateError,
    CertificateInvalid,
    PredicateInvalid,
)
from tests.support import cli_runner

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def test_the_errors_have_one_root_under_the_ledger() -> None:
    assert issubclass(CertificateError, LedgerError)
    assert issubclass(PredicateInvalid, BadCertificateInput)
    assert issubclass(CertificateInvalid, CertificateError)
    assert not issubclass(CertificateInvalid, BadCertificateInput)


def test_a_malformed_public_key_is_exit_2_in_one_line(tmp_path: Path) -> None:
    home = Home.init(tmp_path / "home").root
    garbage = tmp_path / "issuer.pub.pem"
    garbage.write_bytes(b"-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n")
    done = cli_runner.run_cli(
        home, "verify", str(GOLDEN / "certificate_v2.dsse.json"), "--public-key", str(garbage)
    )
    assert (done.returncode, done.stderr) == (2, "error: not a PEM public key\n")


def _raise(error: Exception) -> None:
    raise error


@pytest.mark.parametrize(
    ("error", "status", "code", "message"),
    [
        (BadCertificateInput("DSSE envelope malformed"), 400, "bad_input", None),
        (PredicateInvalid(["/effect: rule"]), 400, "predicate_invalid", None),
        (
            CertificateInvalid(),
            503,
            "certificate_invalid",
            "the enclave could not complete the request",
        ),
    ],
    ids=["bad-input", "predicate-invalid", "certificate-invalid"],
)
def test_the_service_answers_them_as_enclave_errors(
    error: Exception, status: int, code: str, message: str | None
) -> None:
    def no_runtime() -> None:
        raise AssertionError("no route here opens a runtime")

    app = create_app(no_runtime)  # type: ignore[arg-type]
    app.add_api_route("/raises", lambda: _raise(error))
    answer = TestClient(app).get("/raises")
    assert answer.status_code == status
    assert answer.json() == {"error": {"code": code, "message": message or str(error)}}
