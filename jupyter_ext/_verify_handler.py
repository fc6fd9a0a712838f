"""``POST /enclave/verify``: the offline verifier (``_offline.py``), run in the Jupyter
server on the envelope the browser posts, with the issuer key configured on this server.
A certificate bundle is checked by ``ledger.certificates.verify_bundle`` against the log
key configured here too (``EnclaveExtension.log_key``), a release report bundle by
``verify_report_bundle`` (its six checks, each member as its own bundle); without a log
key the answer says the server did not check it (``{"skipped": ...}``), never that it
passed. With witness keys
configured (``EnclaveExtension.witness_keys``), the checkpoint must also carry
``witness_quorum`` (0: all) of their cosignatures, as ``verify --witness`` requires.

The browser shows this report beside its own WebCrypto verification of the same bytes.
Invariants: the key is never taken from the request or the certificate; nothing is
forwarded to the enclave service; the answer is the named checks only (their details are
fixed sentences until the signature has verified), so nothing posted is echoed back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ledger.certificates import (
    REPORT_BUNDLE_CHECK_NAMES,
    BadCertificateInput,
    VerificationCheck,
    VerificationReport,
    is_bundle,
    is_report_bundle,
    load_public_key_pem,
    verify_bundle,
    verify_report_bundle,
)
from ledger.certificates.tlog import NoteInvalid, NoteVerifier, WitnessVerifier

from ._errors import NOT_JSON
from ._forward import error_body
from ._handlers import EnclaveHandler
from ._offline import verify_envelope_offline

__all__ = [
    "ISSUER_KEY_ENV",
    "LOG_KEY_ENV",
    "MAX_ENVELOPE_BYTES",
    "VERIFY_URL_PATTERN",
    "VerifyHandler",
    "WITNESS_KEYS_ENV",
]

VERIFY_URL_PATTERN = r"/enclave/verify"
# the variable the %enclave verify magic reads too
ISSUER_KEY_ENV = "REPLAY_ENCLAVE_ISSUER_KEY"
LOG_KEY_ENV = "REPLAY_ENCLAVE_LOG_KEY"
WITNESS_KEYS_ENV = "REPLAY_ENCLAVE_WITNESS_KEYS"
# a certificate is about 12 KB, its bundle about 16 KB; a report bundle carries one per
# member: 8 MiB holds a release of several hundred specimens and bounds the parse
MAX_ENVELOPE_BYTES = 8 << 20


class VerifyHandler(EnclaveHandler):
    """Runs the offline verifier on the posted envelope with this server's issuer key."""

    @web.authenticated
    @authorized
    async def post(self) -> None:
        if len(self.request.body) > MAX_ENVELOPE_BYTES:
            self._reply(413, error_body("too_large", "a verified document is at most 8 MiB"))
            return
        if not self.app.issuer_key:
            self._reply(
                503,
                error_body(
                    "not_configured",
                    "no trusted issuer key is configured on the Jupyter server "
                    f"(EnclaveExtension.issuer_key or ${ISSUER_KEY_ENV})",
                ),
            )
            return
        try:
            key = load_public_key_pem(Path(self.app.issuer_key).read_bytes())
        except (OSError, BadCertificateInput):
            self.log.warning("enclave verify: the configured issuer key cannot be loaded")
            self._reply(
                503, error_body("not_configured", "the configured issuer key cannot be loaded")
            )
            return
        try:
            envelope: object = json.loads(self.request.body)
        except NOT_JSON:
            envelope = None  # as verify_file does: unreadable text is not an envelope
        if is_bundle(envelope) or is_report_bundle(envelope):
            self._bundle(envelope, key)
            return
        report = verify_envelope_offline(envelope, key)
        body = report.to_dict()  # the checks, and the finding re-derived once all passed
        self._reply(200, json.dumps(body).encode())

    def _bundle(self, bundle: Any, key: Any) -> None:
        if not self.app.log_key:
            skipped = (
                "no trusted log key is configured on the Jupyter server "
                f"(EnclaveExtension.log_key or ${LOG_KEY_ENV})"
            )
            self._reply(200, json.dumps({"skipped": skipped}).encode())
            return
        try:
            log_key = NoteVerifier.parse(self.app.log_key.strip())
        except NoteInvalid:
            self.log.warning("enclave verify: the configured log key cannot be parsed")
            self._reply(503, error_body("not_configured", "the configured log key is not valid"))
            return
        try:
            witnesses = [WitnessVerifier.parse(k.strip()) for k in self.app.witness_keys]
        except NoteInvalid:
            witnesses = []
        quorum = self.app.witness_quorum or len(witnesses)
        if len(witnesses) != len(self.app.witness_keys) or not 0 <= quorum <= len(witnesses):
            self.log.warning("enclave verify: the configured witness keys or quorum are invalid")
            self._reply(
                503, error_body("not_configured", "the configured witness keys are not valid")
            )
            return
        if is_report_bundle(bundle):
            checks = verify_report_bundle(
                bundle, public_key=key, log_key=log_key, witnesses=witnesses, quorum=quorum
            )
            answer = VerificationReport(
                checks=tuple(
                    VerificationCheck(step=step, name=name, ok=ok, detail=detail)
                    for step, (name, ok, detail) in enumerate(checks, 1)
                ),
                names=REPORT_BUNDLE_CHECK_NAMES,
            )
            self._reply(200, json.dumps(answer.to_dict()).encode())
            return
        report = verify_bundle(
            bundle, public_key=key, log_key=log_key, witnesses=witnesses, quorum=quorum
        )
        self._reply(200, json.dumps(report.to_dict()).encode())

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # one-line JSON for every error raised by the server itself, never a traceback
        reason = self._reason if status_code < 500 else "internal error"
        self.set_header("Content-Type", "application/json")
        self.finish(error_body(f"http_{status_code}", reason))
