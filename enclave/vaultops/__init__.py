"""Operating Vault/OpenBao for the enclave: provisioning (admin) and a local dev server.

Nothing here issues grants or sees plaintext; the broker and capture identities live in
``enclave.keys``. Setup is the only code that writes policies and roles.
"""

from enclave.vaultops._dev import (
    DevServer,
    default_home,
    find_bao_binary,
    free_port_pair,
    read_dev_state,
    start_dev_server,
    stop_dev_server,
    stop_server,
    wait_healthy,
)
from enclave.vaultops._policies import RoleDefinition, load_roles, policy_dir, render_policy
from enclave.vaultops._setup import RoleCredentials, SetupResult, apply_setup, ensure_tenant_key

__all__ = [
    "DevServer",
    "RoleCredentials",
    "RoleDefinition",
    "SetupResult",
    "apply_setup",
    "default_home",
    "ensure_tenant_key",
    "find_bao_binary",
    "free_port_pair",
    "load_roles",
    "policy_dir",
    "read_dev_state",
    "render_policy",
    "start_dev_server",
    "stop_dev_server",
    "stop_server",
    "wait_healthy",
]
