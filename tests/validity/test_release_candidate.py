"""A candidate release of the agent's code as the one intervention (strategy CODE).

Known answers on the procurement incident: a candidate that lowers every score by 0.02
flips exactly the decisions the DESIGN.md formula says it flips; a candidate that is the
same code reformatted is equivalent; a candidate that opens a socket or reads the host
fails the audit closed; nothing of the specimen's content reaches any output.
The baseline gate and the baseline arm run the captured code, which must still be the
code on disk.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import os
import random
import secrets
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from enclave import BadInput, Refused, Runtime
from enclave.capture import Answer, Context, capture
from enclave.incidents import procurement
from enclave.replay import (
    AuditOutcome,
    AuditRequest,
    CandidateCode,
    CandidateDistribution,
    Intervention,
    Strategy,
    run_audit,
)
from enclave.replay.certificates import RuntimeLedgerLookup
from enclave.sandbox import Sandbox, WorkerHandle, pooled
from ledger.certificates import load_public_key_pem, verify_certificate
from tests.agents.candidates import (
    build_wheel,
    candidate_source,
    install_wheel,
    score_shifted_run,
    write_candidate,
    write_project,
)
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree
from tests.support.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = 100
OFFSET = 0.02  # the changed candidate's score shift


def _score(seed: int) -> float:  # DESIGN.md, reference incident 1, baseline r1/c1/0.70
    return 0.500 + 0.020 + 0.012 + 0.20 * (0.70 - 0.50) + random.Random(seed).uniform(-0.028, 0.028)


def _decision(score: float) -> str:
    return "APPROVE" if score >= 0.55 else "REVIEW"


def _candidate(root: Path, name: str, body: str) -> CandidateCode:
    folder = root / name
    folder.mkdir()
    return write_candidate(folder, name, body)


class _Live(Context):
    """A live run with nothing recorded: the truth a replay must match."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self._seed = seed

    def call(self, spec: Any, request: Any, *, live: Any, alias: str | None = None) -> Any:
        answer = live(dict(request))
        return dict(answer.response) if isinstance(answer, Answer) else dict(answer)

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)

    def random(self, stream: str | None = None) -> random.Random:
        return self._stream(stream, self._seed, lambda _request: None)


def _live_decisions(agent: Any, seeds: range) -> list[str]:
    inputs = procurement.BASELINE_INPUT["inputs"]
    return [str(agent.function(_Live(seed), dict(inputs))["decision"]) for seed in seeds]


def _run_source() -> str:
    return inspect.getsource(procurement.run)


@pytest.fixture(scope="module")
def specimen(runtime: Runtime) -> str:
    base = procurement.BASELINE_INPUT
    return capture(
        runtime, procurement.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
    ).specimen_id


def _audit(runtime: Runtime, specimen: str, candidate: CandidateCode) -> AuditOutcome:
    request = AuditRequest(
        specimen_id=specimen,
        intervention=Intervention(Strategy.CODE),
        purpose="release-gate",
        requester="ci",
        samples=SAMPLES,
        seed=1,
        candidate=candidate,
        # the approval rule's substitute is the rule itself, as the procurement policies
        # declare: the known answers below rely on it
        authoritative_substitutes=("approval-policy",),
    )
    return run_audit(runtime, request, now=datetime.now(UTC) + timedelta(hours=1))


def _predicate(outcome: AuditOutcome) -> dict[str, Any]:
    assert outcome.envelope is not None
    envelope = outcome.envelope
    statement: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return statement["predicate"]


