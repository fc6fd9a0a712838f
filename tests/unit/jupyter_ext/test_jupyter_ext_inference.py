"""The notebook's certificate card shows governed inference as the browser's viewer does:
per arm the calls asked of the endpoint and served from the audit's record with their
tokens, the grants, and whether the provider seed was set; nothing for an audit that
authorised no inference. The governed predicate is the parity corpus's consistent one
(``scripts/export-predicate-corpus.py``), which the verifier accepts."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest

from jupyter_ext import certificate_html, certificate_text
from ledger.certificates import PREDICATE_TYPE_V2, predicate_problems
from tests.support.scripts import load_script


def _corpus() -> ModuleType:
    return load_script("export-predicate-corpus.py")


@pytest.fixture(scope="module")
def corpus() -> ModuleType:
    return _corpus()


@pytest.fixture
def governed(corpus: ModuleType) -> dict[str, Any]:
    golden = corpus.golden("v2")
    predicate: dict[str, Any] = corpus.apply(golden, corpus.inference_ops(golden))
    return predicate


def _table(html: str, css: str) -> list[list[str]]:
    table = re.search(rf'<table class="{css}">(.*?)</table>', html)
    assert table is not None, css
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1))
    return [re.findall(r"<t[hd]>(.*?)</t[hd]>", row) for row in rows]


def test_the_governed_predicate_is_one_the_verifier_accepts(governed: dict[str, Any]) -> None:
    assert governed["inference"]["arms"]["intervened"]["asked"] > 0
    assert predicate_problems(governed, PREDICATE_TYPE_V2) == []


def test_the_card_shows_per_arm_what_was_asked(governed: dict[str, Any]) -> None:
    rows = _table(certificate_html(governed, audit_id="au-1"), "enclave-inference-arms")
    assert rows[0] == [
        "arm",
        "asked of the endpoint",
        "from the audit&#x27;s record",
        "input tokens",
        "output tokens",
    ]
    arms = governed["inference"]["arms"]
    assert [r[0] for r in rows[1:]] == ["preparation", "baseline", "intervened", "placebo"]
    for arm, *counts in rows[1:]:
        tally = arms[arm]
        keys = ("asked", "from_record", "input_tokens", "output_tokens")
        assert counts == [str(tally[k]) for k in keys]
    assert rows[3] == ["intervened", "13", "0", "2756", "117"]


def test_the_card_shows_each_grant(governed: dict[str, Any]) -> None:
    grant = governed["inference"]["grants"][0]
    rows = _table(certificate_html(governed), "enclave-inference-grants")
    assert rows == [
        ["boundary", "endpoint", "pinned model", "vary", "caps"],
        [
            grant["boundary"],
            grant["endpoint"],
            grant["model"],
            "seed, temperature",
            "calls 64, input tokens 65536, output tokens 8192, wall seconds 600",
        ],
    ]


def test_the_card_says_whether_the_provider_seed_was_set(governed: dict[str, Any]) -> None:
    assert 'data-seeded="true"' in certificate_html(governed)
    governed["inference"]["seeded"] = False
    html = certificate_html(governed)
    assert 'data-seeded="false"' in html and "not varied" in html


def test_the_text_view_has_the_same_summary(governed: dict[str, Any]) -> None:
    lines = certificate_text(governed, audit_id="au-1").splitlines()
    assert "inference intervened: asked 13, from record 0, tokens in 2756 out 117" in lines
    assert "inference preparation: asked 1, from record 0, tokens in 212 out 9" in lines
    grant = governed["inference"]["grants"][0]
    assert any(
        line.startswith(f"inference grant: {grant['boundary']} via {grant['endpoint']}, ")
        and f"model {grant['model']}" in line
        for line in lines
    )


def test_without_inference_the_card_is_as_before(corpus: ModuleType) -> None:
    golden = corpus.golden("v2")
    html = certificate_html(golden)
    assert "enclave-inference" not in html and "Governed inference" not in html
    assert not any(line.startswith("inference") for line in certificate_text(golden).splitlines())


def test_a_malformed_section_renders_escaped_with_dashes(governed: dict[str, Any]) -> None:
    hostile = "<img src=x onerror=alert(1)>"
    governed["inference"] = {"grants": [{"boundary": hostile, "vary": "seed"}], "arms": []}
    html = certificate_html(governed)
    assert "<img" not in html
    grants = _table(html, "enclave-inference-grants")
    assert grants[1][1:] == [
        "—",
        "—",
        "—",
        "calls —, input tokens —, output tokens —, wall seconds —",
    ]
    assert _table(html, "enclave-inference-arms")[1] == ["preparation", "—", "—", "—", "—"]
    assert 'data-seeded="none"' in html
