"""The ``replay-enclave`` edge under bad input: exactly one line on stderr, a non-zero
exit, no traceback, no echo of the input, and nothing half-written.

Commands run as real subprocesses through the installed console script, so the error
edge (``enclave.cli.main``) is the one users meet.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from enclave import BadInput, Home, Runtime
from enclave.capture import capture
from enclave.cli import read_input_file
from enclave.incidents import claims, procurement
from tests.support.canary import INCIDENT_CANARIES, find_canaries

EXE = shutil.which("replay-enclave")
pytestmark = pytest.mark.skipif(EXE is None, reason="the console script is not installed")

LEAK = "CANARY-CLI-5d2e77"
CANARIES = (*INCIDENT_CANARIES, LEAK)


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLAY_ENCLAVE_")}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [str(EXE), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=cwd,
    )


def snapshot(root: Path) -> dict[str, Any]:
    """Entry count, run count, specimens, head and the payload folder listing."""
    runtime = Runtime.open(Home.open(root))
    try:
        with runtime.ledger.engine.connect() as conn:
            runs = int(conn.exec_driver_sql("SELECT count(*) FROM runs").scalar_one())
        return {
            "entries": len(runtime.ledger.entries()),
            "runs": runs,
            "specimens": [s.specimen_id for s in runtime.ledger.list_specimens()],
            "head": runtime.ledger.head(),
            "verified": runtime.ledger.verify().ok,
            "payloads": sorted(str(p.relative_to(root)) for p in (root / "payloads").rglob("*")),
        }
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def template_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "home"
    runtime = Runtime.open(Home.init(root))
    try:
        base = claims.BASELINE_INPUT
        capture(runtime, claims.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"])
    finally:
        runtime.close()
    return root


@pytest.fixture
def home(template_home: Path, tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "home"
    shutil.copytree(template_home, root)
    before = snapshot(root)
    assert before["runs"] == 1 and before["entries"] >= 1 and before["payloads"]
    yield root
    assert snapshot(root) == before, "a failed command changed the home"


def assert_one_line_error(out: subprocess.CompletedProcess[str], *, code: int = 2) -> str:
    assert out.returncode == code, (out.returncode, out.stderr)
    assert out.stdout == ""
    assert out.stderr.endswith("\n") and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("error: ")
    assert "Traceback" not in out.stderr
    assert find_canaries((out.stdout + out.stderr).encode(), CANARIES) == []
    return out.stderr.strip()


def input_file(tmp_path: Path, data: Any, name: str = "input.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def baseline(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(procurement.BASELINE_INPUT))
    for key, value in changes.items():
        if key in ("tenant", "seed", "classification"):
            data[key] = value
        else:
            data["inputs"][key] = value
    return data


def capture_cli(
    home: Path, path: Path, agent: str = "procurement"
) -> subprocess.CompletedProcess[str]:
    return run("capture", agent, "--input", str(path), "--home", str(home))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"tenant": "acme", "inputs": {', "input file is not valid JSON"),
        (
            f'{{"tenant": "acme", "inputs": {{"po_text": "{LEAK}"}}, oops}}',
            "input file is not valid JSON",
        ),
        (f'{{"tenant": "acme", "inputs": {{"po_text": "{LEAK}"', "input file is not valid JSON"),
        ("[" * 100_000 + "]" * 100_000, "input file is not valid JSON"),
        ("[]", "input file must be an object with an 'inputs' object"),
        (
            '{"tenant": "acme", "inputs": []}',
            "input file must be an object with an 'inputs' object",
        ),
        ('{"inputs": {}}', "input file needs a 'tenant' string"),
        ('{"tenant": "acme", "inputs": {}, "classification": []}', "'classification' must map"),
    ],
    ids=[
        "truncated",
        "canary-garbage",
        "canary-unterminated",
        "deep",
        "array",
        "inputs-array",
        "no-tenant",
        "cls-list",
    ],
)
def test_malformed_input_file(home: Path, tmp_path: Path, text: str, message: str) -> None:
    line = assert_one_line_error(capture_cli(home, input_file(tmp_path, text)))
    assert line.startswith(f"error: {message}")


@pytest.mark.parametrize("text", [f'{{"inputs": {{"po_text": "{LEAK}"', "[" * 100_000])
def test_a_refused_input_file_links_to_no_error_holding_it(tmp_path: Path, text: str) -> None:
    """A JSON decode error keeps the whole document as ``doc``; the refusal keeps no
    link to it, not even the ``__context__`` that ``from None`` only hides."""
    with pytest.raises(BadInput) as info:
        read_input_file(input_file(tmp_path, text))
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_invalid_utf8_with_canary_is_not_echoed(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(b'{"tenant": "acme", "inputs": {"po_text": "' + LEAK.encode() + b'\xff\xfe"}}')
    assert assert_one_line_error(capture_cli(home, path)) == "error: input file is not valid JSON"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (baseline(amount=float("nan")), "input holds a value that cannot be canonicalised"),
        (baseline(amount=float("inf")), "input holds a value that cannot be canonicalised"),
        (baseline(amount=2**64), "input holds a value that cannot be canonicalised"),
        (baseline(po_text="\ud800" + LEAK), "input holds a value that cannot be canonicalised"),
        (baseline(seed=2**64), "seed must be an integer"),
        (baseline(seed="41"), "seed must be an integer"),
        (baseline(classification={"po_text": "top-secret"}), "unknown classification"),
        (
            baseline(classification={"nope": "public"}),
            "classification override names an undeclared",
        ),
        (baseline(extra=LEAK), "input has fields the agent does not declare"),
        (baseline(tenant="../evil"), "tenant id must be"),
        (baseline(tenant=""), "tenant id must be"),
    ],
    ids=[
        "nan",
        "inf",
        "2**64",
        "surrogate",
        "seed-huge",
        "seed-text",
        "cls-unknown",
        "cls-undeclared",
        "undeclared",
        "tenant-dots",
        "tenant-empty",
    ],
)
def test_bad_values_are_refused_before_any_write(
    home: Path, tmp_path: Path, data: Any, message: str
) -> None:
    # json.dumps writes NaN/Infinity literals and lone surrogates as \ud800 escapes
    line = assert_one_line_error(capture_cli(home, input_file(tmp_path, json.dumps(data))))
    assert line.startswith(f"error: {message}"), line


def test_huge_literal_in_input_file(home: Path, tmp_path: Path) -> None:
    text = json.dumps(baseline()).replace('"amount": 48250.0', '"amount": 1e400')
    assert "1e400" in text
    line = assert_one_line_error(capture_cli(home, input_file(tmp_path, text)))
    assert "cannot be canonicalised" in line


@pytest.mark.parametrize(
    "agent", ["no-such-agent", "os:system", "enclave.incidents.claims:CANARY", "x:y"]
)
def test_unknown_agent(home: Path, tmp_path: Path, agent: str) -> None:
    line = assert_one_line_error(capture_cli(home, input_file(tmp_path, baseline()), agent=agent))
    assert line in (
        "error: unknown agent (see `replay-enclave agents`)",
        "error: the named object is neither an AgentSpec nor a framework's agent",
    )


def test_missing_input_file(home: Path, tmp_path: Path) -> None:
    line = assert_one_line_error(capture_cli(home, tmp_path / "nope.json"))
    assert line == "error: input file not found"
    line = assert_one_line_error(capture_cli(home, tmp_path))  # a folder
    assert line == "error: input file is not valid JSON"


def test_unknown_specimen(home: Path) -> None:
    line = assert_one_line_error(run("specimens", "show", "sp-nope", "--home", str(home)))
    assert line == "error: no sealed specimen has that id"


def test_bad_saved_head_option(home: Path) -> None:
    line = assert_one_line_error(run("ledger", "verify", "--head", "x", "--home", str(home)))
    assert line == "error: --head must look like INDEX:HASH"


@pytest.mark.parametrize(
    "argv",
    [
        ["capture", "procurement", "--input", "{input}"],
        ["specimens", "list"],
        ["ledger", "verify"],
        ["init"],
    ],
    ids=["capture", "list", "verify", "init"],
)
def test_a_folder_that_is_not_a_home(tmp_path: Path, argv: list[str]) -> None:
    folder = tmp_path / "not-a-home"
    folder.mkdir()
    (folder / "notes.txt").write_text("someone else's files")
    path = input_file(tmp_path, baseline())
    out = run(*[a.replace("{input}", str(path)) for a in argv], "--home", str(folder))
    line = assert_one_line_error(out)
    assert "not a replay-enclave home" in line
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_a_missing_home_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert_one_line_error(run("specimens", "list", "--home", str(missing)))
    assert not missing.exists()


def test_a_good_capture_still_works(home: Path, tmp_path: Path) -> None:
    """The edge's refusals are not a broken command: the same file minus the fault seals."""
    fresh = tmp_path / "fresh"
    shutil.copytree(home, fresh)
    out = run(
        "capture",
        "procurement",
        "--input",
        str(input_file(tmp_path, baseline())),
        "--home",
        str(fresh),
        "--json",
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    # input, 5 boundary calls, 2 cuts (before-retrieval, before-authority), random, outcome
    assert summary["steps"] == 10 and summary["holes"] == 1
    assert find_canaries(out.stdout.encode(), CANARIES) == []
    assert snapshot(fresh)["runs"] == 2
