"""The service's release reports, on SQLite and a real PostgreSQL: the keyset listing,
the envelope download and the decoded summary; the tenant wall (another tenant's
report, or one spanning tenants, is exactly an unknown id: 404), a viewer refused,
operators reading every report, bad ids and cursors one-line 4xx that echo nothing,
and no canary in any answer."""

from __future__ import annotations

import base64
import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime
from enclave.capture import capture
from enclave.cli import capture_incidents
from enclave.governance import add_analyst
from enclave.incidents import claims
from enclave.release import SpecimenResult, build_report, selection_digest, sign_report
from enclave.replay.certificates import signing_key
from enclave.service import create_app
from ledger import StoredReport, store_report
from tests.support.canary import INCIDENT_CANARIES, find_canaries

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

API = "/api/v1"
ROLES = {
    "alice": ("acme", ["auditor"]),
    "tina": ("acme", ["tenant-admin"]),
    "vera": ("acme", ["viewer", "restricted-clearance"]),
    "otto": ("globex", ["auditor", "restricted-clearance"]),
    "opal": ("acme", ["operator"]),
}
ITEM_KEYS = {"report_id", "issued_at", "gate_passed", "specimens", "selection_digest"}
T0 = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)


@dataclass
class Site:
    client: TestClient
    tokens: dict[str, str]
    acme: list[StoredReport]  # newest first
    globex: StoredReport
    spanning: StoredReport
    seen: list[bytes]

    def get(self, path: str, who: str) -> Any:
        response = self.client.get(
            API + path, headers={"Authorization": f"Bearer {self.tokens[who]}"}
        )
        self.seen.append(response.content + json.dumps(dict(response.headers)).encode())
        return response


def _report(runtime: Runtime, specimen_ids: list[str], at: datetime, passed: bool) -> Any:
    rows = [
        SpecimenResult(
            specimen_id=s,
            audit_id=f"au-{i:016x}",
            certificate=None,
            label="not-auditable",
            reason="failed",
            sealed=None,
            must_hold=not passed,
        )
        for i, s in enumerate(specimen_ids)
    ]
    key = signing_key(runtime)
    statement = build_report(
        selector={"specimens": specimen_ids},
        selection_digest=selection_digest(specimen_ids, []),
        erased=[],
        intervention={"strategy": "REVISION", "revision": "model=r2"},
        baseline_code=[],
        must_hold=["*"] if not passed else [],
        samples=4,
        results=rows,
        issued_at=at.isoformat(),
        issuer=key.keyid,
    )
    return sign_report(statement, key)


def _build(home: Home) -> tuple[dict[str, str], list[StoredReport], StoredReport, StoredReport]:
    runtime = Runtime.open(home, env={})
    try:
        specimens = capture_incidents(runtime)
        base: dict[str, Any] = claims.BASELINE_INPUT
        globex = capture(
            runtime, claims.AGENT, base["inputs"], tenant_id="globex", seed=base["seed"]
        ).specimen_id
        engine = runtime.ledger.engine
        acme = []
        for n in range(5):
            chosen = [specimens["procurement"], specimens["claims"]][: 1 + n % 2]
            envelope = _report(runtime, chosen, T0 + timedelta(minutes=n), passed=n % 2 == 0)
            acme.append(store_report(engine, envelope, tenant_id="acme"))
        other = store_report(
            engine, _report(runtime, [globex], T0 + timedelta(minutes=10), True), tenant_id="globex"
        )
        spanning = store_report(
            engine,
            _report(runtime, [specimens["claims"], globex], T0 + timedelta(minutes=11), True),
            tenant_id=None,
        )
        tokens = {}
        for name, (tenant, roles) in ROLES.items():
            _, tokens[name] = add_analyst(runtime, name, tenant=tenant, roles=roles, now=T0)
    finally:
        runtime.close()
    return tokens, acme[::-1], other, spanning


@pytest.fixture(scope="module")
def site(module_home: Home) -> Iterator[Site]:
    tokens, acme, other, spanning = _build(module_home)
    with TestClient(create_app(lambda: Runtime.open(module_home, env={}))) as client:
        yield Site(client, tokens, acme, other, spanning, [])


def _walk(site: Site, who: str, limit: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    path = f"/reports?limit={limit}"
    while True:
        response = site.get(path, who)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"items", "limit", "next", "total"}
        assert len(body["items"]) <= limit
        items += body["items"]
        if body["next"] is None:
            return items
        path = f"/reports?limit={limit}&cursor={body['next']}"


def test_an_auditor_lists_their_tenants_reports_newest_first_in_pages(site: Site) -> None:
    for who in ("alice", "tina"):
        for limit in (1, 2, 50):
            items = _walk(site, who, limit)
            assert [i["report_id"] for i in items] == [r.report_id for r in site.acme]
            assert all(set(i) == ITEM_KEYS for i in items)
    first = site.get("/reports?limit=2", "alice").json()
    assert first["total"] == 5 and first["limit"] == 2
    assert first["items"][0] == site.acme[0].summary()
    assert [i["report_id"] for i in _walk(site, "otto", 3)] == [site.globex.report_id]
    # operators read every report, those spanning tenants included
    everything = [i["report_id"] for i in _walk(site, "opal", 2)]
    assert sorted(everything) == sorted(
        [r.report_id for r in site.acme] + [site.globex.report_id, site.spanning.report_id]
    )


