"""Provisioning with an operator token: mounts, policies, AppRole roles, tenant keys.

This is the only component that writes policies and roles. It is run by an operator
(``replay-enclave vault setup``), never by the broker or capture identities: a
component that can both write policies and mint tokens is effectively root.

Steps of ``apply_setup`` (each idempotent):

1. enable the transit secrets engine at ``mount`` (refuse if the path holds another type);
2. enable the AppRole auth method at ``approle/``;
3. write the capture, broker (tenant-free base) and rotate policies and AppRole roles;
4. create the signing keys ``<prefix>_log`` and ``<prefix>_issuer`` (Ed25519,
   non-exportable, no plaintext backup: the keys that sign the ledger's checkpoints and
   the certificates) or check existing ones are exactly that; for each requested tenant
   (``ensure_tenant_key``): create its key (derived, non-exportable, no plaintext
   backup) or check that an existing one has exactly those properties; write its own
   broker policy ``replay-enclave-broker-<tenant>`` (decrypt wrapped, HMAC and verify on
   that one key) and its own AppRole of that name; add the policy to the governance
   broker role (the service's identity, which then serves the tenants it is configured
   for — a policy per tenant, no glob over tenants);
5. read each role id and generate one fresh secret id per role (optional), per-tenant
   broker roles included.

Replay workers get nothing here: in Vault mode a worker holds no Vault credential and
asks the service for each grant (``docs/grants.md``).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from enclave._errors import EnclaveError, Refused
from enclave.keys import (
    ENV_PREFIX,
    SIGNING_KEY_NAMES,
    Role,
    derivation_context,
    role_env_names,
    vault_errors,
)
from enclave.vaultops._policies import (
    DEFAULT_KEY_PREFIX,
    DEFAULT_MOUNT,
    POLICY_NAME_PREFIX,
    RoleDefinition,
    load_roles,
    load_tenant_template,
    render_tenant_policy,
    tenant_broker_name,
)

__all__ = ["RoleCredentials", "SetupResult", "apply_setup", "ensure_tenant_key"]

APPROLE_MOUNT = "approle"
TENANT_KEY_SETTINGS = {
    "type": "aes256-gcm96",
    "derived": True,
    "exportable": False,
    "allow_plaintext_backup": False,
}
# the log's and the issuer's signing keys (``enclave._log_key``, ``_issuer_key``):
# Ed25519, never leave transit
SIGNING_KEY_SETTINGS = {"type": "ed25519", "exportable": False, "allow_plaintext_backup": False}


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleCredentials:
    role: Role
    role_name: str
    role_id: str
    secret_id: str | None = field(default=None, repr=False)
    secret_id_accessor: str | None = None
    tenant: str | None = None  # set for a per-tenant broker role


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupResult:
    addr: str
    mount: str
    key_prefix: str
    credentials: tuple[RoleCredentials, ...]
    tenant_keys: tuple[str, ...]

    def credentials_for(self, role: Role, *, tenant: str | None = None) -> RoleCredentials:
        """One identity's credentials; ``tenant`` picks that tenant's own broker role."""
        for cred in self.credentials:
            if cred.role == role and cred.tenant == tenant:
                return cred
        raise KeyError(role)

    def export_lines(self) -> list[str]:
        """``export NAME=value`` lines for a POSIX shell (contains secret ids)."""
        lines = [f"export VAULT_ADDR={shlex.quote(self.addr)}"]
        if self.mount != DEFAULT_MOUNT:
            lines.append(f"export {ENV_PREFIX}MOUNT={shlex.quote(self.mount)}")
        if self.key_prefix != DEFAULT_KEY_PREFIX:
            lines.append(f"export {ENV_PREFIX}KEY_PREFIX={shlex.quote(self.key_prefix)}")
        for cred in self.credentials:
            role_var, secret_var = role_env_names(cred.role, cred.tenant)
            lines.append(f"export {role_var}={shlex.quote(cred.role_id)}")
            if cred.secret_id is not None:
                lines.append(f"export {secret_var}={shlex.quote(cred.secret_id)}")
        return lines


def _setup_refused() -> EnclaveError:
    return Refused("key server refused setup (is this an admin token?)", code="vault_setup_refused")


def _key_config_unsafe() -> EnclaveError:
    return Refused(
        "an existing transit key is exportable, backup-able or of another kind",
        code="vault_key_unsafe",
    )


def apply_setup(
    admin: Any,
    *,
    mount: str = DEFAULT_MOUNT,
    key_prefix: str = DEFAULT_KEY_PREFIX,
    tenants: Iterable[str] = (),
    issue_secret_ids: bool = True,
    directory: Path | None = None,
) -> SetupResult:
    """Provision everything with ``admin`` (an authenticated ``hvac.Client``)."""
    roles = load_roles(mount=mount, key_prefix=key_prefix, directory=directory)
    tenants = tuple(tenants)
    for tenant in tenants:
        derivation_context(tenant, "x")  # validate before touching the server
    with vault_errors("setup", refusal=_setup_refused):
        # 1. + 2. engines
        _enable(admin, "mounts", mount, "transit")
        _enable(admin, "auth", APPROLE_MOUNT, "approle")
        # 3. policies and roles
        for role in roles:
            _write_role(admin, role)
    # 4. the signing keys, then tenant keys, each with its own broker policy and role
    for name in SIGNING_KEY_NAMES:
        _ensure_key(admin, f"/v1/{mount}/keys/{key_prefix}{name}", SIGNING_KEY_SETTINGS)
    keys = tuple(
        ensure_tenant_key(admin, tenant, mount=mount, key_prefix=key_prefix, directory=directory)
        for tenant in tenants
    )
    # 5. credentials
    creds = []
    broker = next(role for role in roles if role.role == "broker")
    with vault_errors("setup", refusal=_setup_refused):
        for role in roles:
            creds.append(_credentials(admin, role.role, role.role_name, issue_secret_ids))
        for tenant in tenants:
            name = tenant_broker_name(tenant)
            cred = _credentials(admin, broker.role, name, issue_secret_ids)
            creds.append(dataclasses.replace(cred, tenant=tenant))
    return SetupResult(
        addr=str(admin.url).rstrip("/"),
        mount=mount,
        key_prefix=key_prefix,
        credentials=tuple(creds),
        tenant_keys=keys,
    )


def ensure_tenant_key(
    admin: Any,
    tenant: str,
    *,
    mount: str = DEFAULT_MOUNT,
    key_prefix: str = DEFAULT_KEY_PREFIX,
    directory: Path | None = None,
) -> str:
    """Create the tenant's KEK if missing (refuse an existing one with unsafe settings),
    then its broker policy and role (``_provision_tenant_broker``)."""
    derivation_context(tenant, "x")
    name = key_prefix + tenant
    _ensure_key(admin, f"/v1/{mount}/keys/{name}", TENANT_KEY_SETTINGS)
    _provision_tenant_broker(admin, tenant, mount=mount, key_prefix=key_prefix, directory=directory)
    return name


def _ensure_key(admin: Any, path: str, settings: dict[str, Any]) -> None:
    """Create the transit key at ``path`` with ``settings`` if missing; refuse an
    existing one whose settings differ (it could leave transit, or is another kind)."""
    with vault_errors("transit key", refusal=_setup_refused):
        answer = admin.adapter.get(path, raise_exception=False)
        status = getattr(answer, "status_code", 200)
        if status == 404:
            admin.adapter.post(path, json=settings)
            answer = admin.adapter.get(path)
        elif status != 200:
            admin.adapter.get(path)  # raises the mapped error
        data = answer["data"]
        actual = {k: data.get(k) for k in settings}
    if actual != settings:
        raise _key_config_unsafe()


def _provision_tenant_broker(
    admin: Any, tenant: str, *, mount: str, key_prefix: str, directory: Path | None
) -> None:
    """``replay-enclave-broker-<tenant>``: the policy, its own AppRole, and its place in
    the governance broker role's policies (kept with those of earlier tenants)."""
    broker = next(
        r
        for r in load_roles(mount=mount, key_prefix=key_prefix, directory=directory)
        if r.role == "broker"
    )
    hcl = render_tenant_policy(
        load_tenant_template(directory), tenant=tenant, mount=mount, key_prefix=key_prefix
    )
    name = tenant_broker_name(tenant)
    with vault_errors("tenant broker", refusal=_setup_refused):
        _enable(admin, "auth", APPROLE_MOUNT, "approle")
        admin.adapter.put(f"/v1/sys/policies/acl/{name}", json={"policy": hcl})
        own = {**broker.settings, "token_policies": [broker.policy_name, name]}
        admin.adapter.post(f"/v1/auth/{APPROLE_MOUNT}/role/{name}", json=own)
        _write_role(admin, broker, extra_policies=(name,))


