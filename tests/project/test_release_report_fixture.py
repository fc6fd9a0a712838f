"""The committed release report (``tests/golden/release_report.dsse.json``) the front
end's tests read is one today's ``regress`` would write: a fresh one from
``scripts/export-release-report.py`` has the same statement, keys and label vocabulary."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest

from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_report_is_not_stale() -> None:
    assert load_script("export-release-report.py").main(["--check"]) == 0


def test_a_report_of_another_shape_is_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exporter = load_script("export-release-report.py")
    committed = json.loads(exporter.TARGET.read_text())
    statement = exporter.statement_of(committed)
    for row in statement["predicate"]["specimens"]:
        del row["sealed"]  # a report from before that field
    older = copy.deepcopy(committed)
    older["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    assert exporter.summary(older) != exporter.summary(committed)
    target = tmp_path / "release_report.dsse.json"
    target.write_text(json.dumps(older))
    setattr(exporter, "TARGET", target)  # noqa: B010 - a module loaded from a file
    assert exporter.main(["--check"]) == 1
    assert "is stale" in capsys.readouterr().err
