"""Every error decides its own outcome: the exit code a command ends with, the HTTP
status the service answers and whether a failed job is tried again are read from the
error's class (``ledger.ErrorOutcome``), by the command line's edge, the service's
handlers and the jobs layer alike.

The table below names every error class under the two roots; a new class without an
entry fails here, so its outcome is decided on purpose rather than by a fall-through.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import enclave
import jupyter_ext
import ledger
from enclave import (
    AgentFailed,
    BadInput,
    EnclaveError,
    InfrastructureError,
    IntegrityFailure,
    Refused,
)
from enclave.service import API_PREFIX
from ledger import LedgerError, exit_code_for, http_status_for

# class name -> (exit code, HTTP status, retryable: a job failing with it is tried again)
OUTCOMES: dict[str, tuple[int, int, bool]] = {
    # the ledger's root and its branches (all retryable, as the jobs layer has always
    # retried a job on any ledger error; a conflict never reaches that decision)
    "LedgerError": (3, 503, True),
    "LedgerUnavailable": (3, 503, True),
    "LedgerIntegrityError": (3, 503, True),
    "MalformedDocument": (3, 503, True),
    "NotFound": (2, 404, True),
    "Conflict": (2, 409, True),
    "CanonicalizationError": (2, 400, True),
    # the certificate verifier's root (ledger.certificates) and its branches
    "CertificateError": (70, 503, False),
    "BadCertificateInput": (2, 400, False),
    # the enclave's root and its branches
    "EnclaveError": (70, 503, False),
    "BadInput": (2, 400, False),
    "Refused": (2, 403, False),
    "InfrastructureError": (3, 503, True),
    "IntegrityFailure": (1, 503, False),
    "AgentFailed": (4, 503, False),
    # bad input
    "PredicateInvalid": (2, 400, False),
    "SpecError": (2, 400, False),
    "InvalidPurpose": (2, 400, False),
    "NoEffect": (2, 400, False),
    # refusals
    "GrantRefused": (2, 403, False),
    "BudgetExhausted": (2, 429, False),
    # infrastructure
    "PayloadsMoving": (3, 503, True),
    "SweepStopped": (3, 503, True),  # an instance takes its cause's exit code and status
    "SandboxUnavailable": (3, 503, True),
    "KeyServerUnavailable": (3, 503, True),
    "GrantServiceUnavailable": (3, 503, True),
    "CopyMismatch": (3, 503, True),
    "InferenceUnavailable": (3, 503, True),
    # integrity
    "DecryptionFailed": (1, 503, False),
    "CertificateInvalid": (1, 503, False),
    "_LineageBroken": (1, 503, False),
    "ModelDrift": (1, 503, False),
    # the agent's own failure
    "AgentCrashed": (4, 503, False),
    "BranchError": (4, 503, False),
    "DivergenceError": (4, 503, False),
    "Unservable": (4, 503, False),
    "AmbientInputMissing": (4, 503, False),
    "Unresolvable": (4, 503, False),
    "ReplyRefused": (4, 503, False),
    "ReplyInvalid": (4, 503, False),
    "ValueOutOfRange": (4, 503, False),
    "Contaminated": (4, 503, False),
    "WorkerClosed": (4, 503, False),
    "AskRefused": (4, 503, False),
}
BRANCHES = (BadInput, Refused, InfrastructureError, IntegrityFailure, AgentFailed)


def _import_all() -> None:
    for package in (enclave, ledger, jupyter_ext):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if info.name.endswith("__main__") or ".migrations" in info.name:
                continue  # runs the command line / Alembic's environment on import
            importlib.import_module(info.name)


def _subclasses(root: type) -> Iterator[type]:
    yield root
    for sub in root.__subclasses__():
        yield from _subclasses(sub)


def _error_classes() -> list[type[BaseException]]:
    _import_all()
    found = {cls for root in (EnclaveError, LedgerError) for cls in _subclasses(root)}
    # agent code and tests may subclass the roots too: only the packages' own count
    ours = [c for c in found if c.__module__.split(".")[0] in ("enclave", "ledger", "jupyter_ext")]
    return sorted(ours, key=lambda c: (c.__module__, c.__qualname__))


ERRORS = _error_classes()


def _instance(cls: type[BaseException]) -> BaseException:
    """An error of ``cls`` built without its constructor (which takes class-specific
    arguments): its outcome is its class's."""
    exc = cls.__new__(cls)
    BaseException.__init__(exc, "x")
    exc.retry_after = 60  # type: ignore[attr-defined]  # what BudgetExhausted's header reads
    return exc


def test_every_error_class_is_in_the_table() -> None:
    names = [cls.__name__ for cls in ERRORS]
    assert len(names) == len(set(names)), "two error classes share a name"
    assert set(names) == set(OUTCOMES)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_each_class_carries_its_outcome(cls: type[BaseException]) -> None:
    exc = _instance(cls)
    retryable = exc.retryable  # type: ignore[attr-defined]
    assert (exit_code_for(exc), http_status_for(exc), retryable) == OUTCOMES[cls.__name__]


def test_every_enclave_error_sits_under_one_branch() -> None:
    for cls in ERRORS:
        if not issubclass(cls, EnclaveError) or cls is EnclaveError or cls in BRANCHES:
            continue
        under = [branch.__name__ for branch in BRANCHES if issubclass(cls, branch)]
        assert len(under) == 1, (cls.__name__, under)


def test_a_foreign_exception_is_an_internal_fault() -> None:
    assert (exit_code_for(KeyError("x")), http_status_for(KeyError("x"))) == (70, 500)


