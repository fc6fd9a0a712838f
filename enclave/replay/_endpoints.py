"""The model endpoints an operator lets the supervisor ask: configuration, never request.

``config.toml`` of the home names each under ``[inference.endpoints.<name>]``::

    [inference.endpoints.local]
    url = "http://127.0.0.1:8931"          # scheme, host and port: the path is the API's
    credential_env = "LOCAL_MODEL_KEY"     # optional: where the operator keeps the key
    api = "openai"                         # or "anthropic": the API the endpoint speaks

The API decides how the credential is sent (``Authorization: Bearer`` for the OpenAI
API and those compatible with it, ``x-api-key`` for the Anthropic messages API) and
whether the provider takes a seed (the Anthropic API does not).

The credential is read from the supervisor's own environment when it asks, like the
Vault/OpenBao token: it is never written to the home, the ledger or a request, and the
sandboxed worker (whose environment is fixed and empty of it) never holds it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .._errors import BadInput

__all__ = ["APIS", "Endpoint", "endpoints_of"]

# the APIs an endpoint may speak: (the header its credential goes in, whether the
# provider takes a seed)
APIS = {"openai": ("authorization", True), "anthropic": ("x-api-key", False)}
_ENV = re.compile(r"[A-Z_][A-Z0-9_]{0,127}")


@dataclass(frozen=True)
class Endpoint:
    name: str
    origin: str  # scheme://host[:port]
    credential_env: str | None = None
    api: str = "openai"
    environ: Mapping[str, str] = field(
        default_factory=lambda: os.environ, repr=False, compare=False
    )

    def credential(self) -> str | None:
        if self.credential_env is None:
            return None
        value = self.environ.get(self.credential_env)
        if not value:
            raise BadInput(f"endpoint {self.name}'s credential variable is not set")
        return value

    def credential_headers(self) -> dict[str, str]:
        """The credential as the endpoint's API takes it (none when none is configured)."""
        value = self.credential()
        if value is None:
            return {}
        header = APIS[self.api][0]
        return {header: f"Bearer {value}" if header == "authorization" else value}

    @property
    def takes_seed(self) -> bool:
        return APIS[self.api][1]


def _origin(url: Any, name: str) -> str:
    parts = urlsplit(url) if isinstance(url, str) else None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.username
    ):
        raise BadInput(f"endpoint {name} needs a url of scheme, host and port only")
    return f"{parts.scheme}://{parts.netloc}"


def endpoints_of(
    config: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> dict[str, Endpoint]:
    """The endpoints ``config`` (a home's parsed ``config.toml``) names."""
    table = config.get("inference", {})
    endpoints = table.get("endpoints", {}) if isinstance(table, Mapping) else None
    if not isinstance(endpoints, Mapping):
        raise BadInput("config.toml [inference.endpoints] must be a table of tables")
    found = {}
    for name, entry in endpoints.items():
        if not isinstance(entry, Mapping) or set(entry) - {"url", "credential_env", "api"}:
            raise BadInput("an inference endpoint has url and, optionally, credential_env and api")
        env = entry.get("credential_env")
        if env is not None and (not isinstance(env, str) or not _ENV.fullmatch(env)):
            raise BadInput(f"endpoint {name}'s credential_env must name a variable")
        api = entry.get("api", "openai")
        if not isinstance(api, str) or api not in APIS:
            raise BadInput(f"endpoint {name}'s api must be one of {', '.join(sorted(APIS))}")
        found[str(name)] = Endpoint(
            name=str(name),
            origin=_origin(entry.get("url"), str(name)),
            credential_env=env,
            api=api,
            environ=os.environ if environ is None else environ,
        )
    return found
