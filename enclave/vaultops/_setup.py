"""Provisioning with an operator token: mounts, policies, AppRole roles, tenant keys.

This is the only component that writes policies and roles. It is run by an operator
(``replay-enclave vault setup``), never by the broker or capture identities: a
component that can both write policies and mint tokens is effectively root.

Steps of ``apply_setup`` (each idempotent):

1. enable the transit secrets engine at ``mount`` (refuse if the path holds another type);
2. enable the AppRole auth method at ``approle/``;
3. write the capture, broker and rotate policies and AppRole roles;
4. create each requested tenant key (derived, non-exportable, no plaintext backup), or
   check that an existing one has exactly those properties;
5. read each role id and generate one fresh secret id per role (optional).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from enclave._errors import EnclaveError, Refused
from enclave.keys._transit import derivation_context
from enclave.keys._vault_client import ENV_PREFIX, Role, role_env_names, vault_errors
from enclave.vaultops._policies import (
    DEFAULT_KEY_PREFIX,
    DEFAULT_MOUNT,
    RoleDefinition,
    load_roles,
)

__all__ = ["RoleCredentials", "SetupResult", "apply_setup", "ensure_tenant_key"]

APPROLE_MOUNT = "approle"
TENANT_KEY_SETTINGS = {
    "type": "aes256-gcm96",
    "derived": True,
    "exportable": False,
    "allow_plaintext_backup": False,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleCredentials:
    role: Role
    role_name: str
    role_id: str
    secret_id: str | None = field(default=None, repr=False)
    secret_id_accessor: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupResult:
    addr: str
    mount: str
    key_prefix: str
    credentials: tuple[RoleCredentials, ...]
    tenant_keys: tuple[str, ...]

    def credentials_for(self, role: Role) -> RoleCredentials:
        for cred in self.credentials:
            if cred.role == role:
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
            role_var, secret_var = role_env_names(cred.role)
            lines.append(f"export {role_var}={shlex.quote(cred.role_id)}")
            if cred.secret_id is not None:
                lines.append(f"export {secret_var}={shlex.quote(cred.secret_id)}")
        return lines


def _setup_refused() -> EnclaveError:
    return Refused("key server refused setup (is this an admin token?)", code="vault_setup_refused")


def _key_config_unsafe() -> EnclaveError:
    return Refused(
        "an existing tenant key is exportable, backup-able or not derived",
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
    # 4. tenant keys
    keys = tuple(
        ensure_tenant_key(admin, tenant, mount=mount, key_prefix=key_prefix) for tenant in tenants
    )
    # 5. credentials
    creds = []
    with vault_errors("setup", refusal=_setup_refused):
        for role in roles:
            creds.append(_credentials(admin, role, issue_secret_ids))
    return SetupResult(
        addr=str(admin.url).rstrip("/"),
        mount=mount,
        key_prefix=key_prefix,
        credentials=tuple(creds),
        tenant_keys=keys,
    )


def ensure_tenant_key(
    admin: Any, tenant: str, *, mount: str = DEFAULT_MOUNT, key_prefix: str = DEFAULT_KEY_PREFIX
) -> str:
    """Create the tenant's KEK if missing; refuse an existing one with unsafe settings."""
    derivation_context(tenant, "x")
    name = key_prefix + tenant
    path = f"/v1/{mount}/keys/{name}"
    with vault_errors("tenant key", refusal=_setup_refused):
        answer = admin.adapter.get(path, raise_exception=False)
        status = getattr(answer, "status_code", 200)
        if status == 404:
            admin.adapter.post(path, json=TENANT_KEY_SETTINGS)
            answer = admin.adapter.get(path)
        elif status != 200:
            admin.adapter.get(path)  # raises the mapped error
        data = answer["data"]
        actual = {k: data.get(k) for k in TENANT_KEY_SETTINGS}
    if actual != TENANT_KEY_SETTINGS:
        raise _key_config_unsafe()
    return name


def _enable(admin: Any, kind: str, path: str, engine_type: str) -> None:
    listing = admin.adapter.get(f"/v1/sys/{kind}")
    table = listing.get("data", listing)
    current = table.get(f"{path}/")
    if current is None:
        admin.adapter.post(f"/v1/sys/{kind}/{path}", json={"type": engine_type})
    elif current.get("type") != engine_type:
        raise Refused(f"path {path}/ is already used by another engine", code="vault_mount_taken")


def _write_role(admin: Any, role: RoleDefinition) -> None:
    admin.adapter.put(f"/v1/sys/policies/acl/{role.policy_name}", json={"policy": role.policy_hcl})
    admin.adapter.post(f"/v1/auth/{APPROLE_MOUNT}/role/{role.role_name}", json=dict(role.settings))


def _credentials(admin: Any, role: RoleDefinition, issue_secret_id: bool) -> RoleCredentials:
    base = f"/v1/auth/{APPROLE_MOUNT}/role/{role.role_name}"
    role_id = str(admin.adapter.get(f"{base}/role-id")["data"]["role_id"])
    secret_id = accessor = None
    if issue_secret_id:
        data = admin.adapter.post(f"{base}/secret-id")["data"]
        secret_id, accessor = str(data["secret_id"]), str(data["secret_id_accessor"])
    return RoleCredentials(
        role=role.role,
        role_name=role.role_name,
        role_id=role_id,
        secret_id=secret_id,
        secret_id_accessor=accessor,
    )
