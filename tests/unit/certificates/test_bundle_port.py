"""The browser's bundle verifier (``labextension/src/verify/bundle.ts``) is a port of
``verify_bundle``: its check names and media type are the enclave's, and the parity corpus
its vitest test replays (``labextension/test/bundle-parity.test.ts``, written by
``bundle_corpus.py``) holds today's Python reports and every tamper class."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ledger.certificates import (
    BUNDLE_CHECK_NAMES,
    BUNDLE_MEDIA_TYPE,
    is_bundle,
    load_public_key_pem,
    verify_bundle,
)
from ledger.certificates.tlog import NoteVerifier
from tests.unit.certificates import bundle_corpus
from tests.unit.cli.test_cli_bundle import TAMPERS

ROOT = Path(__file__).resolve().parents[3]
PORT = ROOT / "labextension" / "src" / "verify" / "bundle.ts"


def _corpus() -> dict[str, Any]:
    corpus: dict[str, Any] = json.loads(bundle_corpus.TARGET.read_text())
    return corpus


def test_the_port_names_the_enclaves_checks_and_media_type() -> None:
    source = PORT.read_text()
    names = re.search(r"export const BUNDLE_STEPS = \[([^\]]*)\]", source)
    assert names is not None
    assert tuple(re.findall(r"'([a-z_]+)'", names.group(1))) == BUNDLE_CHECK_NAMES
    assert f"export const BUNDLE_MEDIA_TYPE = '{BUNDLE_MEDIA_TYPE}';" in source


def test_committed_corpus_holds_todays_python_reports() -> None:
    corpus = _corpus()
    issuer = load_public_key_pem(corpus["issuer_pem"].encode())
    for case in corpus["cases"]:
        bundle = bundle_corpus.expand(corpus, case)
        report = verify_bundle(
            copy.deepcopy(bundle), public_key=issuer, log_key=NoteVerifier.parse(case["log_key"])
        )
        assert report.to_dict() == case["python"], case["name"]


def test_committed_corpus_covers_every_tamper_and_every_check() -> None:
    corpus = _corpus()
    by_name = {case["name"]: case for case in corpus["cases"]}
    for how, check in TAMPERS.items():
        failed = [c for c in by_name[how]["python"]["checks"] if not c["ok"]]
        assert failed and failed[0]["name"] == check, how
    assert by_name["valid"]["python"]["ok"]
    reached = {
        next((c["name"] for c in case["python"]["checks"] if not c["ok"]), None)
        for case in corpus["cases"]
    }
    assert reached >= {None, "envelope", "signature", "checkpoint", "subject", "ledger_entry"}
    # envelopes are stored once and named from the cases
    assert all(not is_bundle(e) for e in corpus["envelopes"].values())


def test_expand_resolves_only_envelope_references() -> None:
    corpus = {"envelopes": {"e0": {"payload": "x"}}}
    assert bundle_corpus.expand(corpus, {"bundle": {"envelope": "@e0"}}) == {
        "envelope": {"payload": "x"}
    }
    assert bundle_corpus.expand(corpus, {"bundle": {"envelope": "e0"}}) == {"envelope": "e0"}
    assert bundle_corpus.expand(corpus, {"bundle": None}) is None


@pytest.mark.slow
def test_the_generator_writes_a_corpus_of_the_same_cases(tmp_path: Path) -> None:
    """A fresh demo's corpus (its keys and times differ) has the same cases, each
    failing at the same check as the committed one."""
    target = tmp_path / "bundle-corpus.json"
    original = bundle_corpus.TARGET
    bundle_corpus.TARGET = target
    try:
        assert bundle_corpus.main([]) == 0
    finally:
        bundle_corpus.TARGET = original

    def first_failures(corpus: dict[str, Any]) -> dict[str, str | None]:
        return {
            case["name"]: next((c["name"] for c in case["python"]["checks"] if not c["ok"]), None)
            for case in corpus["cases"]
        }

    assert first_failures(json.loads(target.read_text())) == first_failures(_corpus())