def test_a_stopped_sweep_takes_its_causes_outcome() -> None:
    from enclave.retention import SweepStopped
    from ledger import NotFound

    assert exit_code_for(SweepStopped(1, NotFound("no such specimen"))) == 2
    assert exit_code_for(SweepStopped(0, KeyError("x"))) == 70
    assert http_status_for(SweepStopped(0, Refused("held", code="erasure_refused"))) == 403


# -- the edges read it ------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from enclave import Home

    return Home.init(tmp_path_factory.mktemp("outcomes") / "home").root


def _raising(exc: BaseException) -> Any:
    def raise_it(*_: Any, **__: Any) -> Any:
        raise exc

    return raise_it


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_the_command_line_exits_with_the_classs_code(
    cls: type[BaseException],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from enclave.cli import main

    monkeypatch.setattr(ledger.Ledger, "head", _raising(_instance(cls)))
    monkeypatch.setattr("sys.argv", ["replay-enclave", "ledger", "head", "--home", str(home)])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == OUTCOMES[cls.__name__][0]
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("error: ") and out.err.count("\n") == 1


def test_a_missing_record_is_exit_2_on_the_command_line(home: Path) -> None:
    from tests.support.cli_runner import run_cli

    # the ledger's own NotFound, raised by a real read, reaches the edge unwrapped
    done = run_cli(home, "specimens", "tag", "sp-nope", "release-gate/x")
    assert (done.returncode, done.stdout) == (OUTCOMES["NotFound"][0], "")
    assert done.stderr == "error: no such specimen\n"


@pytest.fixture(scope="module")
def service(home: Path) -> Iterator[tuple[Any, dict[str, str]]]:
    from starlette.exceptions import StarletteDeprecationWarning

    with warnings.catch_warnings():  # starlette's notice about httpx (as the other tests)
        warnings.simplefilter("ignore", StarletteDeprecationWarning)
        from fastapi.testclient import TestClient

    from enclave import Runtime
    from enclave.governance import add_analyst
    from enclave.service import create_app

    with Runtime.open(enclave.Home.open(home), env={}) as runtime:
        _, token = add_analyst(
            runtime, "alice", tenant="acme", roles=["auditor"], now=datetime.now(UTC)
        )
    app = create_app(lambda: Runtime.open(enclave.Home.open(home), env={}))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, {"Authorization": f"Bearer {token}"}


def test_a_missing_record_is_404_over_http(service: tuple[Any, dict[str, str]]) -> None:
    client, auth = service
    missing = client.get(f"{API_PREFIX}/specimens/sp-nope", headers=auth)
    assert missing.status_code == OUTCOMES["NotFound"][1]
    assert missing.json() == {"error": {"code": "not_found", "message": "no such resource"}}


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_the_service_answers_with_the_classs_status(
    cls: type[BaseException],
    service: tuple[Any, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, auth = service
    exc = _instance(cls)
    monkeypatch.setattr(ledger.Ledger, "get_specimen", _raising(exc))
    answer = client.get(f"{API_PREFIX}/specimens/sp-any", headers=auth)
    assert answer.status_code == OUTCOMES[cls.__name__][1]
    error = answer.json()["error"]
    assert error["code"] == exc.code  # type: ignore[attr-defined]
    if answer.status_code >= 500:  # an operator's matter: fixed text, never the error's
        assert error["message"] == exc.public_text  # type: ignore[attr-defined]
    if cls.__name__ == "BudgetExhausted":
        assert answer.headers["retry-after"] == "60"


# -- the jobs layer reads it ------------------------------------------------------------

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def queue(home: Path) -> Iterator[tuple[Any, str]]:
    """The home's runtime (its jobs queue on SQLite) and a sealed specimen (synthetic:
    no run) that audits can be submitted for."""
    from enclave import Runtime
    from tests.support.reads_world import synthetic_specimen

    with Runtime.open(enclave.Home.open(home), env={}) as runtime:
        record = synthetic_specimen("sp-retry")
        runtime.ledger.seal_specimen(record)
        yield runtime, record.specimen_id


@pytest.mark.parametrize("cls", [*ERRORS, KeyError], ids=lambda c: c.__name__)
def test_the_jobs_layer_retries_exactly_the_retryable_ones(
    cls: type[BaseException], queue: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A submitted audit's job, claimed from the queue on the home's SQLite database,
    fails with the error: given back (``queued``, the audit still open) if the class is
    retryable, ended (``failed``, the audit failed closed) if not. A conflict is the
    lease's matter and propagates; an exception no class speaks for is retried."""
    from enclave import AuditRequest, Intervention, Strategy
    from enclave.jobs import Conflict, StageOptions, audit_status, claim, execute, submit_audit

    runtime, specimen = queue
    exc = KeyError("x") if cls is KeyError else _instance(cls)
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose=f"retry on {cls.__name__}",
        requester="analyst-1",
    )
    audit_id = submit_audit(runtime, request, tenant_id="acme", now=T0).audit_id
    # earlier cases' given-back jobs wait out their backoff: only this one is due
    job = claim(runtime.ledger.engine, worker_id="w", now=T0, lease_seconds=60)
    assert job is not None and job.audit_id == audit_id
    # the job's first step reads its audit's request: that is where it fails here
    monkeypatch.setattr("enclave.jobs._execute._request", _raising(exc))

    def run() -> str:
        return execute(runtime, job, clock=lambda: T0, options=StageOptions())

    if cls.__name__ == "Conflict":
        with pytest.raises(Conflict):
            run()
        return
    retried = cls is KeyError or OUTCOMES[cls.__name__][2]
    assert run() == ("queued" if retried else "failed")
    assert (audit_status(runtime, audit_id).status == "FAILED") is not retried
