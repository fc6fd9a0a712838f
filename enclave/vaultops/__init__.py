"""Operating Vault/OpenBao for the enclave: provisioning (admin) and a local dev server.

Nothing here issues grants or sees plaintext; the broker and capture identities live in
``enclave.keys``. Setup is the only code that writes policies and roles. Every name is
imported on first use (hvac loads with the code that talks to Vault).
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._dev import DevServer as DevServer
    from ._dev import default_home as default_home
    from ._dev import find_bao_binary as find_bao_binary
    from ._dev import free_port_pair as free_port_pair
    from ._dev import read_dev_state as read_dev_state
    from ._dev import start_dev_server as start_dev_server
    from ._dev import stop_dev_server as stop_dev_server
    from ._dev import stop_server as stop_server
    from ._dev import wait_healthy as wait_healthy
    from ._policies import RoleDefinition as RoleDefinition
    from ._policies import load_roles as load_roles
    from ._policies import load_tenant_template as load_tenant_template
    from ._policies import policy_dir as policy_dir
    from ._policies import render_policy as render_policy
    from ._policies import render_tenant_policy as render_tenant_policy
    from ._setup import RoleCredentials as RoleCredentials
    from ._setup import SetupResult as SetupResult
    from ._setup import apply_setup as apply_setup
    from ._setup import ensure_tenant_key as ensure_tenant_key

_FRONT = {
    "DevServer": "._dev",
    "default_home": "._dev",
    "find_bao_binary": "._dev",
    "free_port_pair": "._dev",
    "read_dev_state": "._dev",
    "start_dev_server": "._dev",
    "stop_dev_server": "._dev",
    "stop_server": "._dev",
    "wait_healthy": "._dev",
    "RoleDefinition": "._policies",
    "load_roles": "._policies",
    "load_tenant_template": "._policies",
    "policy_dir": "._policies",
    "render_policy": "._policies",
    "render_tenant_policy": "._policies",
    "RoleCredentials": "._setup",
    "SetupResult": "._setup",
    "apply_setup": "._setup",
    "ensure_tenant_key": "._setup",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
