"""``GET /reports/{id}/bundle`` on SQLite and a real PostgreSQL: a release report with
the proofs that verify it offline. It carries the certificates it names, so an analyst
who may read the report but not each certificate (an operator; an auditor without
clearance for restricted evidence) is refused before anything is proven; another
tenant's report is an unknown id; nothing of the specimens' content is in it."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime
from enclave.cli import capture_incidents
from enclave.governance import add_analyst
from enclave.release import (
    RegressPlan,
    Selector,
    regress,
    select,
    tag_specimen,
    verify_report_bundle,
)
from enclave.service import create_app
from ledger import report_id_of
from ledger.certificates import load_public_key_pem
from ledger.certificates.tlog import NoteVerifier
from tests.support.canary import INCIDENT_CANARIES, find_canaries

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

API = "/api/v1"
ROLES = {
    "rita": ("acme", ["auditor", "restricted-clearance"]),
    "alice": ("acme", ["auditor"]),  # no clearance for restricted evidence
    "opal": ("acme", ["operator"]),  # reads every report, no certificate
    "otto": ("globex", ["auditor", "restricted-clearance"]),
    "vera": ("acme", ["viewer", "restricted-clearance"]),
}


@dataclass
class Site:
    client: TestClient
    home: Path
    tokens: dict[str, str]
    report_id: str

    def get(self, path: str, who: str) -> Any:
        return self.client.get(API + path, headers={"Authorization": f"Bearer {self.tokens[who]}"})


@pytest.fixture(scope="module")
def site(module_home: Home) -> Iterator[Site]:
    now = datetime.now(UTC)
    with Runtime.open(module_home, env={}) as runtime:
        specimen = capture_incidents(runtime)["procurement"]
        tag_specimen(runtime, specimen, ["lib"], now=now)
        plan = RegressPlan(
            samples=8, purpose="release-gate", requester="ci", revision=("model", "r2")
        )
        envelope, _ = regress(
            runtime, select(runtime, Selector(tags=("lib",))), plan, now=now, local=True
        )
        tokens = {}
        for name, (tenant, roles) in ROLES.items():
            _, tokens[name] = add_analyst(runtime, name, tenant=tenant, roles=roles, now=now)
    with TestClient(create_app(lambda: Runtime.open(module_home, env={}))) as client:
        yield Site(client, module_home.root, tokens, report_id_of(envelope))


def test_the_bundle_verifies_offline_with_the_published_keys(site: Site) -> None:
    response = site.get(f"/reports/{site.report_id}/bundle", "rita")
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"] == (
        f'attachment; filename="{site.report_id}.bundle.json"'
    )
    log_key = site.get("/ledger/log-key", "opal")
    assert log_key.status_code == 200, log_key.text
    issuer = load_public_key_pem((site.home / "keys" / "signing-key.pem.pub").read_bytes())
    bundle = response.json()
    checks = verify_report_bundle(
        bundle,
        public_key=issuer,
        log_key=NoteVerifier.parse(log_key.json()["verifier_key"]),
    )
    assert all(ok for _, ok, _ in checks), checks
    assert len(bundle["certificates"]) == 1
    assert find_canaries(response.content, INCIDENT_CANARIES) == []


@pytest.mark.parametrize("who", ["opal", "alice"])
def test_who_may_not_read_every_certificate_gets_none_of_them(site: Site, who: str) -> None:
    assert site.get(f"/reports/{site.report_id}", who).status_code == 200  # the report, yes
    response = site.get(f"/reports/{site.report_id}/bundle", who)
    assert response.status_code == 403
    assert response.json()["error"]["code"] in {"not_permitted", "restricted_needs_clearance"}
    assert b"payload" not in response.content and b"certificate" not in response.content


def test_another_tenant_or_a_viewer_is_refused_as_for_the_report(site: Site) -> None:
    unknown = site.get("/reports/rr-0000000000000000/bundle", "otto")
    walled = site.get(f"/reports/{site.report_id}/bundle", "otto")
    assert (walled.status_code, walled.content) == (404, unknown.content)
    viewer = site.get(f"/reports/{site.report_id}/bundle", "vera")
    assert viewer.status_code == 403
    assert json.loads(viewer.content)["error"]["code"] == "not_permitted"
