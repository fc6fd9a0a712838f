"""Every ``replay-enclave`` command under hostile input, enumerated from the Typer app
itself (a new command or option joins the sweep without being listed here).

Each case runs the real command line in its own process against a real SQLite home
(a copy of one captured, tagged home) and must be a refusal: a documented exit code
(2 bad input or 3 infrastructure trouble; ``vault`` commands answer 1), nothing on
stdout, exactly one ``error: ...`` line on stderr, no traceback, no canary from the
input echoed, and the home and working folder exactly as they were (every table's row
count, every file name, the config and the saved head).

Commands are slow to start, so the module runs the selected cases a few at a time
before the first test reads its outcome (``outcomes``); each case is still its own test.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer

from enclave.cli import app
from enclave.incidents import procurement
from tests.support.canary import INCIDENT_CANARIES, find_canaries

CANARY = "CANARY-CLI-ATTACK-4b7e19"
CANARIES = (*INCIDENT_CANARIES, CANARY)
BIG = str(2**64)
TIMEOUT = 45
PARALLEL = 4
_MAIN = "from enclave.cli import main; main()"

# -- the command tree, from the app ---------------------------------------------------


def _leaves() -> dict[tuple[str, ...], Any]:
    root = typer.main.get_command(app)
    ctx = root.make_context("replay-enclave", [], resilient_parsing=True)
    found: dict[tuple[str, ...], Any] = {}

    def walk(group: Any, path: tuple[str, ...]) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if hasattr(command, "list_commands"):
                walk(command, (*path, name))
            else:
                found[(*path, name)] = command

    walk(root, ())
    return found


LEAVES = _leaves()


def _kind(param: Any) -> str:
    return {
        "TyperPath": "path",
        "IntParamType": "int",
        "IntRange": "int",
        "FloatParamType": "float",
        "StringParamType": "str",
        "BoolParamType": "bool",
    }.get(type(param.type).__name__, "other")


def _is_argument(param: Any) -> bool:
    return type(param).__name__.endswith("Argument")


def _flag(param: Any) -> str:
    return next(o for o in param.opts if o.startswith("--"))


def _takes_home(path: tuple[str, ...]) -> bool:
    return any(p.name == "home" for p in LEAVES[path].params)


# A valid value for each required parameter (by name; by type otherwise), so a case
# reaches the check it attacks. Placeholders are filled per case (``_fill``).
VALID: dict[str, str] = {
    "specimen": "{specimen}",
    "specimen_id": "{specimen}",
    "purpose": "attack sweep",
    "certificate": "{envelope}",
    "report": "{report}",
    "agent": "procurement",
    "input_file": "{input}",
    "name": "ann",
    "tags": "lib",
    "folder": "{ws}/exported",
    "files": "{policy}",
    "policy_id": "pol",
    "tenant": "acme",
    "role": "viewer",
    "keep_from": "1",
    "to": "database",
    "addr": "http://127.0.0.1:9",
    "token": "t",
}
BY_TYPE = {"int": "1", "float": "1", "str": "x1", "path": "{ws}/x"}

# Options a command needs before it gets to its work (an intervention, a selection).
CONTEXT: dict[tuple[str, ...], tuple[str, ...]] = {
    ("audit",): ("--revision", "model=r2", "--samples", "2"),
    ("regress",): ("--tag", "lib", "--revision", "model=r2", "--local", "--out", "{ws}/r.json"),
    ("serve",): ("--port", "0"),
}

# Commands that create a home where none is: a missing folder is theirs to make.
CREATORS = {("init",), ("demo",), ("vault", "dev")}


def base_args(path: tuple[str, ...], override: tuple[Any, str] | None = None) -> list[str]:
    """The command with every required parameter given a valid value, and the
    ``override`` parameter (required or not) given its value instead."""
    args = list(path)
    for param in LEAVES[path].params:
        if override is not None and param is override[0]:
            value = override[1]
        elif param.required:
            value = VALID.get(param.name) or BY_TYPE.get(_kind(param), "x1")
        else:
            continue
        args += [value] if _is_argument(param) else [_flag(param), value]
    context = list(CONTEXT.get(path, ()))
    if override is not None and not _is_argument(override[0]) and _flag(override[0]) in context:
        at = context.index(_flag(override[0]))
        del context[at : at + 2]
    return [*args, *context]


def codes_for(path: tuple[str, ...]) -> frozenset[int]:
    # the vault commands document exit code 1 for every error of their own
    # (enclave.cli._vault); a usage error (a value out of an option's range) is 2 everywhere
    return frozenset({1, 2}) if path[0] == "vault" else frozenset({2, 3})


# -- cases ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]
    home: str = "template"  # template | missing | file
    codes: frozenset[int] = frozenset({2, 3})
    needs_unreadable: bool = False

    def __str__(self) -> str:
        return self.id


@dataclass
class Outcome:
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None


def _id(path: tuple[str, ...], *parts: str) -> str:
    return "-".join(["_".join(path), *parts])


def home_cases() -> list[Case]:
    cases = []
    for path in LEAVES:
        if not _takes_home(path):
            continue
        for kind in ("missing", "file"):
            if kind == "missing" and path in CREATORS:
                continue
            argv = (*base_args(path), "--home", "{home}")
            cases.append(Case(_id(path, kind), argv, home=kind, codes=codes_for(path)))
    return cases


HOSTILE_IDS = {
    # traversal, a lookalike hyphen, an escape sequence and a line break: a short id of
    # characters no id grammar admits
    "hostile": "../sp\u2010\x1b[31m\r\n" + CANARY,
    # characters every id grammar admits, far too many of them (and a path too long)
    "long": "sp-" + CANARY + "a" * 4000,
}
# options naming something to act on; list filters that match nothing are not refusals
ID_OPTIONS = {"tenant", "specimen", "agent", "tag", "must_hold", "reason", "from_cut"}


def id_slots() -> list[tuple[tuple[str, ...], Any]]:
    slots = []
    for path, command in LEAVES.items():
        if path[0] == "vault" or path[-1] == "list":  # vault: needs a server / starts one
            continue
        for param in command.params:
            if _kind(param) != "str":
                continue
            if _is_argument(param) or param.name in ID_OPTIONS:
                slots.append((path, param))
    return slots


def id_cases() -> list[Case]:
    cases = []
    for path, param in id_slots():
        for kind, value in HOSTILE_IDS.items():
            if kind == "long" and not _is_argument(param):
                continue  # an option's grammar is the argument's; its length costs the same
            argv = (*base_args(path, (param, value)), "--home", "{home}")
            cases.append(Case(_id(path, param.name, kind), argv, codes=codes_for(path)))
    return cases


# Numbers no option means: below any range, beyond 64 bits, not a number.
def number_cases() -> list[Case]:
    cases = []
    for path, command in LEAVES.items():
        for param in command.params:
            kind = _kind(param)
            if kind not in ("int", "float") or _is_argument(param):
                continue
            values = {"negative": "-1", "2**64": BIG}
            if kind == "float":
                values["nan"] = "nan"
            if path == ("vault", "dev"):
                # a dev server is started (and waited for) before its port is looked at
                values.pop("negative")
            for name, value in values.items():
                argv = tuple(base_args(path, (param, value)))
                if _takes_home(path):
                    argv = (*argv, "--home", "{home}")
                cases.append(Case(_id(path, param.name, name), argv, codes=codes_for(path)))
    return cases


# Every file or folder parameter and what it is: new ones must be placed here.
PATH_ROLES: dict[tuple[tuple[str, ...], str], str] = {
    (("capture",), "input_file"): "json",
    (("policy", "load"), "files"): "toml",
    (("verify",), "public_key"): "pem",
    # a certificates folder that cannot be read fails verification (exit 1), by design
    (("verify",), "certificates"): "skip",
    (("release", "verify"), "public_key"): "pem",
    (("release", "verify"), "certificates"): "skip",
    (("regress",), "candidate_path"): "folder_in",
    (("regress",), "out"): "file_out",
    (("regress",), "junit"): "file_out",
    (("ledger", "checkpoint"), "out"): "file_out",
    # a malformed note, or any note while the home has signed none: one line
    (("ledger", "verify"), "checkpoint"): "json",
    (("serve",), "ssl_certfile"): "pem",
    # attacked with the certificate file: TLS takes both, and both are given the same file
    (("serve",), "ssl_keyfile"): "skip",
    (("certificates", "export"), "folder"): "folder_out",
    # the witness's own files: refused before anything is created or served
    (("witness",), "state"): "file_out",
    (("witness",), "key"): "file_out",
    (("release", "export"), "folder"): "folder_out",
    # read in Vault mode only (tests/attack/test_grants_plane.py refuses a readable token file)
    (("worker",), "worker_token_file"): "skip",
    # written only after a Vault server has been provisioned
    (("vault", "setup"), "env_file"): "skip",
    (("vault", "dev"), "env_file"): "skip",
}
# string arguments that name a file (or a stored id)
FILE_ARGUMENTS = {(("verify",), "certificate"): "json", (("release", "verify"), "report"): "json"}

ATTACK_FILES = {
    "json": {
        "canary": "{bad_json}",
        "directory": "{dir}",
        "empty": "{empty}",
        "unreadable": "{locked}",
    },
    "toml": {
        "canary": "{bad_toml}",
        "directory": "{dir}",
        "empty": "{empty}",
        "unreadable": "{locked}",
    },
    "pem": {
        "canary": "{bad_pem}",
        "directory": "{dir}",
        "empty": "{empty}",
        "unreadable": "{locked}",
    },
    "folder_in": {"a-file": "{canary_file}", "under-a-file": "{canary_file}/sub"},
    "file_out": {"directory": "{dir}", "under-a-file": "{canary_file}/out"},
    "folder_out": {"a-file": "{canary_file}", "under-a-file": "{canary_file}/sub"},
}

# What a file option is attacked alongside, so the command reads it at all.
FILE_CONTEXT: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {
    (("verify",), "public_key"): ("{envelope}",),
    (("regress",), "candidate_path"): (
        "--tag",
        "lib",
        "--candidate",
        "po_next:AGENT",
        "--local",
        "--out",
        "{ws}/r.json",
    ),
}


def path_params() -> list[tuple[tuple[str, ...], str]]:
    return [
        (path, p.name)
        for path, command in LEAVES.items()
        for p in command.params
        if _kind(p) == "path" and p.name != "home"
    ]


def file_cases() -> list[Case]:
    cases = []
    slots = {**PATH_ROLES, **FILE_ARGUMENTS}
    for (path, name), role in slots.items():
        if role == "skip":
            continue
        param = next(p for p in LEAVES[path].params if p.name == name)
        for kind, value in ATTACK_FILES[role].items():
            if (path, name) in FILE_CONTEXT:
                args = [*path, *FILE_CONTEXT[(path, name)], _flag(param), value]
            else:
                args = base_args(path, (param, value))
            if path == ("serve",):  # TLS needs both files: the key is the same one
                args += ["--ssl-keyfile", value]
            argv = (*args, "--home", "{home}")
            cases.append(
                Case(
                    _id(path, name, kind),
                    argv,
                    codes=codes_for(path),
                    needs_unreadable=kind == "unreadable",
                )
            )
    return cases


HOME_CASES = home_cases()
ID_CASES = id_cases()
NUMBER_CASES = number_cases()
FILE_CASES = file_cases()
ALL_CASES = {c.id: c for c in (*HOME_CASES, *ID_CASES, *NUMBER_CASES, *FILE_CASES)}
assert len(ALL_CASES) == len(HOME_CASES) + len(ID_CASES) + len(NUMBER_CASES) + len(FILE_CASES)

# -- running ----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REPLAY_ENCLAVE_", "VAULT_"))}
    env["COLUMNS"] = "250"
    return env


def cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _MAIN, *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
        cwd=cwd,
        check=False,
    )


def table_counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}  # noqa: S608 - names from the schema
    finally:
        conn.close()


# lock files and SQLite's own journal files come and go with every open: not records
SCRATCH = (".lock", ".db-wal", ".db-shm", ".db-journal")


def snapshot(ws: Path, home: Path) -> dict[str, Any]:
    """Every file name under the case's folder (its home included, lock files aside),
    the home's table row counts, config and saved head; or the non-home's bytes."""
    shot: dict[str, Any] = {
        "files": sorted(
            str(p.relative_to(ws)) for p in ws.rglob("*") if not p.name.endswith(SCRATCH)
        )
    }
    if home.is_file():
        shot["home"] = home.read_bytes()
    elif (home / "ledger.db").is_file():
        shot["tables"] = table_counts(home / "ledger.db")
        for name in ("config.toml", "ledger.head"):
            shot[name] = (home / name).read_bytes() if (home / name).exists() else None
    return shot


@dataclass(frozen=True)
class Template:
    home: Path
    specimen: str
    report: str


def _write_files(ws: Path) -> dict[str, str]:
    files = {
        "input": ws / "input.json",
        "envelope": ws / "envelope.json",
        "policy": ws / "policy.toml",
        "bad_json": ws / "bad.json",
        "bad_toml": ws / "bad.toml",
        "bad_pem": ws / "bad.pem",
        "empty": ws / "empty",
        "canary_file": ws / "canary.txt",
        "locked": ws / "locked",
    }
    files["input"].write_text(json.dumps(procurement.BASELINE_INPUT))
    files["envelope"].write_text("{}")
    files["policy"].write_text('id = "pol"\nversion = 1\n')
    files["bad_json"].write_text(f'{{"payloadType": "x", "payload": "{CANARY}", ]')
    files["bad_toml"].write_text(f'id = "{CANARY}"\nversion = [1,\n[[[\n')
    files["bad_pem"].write_text(f"-----BEGIN PUBLIC KEY-----\n{CANARY}\n-----END PUBLIC KEY-----\n")
    files["empty"].write_bytes(b"")
    files["canary_file"].write_text(f"{CANARY}\n")
    files["locked"].write_text(f'{{"inputs": {{"x": "{CANARY}"}}')
    files["locked"].chmod(0)
    (ws / "dir").mkdir()
    return {**{k: str(v) for k, v in files.items()}, "dir": str(ws / "dir"), "ws": str(ws)}


def _unreadable_really(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except PermissionError:
        return True
    return False


def run_case(case: Case, template: Template, ws: Path) -> Outcome:
    ws.mkdir(parents=True)
    values = _write_files(ws)
    if case.needs_unreadable and not _unreadable_really(values["locked"]):
        return Outcome(skipped="a mode-000 file is readable here (running as root)")
    home = {
        "template": ws / "home",
        "missing": ws / "missing-home",
        "file": ws / "home-file",
    }[case.home]
    if case.home == "template":
        shutil.copytree(template.home, home, symlinks=True)
    elif case.home == "file":
        home.write_text(f"[keys]\nprovider = {CANARY!r}\n")
    values.update(home=str(home), specimen=template.specimen, report=template.report)
    argv = [_fill(a, values) for a in case.argv]
    outcome = Outcome(before=snapshot(ws, home))
    try:
        done = cli(ws, *argv)
    except subprocess.TimeoutExpired as late:
        outcome.stdout = _text(late.stdout)
        outcome.stderr = _text(late.stderr)
    else:
        outcome.returncode, outcome.stdout, outcome.stderr = (
            done.returncode,
            done.stdout,
            done.stderr,
        )
    outcome.after = snapshot(ws, home)
    return outcome


def _text(data: bytes | str | None) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data or ""


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace("{" + key + "}", value)
    return arg


# the first test's setup runs every case of the module (~190 CLI processes): on a loaded
# 2-core machine that can pass the suite's per-test 300 s, which is meant for one test
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    """A home holding one captured procurement specimen tagged ``lib``, a release report
    over it and its certificate, made as a person makes them."""
    base = tmp_path_factory.mktemp("attack-template")
    home = base / "home"
    source = base / "input.json"
    source.write_text(json.dumps(procurement.BASELINE_INPUT))
    steps = [
        ("init",),
        ("capture", "procurement", "--input", str(source), "--json"),
        ("specimens", "tag", "{specimen}", "lib"),
        ("regress", "--tag", "lib", "--revision", "model=r2", "--samples", "2", "--local", "--json")
        + ("--out",),
    ]
    specimen = report = ""
    for step in steps:
        argv = [a.replace("{specimen}", specimen) for a in step]
        if step[0] == "regress":
            argv.append(str(base / "report.json"))
        done = cli(base, *argv, "--home", str(home))
        assert done.returncode == 0, (step, done.stderr[-600:])
        if step[0] == "capture":
            specimen = json.loads(done.stdout)["specimen_id"]
        if step[0] == "regress":
            report = json.loads(done.stdout)["report_id"]
    return Template(home=home, specimen=specimen, report=report)


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest,
    template: Template,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Outcome]]:
    """The outcome of every selected case of this module, run ``PARALLEL`` at a time."""
    module = sys.modules[__name__]
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "module", None) is module
        and "case" in getattr(getattr(item, "callspec", None), "params", {})
    ]
    base = tmp_path_factory.mktemp("attack-cases")
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        futures = {
            case.id: pool.submit(run_case, case, template, base / f"c{n}")
            for n, case in enumerate(selected)
        }
        results = {case_id: future.result() for case_id, future in futures.items()}
    yield results
    for path in base.rglob("locked"):  # so the temporary tree can be removed
        path.chmod(0o600)


# -- the property ------------------------------------------------------------------------


def violations(case: Case, outcome: Outcome) -> list[str]:
    """Every way ``outcome`` falls short of a clean refusal."""
    if outcome.returncode is None:
        return [f"still running after {TIMEOUT}s"]
    found = []
    if outcome.returncode not in case.codes:
        found.append(f"exit {outcome.returncode}, not one of {sorted(case.codes)}")
    if "Traceback" in outcome.stderr + outcome.stdout:
        found.append("a traceback")
    if outcome.stdout.strip():
        found.append("output on stdout")
    lines = outcome.stderr
    if not (lines.startswith("error: ") and lines.endswith("\n") and lines.count("\n") == 1):
        found.append("stderr is not one 'error: ...' line")
    leaked = find_canaries((outcome.stdout + outcome.stderr).encode(), CANARIES)
    if leaked:
        found.append(f"input echoed: {leaked}")
    if outcome.after != outcome.before:
        found.append(f"the home changed: {changes(outcome)}")
    return found


def assert_refused(case: Case, outcome: Outcome) -> None:
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    found = violations(case, outcome)
    assert not found, (
        f"{'; '.join(found)}\nexit {outcome.returncode}\nstderr: {outcome.stderr[-700:]!r}"
        f"\nstdout: {outcome.stdout[-200:]!r}"
    )


def changes(outcome: Outcome) -> dict[str, Any]:
    before, after = outcome.before, outcome.after
    diff: dict[str, Any] = {
        "new files": sorted(set(after["files"]) - set(before["files"])),
        "gone files": sorted(set(before["files"]) - set(after["files"])),
    }
    tables = before.get("tables", {})
    diff["rows"] = {
        t: (n, after.get("tables", {}).get(t))
        for t, n in tables.items()
        if after.get("tables", {}).get(t) != n
    }
    diff["changed"] = [
        k for k in before if k not in ("files", "tables") and before[k] != after.get(k)
    ]
    return {k: v for k, v in diff.items() if v}


# -- the sweep ------------------------------------------------------------------------------


def test_the_sweep_reaches_every_command() -> None:
    """Each command is attacked at least through its home (or, without one, its
    numbers or files), and every file parameter has a declared role."""
    attacked = {c.id.split("-", 1)[0] for c in ALL_CASES.values()}
    untouched = {"_".join(p) for p in LEAVES} - attacked
    assert untouched <= {"agents", "vault_setup"}, untouched  # no home, no file, no number
    assert set(path_params()) == set(PATH_ROLES)
    assert len(LEAVES) >= 30


@pytest.mark.parametrize("case", HOME_CASES, ids=str)
def test_a_home_that_is_not_one_is_refused(case: Case, outcomes: dict[str, Outcome]) -> None:
    """A missing folder, or a regular file with a canary in it: one line, no home
    made, the file untouched."""
    assert_refused(case, outcomes[case.id])


@pytest.mark.parametrize("case", ID_CASES, ids=str)
def test_a_hostile_id_is_refused(case: Case, outcomes: dict[str, Outcome]) -> None:
    assert_refused(case, outcomes[case.id])


@pytest.mark.parametrize("case", NUMBER_CASES, ids=str)
def test_a_number_out_of_range_is_refused(case: Case, outcomes: dict[str, Outcome]) -> None:
    assert_refused(case, outcomes[case.id])


@pytest.mark.parametrize("case", FILE_CASES, ids=str)
def test_a_hostile_file_is_refused(case: Case, outcomes: dict[str, Outcome]) -> None:
    """Malformed content holding a canary, a folder, an empty file, an unreadable file
    where a file is read; a file where a folder is expected; an output path that is a
    folder or lies under a file."""
    assert_refused(case, outcomes[case.id])
