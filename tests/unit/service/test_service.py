"""The HTTP service on a real SQLite home with the reference incidents captured:
authentication, Cedar refusals with their codes, the disclosure budget (429), listing
and paging, an audit from request to verified certificate with a real worker, and a
canary scan of every response, header and log line — error paths and hostile input
included."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.exceptions import StarletteDeprecationWarning

from enclave import Home, Runtime, utc_now
from enclave.capture import capture
from enclave.cli import capture_incidents
from enclave.governance import (
    activate_policy,
    add_analyst,
    load_policy_file,
    policies_root,
    validate_policy,
)
from enclave.incidents import claims
from enclave.service import create_app
from ledger import canonical_digest
from ledger.certificates import finding, load_public_key_pem, verify_bundle
from ledger.certificates.tlog import NoteVerifier, open_note, parse_checkpoint
from tests.support.canary import INCIDENT_CANARIES, find_canaries

with warnings.catch_warnings():
    # starlette announces a future transport change on import; the client works as is
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from fastapi.testclient import TestClient

API = "/api/v1"
SUPPLIER_CALL = "main/supplier_risk#0"
FRAUD_CALL = "main/fraud_score#0"
ROLES = {
    "alice": ("acme", ["auditor", "restricted-clearance"]),
    "vera": ("acme", ["viewer", "restricted-clearance"]),
    "nora": ("acme", ["auditor"]),
    "lex": ("acme", ["auditor", "restricted-clearance", "legal-hold-reviewer"]),
    "otto": ("globex", ["auditor", "restricted-clearance"]),
    "bud": ("acme", ["auditor", "restricted-clearance"]),
    "opal": ("acme", ["operator"]),
}


@dataclasses.dataclass
class World:
    home: Home
    specimens: dict[str, str]
    tokens: dict[str, str]
    client: TestClient

    def auth(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}


def build_home(root: Path) -> tuple[Home, dict[str, str], dict[str, str]]:
    home = Home.init(root)
    runtime = Runtime.open(home, env={})
    try:
        specimens = capture_incidents(runtime)
        now = utc_now()
        globex = capture(
            runtime,
            claims.AGENT,
            claims.BASELINE_INPUT["inputs"],
            tenant_id="globex",
            seed=claims.BASELINE_INPUT["seed"],
        )
        specimens["globex-claims"] = globex.specimen_id
        record = runtime.ledger.get_specimen(specimens["procurement"])
        manifest = json.loads(json.dumps(record.manifest))
        manifest["specimen_id"] = "sp-held"
        runtime.ledger.seal_specimen(
            dataclasses.replace(
                record,
                specimen_id="sp-held",
                manifest=manifest,
                manifest_digest=canonical_digest(manifest),
                legal_hold=True,
            )
        )
        specimens["held"] = "sp-held"
        for path in sorted((policies_root() / "interventions").glob("*.toml")):
            policy = load_policy_file(runtime, path, now=now)
            assert validate_policy(runtime, policy.id, now=now).ok
            activate_policy(runtime, policy.id, now=now)
        tokens = {}
        for name, (tenant, roles) in ROLES.items():
            _, tokens[name] = add_analyst(runtime, name, tenant=tenant, roles=roles, now=now)
    finally:
        runtime.close()
    return home, specimens, tokens


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home, specimens, tokens = build_home(tmp_path_factory.mktemp("service") / "home")
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        yield World(home, specimens, tokens, client)


def audit_body(specimen: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "specimen_id": specimen,
        "call_id": SUPPLIER_CALL,
        "field": "/confidence",
        "strategy": "replace",
        "value": 0.56,
        "samples": 4,
        "seed": 1,
        "purpose": "purchase-order-review",
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not None}


def error_code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    return str(body["error"]["code"])


# -- authentication -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer rea_" + "A" * 43},
        {"Authorization": "Basic YWxpY2U6c2VjcmV0"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer CANARY-PROC-2f9c1e"},
    ],
)
def test_requests_without_a_valid_token_are_401(world: World, headers: dict[str, str]) -> None:
    for path in ("/whoami", "/specimens", "/policies", "/audits", "/ledger/head"):
        response = world.client.get(API + path, headers=headers)
        assert response.status_code == 401
        assert error_code(response) == "unauthenticated"
        assert response.headers["www-authenticate"] == "Bearer"
        assert "CANARY" not in response.text


def test_whoami(world: World) -> None:
    response = world.client.get(f"{API}/whoami", headers=world.auth("alice"))
    assert response.json() == {
        "name": "alice",
        "tenant": "acme",
        "roles": ["auditor", "restricted-clearance"],
    }


# -- specimens and policies ---------------------------------------------------------------


def test_listing_and_paging(world: World) -> None:
    get = world.client.get
    everything = get(f"{API}/specimens", headers=world.auth("vera")).json()
    assert everything["total"] == 4 and everything["limit"] == 50 and everything["next"] is None
    ids = [item["specimen_id"] for item in everything["items"]]
    assert set(ids) == {
        world.specimens[k] for k in ("procurement", "claims", "shard-maintenance", "held")
    }
    assert all(item["tenant_id"] == "acme" for item in everything["items"])
    first = get(f"{API}/specimens?limit=3", headers=world.auth("vera")).json()
    rest = get(f"{API}/specimens?limit=3&cursor={first['next']}", headers=world.auth("vera")).json()
    assert rest["next"] is None
    assert [i["specimen_id"] for i in first["items"] + rest["items"]] == ids
    assert first["total"] == rest["total"] == 4 and len(rest["items"]) == 1
    claims_only = get(f"{API}/specimens?agent=claims", headers=world.auth("vera")).json()
    assert [i["specimen_id"] for i in claims_only["items"]] == [world.specimens["claims"]]
    observable = get(
        f"{API}/specimens?auditability=observable-only", headers=world.auth("vera")
    ).json()
    assert [i["specimen_id"] for i in observable["items"]] == [world.specimens["shard-maintenance"]]
    item = claims_only["items"][0]
    assert set(item) == {
        "specimen_id",
        "tenant_id",
        "agent_name",
        "agent_version",
        "manifest_digest",
        "highest_classification",
        "step_count",
        "sealed_at",
        "erased",
        "legal_hold",
    }
    assert get(f"{API}/specimens?limit=0", headers=world.auth("vera")).status_code == 422
    other = get(f"{API}/specimens?tenant=globex", headers=world.auth("vera"))
    assert other.status_code == 403 and error_code(other) == "tenant_isolation"


def test_specimen_detail_is_metadata_only(world: World) -> None:
    sid = world.specimens["procurement"]
    response = world.client.get(f"{API}/specimens/{sid}", headers=world.auth("vera"))
    assert response.status_code == 200
    detail = response.json()
    assert detail["revisions"] == {"model": ["r1", "r2"], "template": ["c1", "c2"]}
    assert detail["strategies"] == ["nullify", "replace", "perturb"]
    risk = next(c for c in detail["calls"] if c["call_id"] == SUPPLIER_CALL)
    assert (risk["name"], risk["schema_id"], risk["schema_version"]) == (
        "supplier_risk",
        "supplier-risk",
        "2",
    )
    fields = {f["path"]: f for f in risk["fields"] if f["side"] == "response"}
    assert fields["/confidence"]["digest"].startswith("hmac-sha256:")
    assert fields["/scoring_memo"] == {
        "side": "response",
        "path": "/scoring_memo",
        "classification": "restricted",
        "retention": "withheld",
        "digest": None,
    }
    assert "0.7" not in response.text and not find_canaries(response.content, INCIDENT_CANARIES)


@pytest.mark.parametrize(
    ("agent", "cuts", "sealed"),
    [
        (
            "procurement",
            [
                {"name": "before-retrieval", "call_id": "main/before-retrieval#0"},
                {"name": "before-authority", "call_id": "main/before-authority#0"},
            ],
            "auditable",
        ),
        (
            "claims",
            [{"name": "before-authority", "call_id": "main/before-authority#0"}],
            "auditable",
        ),
        (
            "shard-maintenance",
            [{"name": "before-drop", "call_id": "executor/before-drop#0"}],
            "not-auditable-beyond before-drop",
        ),
    ],
)
def test_specimen_detail_shows_cuts_and_sealed_auditability(
    world: World, agent: str, cuts: list[dict[str, str]], sealed: str
) -> None:
    sid = world.specimens[agent]
    response = world.client.get(f"{API}/specimens/{sid}", headers=world.auth("vera"))
    assert response.status_code == 200
    detail = response.json()
    assert detail["cuts"] == cuts
    assert detail["sealed_auditability"] == sealed
    # each cut is one of the listed calls, of kind cut, in the order the run reached it
    kinds = {c["call_id"]: c["kind"] for c in detail["calls"]}
    assert all(kinds[cut["call_id"]] == "cut" for cut in cuts)
    order = [c["call_id"] for c in detail["calls"]]
    assert [order.index(cut["call_id"]) for cut in cuts] == sorted(
        order.index(cut["call_id"]) for cut in cuts
    )
    assert not find_canaries(response.content, INCIDENT_CANARIES)


def test_specimen_detail_shows_the_effective_retention_library_while_tagged(
    world: World,
) -> None:
    from enclave.release import tag_specimen, untag_specimen

    sid = world.specimens["claims"]

    def detail() -> dict[str, Any]:
        response = world.client.get(f"{API}/specimens/{sid}", headers=world.auth("vera"))
        assert response.status_code == 200
        body: dict[str, Any] = response.json()
        return body

    before = detail()
    assert before["retention_class"] == before["effective_retention"] == "standard"
    with Runtime.open(world.home, env={}) as runtime:
        tag_specimen(runtime, sid, ["release-gate/claims"], now=utc_now())
    try:
        tagged = detail()
        assert (tagged["retention_class"], tagged["effective_retention"]) == ("standard", "library")
    finally:
        with Runtime.open(world.home, env={}) as runtime:
            untag_specimen(runtime, sid, ["release-gate/claims"])
    assert detail()["effective_retention"] == "standard"


def test_specimen_detail_says_erased_after_erasure(world: World) -> None:
    from enclave import erase_specimen

    with Runtime.open(world.home, env={}) as runtime:
        sid = capture(
            runtime,
            claims.AGENT,
            claims.BASELINE_INPUT["inputs"],
            tenant_id="acme",
            seed=claims.BASELINE_INPUT["seed"] + 7,
        ).specimen_id

    def erased() -> bool:
        response = world.client.get(f"{API}/specimens/{sid}", headers=world.auth("vera"))
        assert response.status_code == 200
        return bool(response.json()["erased"])

    assert erased() is False
    with Runtime.open(world.home, env={}) as runtime:
        erase_specimen(runtime, sid, now=utc_now())
    assert erased() is True


def test_a_specimen_sealed_before_cuts_has_no_sealed_auditability(world: World) -> None:
    from enclave.service import cuts_of

    runtime = Runtime.open(world.home, env={})
    try:
        record = runtime.ledger.get_specimen(world.specimens["procurement"])
    finally:
        runtime.close()
    manifest = {k: v for k, v in record.manifest.items() if k != "auditability"}
    older = dataclasses.replace(record, manifest=manifest)
    assert cuts_of(older)["sealed_auditability"] is None
    assert cuts_of(record)["sealed_auditability"] == "auditable"


def test_specimen_detail_in_the_openapi_names_cuts(world: World) -> None:
    schemas = world.client.get("/openapi.json").json()["components"]["schemas"]
    assert {"cuts", "sealed_auditability"} <= set(schemas["SpecimenDetail"]["properties"])
    assert set(schemas["CutModel"]["properties"]) == {"name", "call_id"}


def test_specimen_access_refusals(world: World) -> None:
    get = world.client.get
    sid = world.specimens["procurement"]
    nora = get(f"{API}/specimens/{sid}", headers=world.auth("nora"))
    assert nora.status_code == 403 and error_code(nora) == "restricted_needs_clearance"
    otto = get(f"{API}/specimens/{sid}", headers=world.auth("otto"))
    assert otto.status_code == 403 and error_code(otto) == "tenant_isolation"
    missing = get(f"{API}/specimens/sp-nope", headers=world.auth("vera"))
    assert missing.status_code == 404 and error_code(missing) == "not_found"


def test_policies_of_the_tenant(world: World) -> None:
    response = world.client.get(f"{API}/policies?status=active", headers=world.auth("vera"))
    items = response.json()["items"]
    assert len(items) == 6 and all(p["status"] == "active" and p["tenant"] == "acme" for p in items)
    replace = next(p for p in items if p["id"] == "procurement.supplier-confidence.replace")
    assert set(replace) == {
        "id",
        "version",
        "tenant",
        "tool",
        "schema_id",
        "schema_version",
        "field",
        "strategy",
        "params",
        "status",
    }
    assert 0.56 in replace["params"]["alternates"]
    assert world.client.get(
        f"{API}/policies?status=retired", headers=world.auth("vera")
    ).json() == {"items": []}
    assert world.client.get(f"{API}/policies", headers=world.auth("otto")).json() == {"items": []}
    assert (
        world.client.get(f"{API}/policies?status=bogus", headers=world.auth("vera")).status_code
        == 422
    )


# -- requesting audits: refusals ----------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "specimen", "changes", "status", "code"),
    [
        ("vera", "procurement", {}, 403, "not_permitted"),
        ("otto", "procurement", {}, 403, "tenant_isolation"),
        ("nora", "procurement", {}, 403, "restricted_needs_clearance"),
        ("alice", "held", {}, 403, "legal_hold"),
        ("alice", None, {"specimen_id": "sp-unknown"}, 403, "unknown_specimen"),
        ("alice", "procurement", {"value": 0.57}, 403, "parameter_not_authorised"),
        # every count only where the policy grants it; no other detail exists
        ("alice", "procurement", {"detail": "per-sample"}, 403, "detail_not_granted"),
        ("alice", "procurement", {"detail": "everything"}, 422, "invalid_request"),
        ("alice", "procurement", {"field": "/analyst_note", "value": "x"}, 403, "no_active_policy"),
        ("alice", "procurement", {"call_id": "main/supplier_risk#4"}, 403, "unknown_call"),
        (
            "alice",
            "procurement",
            {"policy_id": "claims.fraud-score.nullify"},
            403,
            "policy_mismatch",
        ),
        (
            "alice",
            "procurement",
            {
                "strategy": "revision",
                "revision": "model=r7",
                "call_id": None,
                "field": None,
                "value": None,
            },
            403,
            "strategy_not_declared",
        ),
        (
            "alice",
            "procurement",
            {"strategy": "perturb", "value": None, "delta": 0.2, "call_id": "x"},
            403,
            "unknown_call",
        ),
        ("alice", "procurement", {"value": None}, 400, "bad_input"),
        ("alice", "procurement", {"samples": 1}, 422, "invalid_request"),
        ("alice", "procurement", {"strategy": "REPLACE"}, 400, "bad_input"),
        ("alice", "procurement", {"colour": "blue"}, 422, "invalid_request"),
        ("alice", "procurement", {"purpose": ""}, 422, "invalid_request"),
        # replay cuts: the supplier-risk target lies before this cut; no such cut; a bad name
        ("alice", "procurement", {"from_cut": "before-authority"}, 400, "bad_input"),
        ("alice", "procurement", {"from_cut": "before-nothing"}, 400, "bad_input"),
        ("alice", "procurement", {"from_cut": "a/b"}, 422, "invalid_request"),
    ],
)
def test_audit_refusals_name_the_unmet_condition(
    world: World, who: str, specimen: str | None, changes: dict[str, Any], status: int, code: str
) -> None:
    sid = world.specimens[specimen] if specimen else "sp-unknown"
    response = world.client.post(
        f"{API}/audits", headers=world.auth(who), json=audit_body(sid, **changes)
    )
    assert response.status_code == status, response.text
    assert error_code(response) == code


def test_refusals_are_recorded_in_the_ledger(world: World) -> None:
    runtime = Runtime.open(world.home, env={})
    try:
        before = len(runtime.ledger.entries(kind="audit.refused"))
        response = world.client.post(
            f"{API}/audits", headers=world.auth("vera"), json=audit_body(world.specimens["claims"])
        )
        assert response.status_code == 403
        refused = runtime.ledger.entries(kind="audit.refused")
        assert len(refused) == before + 1
        assert refused[-1].body["analyst"] == "vera" and refused[-1].body["code"] == "not_permitted"
        assert refused[-1].subject == world.specimens["claims"]
    finally:
        runtime.close()


def test_budget_exhausted_is_429(world: World) -> None:
    body = audit_body(
        world.specimens["claims"],
        call_id=FRAUD_CALL,
        field="/fraud_score",
        strategy="nullify",
        value=None,
        purpose="claims-review",
    )
    for _ in range(5):  # the shipped policy allows 5 per analyst, specimen and field per day
        accepted = world.client.post(f"{API}/audits", headers=world.auth("bud"), json=body)
        assert accepted.status_code == 202, accepted.text
        assert accepted.json()["status"] == "QUEUED"
    refused = world.client.post(f"{API}/audits", headers=world.auth("bud"), json=body)
    assert refused.status_code == 429
    assert error_code(refused) == "disclosure_budget_exhausted"
    assert 0 < int(refused.headers["retry-after"]) <= 86_400 + 1
    # another analyst still has their own budget
    other = world.client.post(f"{API}/audits", headers=world.auth("alice"), json=body)
    assert other.status_code == 202
    listed = world.client.get(f"{API}/audits?limit=3", headers=world.auth("bud")).json()["items"]
    assert len(listed) == 3 and all(a["status"] == "QUEUED" for a in listed)
    first = world.client.get(f"{API}/audits?limit=3", headers=world.auth("bud")).json()
    page2 = world.client.get(
        f"{API}/audits?limit=3&cursor={first['next']}", headers=world.auth("bud")
    ).json()["items"]
    assert len(page2) == 3 and not {a["audit_id"] for a in listed} & {a["audit_id"] for a in page2}
    assert world.client.get(f"{API}/audits", headers=world.auth("otto")).json() == {
        "items": [],
        "limit": 50,
        "next": None,
        "total": 0,
    }
    # another tenant can neither read nor cancel them
    audit_id = listed[0]["audit_id"]
    assert (
        error_code(world.client.get(f"{API}/audits/{audit_id}", headers=world.auth("otto")))
        == "tenant_isolation"
    )
    assert (
        error_code(world.client.post(f"{API}/audits/{audit_id}/cancel", headers=world.auth("vera")))
        == "not_permitted"
    )
    # only the requester (or a tenant admin) cancels: the newest is alice's
    assert listed[0]["requester"] == "alice"
    assert (
        error_code(world.client.post(f"{API}/audits/{audit_id}/cancel", headers=world.auth("bud")))
        == "not_permitted"
    )
    audit_id = listed[1]["audit_id"]
    cancelled = world.client.post(f"{API}/audits/{audit_id}/cancel", headers=world.auth("bud"))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "CANCELLED"
    assert (
        error_code(world.client.get(f"{API}/certificates/{audit_id}", headers=world.auth("bud")))
        == "no_certificate"
    )


def test_ledger_routes(world: World) -> None:
    # the chain spans tenants: operators only
    for path in ("/ledger/head", "/ledger/verify", "/ledger/log-key"):
        assert error_code(world.client.get(API + path, headers=world.auth("vera"))) == (
            "not_permitted"
        )
    head = world.client.get(f"{API}/ledger/head", headers=world.auth("opal")).json()
    assert isinstance(head["index"], int) and head["hash"].startswith("sha256:")
    verify = world.client.get(f"{API}/ledger/verify", headers=world.auth("opal")).json()
    assert verify == {
        "ok": True,
        "length": head["index"] + 1,
        "first_bad_index": None,
        "reason": None,
        "verified_from": 0,  # the first run has no checkpoint to resume from
        "signed_checkpoint": None,
        "proved": f"all {head['index'] + 1} entries (0-{head['index']}) checked, head matches",
    }
    key = world.client.get(f"{API}/ledger/log-key", headers=world.auth("opal")).json()
    assert NoteVerifier.parse(key["verifier_key"]).name == key["origin"]


def test_ledger_checkpoints_through_the_service(world: World) -> None:
    """An operator signs a checkpoint and later proves the ledger extends it, with no
    access to the host: the answer names the range the checkpoint vouched for."""
    opal, vera = world.auth("opal"), world.auth("vera")
    for path, body in (("/ledger/checkpoint", None), ("/ledger/verify", {"checkpoint": "x"})):
        refused = world.client.post(API + path, headers=vera, json=body)
        assert error_code(refused) == "not_permitted"
    first = world.client.post(f"{API}/ledger/checkpoint", headers=opal)
    assert first.status_code == 200, first.text
    issued = first.json()
    key = world.client.get(f"{API}/ledger/log-key", headers=opal).json()["verifier_key"]
    body = open_note(issued["note"], [NoteVerifier.parse(key)])[0]
    signed = parse_checkpoint(body)
    assert signed.size == issued["tree_size"] > 0 and issued["witnesses"] == {}
    assert base64.b64encode(signed.root).decode() == issued["root"]
    # the next one is proven to extend it
    second = world.client.post(f"{API}/ledger/checkpoint", headers=opal).json()
    assert second["extends"] == issued["tree_size"] <= second["tree_size"]
    proved = world.client.post(
        f"{API}/ledger/verify", headers=opal, json={"checkpoint": issued["note"]}
    )
    assert proved.status_code == 200, proved.text
    report = proved.json()
    assert report["ok"] and report["signed_checkpoint"] == issued["tree_size"]
    assert report["verified_from"] == issued["tree_size"]
    assert f"proven by the signed checkpoint of {issued['tree_size']} entries" in report["proved"]
    # a note the log did not sign, one altered after signing, or no note at all: 4xx,
    # one line, and nothing of the note echoed back
    lines = issued["note"].split("\n")
    altered = "\n".join([lines[0], str(int(lines[1]) + 1), *lines[2:]])
    for hostile in (altered, "canary-7f3a9\n", "x" * 20_000):
        bad = world.client.post(f"{API}/ledger/verify", headers=opal, json={"checkpoint": hostile})
        assert bad.status_code in (400, 422), bad.text
        assert "canary" not in bad.text and hostile[:40] not in bad.text
    plain = world.client.get(f"{API}/ledger/verify", headers=opal).json()
    assert plain["ok"] and plain["signed_checkpoint"] is None and plain["proved"]


def test_openapi_is_published(world: World) -> None:
    spec = world.client.get("/openapi.json").json()
    assert {
        "/api/v1/audits",
        "/api/v1/certificates/{audit_id}/verify",
        "/api/v1/ledger/verify",
    } <= set(spec["paths"])
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


# -- end to end: request -> worker -> certificate -----------------------------------------


@pytest.mark.slow
def test_an_audit_requested_from_a_cut_is_certified_with_it(tmp_path: Path) -> None:
    from enclave.jobs import run_worker

    home, specimens, tokens = build_home(tmp_path / "home")
    auth = {"Authorization": f"Bearer {tokens['alice']}"}
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        body = audit_body(specimens["procurement"], from_cut="before-retrieval")
        response = client.post(f"{API}/audits", headers=auth, json=body)
        assert response.status_code == 202, response.text
        audit_id = response.json()["audit_id"]
        run_worker(
            lambda: Runtime.open(home, env={}), worker_id="w1", stop=threading.Event(), once=True
        )
        done = client.get(f"{API}/audits/{audit_id}", headers=auth).json()
        assert done["status"] == "COMPLETED", done
        envelope = client.get(f"{API}/certificates/{audit_id}", headers=auth).json()
        predicate = json.loads(base64.b64decode(envelope["payload"]))["predicate"]
        assert predicate["request"]["from_cut"] == "before-retrieval"
        assert predicate["cut"]["call_id"] == "main/before-retrieval#0"
        assert client.get(f"{API}/certificates/{audit_id}/verify", headers=auth).json()["ok"]


def test_the_status_states_the_finding_only_to_whoever_may_read_the_certificate(
    tmp_path: Path,
) -> None:
    """The finding is the certificate's figures in words: an analyst the access policy
    lets follow an audit but not read its certificate sees the status without it."""
    from enclave.governance import AccessPolicy
    from enclave.jobs import run_worker

    home, specimens, tokens = build_home(tmp_path / "home")
    folder = policies_root() / "access"
    shipped = "\n".join(p.read_text() for p in sorted(folder.glob("*.cedar")))
    no_certificates = AccessPolicy(
        policies=shipped
        + '\n@id("no-certificates-for-viewers")\n@code("not_permitted")\n'
        + 'forbid (principal, action == Action::"read_certificate", resource)\n'
        + 'when { principal.roles.contains("viewer") };\n',
        schema="\n".join(p.read_text() for p in sorted(folder.glob("*.cedarschema"))),
    )
    alice = {"Authorization": f"Bearer {tokens['alice']}"}
    vera = {"Authorization": f"Bearer {tokens['vera']}"}  # a viewer of the same tenant
    app = create_app(lambda: Runtime.open(home, env={}), access=no_certificates)
    with TestClient(app) as client:
        response = client.post(
            f"{API}/audits", headers=alice, json=audit_body(specimens["procurement"], samples=5)
        )
        assert response.status_code == 202, response.text
        audit_id = response.json()["audit_id"]
        assert response.json()["finding"] is None  # queued: nothing found yet
        run_worker(
            lambda: Runtime.open(home, env={}), worker_id="w1", stop=threading.Event(), once=True
        )
        done = client.get(f"{API}/audits/{audit_id}", headers=alice).json()
        assert done["status"] == "COMPLETED"
        envelope = client.get(f"{API}/certificates/{audit_id}", headers=alice).json()
        statement = json.loads(base64.b64decode(envelope["payload"]))
        assert done["finding"] == finding(statement["predicate"], statement["predicateType"])
        listed = client.get(f"{API}/audits", headers=alice).json()["items"]
        assert [a["finding"] for a in listed if a["audit_id"] == audit_id] == [done["finding"]]
        # vera may follow the audit, not read its certificate: no finding either way
        assert client.get(f"{API}/certificates/{audit_id}", headers=vera).status_code == 403
        seen = client.get(f"{API}/audits/{audit_id}", headers=vera).json()
        assert seen["status"] == "COMPLETED" and seen["finding"] is None
        listed = client.get(f"{API}/audits", headers=vera).json()["items"]
        assert [a["finding"] for a in listed if a["audit_id"] == audit_id] == [None]


@pytest.mark.slow
def test_request_to_verified_certificate(tmp_path: Path) -> None:
    from enclave.jobs import run_worker

    home, specimens, tokens = build_home(tmp_path / "home")
    auth = {"Authorization": f"Bearer {tokens['alice']}"}
    with TestClient(create_app(lambda: Runtime.open(home, env={}))) as client:
        response = client.post(
            f"{API}/audits", headers=auth, json=audit_body(specimens["procurement"])
        )
        assert response.status_code == 202, response.text
        queued = response.json()
        assert queued["status"] == "QUEUED" and queued["has_certificate"] is False
        audit_id = queued["audit_id"]
        assert client.get(f"{API}/certificates/{audit_id}", headers=auth).status_code == 404
        run_worker(
            lambda: Runtime.open(home, env={}), worker_id="w1", stop=threading.Event(), once=True
        )
        done = client.get(f"{API}/audits/{audit_id}", headers=auth).json()
        assert done["status"] == "COMPLETED", done
        assert (
            done["has_certificate"] is True and done["auditability"] == "counterfactual-admissible"
        )
        download = client.get(f"{API}/certificates/{audit_id}", headers=auth)
        assert download.status_code == 200
        assert f'filename="{audit_id}.dsse.json"' in download.headers["content-disposition"]
        envelope = download.json()
        assert envelope["payloadType"] == "application/vnd.in-toto+json"
        verified = client.get(f"{API}/certificates/{audit_id}/verify", headers=auth).json()
        assert verified["ok"] is True
        assert [c["name"] for c in verified["checks"]] == [
            "envelope",
            "signature",
            "statement",
            "predicate",
            "subject",
            "ledger_entry",
        ]
        summary = client.get(f"{API}/certificates/{audit_id}/summary", headers=auth).json()
        assert summary["request"]["policy"] == {
            "id": "procurement.supplier-confidence.replace",
            "version": 1,
        }
        assert summary["request"]["requester"] == "alice"
        assert summary["classification"] == done["classification"]
        assert summary["auditability"]["class"] == "counterfactual-admissible"
        conflict = client.post(f"{API}/audits/{audit_id}/cancel", headers=auth)
        assert conflict.status_code == 409 and error_code(conflict) == "conflict"
        # the bundle: this envelope with its entries proven against the log's checkpoint,
        # verified with nothing but the issuer's key and the key the service publishes
        bundled = client.get(f"{API}/certificates/{audit_id}/bundle", headers=auth)
        assert bundled.status_code == 200
        assert f'filename="{audit_id}.bundle.json"' in bundled.headers["content-disposition"]
        assert bundled.json()["envelope"] == envelope
        operator = {"Authorization": f"Bearer {tokens['opal']}"}
        log_key = client.get(f"{API}/ledger/log-key", headers=operator).json()["verifier_key"]
        issuer = load_public_key_pem(Path(f"{home.signing_key_path}.pub").read_bytes())
        offline = verify_bundle(
            bundled.json(), public_key=issuer, log_key=NoteVerifier.parse(log_key)
        )
        assert offline.ok, offline.to_dict()
        other_tenant = {"Authorization": f"Bearer {tokens['otto']}"}
        outsider = client.get(f"{API}/certificates/{audit_id}/bundle", headers=other_tenant)
        assert outsider.status_code in (403, 404)
        for body in (
            download.content,
            bundled.content,
            json.dumps(summary).encode(),
            json.dumps(verified).encode(),
        ):
            assert not find_canaries(body, INCIDENT_CANARIES)


# -- canaries -----------------------------------------------------------------------------


def test_no_canary_in_any_response_header_or_log(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    canary = INCIDENT_CANARIES[0]
    alice, vera = world.auth("alice"), world.auth("vera")
    calls: list[tuple[str, str, dict[str, str], Any]] = []
    for sid in world.specimens.values():
        calls += [
            ("GET", f"{API}/specimens/{sid}", alice, None),
            ("GET", f"{API}/specimens/{sid}", vera, None),
        ]
    calls += [
        ("GET", f"{API}/specimens", alice, None),
        ("GET", f"{API}/policies", alice, None),
        ("GET", f"{API}/audits", alice, None),
        ("GET", f"{API}/ledger/head", alice, None),
        ("GET", f"{API}/ledger/verify", alice, None),
        ("GET", f"{API}/ledger/log-key", alice, None),
        ("GET", "/openapi.json", {}, None),
    ]
    for c in INCIDENT_CANARIES:  # hostile input everywhere: it must never come back
        calls += [
            ("GET", f"{API}/specimens/{c}", alice, None),
            ("GET", f"{API}/specimens?tenant={c}", alice, None),
            ("GET", f"{API}/specimens?agent={c}", alice, None),
            ("GET", f"{API}/specimens?limit={c}", alice, None),
            ("GET", f"{API}/audits/{c}", alice, None),
            ("GET", f"{API}/certificates/{c}", alice, None),
            ("GET", f"{API}/certificates/{c}/summary", alice, None),
            ("GET", f"{API}/certificates/{c}/bundle", alice, None),
            ("POST", f"{API}/audits/{c}/cancel", alice, None),
            ("GET", f"{API}/{c}", alice, None),
            ("GET", f"{API}/whoami", {"Authorization": f"Bearer {c}"}, None),
            ("POST", f"{API}/audits", alice, audit_body(c)),
            ("POST", f"{API}/audits", alice, audit_body(world.specimens["procurement"], value=c)),
            ("POST", f"{API}/audits", alice, audit_body(world.specimens["procurement"], call_id=c)),
            (
                "POST",
                f"{API}/audits",
                alice,
                audit_body(world.specimens["procurement"], field=f"/{c}"),
            ),
            (
                "POST",
                f"{API}/audits",
                alice,
                audit_body(world.specimens["procurement"], revision=f"{c}=r2", strategy="revision"),
            ),
            (
                "POST",
                f"{API}/audits",
                alice,
                audit_body(world.specimens["procurement"], purpose=c, samples=1),
            ),
            ("POST", f"{API}/audits", vera, audit_body(world.specimens["procurement"], purpose=c)),
            (
                "POST",
                f"{API}/audits",
                alice,
                audit_body(world.specimens["procurement"], tolerances={c: c}),
            ),
            ("POST", f"{API}/audits", alice, {c: c}),
            ("POST", f"{API}/audits", alice, f'{{"specimen_id": "{c}", broken'),
            ("POST", f"{API}/audits", alice, [c]),
        ]
    responses = []
    for method, url, headers, body in calls:
        if isinstance(body, str):
            r = world.client.request(
                method,
                url,
                headers={**headers, "Content-Type": "application/json"},
                content=body.encode(),
            )
        else:
            r = world.client.request(method, url, headers=headers, json=body)
        assert r.status_code < 500, (url, r.status_code)
        responses.append(r)
    assert any(r.status_code == 200 for r in responses) and any(
        r.status_code == 422 for r in responses
    )
    for r in responses:
        blob = r.content + b"\n" + "\n".join(f"{k}: {v}" for k, v in r.headers.items()).encode()
        assert not find_canaries(blob, INCIDENT_CANARIES), (r.request.url, r.status_code)
    ours = [rec for rec in caplog.records if not rec.name.startswith(("httpx", "httpcore"))]
    assert any(rec.name == "enclave.service" for rec in ours)
    text = "\n".join(f"{rec.name} {rec.getMessage()} {rec.exc_text or ''}" for rec in ours).encode()
    assert not find_canaries(text, INCIDENT_CANARIES)
    assert canary not in text.decode()
