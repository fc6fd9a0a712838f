"""The browser's predicate check is a port: its inputs committed in labextension/ must be
the enclave's own. The schemas it validates with are ``PREDICATE_SCHEMA`` (v3),
``PREDICATE_SCHEMA_V2`` and ``PREDICATE_SCHEMA_V1``; the parity corpus its vitest test replays
(``labextension/test/predicate-parity.test.ts``) holds today's Python verdicts."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import (
    PREDICATE_SCHEMA,
    PREDICATE_SCHEMA_V1,
    PREDICATE_SCHEMA_V2,
    PREDICATE_TYPE,
    PREDICATE_TYPE_V1,
    PREDICATE_TYPE_V2,
)
from tests.support.scripts import load_script

ROOT = Path(__file__).resolve().parents[3]


def test_committed_schemas_are_the_enclaves() -> None:
    exporter = load_script("export-predicate-schema.py")
    committed = json.loads(exporter.TARGET.read_text())
    assert committed == {
        PREDICATE_TYPE: PREDICATE_SCHEMA,
        PREDICATE_TYPE_V2: PREDICATE_SCHEMA_V2,
        PREDICATE_TYPE_V1: PREDICATE_SCHEMA_V1,
    }
    assert exporter.TARGET.read_text() == exporter.render()


def test_a_stale_schema_file_is_caught(tmp_path: Path) -> None:
    exporter = load_script("export-predicate-schema.py")
    stale = json.loads(exporter.render())
    stale[PREDICATE_TYPE]["properties"]["classification"]["enum"].append("no-measurable-influence")
    copy = tmp_path / "schemas.json"
    copy.write_text(json.dumps(stale, indent=1, sort_keys=True) + "\n")
    exporter.TARGET = copy
    assert exporter.main(["--check"]) == 1
    exporter.main([])
    assert exporter.main(["--check"]) == 0


def test_the_check_runs_from_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "export-predicate-schema.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _committed_corpus() -> dict[str, Any]:
    corpus: dict[str, Any] = json.loads(
        load_script("export-predicate-corpus.py").TARGET.read_text()
    )
    return corpus


def test_committed_corpus_holds_todays_python_verdicts_on_a_sample() -> None:
    """A quick look at a seeded sample; the slow test below regenerates all of it."""
    generator = load_script("export-predicate-corpus.py")
    corpus = _committed_corpus()
    assert corpus["goldens"] == {v: generator.golden(v) for v in ("v1", "v2", "v3")}
    assert corpus["types"] == generator.TYPES
    cases = corpus["cases"]
    sample = random.Random(7).sample(cases, 150)
    sample += [c for c in cases if c["kind"] in ("golden", "rule", "finding")]
    for case in sample:
        predicate = generator.apply(corpus["goldens"][case["version"]], case["ops"])
        verdict = generator._judge(predicate, generator.TYPES[case["version"]])
        expected = {"raises": case["raises"], "problems": case["problems"]}
        if "finding" in case:  # the sentence a passing predicate states
            expected["finding"] = case["finding"]
        assert verdict == expected, case["name"]


@pytest.mark.slow
def test_committed_corpus_is_what_the_generator_writes_today() -> None:
    generator = load_script("export-predicate-corpus.py")
    assert generator.TARGET.read_text() == generator.render(), (
        "stale: run scripts/export-predicate-corpus.py"
    )
