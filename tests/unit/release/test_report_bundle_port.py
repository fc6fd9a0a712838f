"""The browser's release report bundle verifier (``labextension/src/verify/reportBundle.ts``)
is a port of ``ledger.certificates.verify_report_bundle``: the parity corpus its vitest
test replays (``labextension/test/report-bundle-parity.test.ts``, written by
``report_bundle_corpus.py``) holds today's Python checks and reaches every check."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ledger.certificates import (
    REPORT_BUNDLE_CHECK_NAMES,
    REPORT_BUNDLE_MEDIA_TYPE,
    is_report_bundle,
    load_public_key_pem,
    verify_report_bundle,
)
from tests.unit.release import report_bundle_corpus

ROOT = Path(__file__).resolve().parents[3]
PORT = ROOT / "labextension" / "src" / "verify" / "reportBundle.ts"
CHECKS = list(REPORT_BUNDLE_CHECK_NAMES)


def _corpus() -> dict[str, Any]:
    corpus: dict[str, Any] = json.loads(report_bundle_corpus.TARGET.read_text())
    return corpus


def test_the_port_names_the_media_type_and_the_checks() -> None:
    source = PORT.read_text()
    assert f"export const REPORT_BUNDLE_MEDIA_TYPE = '{REPORT_BUNDLE_MEDIA_TYPE}';" in source
    names = re.search(r"export const REPORT_BUNDLE_CHECKS = \[([^\]]*)\]", source)
    assert names is not None
    assert re.findall(r"'([a-z ]+)'", names.group(1)) == CHECKS


def test_committed_corpus_holds_todays_python_checks() -> None:
    corpus = _corpus()
    issuer = load_public_key_pem(corpus["issuer_pem"].encode())
    for case in corpus["cases"]:
        bundle = report_bundle_corpus.expand(corpus, case["bundle"])
        checks = report_bundle_corpus.python_checks(bundle, issuer, case["log_key"])
        assert checks == case["python"], case["name"]


def test_committed_corpus_reaches_every_check_and_passes_once() -> None:
    corpus = _corpus()
    firsts = {
        case["name"]: next((c["name"] for c in case["python"]["checks"] if not c["ok"]), None)
        for case in corpus["cases"]
    }
    assert set(firsts.values()) == {None, *CHECKS}
    assert [name for name, first in firsts.items() if first is None] == ["valid"]
    valid = report_bundle_corpus.expand(corpus, corpus["cases"][0]["bundle"])
    assert is_report_bundle(valid)
    assert [c["name"] for c in corpus["cases"][0]["python"]["checks"]] == CHECKS
    # every lie re-signed with the issuer's key is still caught: the derived checks hold
    for case in corpus["cases"]:
        if case["name"].startswith("re-signed"):
            assert firsts[case["name"]] not in (None, "bundle"), case["name"]


def test_references_resolve_to_the_shared_objects_only() -> None:
    corpus = {"shared": {"m": {"a": 1}}}
    assert report_bundle_corpus.expand(corpus, ["@shared:m", {"x": "@shared:m"}]) == [
        {"a": 1},
        {"x": {"a": 1}},
    ]
    assert report_bundle_corpus.expand(corpus, "@m") == "@m"


def test_a_report_bundle_verifies_with_the_keys_of_the_corpus_only() -> None:
    """No ledger, no home: the two public keys and the file."""
    from ledger.certificates.tlog import NoteVerifier

    corpus = _corpus()
    bundle = report_bundle_corpus.expand(corpus, corpus["cases"][0]["bundle"])
    checks = verify_report_bundle(
        bundle,
        public_key=load_public_key_pem(corpus["issuer_pem"].encode()),
        log_key=NoteVerifier.parse(corpus["log_key"]),
    )
    assert [ok for _, ok, _ in checks] == [True] * len(CHECKS)
