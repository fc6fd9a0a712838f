"""The Vault/OpenBao policy and AppRole files in ``policies/vault/``, rendered for a mount.

The files are written for the default mount ``transit`` and key prefix
``replay-enclave-``; ``render_policy`` rewrites exactly those two tokens when a deployment
uses others. Policy names are ``replay-enclave-<identity>`` whatever the key prefix.

The signing keys are ``<prefix>_log`` and ``<prefix>_issuer`` (``SIGNING_KEY_NAMES``): no
tenant id starts with ``_``, so no tenant's key can take their names; the files name them
literally and are rendered alike.

The broker is split by tenant: ``broker.hcl`` is its tenant-free base, and
``broker-tenant.hcl`` is rendered once per tenant (``render_tenant_policy``) into
``replay-enclave-broker-<tenant>``, naming that tenant's key and nothing else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from enclave._errors import BadInput
from enclave._policies import ENV_POLICY_DIR, policies_root
from enclave.keys import ROLES, SIGNING_KEY_NAMES, Role

__all__ = [
    "POLICY_NAME_PREFIX",
    "RoleDefinition",
    "load_roles",
    "load_tenant_template",
    "policy_dir",
    "render_policy",
    "render_tenant_policy",
    "tenant_broker_name",
]

POLICY_NAME_PREFIX = "replay-enclave-"
DEFAULT_MOUNT = "transit"
DEFAULT_KEY_PREFIX = "replay-enclave-"
TENANT_TEMPLATE = "broker-tenant.hcl"
_TENANT_SLOT = '/replay-enclave-<tenant>"'

_ALLOWED_ROLE_FIELDS = {
    "token_policies",
    "token_no_default_policy",
    "token_type",
    "token_ttl",
    "token_max_ttl",
    "token_num_uses",
    "token_bound_cidrs",
    "bind_secret_id",
    "secret_id_ttl",
    "secret_id_num_uses",
    "secret_id_bound_cidrs",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleDefinition:
    """One AppRole role and the policy it carries."""

    role: Role
    policy_name: str
    policy_hcl: str
    settings: Mapping[str, Any]

    @property
    def role_name(self) -> str:
        return POLICY_NAME_PREFIX + self.role


def policy_dir(env: Mapping[str, str] | None = None) -> Path:
    """The ``vault`` folder of the policies root."""
    folder = policies_root(env) / "vault"
    if not (folder / "broker.hcl").is_file():
        raise BadInput(f"Vault policy files not found (set {ENV_POLICY_DIR})")
    return folder


def render_policy(text: str, *, mount: str, key_prefix: str) -> str:
    """Point a policy file at ``mount`` and ``key_prefix`` instead of the defaults."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*", mount):
        raise ValueError("bad mount")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,32}", key_prefix):
        raise ValueError("key prefix must be 1..32 of letters, digits, '_', '.', '-'")
    text = text.replace(f'path "{DEFAULT_MOUNT}/', f'path "{mount}/')
    for name in SIGNING_KEY_NAMES:
        text = text.replace(f"/{DEFAULT_KEY_PREFIX}{name}", f"/{key_prefix}{name}")
    return text.replace(f"/{DEFAULT_KEY_PREFIX}*", f"/{key_prefix}*")


def tenant_broker_name(tenant: str) -> str:
    """The per-tenant broker policy and AppRole name: ``replay-enclave-broker-<tenant>``."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}", tenant):
        raise ValueError("tenant ids use letters, digits, '.', '_', ':', '-'")
    return f"{POLICY_NAME_PREFIX}broker-{tenant}"


def render_tenant_policy(
    text: str, *, tenant: str, mount: str = DEFAULT_MOUNT, key_prefix: str = DEFAULT_KEY_PREFIX
) -> str:
    """``broker-tenant.hcl`` for exactly one tenant key (refused if the slot is missing)."""
    tenant_broker_name(tenant)  # validates the tenant id
    if _TENANT_SLOT not in text or re.search(r'path "[^"]*[*+]', text):
        raise BadInput("the tenant broker policy must name <tenant> and hold no glob")
    rendered = text.replace(_TENANT_SLOT, f'/{key_prefix}{tenant}"')
    return render_policy(rendered, mount=mount, key_prefix=key_prefix)


def load_tenant_template(directory: Path | None = None) -> str:
    directory = directory if directory is not None else policy_dir()
    try:
        return (directory / TENANT_TEMPLATE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput("cannot read the tenant broker policy file") from exc


def load_roles(
    *,
    mount: str = DEFAULT_MOUNT,
    key_prefix: str = DEFAULT_KEY_PREFIX,
    directory: Path | None = None,
) -> list[RoleDefinition]:
    """The capture, broker and rotate roles with their rendered policies."""
    directory = directory if directory is not None else policy_dir()
    roles = []
    for role in ROLES:
        try:
            hcl = (directory / f"{role}.hcl").read_text(encoding="utf-8")
            settings = json.loads((directory / "roles" / f"{role}.json").read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(f"cannot read the {role} policy or role file") from exc
        if not isinstance(settings, dict) or not set(settings) <= _ALLOWED_ROLE_FIELDS:
            raise BadInput(f"the {role} role file has unknown fields")
        policy_name = POLICY_NAME_PREFIX + role
        if settings.get("token_policies") != [policy_name]:
            raise BadInput(f"the {role} role must carry exactly the {policy_name} policy")
        if settings.get("token_no_default_policy") is not True:
            raise BadInput(f"the {role} role must set token_no_default_policy")
        roles.append(
            RoleDefinition(
                role=role,
                policy_name=policy_name,
                policy_hcl=render_policy(hcl, mount=mount, key_prefix=key_prefix),
                settings=settings,
            )
        )
    return roles
