"""Talking to Vault/OpenBao: settings, client construction, AppRole login, error wrapping.

This module is the boundary for ``hvac`` and ``requests``: nothing they raise leaves it
unwrapped. Server trouble (down, unreachable, 5xx, unparseable answer) becomes
``InfrastructureError``; a refusal by the server (4xx) becomes whatever refusal the caller
names. Messages name the operation only — never a token, ciphertext, context or key.

Environment (``VaultSettings.from_env_or_config``):

- ``VAULT_ADDR`` — server address (required unless ``[vault] addr`` is configured).
- ``REPLAY_ENCLAVE_VAULT_ROLE_ID_<ROLE>`` / ``REPLAY_ENCLAVE_VAULT_SECRET_ID_<ROLE>`` —
  AppRole credentials for one identity (``CAPTURE``, ``BROKER``, ``ROTATE``); the generic
  ``REPLAY_ENCLAVE_VAULT_ROLE_ID`` / ``REPLAY_ENCLAVE_VAULT_SECRET_ID`` are used when no
  role is asked for. AppRole wins over a token when both are present.
- ``VAULT_TOKEN`` — a plain token (operators, tests).
- ``REPLAY_ENCLAVE_VAULT_MOUNT`` (default ``transit``), ``REPLAY_ENCLAVE_VAULT_KEY_PREFIX``
  (default ``replay-enclave-``), ``VAULT_CACERT``, ``VAULT_SKIP_VERIFY``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import hvac
import hvac.exceptions
import requests

from enclave._errors import EnclaveError, InfrastructureError, Refused
from ledger import raise_unchained

__all__ = [
    "ROLES",
    "ClientFactory",
    "KeyServerUnavailable",
    "Role",
    "VaultSession",
    "VaultSettings",
    "admin_client",
    "anonymous_adapter",
    "role_env_names",
    "vault_errors",
]

_log = logging.getLogger("enclave.keys.vault")
# a library logs for the operator's handlers; without any, Python would print these to
# stderr beside the command's own one-line error
_log.addHandler(logging.NullHandler())


class KeyServerUnavailable(InfrastructureError):
    """The key server could not be reached or failed (5xx, connection, timeout)."""

    code = "key_server_unavailable"


Role = Literal["capture", "broker", "rotate"]
ROLES: tuple[Role, ...] = ("capture", "broker", "rotate")
ClientFactory = Callable[[], Any]  # returns an authenticated ``hvac.Client``

ENV_PREFIX = "REPLAY_ENCLAVE_VAULT_"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{0,32}$")
_FALSE = {"0", "false", "no", "off", ""}

# 4xx: the server understood and said no. Everything else is trouble with the server.
_REFUSALS = (
    hvac.exceptions.InvalidRequest,
    hvac.exceptions.Unauthorized,
    hvac.exceptions.Forbidden,
    hvac.exceptions.InvalidPath,
    hvac.exceptions.UnsupportedOperation,
    hvac.exceptions.PreconditionFailed,
    hvac.exceptions.ParamValidationError,
)


def role_env_names(role: Role | None, tenant: str | None = None) -> tuple[str, str]:
    """The (role_id, secret_id) environment variable names for one identity; with
    ``tenant``, that tenant's own broker (``..._BROKER_<TENANT>``, other characters ``_``)."""
    suffix = "" if role is None else "_" + role.upper()
    if tenant is not None:
        suffix += "_" + "".join(c if c.isalnum() else "_" for c in tenant.upper())
    return f"{ENV_PREFIX}ROLE_ID{suffix}", f"{ENV_PREFIX}SECRET_ID{suffix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class VaultSettings:
    """Where the key server is and how to log in. Secrets are kept out of ``repr``."""

    addr: str
    token: str | None = field(default=None, repr=False)
    role_id: str | None = None
    secret_id: str | None = field(default=None, repr=False)
    approle_mount: str = "approle"
    mount: str = "transit"
    key_prefix: str = "replay-enclave-"
    verify: bool | str = True  # False, True, or a CA bundle path
    timeout: float = 10.0

    def __post_init__(self) -> None:
        if not re.match(r"^https?://[^\s/]+(/[^\s]*)?$", self.addr):
            raise ValueError("vault addr must be an http(s) URL")
        approle = self.role_id is not None or self.secret_id is not None
        if approle and not (self.role_id and self.secret_id):
            raise ValueError("AppRole login needs both role_id and secret_id")
        if approle == bool(self.token):
            raise ValueError("configure exactly one of: token, AppRole role_id/secret_id")
        for name in (self.mount, self.approle_mount):
            if not _NAME.match(name):
                raise ValueError("vault mount names use letters, digits, '_', '.', '-'")
        if not _PREFIX.match(self.key_prefix):
            raise ValueError("key prefix uses letters, digits, '_', '.', '-' (at most 32)")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")

    @property
    def auth_method(self) -> Literal["token", "approle"]:
        return "token" if self.token else "approle"

    @classmethod
    def from_env_or_config(
        cls,
        env: Mapping[str, str],
        config: Mapping[str, Any] | None = None,
        *,
        role: Role | None = None,
        tenant: str | None = None,
    ) -> VaultSettings:
        """Environment first, then the ``[vault]`` table of the home's ``config.toml``.

        ``config`` may be the whole parsed file or just its ``vault`` table. ``tenant``
        (broker only) asks for that tenant's own AppRole and nothing else.
        """
        if tenant is not None and role != "broker":
            raise ValueError("only the broker has per-tenant identities")
        if role is not None and role not in ROLES:
            raise ValueError("unknown vault role")
        table: Mapping[str, Any] = config or {}
        if isinstance(table.get("vault"), Mapping):
            table = table["vault"]

        def pick(env_name: str, key: str) -> str | None:
            value = env.get(env_name)
            if value:
                return value
            conf = table.get(key)
            if conf is None:
                return None
            if not isinstance(conf, str | bool | int | float):
                raise ValueError(f"[vault] {key} has the wrong type")
            return str(conf)

        role_var, secret_var = role_env_names(role, tenant)
        key_suffix = "" if role is None else "_" + role
        if tenant is not None:
            key_suffix += "_" + tenant
        addr = pick("VAULT_ADDR", "addr")
        if not addr:
            raise ValueError("no vault address: set VAULT_ADDR or [vault] addr")
        role_id = pick(role_var, "role_id" + key_suffix)
        secret_id = pick(secret_var, "secret_id" + key_suffix)
        token = None if (role_id or secret_id or tenant) else pick("VAULT_TOKEN", "token")
        verify: bool | str = True
        cacert = pick("VAULT_CACERT", "ca_cert")
        skip = pick("VAULT_SKIP_VERIFY", "skip_verify")
        if cacert:
            verify = cacert
        if skip is not None and skip.strip().lower() not in _FALSE:
            verify = False
        return cls(
            addr=addr.rstrip("/"),
            token=token,
            role_id=role_id,
            secret_id=secret_id,
            mount=pick(ENV_PREFIX + "MOUNT", "mount") or "transit",
            key_prefix=pick(ENV_PREFIX + "KEY_PREFIX", "key_prefix") or "replay-enclave-",
            approle_mount=pick(ENV_PREFIX + "APPROLE_MOUNT", "approle_mount") or "approle",
            verify=verify,
        )


