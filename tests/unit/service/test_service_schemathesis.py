"""Property test of the service against its own OpenAPI document (schemathesis): for
generated requests on every operation, with a valid analyst token, the service never
answers 5xx, every response conforms to the documented status codes and schemas, and
no error response repeats a string the request sent."""

from __future__ import annotations

import ast
import functools
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

import enclave
import ledger
from enclave import Home, Runtime, utc_now
from enclave.cli import capture_incidents
from enclave.governance import (
    activate_policy,
    add_analyst,
    load_policy_file,
    policies_root,
    validate_policy,
)
from enclave.service import create_app
from tests.support.canary import INCIDENT_CANARIES, find_canaries

MAX_EXAMPLES = 25


def _home(root: Path) -> tuple[Home, str]:
    home = Home.init(root)
    runtime = Runtime.open(home, env={})
    try:
        capture_incidents(runtime)
        now = utc_now()
        for path in sorted((policies_root() / "interventions").glob("*.toml")):
            policy = load_policy_file(runtime, path, now=now)
            assert validate_policy(runtime, policy.id, now=now).ok
            activate_policy(runtime, policy.id, now=now)
        _, token = add_analyst(
            runtime, "fuzz", tenant="acme", roles=["auditor", "restricted-clearance"], now=now
        )
    finally:
        runtime.close()
    return home, token


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    home, token = _home(tmp_path_factory.mktemp("fuzz") / "home")
    return create_app(lambda: Runtime.open(home, env={})), token


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (_strings(k) + _strings(v))]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _property_names(node: Any) -> set[str]:
    """Every property name the API documents: a message may name a field it defines."""
    if isinstance(node, dict):
        names = (
            set(node.get("properties") or {}) if isinstance(node.get("properties"), dict) else set()
        )
        return names | {n for v in node.values() for n in _property_names(v)}
    if isinstance(node, list):
        return {n for v in node for n in _property_names(v)}
    return set()


@functools.cache
def _own_text() -> str:
    """Every string literal of the service's code, joined: a sent string found there is no
    evidence of an echo (a generated ``unauthen`` lies inside the fixed code
    ``unauthenticated``)."""
    literals = []
    for package in (Path(enclave.__file__).parent, Path(ledger.__file__).parent):
        for source in sorted(package.rglob("*.py")):
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    literals.append(node.value)
    return "\0".join(literals)


def _sent_strings(case: Any, documented: set[str]) -> list[str]:
    sent = []
    for part in (case.path_parameters, case.query, case.body):
        sent += _strings(part) if part is not None else []
    # long enough that a coincidental match with our fixed messages is implausible, not a
    # field name the API itself documents (a message may say which field is wrong) and
    # not a piece of the service's own fixed text
    return [s for s in sent if len(s.strip()) >= 8 and s not in documented and s not in _own_text()]


def test_generated_requests_never_5xx_conform_and_do_not_echo(service: tuple[Any, str]) -> None:
    app, token = service
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    headers = {"Authorization": f"Bearer {token}"}
    documented = _property_names(schema.raw_schema)
    operations = list(schema.get_all_operations())
    assert len(operations) == 24  # every route, the workers' internal routes included
    checks = [
        not_a_server_error,
        status_code_conformance,
        response_schema_conformance,
        content_type_conformance,
    ]
    seen_statuses: set[int] = set()
    for result in operations:
        operation = result.ok()

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def run(case: Any) -> None:
            response = case.call(headers=headers)
            case.validate_response(response, checks=checks)
            seen_statuses.add(response.status_code)
            if response.status_code >= 400:
                text = response.text
                body = json.loads(text)
                assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
                for sent in _sent_strings(case, documented):
                    assert sent not in text and unquote(sent) not in text, case.operation.label
            assert not find_canaries(response.content, INCIDENT_CANARIES)

        run()
    assert 200 in seen_statuses and seen_statuses & {400, 403, 404, 422}
