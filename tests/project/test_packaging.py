"""The distribution as a Python user meets it: a wheel and an sdist that carry the
license, type markers, policy files and the prebuilt JupyterLab extension, built with no
Node.js on PATH; the command's version; the policy files found from an installed copy;
the Jupyter server extension loadable without the widgets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path

import pytest

from tests.support.path_hiding import path_without_node

ROOT = Path(__file__).resolve().parents[2]
LABEXTENSION = ROOT / "jupyter_ext" / "labextension"
SHARED_LAB = "share/jupyter/labextensions/replay-enclave"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, and the wheel built from it, with no Node.js tool on PATH."""
    out = tmp_path_factory.mktemp("dist")
    path = path_without_node(tmp_path_factory.mktemp("bin"), first=[Path(sys.executable).parent])
    subprocess.run(
        [sys.executable, "-m", "uv", "build", "--no-build-isolation", "-q", "-o", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env={**os.environ, "PATH": path},
    )
    return out


def test_wheel_carries_license_type_markers_and_policies(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("enclave", "ledger", "jupyter_ext"):
        assert f"{package}/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "enclave/_policy_files/access/enclave.cedar" in names
    assert "enclave/_policy_files/vault/broker.hcl" in names
    assert any(n.startswith("enclave/_policy_files/interventions/") for n in names)


def test_sdist_carries_license_changelog_and_lock(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    assert {"LICENSE", "CHANGELOG.md", "requirements/test.lock"} <= names
    # the prebuilt extension and what rebuilds it (an sdist installs without Node.js)
    assert "scripts/labextension_build.py" in names
    assert {f"jupyter_ext/labextension/{p}" for p in _committed_labextension()} <= names
    assert not [n for n in names if n.startswith(("labextension/node_modules", "labextension/lib"))]


def _committed_labextension() -> dict[str, bytes]:
    return {
        p.relative_to(LABEXTENSION).as_posix(): p.read_bytes()
        for p in LABEXTENSION.rglob("*")
        if p.is_file()
    }


def test_wheel_carries_the_prebuilt_labextension_as_shared_data(dist: Path) -> None:
    """Unchanged, installed where JupyterLab looks (``<prefix>/share/jupyter/labextensions``),
    with the install.json that marks it as installed by the Python package; not as
    package data."""
    (wheel,) = dist.glob("*.whl")
    prefix = f"replay_enclave-{version('replay-enclave')}.data/data/{SHARED_LAB}/"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = {n.removeprefix(prefix): archive.read(n) for n in names if n.startswith(prefix)}
    assert shipped == _committed_labextension()
    assert json.loads(shipped["install.json"])["packageName"] == "replay-enclave"
    assert not [n for n in names if n.startswith("jupyter_ext/labextension")]


def test_installed_copy_finds_its_policy_files(dist: Path, tmp_path: Path) -> None:
    """Unpacked wheel on sys.path, no source tree anywhere near it (as --user or a
    zipapp would be): the access policies load from inside the package."""
    (wheel,) = dist.glob("*.whl")
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")  # noqa: S202 - our own wheel
    code = (
        "from enclave._policies import policies_root; r = policies_root();"
        "print(r); assert (r / 'access' / 'enclave.cedar').is_file(), r"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],  # -S: no site, so no editable checkout
        env={"PYTHONPATH": str(tmp_path / "site")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-400:]
    assert str(tmp_path / "site") in done.stdout


def test_zipapp_finds_its_policy_files(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    archive = tmp_path / "enclave.pyz"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(archive, "w") as dst:
        for item in src.infolist():
            if item.filename.startswith(("enclave/", "ledger/")):
                dst.writestr(item, src.read(item))
    code = (
        "from enclave._policies import policies_root; r = policies_root();"
        "assert (r / 'vault' / 'broker.hcl').read_text().strip(), r; print(r)"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={"PYTHONPATH": str(archive)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-400:]
    assert "replay-enclave-policies-" in done.stdout  # copied out of the archive


def test_version_flag_and_module_entry() -> None:
    for argv in (["-m", "enclave", "--version"],):
        done = subprocess.run(
            [sys.executable, *argv], capture_output=True, text=True, check=False, cwd=ROOT
        )
        assert done.returncode == 0
        assert done.stdout.strip() == f"replay-enclave {version('replay-enclave')}"


def test_help_lists_exit_codes_and_loads_no_database_layer() -> None:
    code = (
        "import sys\n"
        "from enclave.cli import app\n"
        "heavy = {'sqlalchemy', 'sqlmodel', 'alembic', 'hvac', 'cedarpy', 'fastapi'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    helped = subprocess.run(
        [sys.executable, "-m", "enclave", "--help"], capture_output=True, text=True, check=True
    )
    assert "Exit codes:" in helped.stdout and "4 an audit ran and failed" in helped.stdout


# Imported by no read-only start: the database layer and what only other commands use
# (alembic when migrating, hvac in Vault mode), Rich's renderers a table does not need,
# the record types a listing does not show, and importlib.metadata (email, zipfile, csv).
NOT_ON_START = (
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "hvac",
    "cedarpy",
    "fastapi",
    "jsonschema",
    "cryptography",
    "enclave._runtime",
    "enclave.replay",
    "ledger._records",
    "ledger._facts",
    "ledger._ledger",
    "rich.markdown",
    "rich.syntax",
    "rich.traceback",
    "rich.pretty",
    "rich.progress",
    "rich._emoji_codes",
    "typer.rich_utils",
    "importlib.metadata",
    "email",
)


@pytest.fixture(scope="module")
def listed_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An embedded home holding one sealed specimen, and its id."""
    from enclave import Home, Runtime
    from enclave.capture import capture
    from enclave.incidents import claims

    root = tmp_path_factory.mktemp("start") / "home"
    runtime = Runtime.open(Home.init(root))
    try:
        base = claims.BASELINE_INPUT
        sealed = capture(
            runtime, claims.AGENT, base["inputs"], tenant_id=base["tenant"], seed=base["seed"]
        )
    finally:
        runtime.close()
    return root, sealed.specimen_id


def _start(*argv: str, columns: int = 80) -> tuple[str, set[str]]:
    """Run the console script's ``main`` with ``argv`` in a fresh interpreter: its
    output and every module it imported."""
    code = (
        "import sys\n"
        "from enclave._console import main\n"
        "sys.argv = ['replay-enclave', *sys.argv[1:]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as done:\n"
        "    assert not done.code, done.code\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": str(columns)},
    )
    assert done.returncode == 0, done.stderr[-400:]
    return done.stdout, set(done.stderr.split())


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


@pytest.mark.parametrize("columns", [80, 250], ids=["field-value-tables", "one-table"])
def test_specimens_list_starts_without_heavy_imports(
    listed_home: tuple[Path, str], columns: int
) -> None:
    home, specimen_id = listed_home
    shown, modules = _start("specimens", "list", "--home", str(home), columns=columns)
    assert "sealed specimens" in shown and specimen_id in shown and "restricted" in shown
    assert "rich.table" in modules  # the table really was drawn
    assert _loaded(modules, NOT_ON_START) == []
    # the command module of specimens only: no other command's module
    assert _loaded(modules, ("enclave.cli",)) == [
        "enclave.cli",
        "enclave.cli._app",
        "enclave.cli._capture_cmds",
        "enclave.cli._commands",
        "enclave.cli._keys_cmds",
        "enclave.cli._output",
        "enclave.cli._release_cmds",
    ]


# What a listing that only reads may not load: the table registry and what it pulls in.
NOT_ON_READ = ("sqlmodel", "sqlalchemy.orm", "pydantic", "ledger.tables")


@pytest.fixture(scope="module")
def documents_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded home holding one stored certificate, one release report and one
    analyst (the golden envelopes: the listings show metadata, nothing verifies them)."""
    import enclave
    from enclave.governance import add_analyst
    from ledger import store_certificate, store_report

    golden = ROOT / "tests" / "golden"
    root = tmp_path_factory.mktemp("documents") / "home"
    runtime = enclave.Runtime.open(enclave.Home.init(root))
    try:
        engine = runtime.ledger.engine
        store_certificate(
            engine,
            audit_id="au-listed",
            specimen_id="sp-listed",
            tenant_id="acme",
            envelope=json.loads((golden / "certificate_v2.dsse.json").read_text()),
        )
        store_report(
            engine, json.loads((golden / "release_report.dsse.json").read_text()), tenant_id=None
        )
        add_analyst(runtime, "ana", tenant="acme", roles=["viewer"], now=datetime.now(UTC))
    finally:
        runtime.close()
    return root


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (("certificates", "list"), "au-listed"),
        (("release", "list"), "rr-"),
        (("analyst", "list"), "ana"),
    ],
    ids=["certificates", "release-reports", "analysts"],
)
@pytest.mark.parametrize("json_out", [False, True], ids=["table", "json"])
def test_document_and_analyst_listings_load_no_table_registry(
    documents_home: Path, argv: tuple[str, ...], shown: str, json_out: bool
) -> None:
    """Each listing reads its table through a Core view: its rows are shown, and neither
    SQLModel nor SQLAlchemy's ORM (half a second of start-up) is imported."""
    out, modules = _start(*argv, *(["--json"] if json_out else []), "--home", str(documents_home))
    assert shown in out
    assert _loaded(modules, NOT_ON_READ) == []
    assert "sqlalchemy" in modules  # the ledger really was read


def test_specimens_list_json_and_version_load_no_rich(listed_home: tuple[Path, str]) -> None:
    home, specimen_id = listed_home
    shown, modules = _start("specimens", "list", "--json", "--home", str(home))
    assert [item["specimen_id"] for item in json.loads(shown)] == [specimen_id]
    assert _loaded(modules, (*NOT_ON_START, "rich")) == []
    shown, modules = _start("--version")
    assert shown.strip() == f"replay-enclave {version('replay-enclave')}"
    assert _loaded(modules, (*NOT_ON_START, "rich")) == []


def test_a_group_builds_only_the_named_command() -> None:
    """``specimens list`` builds ``list``; the group's help still lists every command,
    in the order they were declared."""
    from enclave.cli import COMMANDS, LazySubcommands

    group = COMMANDS["specimens"].load("specimens")
    assert isinstance(group, LazySubcommands)
    assert group.commands == {}
    declared = ["list", "show", "erase", "tag", "untag"]
    assert group.list_commands(None) == declared
    assert group.get_command(None, "list") is not None
    assert list(group.commands) == ["list"]
    assert group.list_commands(None) == declared
    assert group.get_command(None, "no-such-command") is None
    assert [group.get_command(None, n).name for n in declared] == declared


def test_root_help_imports_no_command_module() -> None:
    code = (
        "import sys\n"
        "from enclave.cli import main\n"
        "sys.argv = ['replay-enclave', '--help']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('enclave.cli.')), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.strip() == "['enclave.cli._app', 'enclave.cli._commands']"
    # the command list (aligned to the longest command name) comes from the table
    assert re.search(r"\n  specimens +Sealed specimens \(metadata only\)\.\n", done.stdout)


def test_root_command_list_matches_each_commands_own_help() -> None:
    import typer.main

    from enclave.cli import COMMANDS, app

    root = typer.main.get_command(app)
    for name, entry in COMMANDS.items():
        command = root.get_command(None, name)  # type: ignore[attr-defined, arg-type]
        assert command is not None and command.name == name
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert first == entry.help, name
    assert root.get_command(None, "no-such-command") is None  # type: ignore[attr-defined, arg-type]


def test_server_extension_loads_without_the_widget_stack() -> None:
    """IPython and ipywidgets made unimportable: the extension's entry point still loads."""
    code = (
        "import sys\n"
        "for name in ('IPython', 'ipywidgets'):\n"
        "    sys.modules[name] = None\n"
        "import jupyter_ext\n"
        "points = jupyter_ext._jupyter_server_extension_points()\n"
        "print(points[0]['module'], points[0]['app'].name)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-400:]
    assert done.stdout.split()[0] == "jupyter_ext"


@pytest.mark.parametrize(
    "argv",
    [
        ["audit"],
        ["audit", "sp-x", "--samples", "many-CANARY-7f1", "--purpose", "p"],
        ["no-such-command-CANARY-7f1"],
    ],
    ids=["missing-argument", "malformed-option", "unknown-command"],
)
def test_usage_errors_are_one_line_with_exit_2(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "enclave", *argv, "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert "CANARY-7f1" not in done.stderr  # what was typed is not echoed


def test_schema_checks_load_no_iri_grammar() -> None:
    """jsonschema compiles ~40 Lark grammars at import when rfc3987-syntax is installed
    (seconds a process); no check here uses formats, so they are never loaded."""
    code = (
        "import sys\n"
        "from ledger.certificates import is_valid, schema_is_valid\n"
        "schema = {'type': 'object', 'properties': {'a': {'type': 'string', 'format': 'iri'}}}\n"
        "assert schema_is_valid(schema) and is_valid({'a': 'x'}, schema)\n"
        "assert not is_valid({'a': 1}, schema)\n"
        "print(sorted(m for m in ('lark', 'rfc3987_syntax') if sys.modules.get(m)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
