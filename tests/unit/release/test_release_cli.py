"""``replay-enclave specimens tag``, ``regress`` and ``verify`` of a report, run as a
person runs them: the gate's exit code, the JUnit file, one-line refusals."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from enclave.incidents import procurement
from tests.agents.candidates import score_shifted_run, write_candidate
from tests.support.canary import INCIDENT_CANARIES, find_canaries, scan_tree
from tests.support.cli_runner import run_cli

ROOT = Path(__file__).resolve().parents[3]


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    done = run_cli(home, *args, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def home(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "home"
    assert cli(root, "init")[0] == 0
    source = tmp_path / "input.json"
    source.write_text(json.dumps(procurement.BASELINE_INPUT))
    code, out, err = cli(root, "capture", "procurement", "--input", str(source), "--json")
    assert code == 0, err
    return root, json.loads(out)["specimen_id"]


def test_regress_gate_fails_with_exit_5_and_the_report_verifies(
    home: tuple[Path, str], tmp_path: Path
) -> None:
    root, specimen = home
    assert cli(root, "specimens", "tag", specimen, "release-gate/po", "must-hold")[0] == 0
    folder = tmp_path / "candidate"
    folder.mkdir()
    write_candidate(folder, "po_next", score_shifted_run())
    report, junit = tmp_path / "report.dsse.json", tmp_path / "regress.xml"
    code, out, err = cli(
        root,
        "regress",
        "--tag",
        "release-gate/po",
        "--candidate",
        "po_next:AGENT",
        "--candidate-path",
        str(folder),
        "--samples",
        "20",
        "--out",
        str(report),
        "--junit",
        str(junit),
        "--local",
        "--json",
    )
    assert code == 5, err
    summary = json.loads(out)
    assert summary["gate"] == {"passed": False, "failing": [specimen]}
    cases = ET.fromstring(junit.read_bytes()).findall("./testsuite/testcase")  # noqa: S314
    assert [c.get("name") for c in cases] == [specimen]
    code, out, err = cli(root, "verify", str(report), "--json")
    assert code == 0, out + err
    assert json.loads(out)["ok"] is True
    texts = (out + err).encode() + report.read_bytes() + junit.read_bytes()
    assert find_canaries(texts, INCIDENT_CANARIES) == []
    assert scan_tree(root, INCIDENT_CANARIES) == {}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--tag", "lib", "--candidate", "po_next:AGENT"), "--candidate-path"),
        (("--tag", "lib"), "exactly one of --candidate or --revision"),
        (("--tag", "Bad Tag <x>", "--revision", "model=r2"), "a tag is"),
        (("--tag", "lib", "--revision", "model"), "NAME=IDENTITY"),
    ],
)
def test_bad_regress_input_is_one_line_exit_2(
    home: tuple[Path, str], args: tuple[str, ...], says: str
) -> None:
    root, _ = home
    code, out, err = cli(root, "regress", *args)
    assert code == 2, out + err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert says in err and "<x>" not in err


def test_revision_swap_over_an_empty_selection_passes(
    home: tuple[Path, str], tmp_path: Path
) -> None:
    root, _ = home
    code, out, err = cli(
        root,
        "regress",
        "--tag",
        "nothing-here",
        "--revision",
        "model=r2",
        "--out",
        str(tmp_path / "r.json"),
        "--json",
        "--local",
    )
    assert code == 0, err
    assert json.loads(out)["totals"]["specimens"] == 0


def test_without_out_the_report_is_exported_into_the_home(
    home: tuple[Path, str], tmp_path: Path
) -> None:
    """A run from any folder leaves nothing there: the report goes beside the home's
    certificates unless --out names a file."""
    root, _ = home
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_cli(
        root,
        "regress",
        "--tag",
        "nothing-here",
        "--revision",
        "model=r2",
        "--json",
        "--local",
        cwd=elsewhere,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    exported = Path(summary["report"])
    assert exported == root.resolve() / "reports" / f"{summary['report_id']}.dsse.json"
    assert exported.is_file() and list(elsewhere.iterdir()) == []
    code, out, err = cli(root, "verify", str(exported), "--json")
    assert code == 0 and json.loads(out)["ok"] is True, out + err
    # and its bundle beside it, which verifies with the home's keys as well
    bundle = exported.with_name(f"{summary['report_id']}.bundle.json")
    code, out, err = cli(root, "verify", str(bundle), "--json")
    assert code == 0 and json.loads(out)["ok"] is True, out + err
    assert [c["check"] for c in json.loads(out)["checks"]][0] == "bundle"