def test_a_candidate_that_changes_decisions_is_influential_at_the_true_flip_rate(
    runtime: Runtime, specimen: str, tmp_path: Path
) -> None:
    body = _run_source().replace("+ jitter\n", f"+ jitter\n        - {OFFSET}\n")
    assert body != _run_source()
    candidate = _candidate(tmp_path, "procurement_lower", body)
    outcome = _audit(runtime, specimen, candidate)
    assert outcome.failure is None, outcome.failure
    predicate = _predicate(outcome)
    seeds = range(1, SAMPLES + 1)
    flips = sum(_decision(_score(s)) != _decision(_score(s) - OFFSET) for s in seeds)
    assert 0 < flips < SAMPLES
    # the same count from live runs of the captured agent and of the candidate itself
    sys.path.insert(0, candidate.root)
    try:
        live_candidate = importlib.import_module("procurement_lower").AGENT
    finally:
        sys.path.remove(candidate.root)
    captured_live = _live_decisions(procurement.AGENT, seeds)
    candidate_live = _live_decisions(live_candidate, seeds)
    assert sum(a != b for a, b in zip(captured_live, candidate_live, strict=True)) == flips
    assert predicate["classification"] == "influential"
    assert predicate["baseline"]["reproduced"] is True
    assert predicate["effect"]["flips"] == flips
    assert predicate["effect"]["flip_rate"] == flips / SAMPLES
    assert predicate["placebo"]["passed"] is True and predicate["placebo"]["flips"] == 0
    assert predicate["request"]["strategy"] == "CODE"
    assert predicate["request"]["candidate"] == {
        "target": "procurement_lower:AGENT",
        "digest": candidate.digest,
    }
    assert predicate["intervention"]["strategy"] == "CODE"
    assert predicate["intervention"]["unchanged_digest_equal"] is True
    assert str(tmp_path) not in json.dumps(predicate)  # the source root is not published
    envelope = outcome.envelope
    key = load_public_key_pem(Path(f"{runtime.home.signing_key_path}.pub").read_bytes())
    report = verify_certificate(
        envelope, public_key=key, ledger_lookup=RuntimeLedgerLookup(runtime.ledger)
    )
    assert report.ok, report.first_failure


def test_a_reformatted_candidate_is_equivalent(
    runtime: Runtime, specimen: str, tmp_path: Path
) -> None:
    body = "# reformatted: same behaviour, another digest\n\n" + _run_source().replace(
        "    jitter = ", "\n    jitter = "
    )
    candidate = _candidate(tmp_path, "procurement_same", body)
    outcome = _audit(runtime, specimen, candidate)
    assert outcome.failure is None, outcome.failure
    predicate = _predicate(outcome)
    assert predicate["classification"] == "equivalent"
    assert predicate["effect"]["flips"] == 0
    assert predicate["effect"]["mean_delta"] == 0


def test_the_candidate_must_still_be_the_declared_code(
    runtime: Runtime, specimen: str, tmp_path: Path
) -> None:
    candidate = _candidate(tmp_path, "procurement_edited", _run_source())
    (Path(candidate.root) / "procurement_edited.py").write_text("AGENT = None\n")
    with pytest.raises(Refused) as caught:
        _audit(runtime, specimen, candidate)
    assert caught.value.code == "code_changed"


def _replace(path: Path, text: str) -> None:
    """``path`` now names a new file holding ``text`` (written beside it, renamed over)."""
    fresh = path.with_name(f"{secrets.token_hex(8)}.new")  # one per caller: shards start at once
    fresh.write_text(text, encoding="utf-8")
    os.replace(fresh, path)


def _edited_during(method: Any, path: Path, text: str, *, rename: bool) -> Any:
    """``method`` with ``path`` holding ``text`` while it runs, the declared code put back
    after: renamed over it (a new file), or written into it (the same file)."""
    declared = path.read_text(encoding="utf-8")

    def edit(content: str) -> None:
        if rename:
            _replace(path, content)
        else:
            path.write_text(content, encoding="utf-8")

    def during(self: Any, *args: Any, **kwargs: Any) -> Any:
        edit(text)
        try:
            return method(self, *args, **kwargs)
        finally:
            edit(declared)

    return during


