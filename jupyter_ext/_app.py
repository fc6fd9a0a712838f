"""The Jupyter server extension application (shaped like jupyter_server's ``simple``)."""

from __future__ import annotations

import os

from jupyter_server.extension.application import ExtensionApp
from traitlets import Float, Int, List, Unicode, default

from ._client import TOKEN_ENV, TOKEN_FILE_ENV, URL_ENV
from ._handlers import URL_PATTERN, EnclaveAPIHandler
from ._verify_handler import (
    ISSUER_KEY_ENV,
    LOG_KEY_ENV,
    VERIFY_URL_PATTERN,
    WITNESS_KEYS_ENV,
    VerifyHandler,
)

__all__ = ["EnclaveExtension"]


class EnclaveExtension(ExtensionApp):
    """Forwards the analyst's requests to the enclave service.

    Config: ``EnclaveExtension.service_url``, ``.token_env``, ``.token_file``, ``.timeout``,
    ``.issuer_key`` (the certificate issuer's public key, for ``POST /enclave/verify``),
    ``.log_key`` (the ledger's verifier key, for bundles there).
    """

    name = "jupyter_ext"
    load_other_extensions = True

    service_url = Unicode(help=f"Root URL of the enclave service (default: ${URL_ENV}).").tag(
        config=True
    )
    token_env = Unicode(
        TOKEN_ENV, help="Environment variable holding the analyst's bearer token."
    ).tag(config=True)
    token_file = Unicode(
        help=f"File holding the analyst's bearer token (default: ${TOKEN_FILE_ENV}); "
        "takes precedence over token_env."
    ).tag(config=True)
    timeout = Float(30.0, help="Seconds to wait for the enclave service.").tag(config=True)
    issuer_key = Unicode(
        help="PEM file of the certificate issuer's Ed25519 public key, trusted by "
        f"POST /enclave/verify (default: ${ISSUER_KEY_ENV})."
    ).tag(config=True)
    log_key = Unicode(
        help="The ledger's C2SP verifier key (replay-enclave ledger checkpoint --public-key), "
        f"trusted by POST /enclave/verify for certificate bundles (default: ${LOG_KEY_ENV})."
    ).tag(config=True)

    witness_keys = List(
        Unicode(),
        help="Witnesses' C2SP cosigner keys (replay-enclave witness --public-key): a bundle's "
        "checkpoint must carry witness_quorum of their cosignatures "
        f"(default: ${WITNESS_KEYS_ENV}, whitespace-separated; none: not required).",
    ).tag(config=True)
    witness_quorum = Int(
        0, help="How many of witness_keys must have cosigned (0: all of them)."
    ).tag(config=True)

    @default("witness_keys")
    def _default_witness_keys(self) -> list[str]:
        return os.environ.get(WITNESS_KEYS_ENV, "").split()

    @default("service_url")
    def _default_service_url(self) -> str:
        return os.environ.get(URL_ENV, "")

    @default("issuer_key")
    def _default_issuer_key(self) -> str:
        return os.environ.get(ISSUER_KEY_ENV, "")

    @default("log_key")
    def _default_log_key(self) -> str:
        return os.environ.get(LOG_KEY_ENV, "")

    @default("token_file")
    def _default_token_file(self) -> str:
        return os.environ.get(TOKEN_FILE_ENV, "")

    def initialize_handlers(self) -> None:
        self.handlers.append((URL_PATTERN, EnclaveAPIHandler))
        self.handlers.append((VERIFY_URL_PATTERN, VerifyHandler))