@contextmanager
def vault_errors(operation: str, *, refusal: Callable[[], EnclaveError]) -> Iterator[None]:
    """Translate everything hvac/requests can raise inside the block.

    ``operation`` is a fixed label chosen by the caller (e.g. ``"issue grant"``); the
    server's own text is logged for operators by status class only, never re-raised,
    and the translation links to none of those errors: a requests error keeps the
    request (its token header, its body) and hvac's keeps the server's answer.
    """
    try:
        yield
    except _REFUSALS as exc:
        _log.info("key server refused", extra={"vault_op": operation, "vault_status": _kind(exc)})
        raise_unchained(refusal())
    except (hvac.exceptions.VaultError, requests.RequestException) as exc:
        _log.warning(
            "key server unavailable", extra={"vault_op": operation, "vault_status": _kind(exc)}
        )
        raise_unchained(KeyServerUnavailable(f"key server unavailable during {operation}"))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        _log.warning(
            "unexpected key server answer",
            extra={"vault_op": operation, "vault_status": _kind(exc)},
        )
        raise_unchained(InfrastructureError(f"unexpected key server answer during {operation}"))


def _kind(exc: BaseException) -> str:
    return type(exc).__name__


class VaultSession:
    """An authenticated client for one identity, logging in again when its token ages.

    Use ``session.client`` as a provider's ``client_factory``. Token expiry is tracked on
    the monotonic clock (infrastructure housekeeping, not grant logic): a new AppRole
    login happens when 80 % of the token's TTL has passed.
    """

    def __init__(
        self,
        settings: VaultSettings,
        *,
        http: requests.Session | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._http = http if http is not None else requests.Session()
        self._http.verify = settings.verify
        self._monotonic = monotonic
        self._client: Any = None
        self._renew_at = 0.0

    @property
    def settings(self) -> VaultSettings:
        return self._settings

    def client(self) -> Any:
        """An ``hvac.Client`` holding a live token for this identity."""
        if self._client is not None and self._monotonic() < self._renew_at:
            return self._client
        client = _new_client(self._settings, self._http, self._settings.token)
        if self._settings.auth_method == "token":
            self._client, self._renew_at = client, float("inf")
            return client
        with vault_errors("approle login", refusal=_login_refused):
            answer = client.adapter.post(
                f"/v1/auth/{self._settings.approle_mount}/login",
                json={"role_id": self._settings.role_id, "secret_id": self._settings.secret_id},
            )
            auth = answer["auth"]
            client.token = str(auth["client_token"])
            ttl = int(auth.get("lease_duration") or 0)
        self._renew_at = self._monotonic() + (0.8 * ttl if ttl > 0 else float("inf"))
        self._client = client
        return client


def admin_client(addr: str, token: str, *, verify: bool | str = True, timeout: float = 10.0) -> Any:
    """A client for an operator token (setup, rotation drills, tests)."""
    settings = VaultSettings(addr=addr.rstrip("/"), token=token, verify=verify, timeout=timeout)
    return _new_client(settings, requests.Session(), token)


def anonymous_adapter(addr: str, *, verify: bool | str = True, timeout: float = 10.0) -> Any:
    """An adapter that holds no token at all: for calls that authenticate with a wrapping
    token (lookup, unwrap, revoke-self) on a host that holds no Vault credential."""
    if not re.match(r"^https?://[^\s/]+(/[^\s]*)?$", addr):
        raise ValueError("vault addr must be an http(s) URL")
    client = hvac.Client(url=addr.rstrip("/"), token="", verify=verify, timeout=timeout)
    client.adapter.token = None
    return client.adapter


def _new_client(settings: VaultSettings, http: requests.Session, token: str | None) -> Any:
    # Pass token="" rather than None: hvac would otherwise fall back to VAULT_TOKEN or
    # ~/.vault-token, silently acting as whoever last logged in on this machine.
    return hvac.Client(
        url=settings.addr,
        token=token or "",
        verify=settings.verify,
        timeout=settings.timeout,
        session=http,
    )


def _login_refused() -> EnclaveError:
    return Refused("key server login refused", code="vault_login_refused")