@pytest.mark.parametrize("attack", ["renamed-while-workers-start", "written-while-runs-import"])
def test_a_candidate_edited_behind_the_checks_does_not_run_in_its_name(
    attack: str,
    runtime: Runtime,
    specimen: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every stage verifies the root; whoever can write it puts other code there while
    workers (or their zygotes) start, or while runs import, and the declared code back
    before the next check: every check on the host passes. The runs must still run the
    declared code (the same source: equivalent), never the lowered scores."""
    candidate = _candidate(tmp_path, "procurement_edited_behind", _run_source())
    lowered = candidate_source(
        _run_source().replace("+ jitter\n", f"+ jitter\n        - {OFFSET}\n")
    )
    path = Path(candidate.code_path)
    if attack == "renamed-while-workers-start":
        for name in ("start", "warm"):
            method = getattr(Sandbox, name)
            monkeypatch.setattr(Sandbox, name, _edited_during(method, path, lowered, rename=True))
    else:
        call = WorkerHandle.call
        edited = _edited_during(call, path, lowered, rename=False)

        def samples_edited(self: WorkerHandle, request: Any, **kwargs: Any) -> Any:
            chosen = edited if request.get("op") == "samples" else call
            return chosen(self, request, **kwargs)

        monkeypatch.setattr(WorkerHandle, "call", samples_edited)
    with pooled():
        predicate = _predicate(_audit(runtime, specimen, candidate))
    assert predicate["request"]["candidate"]["digest"] == candidate.digest
    assert predicate["classification"] == "equivalent"
    assert predicate["effect"]["flips"] == 0 and predicate["effect"]["mean_delta"] == 0


def test_a_candidate_replaced_between_audits_runs_as_its_new_self(
    runtime: Runtime, specimen: str, tmp_path: Path
) -> None:
    """Two audits in one pool of zygotes, the candidate's file replaced and declared
    again between them: the second audit runs the new code, not the view a zygote
    bound for the first."""
    lowered = _run_source().replace("+ jitter\n", f"+ jitter\n        - {OFFSET}\n")
    first = _candidate(tmp_path, "procurement_next", lowered)
    with pooled():
        before = _predicate(_audit(runtime, specimen, first))
        _replace(Path(first.code_path), candidate_source(_run_source()))
        second = CandidateCode.declare(first.target, first.root)
        after = _predicate(_audit(runtime, specimen, second))
    assert before["classification"] == "influential"
    assert before["request"]["candidate"]["digest"] == first.digest
    assert after["request"]["candidate"]["digest"] == second.digest != first.digest
    assert after["classification"] == "equivalent" and after["effect"]["flips"] == 0


def test_a_code_intervention_needs_a_candidate_and_nothing_else() -> None:
    with pytest.raises(BadInput):
        AuditRequest(
            specimen_id="sp-1",
            intervention=Intervention(Strategy.CODE),
            purpose="p",
            requester="r",
        )
    with pytest.raises(BadInput):
        Intervention(Strategy.CODE, call_id="main/x#0")


def test_candidate_round_trips_in_the_stored_request(tmp_path: Path) -> None:
    (tmp_path / "cand.py").write_text("AGENT = None\n")
    candidate = CandidateCode.declare("cand:AGENT", tmp_path)
    request = AuditRequest(
        specimen_id="sp-1",
        intervention=Intervention(Strategy.CODE),
        purpose="p",
        requester="r",
        candidate=candidate,
    )
    assert AuditRequest.from_dict(request.to_dict()) == request
    with pytest.raises(BadInput):
        CandidateCode.declare("missing:AGENT", tmp_path)


_SOCKET = (
    "def run(ctx, inputs):\n"
    "    import socket\n"
    "    try:\n"
    "        socket.create_connection(('127.0.0.1', {port}), timeout=1).close()\n"
    "    except Exception:\n"
    "        pass\n"
    "    return {{'score': 0.5, 'decision': 'APPROVE', 'proposal': {{}}, 'evidence': []}}\n"
)
_READ_HOST = (
    "def run(ctx, inputs):\n"
    "    with open({path!r}, 'rb') as fh:\n"
    "        stolen = fh.read(64).hex()\n"
    "    return {{'score': 0.5, 'decision': stolen, 'proposal': {{}}, 'evidence': []}}\n"
)
# reads the recorded purchase-order text and tries every way out of the worker reply
_SMUGGLE = (
    "def run(ctx, inputs):\n"
    "    text = inputs['po_text']\n"
    "    return {'score': float(len(text)) / 1000, 'decision': text, "
    "'proposal': {'decision': text, 'subject': text, 'amount': text}, 'evidence': [text]}\n"
)


@pytest.mark.parametrize("kind", ["socket", "read-host", "smuggle"])
def test_a_hostile_candidate_fails_closed_and_leaks_nothing(
    runtime: Runtime,
    specimen: str,
    tmp_path: Path,
    listener: Any,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    secret = runtime.home.root / "hostile-target.txt"
    secret.write_text(f"{procurement.CANARY}-host-secret")
    body = {
        "socket": _SOCKET.format(port=listener.getsockname()[1]),
        "read-host": _READ_HOST.format(path=str(secret)),
        "smuggle": _SMUGGLE,
    }[kind]
    candidate = _candidate(tmp_path, f"hostile_{kind.replace('-', '_')}", body)
    try:
        outcome = _audit(runtime, specimen, candidate)
    except Refused as exc:  # refused before anything ran is closed too
        text = str(exc)
        classification = "refused"
    else:
        text = repr(outcome)
        classification = outcome.classification
    if kind != "smuggle":
        assert classification in ("failed", "refused"), classification
    else:  # what it returns is its own; only bounded labels and figures cross back
        assert classification in ("failed", "influential"), classification
    listener.settimeout(0.2)
    with pytest.raises(OSError):
        listener.accept()  # nobody connected
    out = capsys.readouterr()
    canaries = (*INCIDENT_CANARIES, f"{procurement.CANARY}-host-secret")
    assert find_canaries((text + out.out + out.err).encode(), canaries) == []
    secret.unlink()
    assert scan_tree(runtime.home.root, canaries) == {}


# sees whether anything of its source root besides itself is visible in the worker: if
# it is, it shifts every score far enough to flip every decision
_PEEK = (
    "def run(ctx, inputs):\n"
    "    import os\n"
    "    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n"
    "    try:\n"
    "        seen = os.path.exists(os.path.join(here, 'beside.py'))\n"
    "    except OSError:\n"
    "        seen = False\n"
    "    return _captured_run(ctx, inputs, shift=0.5 if seen else 0.0)\n"
    "def _captured_run(ctx, inputs, shift):\n"
    "    out = dict(_CAPTURED.function(ctx, inputs))\n"
    "    out['score'] += shift\n"
    "    return out\n"
)


def test_only_the_candidates_own_package_is_visible_in_the_worker(
    runtime: Runtime, specimen: str, tmp_path: Path
) -> None:
    package = tmp_path / "peek_candidate"
    package.mkdir()
    (package / "__init__.py").write_text(candidate_source(_PEEK), encoding="utf-8")
    (tmp_path / "beside.py").write_text(f"SECRET = '{procurement.CANARY}-beside'\n")
    candidate = CandidateCode.declare("peek_candidate:AGENT", tmp_path)
    outcome = _audit(runtime, specimen, candidate)
    predicate = _predicate(outcome)
    assert predicate["environment"]["isolation"] == "bwrap"
    # the score shift would show as a non-zero delta: nothing beside the package was seen
    assert predicate["effect"]["mean_delta"] == 0, predicate["effect"]


def test_a_candidates_copy_is_made_once_per_digest_and_remade_when_it_changed(
    tmp_path: Path,
) -> None:
    candidate = _candidate(tmp_path, "procurement_copied", _run_source())
    declared = Path(candidate.code_path).read_bytes()
    folder = tmp_path / "copies"
    with ThreadPoolExecutor(max_workers=4) as pool:  # jobs of one digest at once
        paths = set(pool.map(lambda _: candidate.snapshot(folder), range(8)))
    assert len(paths) == 1
    copy = Path(paths.pop())
    assert copy.read_bytes() == declared
    assert [p.name for p in folder.iterdir()] == [candidate.digest.removeprefix("sha256:")]
    copy.write_text("AGENT = None\n", encoding="utf-8")  # the copy edited: made again
    assert Path(candidate.snapshot(folder)).read_bytes() == declared
    Path(candidate.code_path).write_text("AGENT = None\n", encoding="utf-8")
    shutil.rmtree(folder)  # the root edited since the declaration: no copy of it is made
    with pytest.raises(Refused) as caught:
        candidate.snapshot(folder)
    assert caught.value.code == "code_changed"
    assert list(folder.iterdir()) == []


def test_a_file_the_digest_does_not_cover_is_not_shown_to_the_runs(
    runtime: Runtime, specimen: str, tmp_path: Path
) -> None:
    """A data file inside the candidate's package is not in its digest, so it must not
    change what runs: the workers see a copy of the hashed files alone."""
    package = tmp_path / "data_candidate"
    package.mkdir()
    body = _run_source().replace("+ jitter\n", "+ jitter\n        - _SHIFT\n")
    (package / "__init__.py").write_text(
        candidate_source(body)
        + "\nimport os\n\n_DATA = os.path.join(os.path.dirname(__file__), 'shift.txt')\n"
        + "_SHIFT = float(open(_DATA).read()) if os.path.exists(_DATA) else 0.0\n",
        encoding="utf-8",
    )
    (package / "shift.txt").write_text(str(OFFSET), encoding="utf-8")
    candidate = CandidateCode.declare("data_candidate:AGENT", tmp_path)
    predicate = _predicate(_audit(runtime, specimen, candidate))
    assert predicate["classification"] == "equivalent"
    assert predicate["effect"]["mean_delta"] == 0, predicate["effect"]


def test_the_view_binds_the_candidate_module_and_nothing_beside_it(tmp_path: Path) -> None:
    from enclave.sandbox.launch import plan

    package = tmp_path / "cand"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (tmp_path / "beside.py").write_text("")
    (tmp_path / "data").mkdir()
    view = plan(python_path=[], protected=[], code=[(str(package), str(package))])
    bound = {dest for _, dest in view.binds}
    assert str(package) in bound
    assert not any(d.startswith(str(tmp_path)) and d != str(package) for d in bound)


def test_a_linked_candidate_module_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "__init__.py").write_text("AGENT = None\n")
    root = tmp_path / "root"
    root.mkdir()
    (root / "linked").symlink_to(elsewhere)
    with pytest.raises(BadInput):
        CandidateCode.declare("linked:AGENT", root)


def test_a_policy_file_cannot_name_the_code_strategy() -> None:
    from enclave.governance import InterventionPolicy

    source = (ROOT / "policies" / "interventions" / "claims-fraud-score-nullify.toml").read_bytes()
    assert b'strategy = "nullify"' in source
    with pytest.raises(BadInput) as caught:
        InterventionPolicy.from_toml(source.replace(b'strategy = "nullify"', b'strategy = "code"'))
    assert "nullify, replace, perturb or revision" in str(caught.value)


# A candidate from an installed distribution: a wheel built offline and installed into a
# directory of its own, put on the import path only for the metadata lookup.
DIST, VERSION, PACKAGE = "po-candidate", "1.2.0", "po_candidate"
TARGET = f"{PACKAGE}:AGENT"
EDIT_CANARY = f"{procurement.CANARY}-edit"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    return write_project(root / "src", DIST, VERSION, PACKAGE, score_shifted_run())


@pytest.fixture(scope="module")
def wheel(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(project, tmp_path_factory.mktemp("wheels"))


@pytest.fixture
def installed(wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = install_wheel(wheel, tmp_path / "site")
    monkeypatch.syspath_prepend(str(target))
    return target


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert len(text.splitlines()) == 1 and text
    return text


def test_a_candidate_declared_by_distribution_is_the_same_code_as_by_path(
    project: Path, installed: Path
) -> None:
    candidate = CandidateCode.from_distribution(TARGET, DIST)
    by_path = CandidateCode.declare(TARGET, project)
    assert candidate.digest == by_path.digest
    assert candidate.root == os.path.realpath(installed)  # where the files are installed
    assert candidate.code_path == os.path.join(candidate.root, PACKAGE)
    assert candidate.distribution == CandidateDistribution(DIST, VERSION)
    assert CandidateCode.declare(TARGET, installed).digest == candidate.digest
    assert PACKAGE not in sys.modules  # found by metadata; nothing imported
    # the certificate names the code as today; the report adds the distribution
    assert candidate.to_predicate() == {"target": TARGET, "digest": candidate.digest}
    assert candidate.to_report() == {
        "target": TARGET,
        "digest": candidate.digest,
        "distribution": {"name": DIST, "version": VERSION},
    }
    assert CandidateCode.from_dict(candidate.to_dict()) == candidate
    request = AuditRequest(
        specimen_id="sp-1",
        intervention=Intervention(Strategy.CODE),
        purpose="p",
        requester="r",
        candidate=candidate,
    )
    assert AuditRequest.from_dict(request.to_dict()) == request
    # the normalised spelling of the name finds the same distribution
    assert CandidateCode.from_distribution(TARGET, "PO_Candidate") == candidate


@pytest.mark.parametrize("change", ["edited", "added", "removed", "linked"])
def test_an_installed_candidate_that_is_not_what_its_distribution_records_is_refused(
    installed: Path, change: str
) -> None:
    package = installed / PACKAGE
    if change == "edited":
        with (package / "__init__.py").open("a", encoding="utf-8") as fh:
            fh.write(f"# {EDIT_CANARY}\n")
    elif change == "added":
        (package / "extra.py").write_text(f"SECRET = {EDIT_CANARY!r}\n")
    elif change == "removed":
        (package / "_about.py").unlink()
    else:  # a recorded module file replaced by a link to the same content
        original = package / "_about.py"
        (installed / "about_copy.py").write_bytes(original.read_bytes())
        original.unlink()
        original.symlink_to(installed / "about_copy.py")
    with pytest.raises(Refused) as caught:
        CandidateCode.from_distribution(TARGET, DIST)
    assert caught.value.code == "code_changed"
    text = _one_line(caught.value)
    assert EDIT_CANARY not in text and str(installed) not in text


def test_bytecode_beside_the_installed_files_is_not_an_edit(installed: Path) -> None:
    cache = installed / PACKAGE / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "__init__.cpython-311.pyc").write_bytes(b"not recorded")
    assert CandidateCode.from_distribution(TARGET, DIST).digest


def test_a_distribution_candidate_edited_after_declaration_is_refused(installed: Path) -> None:
    candidate = CandidateCode.from_distribution(TARGET, DIST)
    candidate.verify()
    (installed / PACKAGE / "_about.py").write_text("RELEASE = 'other'\n")
    with pytest.raises(Refused) as caught:
        candidate.verify()
    assert caught.value.code == "code_changed"


def test_a_distribution_that_does_not_provide_the_module_is_refused(installed: Path) -> None:
    # a package in the same directory that no distribution installed, and one that
    # another distribution (installed in the environment) does not provide
    (installed / "po_stray").mkdir()
    (installed / "po_stray" / "__init__.py").write_text("AGENT = None\n")
    with pytest.raises(BadInput) as caught:
        CandidateCode.from_distribution("po_stray:AGENT", DIST)
    assert "does not provide" in _one_line(caught.value)
    with pytest.raises(BadInput) as caught:
        CandidateCode.from_distribution(TARGET, "hatchling")
    assert "does not provide" in _one_line(caught.value)


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("po-candidate-missing", "no installed distribution"),
        ("Bad Name <x>", "distribution name"),
        ("-po", "distribution name"),
    ],
)
def test_an_unknown_or_malformed_distribution_is_refused_in_one_line(
    installed: Path, name: str, says: str
) -> None:
    with pytest.raises(BadInput) as caught:
        CandidateCode.from_distribution(TARGET, name)
    text = _one_line(caught.value)
    assert says in text and name not in text


def test_regress_with_a_candidate_distribution(
    installed: Path, project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    path = os.pathsep.join(p for p in (str(installed), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": path}

    def cli(*args: str) -> tuple[int, str, str]:
        done = run_cli(home, *args, env=env, cwd=ROOT)
        return done.returncode, done.stdout, done.stderr

    assert cli("init")[0] == 0
    source = tmp_path / "input.json"
    source.write_text(json.dumps(procurement.BASELINE_INPUT))
    code, out, err = cli("capture", "procurement", "--input", str(source), "--json")
    assert code == 0, err
    specimen = json.loads(out)["specimen_id"]
    assert cli("specimens", "tag", specimen, "lib", "must-hold")[0] == 0
    both = ("--candidate", TARGET, "--candidate-path", str(project), "--candidate-dist", DIST)
    code, out, err = cli("regress", "--tag", "lib", *both)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    code, out, err = cli(
        "regress", "--tag", "lib", "--candidate", TARGET, "--candidate-dist", "nope"
    )
    assert code == 2 and "no installed distribution" in err and "Traceback" not in err
    report = tmp_path / "report.dsse.json"
    code, out, err = cli(
        "regress",
        "--tag",
        "lib",
        "--candidate",
        TARGET,
        "--candidate-dist",
        DIST,
        "--samples",
        "20",
        "--out",
        str(report),
        "--local",
        "--json",
    )
    assert code == 5, err  # the shifted scores change the decision
    assert json.loads(out)["gate"] == {"passed": False, "failing": [specimen]}
    predicate = json.loads(base64.b64decode(json.loads(report.read_text())["payload"]))["predicate"]
    assert predicate["intervention"] == {
        "strategy": "CODE",
        "target": TARGET,
        "digest": CandidateCode.declare(TARGET, project).digest,
        "distribution": {"name": DIST, "version": VERSION},
    }
    assert str(installed) not in report.read_text()  # the install directory is not published
    code, out, err = cli("verify", str(report), "--json")
    assert code == 0, out + err
    assert json.loads(out)["ok"] is True
    assert find_canaries((out + err).encode() + report.read_bytes(), INCIDENT_CANARIES) == []