def _enable(admin: Any, kind: str, path: str, engine_type: str) -> None:
    listing = admin.adapter.get(f"/v1/sys/{kind}")
    table = listing.get("data", listing)
    current = table.get(f"{path}/")
    if current is None:
        admin.adapter.post(f"/v1/sys/{kind}/{path}", json={"type": engine_type})
    elif current.get("type") != engine_type:
        raise Refused(f"path {path}/ is already used by another engine", code="vault_mount_taken")


def _write_role(admin: Any, role: RoleDefinition, *, extra_policies: tuple[str, ...] = ()) -> None:
    admin.adapter.put(f"/v1/sys/policies/acl/{role.policy_name}", json={"policy": role.policy_hcl})
    settings = dict(role.settings)
    if role.role == "broker":  # keep the per-tenant policies earlier setups attached
        settings["token_policies"] = [
            role.policy_name,
            *_tenant_policies(admin, role, extra_policies),
        ]
    admin.adapter.post(f"/v1/auth/{APPROLE_MOUNT}/role/{role.role_name}", json=settings)


def _tenant_policies(admin: Any, role: RoleDefinition, extra: tuple[str, ...]) -> list[str]:
    answer = admin.adapter.get(
        f"/v1/auth/{APPROLE_MOUNT}/role/{role.role_name}", raise_exception=False
    )
    current: list[str] = []
    if getattr(answer, "status_code", 200) == 200:
        current = [str(p) for p in answer["data"].get("token_policies") or []]
    tenant_prefix = f"{POLICY_NAME_PREFIX}broker-"
    kept = [p for p in current if p.startswith(tenant_prefix)]
    return sorted(set(kept) | set(extra))


def _credentials(admin: Any, role: Role, role_name: str, issue_secret_id: bool) -> RoleCredentials:
    base = f"/v1/auth/{APPROLE_MOUNT}/role/{role_name}"
    role_id = str(admin.adapter.get(f"{base}/role-id")["data"]["role_id"])
    secret_id = accessor = None
    if issue_secret_id:
        data = admin.adapter.post(f"{base}/secret-id")["data"]
        secret_id, accessor = str(data["secret_id"]), str(data["secret_id_accessor"])
    return RoleCredentials(
        role=role,
        role_name=role_name,
        role_id=role_id,
        secret_id=secret_id,
        secret_id_accessor=accessor,
    )
