"""The service's walls as a legitimate caller tries to climb them: pagination cursors
forged, spliced from another tenant's or another list's pages, or carrying text the
service never issues; list totals against what a caller can actually page through;
refusals that must not tell one tenant anything about another's specimens and audits;
worker and analyst tokens on each other's routes, disabled and revoked ones, and
spellings of a token; cancels across tenants and the disclosure budget of refused,
repeated and cancelled requests. On a real SQLite home with the reference incidents,
synthetic specimens of two tenants, a real certified audit and stored release reports.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime, utc_now
from enclave.governance import add_analyst, disable_analyst
from enclave.jobs import run_worker, submit_audit
from enclave.replay import AuditRequest, Intervention, Strategy
from enclave.service import add_worker, create_app, revoke_worker
from ledger import Classification, store_report
from tests.support.reads_world import synthetic_specimen
from tests.unit.service.test_service import API, audit_body, build_home, error_code
from tests.unit.service.test_service_reports import _report

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

EXTRA_ROLES = {
    "gil": ("globex", ["tenant-admin"]),
    "gus": ("globex", ["viewer"]),
    "tia": ("acme", ["tenant-admin", "restricted-clearance"]),
    "dot": ("acme", ["viewer", "restricted-clearance"]),
    "rex": ("acme", ["auditor", "restricted-clearance"]),
    "ria": ("acme", ["auditor", "restricted-clearance"]),
    "ivy": ("acme", ["auditor", "restricted-clearance"]),
}
T0 = datetime(2026, 11, 30, 9, 0, 0, tzinfo=UTC)
BAD_CURSOR = {
    "error": {"code": "bad_cursor", "message": "the cursor is not one this service issued"}
}


@dataclasses.dataclass
class World:
    home: Home
    specimens: dict[str, str]
    tokens: dict[str, str]
    worker_token: str
    certified: str  # a completed audit of the restricted procurement specimen
    queued: str  # a queued audit of the same specimen, without a certificate
    internal_audit: str  # a queued audit of an acme specimen classified internal
    globex_audit: str
    client: TestClient

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def get(self, path: str, who: str) -> Any:
        return self.client.get(API + path, headers=self.auth(who))

    def entries(self, kind: str, subject: str | None = None) -> list[dict[str, Any]]:
        with Runtime.open(self.home, env={}) as runtime:
            return [e.body for e in runtime.ledger.entries(kind=kind, subject=subject)]


def _revision(specimen_id: str, requester: str) -> AuditRequest:
    return AuditRequest(
        specimen_id=specimen_id,
        intervention=Intervention(Strategy.REVISION, revision=("model", "r2")),
        purpose="purchase-order-review",
        requester=requester,
        samples=4,
        seed=1,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home, specimens, tokens = build_home(tmp_path_factory.mktemp("walls") / "home")
    app = create_app(lambda: Runtime.open(home, env={}))
    with TestClient(app, raise_server_exceptions=False) as client:
        auth = {"Authorization": f"Bearer {tokens['alice']}"}
        body = audit_body(specimens["procurement"], from_cut="before-retrieval")
        response = client.post(f"{API}/audits", headers=auth, json=body)
        assert response.status_code == 202, response.text
        certified = response.json()["audit_id"]
        run_worker(
            lambda: Runtime.open(home, env={}), worker_id="w0", stop=threading.Event(), once=True
        )
        assert client.get(f"{API}/audits/{certified}", headers=auth).json()["has_certificate"]
        queued = client.post(
            f"{API}/audits",
            headers=auth,
            json=audit_body(specimens["procurement"], seed=2),
        ).json()["audit_id"]
        with Runtime.open(home, env={}) as runtime:
            ledger = runtime.ledger
            for n in range(3):
                ledger.seal_specimen(
                    synthetic_specimen(
                        f"sp-acme-int-{n}", tenant_id="acme", classification=Classification.INTERNAL
                    )
                )
                ledger.seal_specimen(
                    synthetic_specimen(
                        f"sp-globex-{n}",
                        tenant_id="globex",
                        classification=Classification.RESTRICTED if n else Classification.PUBLIC,
                    )
                )
            internal = submit_audit(
                runtime, _revision("sp-acme-int-0", "alice"), tenant_id="acme", now=utc_now()
            ).audit_id
            globex = submit_audit(
                runtime, _revision("sp-globex-1", "otto"), tenant_id="globex", now=utc_now()
            ).audit_id
            submit_audit(
                runtime, _revision("sp-globex-0", "otto"), tenant_id="globex", now=utc_now()
            )
            engine = ledger.engine
            for n in range(4):
                chosen = [specimens["procurement"], specimens["claims"]][: 1 + n % 2]
                envelope = _report(runtime, chosen, T0 + timedelta(minutes=n), passed=True)
                store_report(engine, envelope, tenant_id="acme")
            for n in range(3):
                envelope = _report(
                    runtime, [specimens["globex-claims"]], T0 + timedelta(minutes=20 + n), True
                )
                store_report(engine, envelope, tenant_id="globex")
            for name, (tenant, roles) in EXTRA_ROLES.items():
                _, tokens[name] = add_analyst(
                    runtime, name, tenant=tenant, roles=roles, now=utc_now()
                )
            worker_token = add_worker(runtime, "w1", now=utc_now())
        yield World(
            home=home,
            specimens=specimens,
            tokens=tokens,
            worker_token=worker_token,
            certified=certified,
            queued=queued,
            internal_audit=internal,
            globex_audit=globex,
            client=client,
        )


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _utf8(value: object) -> str:
    """The cursor spelling of ``value``: compact JSON, non-ASCII kept as UTF-8."""
    return _b64(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _walk(world: World, path: str, who: str, limit: int) -> tuple[list[dict[str, Any]], set[int]]:
    """Every item of a listing, page by page, and the totals the pages stated."""
    items: list[dict[str, Any]] = []
    totals: set[int] = set()
    cursor = None
    while True:
        sep = "&" if "?" in path else "?"
        query = f"{path}{sep}limit={limit}" + ("" if cursor is None else f"&cursor={cursor}")
        response = world.get(query, who)
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["items"]) <= limit
        items += page["items"]
        totals.add(page["total"])
        cursor = page["next"]
        if cursor is None:
            return items, totals


def _next(world: World, path: str, who: str) -> str:
    sep = "&" if "?" in path else "?"
    page = world.get(f"{path}{sep}limit=1", who).json()
    assert page["next"] is not None
    return str(page["next"])


def _assert_one_line_refusal(response: Any, sent: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert "\n" not in response.text and "Traceback" not in response.text
    assert sent not in response.text


# -- cursors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "cursor"),
    [
        ("/specimens", _b64(b'["specimens","\\ud800"]')),
        ("/audits", _b64(b'["audits","\\ud800","au-1"]')),
        ("/audits", _b64(b'["audits","2025-03-01T12:00:00.000000Z","\\udc00"]')),
        ("/reports", _b64(b'["reports","\\ud800","rr-0000000000000000"]')),
    ],
)
def test_a_cursor_holding_a_lone_surrogate_is_a_400_not_a_5xx(
    world: World, path: str, cursor: str
) -> None:
    response = world.get(f"{path}?cursor={cursor}", "alice")
    _assert_one_line_refusal(response, cursor)
    assert response.json() == BAD_CURSOR


_ARABIC_DIGITS = str.maketrans(
    "0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669"
)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("/audits", ["audits", "9999-12-31T23:59:59.999999Z".translate(_ARABIC_DIGITS), "au-1"]),
        ("/audits", ["audits", "2025-03-01T12:00:00.000000Z".translate(_ARABIC_DIGITS), "zz"]),
        (
            "/reports",
            ["reports", "9999-12-31T23:59:59".translate(_ARABIC_DIGITS), "rr-ffffffffffffffff"],
        ),
    ],
)
def test_a_cursor_time_in_other_scripts_digits_is_not_one_the_service_issued(
    world: World, path: str, value: list[str]
) -> None:
    cursor = _utf8(value)
    response = world.get(f"{path}?cursor={cursor}", "alice")
    _assert_one_line_refusal(response, cursor)
    assert response.json() == BAD_CURSOR


@pytest.mark.parametrize(
    ("path", "cursor"),
    [
        ("/specimens", _b64(b'["audits","2025-03-01T12:00:00.000000Z","au-1"]')),
        ("/specimens", _b64(b'["reports","2026-11-30T09:00:00+00:00","rr-0000000000000000"]')),
        ("/audits", _b64(b'["specimens",3]')),
        ("/audits", _b64(b'["reports","2026-11-30T09:00:00+00:00","rr-0000000000000000"]')),
        ("/reports", _b64(b'["specimens",3]')),
        ("/reports", _b64(b'["audits","2025-03-01T12:00:00.000000Z","au-1"]')),
        ("/specimens", "A" * 513),
        ("/specimens", _b64(b'["specimens",9007199254740993]')),
        ("/specimens", _b64(b'["specimens",1e400]')),
        ("/specimens", _b64(b'["specimens",' + b"[" * 120 + b"]" * 120 + b"]")),
        ("/audits", _b64(b'["audits","2025-03-01T12:00:00.000000Z","au-1","extra"]')),
        ("/reports", _b64(b'["reports","2026-11-30T09:00:00","rr-0000000000000000",null]')),
    ],
)
def test_a_cursor_of_another_list_or_shape_is_one_400(world: World, path: str, cursor: str) -> None:
    response = world.get(f"{path}?cursor={cursor}", "alice")
    _assert_one_line_refusal(response, cursor)
    assert response.json() == BAD_CURSOR


def test_an_issued_cursor_cut_short_or_altered_is_refused(world: World) -> None:
    for path in ("/specimens", "/audits", "/reports"):
        issued = _next(world, path, "alice")
        assert world.get(f"{path}?limit=1&cursor={issued}", "alice").status_code == 200
        for bad in (issued[:-1], issued[:-2], issued + "A", issued + "==", issued.swapcase()):
            response = world.get(f"{path}?limit=1&cursor={bad}", "alice")
            _assert_one_line_refusal(response, bad)
            assert response.json() == BAD_CURSOR, (path, bad)


def test_another_tenants_cursors_only_move_within_the_callers_own_rows(world: World) -> None:
    own_specimens = {s["specimen_id"] for s in _walk(world, "/specimens", "vera", 500)[0]}
    own_audits = {a["audit_id"] for a in _walk(world, "/audits", "vera", 500)[0]}
    own_reports = {r["report_id"] for r in _walk(world, "/reports", "alice", 500)[0]}
    spliced = {
        "/specimens": (_next(world, "/specimens", "otto"), "vera", own_specimens, "specimen_id"),
        "/audits": (_next(world, "/audits", "otto"), "vera", own_audits, "audit_id"),
        # an operator lists every tenant's reports: their positions open none for alice
        "/reports": (_next(world, "/reports", "opal"), "alice", own_reports, "report_id"),
    }
    for path, (cursor, who, own, key) in spliced.items():
        response = world.get(f"{path}?limit=500&cursor={cursor}", who)
        assert response.status_code == 200, response.text
        page = response.json()
        assert {item[key] for item in page["items"]} <= own, path
        assert page["total"] == len(own), path
    cursor = spliced["/specimens"][0]
    shown = world.get(f"/specimens?limit=500&cursor={cursor}", "vera").json()["items"]
    assert shown and {item["tenant_id"] for item in shown} == {"acme"}


def test_a_cursor_forged_at_the_far_end_shows_nothing_past_the_walls(world: World) -> None:
    top_specimens = _b64(b'["specimens",9007199254740991]')
    page = world.get(f"/specimens?limit=500&cursor={top_specimens}", "vera").json()
    assert page["items"] and {i["tenant_id"] for i in page["items"]} == {"acme"}
    top_audits = _b64(b'["audits","9999-12-31T23:59:59.999999Z","zzzzzzzz"]')
    cleared = world.get(f"/audits?limit=500&cursor={top_audits}", "vera").json()["items"]
    walled = world.get(f"/audits?limit=500&cursor={top_audits}", "nora").json()["items"]
    assert cleared and {a["audit_id"] for a in cleared} >= {world.certified, world.queued}
    assert world.globex_audit not in {a["audit_id"] for a in cleared}
    # the uncleared auditor sees the internal audit, nothing of the restricted specimen's
    assert {a["audit_id"] for a in walled} == {world.internal_audit}
    top_reports = _b64(b'["reports","9999-12-31T23:59:59","rr-ffffffffffffffff"]')
    reports = world.get(f"/reports?limit=500&cursor={top_reports}", "otto").json()
    assert len(reports["items"]) == reports["total"] == 3


def test_a_cursor_does_not_open_another_tenants_listing(world: World) -> None:
    cursor = _next(world, "/specimens?tenant=globex", "otto")
    response = world.get(f"/specimens?tenant=globex&cursor={cursor}", "vera")
    assert response.status_code == 403 and error_code(response) == "tenant_isolation"
    assert "sp-globex" not in response.text


@pytest.mark.parametrize(
    ("path", "who"),
    [
        ("/specimens", "vera"),
        ("/specimens", "nora"),
        ("/specimens", "otto"),
        ("/specimens?agent=claims", "nora"),
        ("/specimens?auditability=observable-only", "vera"),
        ("/audits", "vera"),
        ("/audits", "nora"),
        ("/audits", "otto"),
        ("/audits", "gus"),
        ("/reports", "alice"),
        ("/reports", "gil"),
        ("/reports", "opal"),
    ],
)
def test_a_listings_total_is_what_the_caller_can_page_through(
    world: World, path: str, who: str
) -> None:
    for limit in (1, 3):
        items, totals = _walk(world, path, who, limit)
        keys = [next(v for k, v in item.items() if k.endswith("_id")) for item in items]
        assert len(keys) == len(set(keys))
        assert totals == {len(items)}, (path, who, limit, totals, len(items))


def test_no_listing_shows_a_row_behind_a_wall(world: World) -> None:
    tenant_of = {"vera": "acme", "nora": "acme", "otto": "globex", "gus": "globex"}
    for who, tenant in tenant_of.items():
        specimens, _ = _walk(world, "/specimens", who, 2)
        assert specimens and {s["tenant_id"] for s in specimens} == {tenant}
    with Runtime.open(world.home, env={}) as runtime:
        audits = {a: runtime.ledger.get_specimen(s) for a, s in _audit_specimens(runtime).items()}
    for who, cleared in (("vera", True), ("nora", False), ("otto", True), ("gus", False)):
        listed, _ = _walk(world, "/audits", who, 2)
        for audit in listed:
            record = audits[audit["audit_id"]]
            assert record.tenant_id == tenant_of[who], who
            assert cleared or record.highest_classification is not Classification.RESTRICTED
    # the uncleared viewer of globex sees only the audit of its public specimen
    assert len(_walk(world, "/audits", "gus", 2)[0]) == 1


def _audit_specimens(runtime: Runtime) -> dict[str, str]:
    import sqlalchemy as sa

    with runtime.ledger.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, specimen_id FROM audits")).all()
    return {str(a): str(s) for a, s in rows}


# -- walls on every derived view --------------------------------------------------------------

DERIVED = ("/audits/{}", "/certificates/{}", "/certificates/{}/summary", "/certificates/{}/verify")


def test_a_forbidden_caller_learns_not_whether_an_audit_has_a_certificate(world: World) -> None:
    for path in DERIVED[1:]:
        certified = world.get(path.format(world.certified), "vera")
        assert certified.status_code == 200, (path, certified.text)
        bare = world.get(path.format(world.queued), "vera")
        assert bare.status_code == 404 and error_code(bare) == "no_certificate"
    for who, code in (("otto", "tenant_isolation"), ("gil", "tenant_isolation"), ("nora", None)):
        for path in DERIVED:
            with_certificate = world.get(path.format(world.certified), who)
            without = world.get(path.format(world.queued), who)
            assert with_certificate.status_code == 403, (who, path)
            assert (with_certificate.status_code, with_certificate.content) == (
                without.status_code,
                without.content,
            ), (who, path)
            if code is not None:
                assert error_code(with_certificate) == code


def test_another_tenant_learns_no_classification_or_hold_of_a_specimen(world: World) -> None:
    restricted = world.specimens["procurement"]
    held = world.specimens["held"]
    internal = "sp-acme-int-1"
    for who in ("otto", "gus", "gil"):
        answers = {sid: world.get(f"/specimens/{sid}", who) for sid in (restricted, held, internal)}
        assert {(r.status_code, r.content) for r in answers.values()} == {
            (
                403,
                b'{"error":{"code":"tenant_isolation","message":"access denied by policy"}}',
            )
        }, who
        derived = {
            (r.status_code, r.content)
            for audit in (world.certified, world.internal_audit)
            for r in [world.get(path.format(audit), who) for path in DERIVED]
        }
        assert len(derived) == 1 and next(iter(derived))[0] == 403, (who, derived)


def test_another_tenant_learns_no_classification_or_hold_from_a_refused_request(
    world: World,
) -> None:
    answers = set()
    for sid in (world.specimens["procurement"], world.specimens["held"], "sp-acme-int-2"):
        response = world.client.post(
            f"{API}/audits", headers=world.auth("otto"), json=audit_body(sid)
        )
        answers.add((response.status_code, response.content))
    assert answers == {
        (403, b'{"error":{"code":"tenant_isolation","message":"access denied by policy"}}')
    }


def test_the_uncleared_see_a_restricted_specimen_listed_but_never_its_calls(
    world: World,
) -> None:
    listed = world.get("/specimens?limit=500", "nora").json()["items"]
    restricted = [s for s in listed if s["highest_classification"] == "restricted"]
    assert restricted
    for summary in restricted:
        assert "calls" not in summary and "cuts" not in summary
        detail = world.get(f"/specimens/{summary['specimen_id']}", "nora")
        assert detail.status_code == 403 and error_code(detail) == "restricted_needs_clearance"
        assert "main/" not in detail.text


def test_another_tenants_reports_answer_as_unknown_ids_to_its_admin_too(world: World) -> None:
    acme = [r["report_id"] for r in _walk(world, "/reports", "alice", 500)[0]]
    globex = [r["report_id"] for r in _walk(world, "/reports", "gil", 500)[0]]
    assert acme and globex and not set(acme) & set(globex)
    unknown = world.get("/reports/rr-0000000000000000", "gil")
    assert unknown.status_code == 404
    for rid in acme:
        for path in (f"/reports/{rid}", f"/reports/{rid}/summary"):
            walled = world.get(path, "gil")
            assert (walled.status_code, walled.content) == (404, unknown.content)


# -- token classes -----------------------------------------------------------------------------

ANALYST_ROUTES = [
    ("GET", "/whoami"),
    ("GET", "/specimens"),
    ("GET", "/audits"),
    ("GET", "/reports"),
    ("GET", "/policies"),
    ("GET", "/ledger/head"),
    ("GET", "/specimens/sp-acme-int-0"),
    ("POST", "/audits"),
]
INTERNAL_ROUTES = ["/internal/v1/digest-keys", "/internal/v1/signatures"]


def _claim() -> dict[str, Any]:
    return {"job_id": "job-1", "fencing_token": 1}


def test_a_worker_token_opens_no_analyst_route(world: World) -> None:
    worker = {"Authorization": f"Bearer {world.worker_token}"}
    # the token is a valid worker's: an internal route gets past it (to the mode check)
    internal = world.client.post(INTERNAL_ROUTES[0], headers=worker, json=_claim())
    assert internal.status_code == 404 and error_code(internal) == "grants_unavailable"
    for method, path in ANALYST_ROUTES:
        body = audit_body("sp-acme-int-0") if method == "POST" else None
        response = world.client.request(method, API + path, headers=worker, json=body)
        assert response.status_code == 401 and error_code(response) == "unauthenticated", path
        assert world.worker_token not in response.text


@pytest.mark.parametrize("who", ["alice", "opal", "tia"])
def test_an_analyst_token_opens_no_internal_route(world: World, who: str) -> None:
    for path in INTERNAL_ROUTES:
        response = world.client.post(path, headers=world.auth(who), json=_claim())
        assert response.status_code == 401 and error_code(response) == "unauthenticated", path
        assert response.headers["www-authenticate"] == "Bearer"


def test_a_revoked_worker_token_is_refused_before_anything_else(world: World) -> None:
    with Runtime.open(world.home, env={}) as runtime:
        token = add_worker(runtime, "w-gone", now=utc_now())
    headers = {"Authorization": f"Bearer {token}"}
    before = world.client.post(INTERNAL_ROUTES[0], headers=headers, json=_claim())
    assert before.status_code == 404
    with Runtime.open(world.home, env={}) as runtime:
        revoke_worker(runtime, "w-gone", now=utc_now())
    for path in INTERNAL_ROUTES:
        after = world.client.post(path, headers=headers, json=_claim())
        assert after.status_code == 401 and error_code(after) == "unauthenticated", path


def test_a_disabled_analyst_is_refused_on_every_route_at_once(world: World) -> None:
    token = world.tokens["dot"]
    headers = {"Authorization": f"Bearer {token}"}
    assert world.client.get(f"{API}/audits", headers=headers).status_code == 200
    with Runtime.open(world.home, env={}) as runtime:
        disable_analyst(runtime, "dot", now=utc_now())
    cursor = _b64(b'["specimens",3]')
    paths = [path for method, path in ANALYST_ROUTES if method == "GET"] + [
        f"/audits/{world.certified}",
        f"/certificates/{world.certified}",
        f"/certificates/{world.certified}/summary",
        "/reports/rr-0000000000000000",
        f"/specimens?cursor={cursor}",
    ]
    for path in paths:
        response = world.client.get(API + path, headers=headers)
        assert response.status_code == 401 and error_code(response) == "unauthenticated", path
    cancel = world.client.post(f"{API}/audits/{world.queued}/cancel", headers=headers)
    assert cancel.status_code == 401
    assert world.get(f"/audits/{world.queued}", "alice").json()["status"] == "QUEUED"


def test_spellings_of_a_token_are_that_analyst_or_nobody(world: World) -> None:
    token = world.tokens["vera"]
    same = [f"Bearer {token}", f"bearer {token}", f"BEARER {token}", f"Bearer  {token}"]
    for header in same:
        response = world.client.get(f"{API}/whoami", headers={"Authorization": header})
        assert response.status_code == 200 and response.json()["name"] == "vera", header
    other = [
        f"Bearer {token.upper()}",
        f"Bearer {token.lower()}",
        f"Bearer {token[:-1]}",
        f"Bearer {token}A",
        f"Bearer {token[4:]}",
        f"Bearer rew_{token[4:]}",
        f"Bearer {token} {token}",
        f"Bearer\t{token}",
        f"Token {token}",
        f"Basic {base64.b64encode(token.encode()).decode()}",
        token,
    ]
    for header in other:
        for path in ("/whoami", "/specimens", "/audits", f"/audits/{world.certified}"):
            response = world.client.get(API + path, headers={"Authorization": header})
            assert response.status_code == 401, (header, path)
            assert token not in response.text
    in_query = world.client.get(f"{API}/whoami?access_token={token}")
    assert in_query.status_code == 401


# -- cancel and the disclosure budget ----------------------------------------------------------


def _claims_body(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "call_id": "main/fraud_score#0",
        "field": "/fraud_score",
        "strategy": "nullify",
        "value": None,
        "purpose": "claims-review",
    }
    return audit_body("", **(base | changes))


def _post_claims(world: World, who: str, **changes: Any) -> Any:
    body = _claims_body(**changes) | {"specimen_id": world.specimens["claims"]}
    return world.client.post(f"{API}/audits", headers=world.auth(who), json=body)


def test_another_tenants_admin_cannot_cancel(world: World) -> None:
    audit = world.client.post(
        f"{API}/audits",
        headers=world.auth("alice"),
        json=audit_body(world.specimens["procurement"], seed=31),
    ).json()["audit_id"]
    cancelled_before = len(world.entries("audit.cancelled"))
    for who in ("gil", "otto"):
        for body in (None, {"reason": "operator"}):
            response = world.client.post(
                f"{API}/audits/{audit}/cancel", headers=world.auth(who), json=body
            )
            assert response.status_code == 403 and error_code(response) == "tenant_isolation"
    missing = world.client.post(
        f"{API}/audits/au-0000000000000000/cancel", headers=world.auth("gil")
    )
    assert missing.status_code == 404
    assert world.get(f"/audits/{audit}", "alice").json()["status"] == "QUEUED"
    assert len(world.entries("audit.cancelled")) == cancelled_before
    # the tenant's own admin may
    own = world.client.post(f"{API}/audits/{audit}/cancel", headers=world.auth("tia"))
    assert own.status_code == 200 and own.json()["status"] == "CANCELLED"


def test_refused_requests_are_never_charged(world: World) -> None:
    refusals = [
        ({"policy_id": "procurement.supplier-confidence.replace"}, 403),
        ({"from_cut": "before-authority"}, 400),
        ({"call_id": "main/fraud_score#9"}, 403),
    ]
    for _ in range(2):
        for changes, status in refusals:
            response = _post_claims(world, "rex", **changes)
            assert response.status_code == status, (changes, response.text)
    for n in range(5):  # the shipped policy allows 5 per analyst, specimen and field per day
        response = _post_claims(world, "rex", seed=100 + n)
        assert response.status_code == 202, (n, response.text)
    over = _post_claims(world, "rex", seed=200)
    assert over.status_code == 429 and error_code(over) == "disclosure_budget_exhausted"


def test_a_cancel_repeated_or_refused_gives_the_charge_back_once(world: World) -> None:
    ids = []
    for n in range(5):
        response = _post_claims(world, "ria", seed=300 + n)
        assert response.status_code == 202, response.text
        ids.append(response.json()["audit_id"])
    assert _post_claims(world, "ria", seed=399).status_code == 429
    # a colleague's refused cancel and another tenant's give nothing back
    for who in ("ivy", "gil", "nora"):
        refused = world.client.post(f"{API}/audits/{ids[0]}/cancel", headers=world.auth(who))
        assert refused.status_code == 403, who
    assert _post_claims(world, "ria", seed=398).status_code == 429
    # the requester cancels, then the tenant admin, then the requester again
    for who in ("ria", "tia", "ria"):
        again = world.client.post(f"{API}/audits/{ids[0]}/cancel", headers=world.auth(who))
        assert again.status_code == 200 and again.json()["status"] == "CANCELLED"
    refunds = [
        r
        for r in world.entries("audit.refunded", world.specimens["claims"])
        if r["audit_id"] in ids
    ]
    assert [r["audit_id"] for r in refunds] == [ids[0]]
    assert refunds[0]["analyst"] == "ria"
    assert _post_claims(world, "ria", seed=397).status_code == 202
    assert _post_claims(world, "ria", seed=396).status_code == 429
    # the colleague who tried to cancel still has their whole budget
    for n in range(5):
        assert _post_claims(world, "ivy", seed=500 + n).status_code == 202
    assert _post_claims(world, "ivy", seed=599).status_code == 429


# -- ids that hold a NUL, on each ledger backend ----------------------------------------------


def test_a_name_holding_a_control_character_is_refused_alike_on_every_backend(
    home: Home,
) -> None:
    """PostgreSQL refuses a NUL in text where SQLite finds nothing: the service refuses
    such a name before any query, with the same one-line 422 on both, never a 503."""
    with Runtime.open(home, env={}) as runtime:
        runtime.ledger.seal_specimen(synthetic_specimen("sp-nul-0"))
        _, token = add_analyst(
            runtime, "nil", tenant="acme", roles=["auditor", "restricted-clearance"], now=utc_now()
        )
    headers = {"Authorization": f"Bearer {token}"}
    app = create_app(lambda: Runtime.open(home, env={}))
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get(f"{API}/specimens/sp-nul-1", headers=headers).status_code == 404
        for path in (
            "/specimens/sp-nul-0%00",
            "/specimens/sp-nul-0%1F",
            "/audits/au-%00",
            "/certificates/au-%00",
            "/certificates/au-%00/summary",
        ):
            response = client.get(API + path, headers=headers)
            _assert_one_line_refusal(response, "\x00")
            assert error_code(response) == "invalid_request", path
        cancel = client.post(f"{API}/audits/au-%00/cancel", headers=headers)
        assert cancel.status_code == 422 and error_code(cancel) == "invalid_request"
        for query in ("agent=claims%00", "tenant=acme%00", "agent=claims%7F"):
            listed = client.get(f"{API}/specimens?{query}", headers=headers)
            assert listed.status_code == 422 and error_code(listed) == "invalid_request", query
        # the intervention's own names are checked first, by the intervention model
        for name, expected in (
            ("specimen_id", (422, "invalid_request")),
            ("policy_id", (422, "invalid_request")),
            ("call_id", (400, "bad_input")),
            ("field", (400, "bad_input")),
        ):
            body = audit_body("sp-nul-0")
            body[name] = "x\x00"
            posted = client.post(f"{API}/audits", headers=headers, json=body)
            assert (posted.status_code, error_code(posted)) == expected, name