def test_reading_a_report_and_its_summary(site: Site) -> None:
    report = site.acme[1]
    response = site.get(f"/reports/{report.report_id}", "alice")
    assert response.status_code == 200
    assert response.headers["content-disposition"] == (
        f'attachment; filename="{report.report_id}.dsse.json"'
    )
    envelope = response.json()
    summary = site.get(f"/reports/{report.report_id}/summary", "alice")
    assert summary.status_code == 200
    predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
    assert summary.json() == predicate
    assert predicate["selection_digest"] == report.selection_digest
    assert predicate["gate"]["passed"] is report.gate_passed
    assert site.get(f"/reports/{site.spanning.report_id}", "opal").status_code == 200


def test_the_tenant_wall_answers_as_an_unknown_id_does(site: Site) -> None:
    unknown = "rr-" + "0" * 16
    for path in ("/reports/{}", "/reports/{}/summary"):
        missing = site.get(path.format(unknown), "alice")
        assert missing.status_code == 404
        for who, report in (
            ("otto", site.acme[0]),  # another tenant's
            ("alice", site.globex),  # another tenant's
            ("alice", site.spanning),  # spanning tenants
            ("tina", site.spanning),
        ):
            walled = site.get(path.format(report.report_id), who)
            assert (walled.status_code, walled.content) == (404, missing.content), who
        assert missing.json() == {"error": {"code": "not_found", "message": "no such resource"}}


def test_a_viewer_is_refused(site: Site) -> None:
    for path in ("/reports", f"/reports/{site.acme[0].report_id}", "/reports/rr-0000000000000000"):
        response = site.get(path, "vera")
        assert response.status_code == 403, path
        assert response.json()["error"]["code"] == "not_permitted"
    anonymous = site.client.get(API + "/reports")
    assert anonymous.status_code == 401


@pytest.mark.parametrize(
    "bad",
    [
        "rr-XYZCANARYXYZCANA",
        "rr-0123456789ABCDEF",
        "rr-0123",
        "au-0123456789abcdef",
        "x" * 200,
        "rr-0123456789abcdef0",
    ],
)
def test_a_bad_report_id_is_one_4xx_that_echoes_nothing(site: Site, bad: str) -> None:
    for path in (f"/reports/{bad}", f"/reports/{bad}/summary"):
        response = site.get(path, "alice")
        assert 400 <= response.status_code < 500, path
        body = response.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
        assert "\n" not in response.text and bad not in response.text


@pytest.mark.parametrize(
    "cursor",
    [
        "CANARYCURSORCANARY",
        base64.urlsafe_b64encode(b'["reports","2026-11-30T09:00:00+00:00","x"]').decode(),
        base64.urlsafe_b64encode(b'["audits","2026-11-30T09:00:00.000000Z","au-1"]')
        .decode()
        .rstrip("="),
        "",
    ],
)
def test_a_bad_cursor_is_one_400(site: Site, cursor: str) -> None:
    response = site.get(f"/reports?cursor={cursor}", "alice")
    assert response.status_code in (400, 422)
    assert cursor == "" or cursor not in response.text
    assert response.status_code == 422 or response.json()["error"]["code"] == "bad_cursor"


def test_no_answer_carries_a_canary(site: Site) -> None:
    _walk(site, "opal", 3)
    for report in site.acme:
        site.get(f"/reports/{report.report_id}/summary", "alice")
    assert site.seen
    assert find_canaries(b"\n".join(site.seen), INCIDENT_CANARIES) == []


def test_the_routes_are_in_the_openapi_document(site: Site) -> None:
    document = site.client.get("/openapi.json").json()
    paths = document["paths"]
    assert {
        "/api/v1/reports",
        "/api/v1/reports/{report_id}",
        "/api/v1/reports/{report_id}/summary",
    } <= set(paths)
    listed = paths["/api/v1/reports"]["get"]["responses"]["200"]["content"]["application/json"]
    schema = document["components"]["schemas"][listed["schema"]["$ref"].rsplit("/", 1)[1]]
    assert set(schema["properties"]) == {"items", "limit", "next", "total"}
    item = document["components"]["schemas"]["ReportSummaryModel"]
    assert set(item["properties"]) == ITEM_KEYS


@pytest.mark.parametrize(
    ("roles", "tenant", "expected"),
    [
        (["auditor"], "acme", "allowed"),
        (["tenant-admin"], "acme", "allowed"),
        (["operator"], "acme", "allowed"),
        (["viewer", "restricted-clearance"], "acme", "not_permitted"),
        (["auditor"], "globex", "tenant_isolation"),
        (["auditor", "tenant-admin", "restricted-clearance"], None, "tenant_isolation"),
        (["operator"], "globex", "allowed"),
        (["operator"], None, "allowed"),
    ],
)
def test_cedar_decides_read_report(roles: list[str], tenant: str | None, expected: str) -> None:
    from enclave.governance import AccessPolicy, Action, Analyst, Resource

    analyst = Analyst(name="a", tenant="acme", roles=tuple(roles), created_at=T0.isoformat())
    decision = AccessPolicy.load().authorize(
        analyst, Action.READ_REPORT, Resource.report("rr-0123456789abcdef", tenant), now=T0
    )
    assert decision.code == expected
