"""Replay Enclave's Python API: capture a run as a sealed specimen, audit it with one
declared intervention, verify the signed certificate.

    import enclave
    from enclave.incidents import procurement

    home = enclave.Home.init(Path("./h"))
    with enclave.Runtime.open(home) as runtime:
        sealed = enclave.capture(runtime, procurement.AGENT, inputs, tenant_id="acme", seed=41)
        request = enclave.AuditRequest(
            specimen_id=sealed.specimen_id,
            intervention=enclave.Intervention(
                strategy=enclave.Strategy.REVISION, revision=("model", "r2")
            ),
            purpose="does the model revision drive the decision?",
            requester="me",
        )
        outcome = enclave.run_audit(runtime, request, now=datetime.now(UTC))
        assert enclave.verify(runtime, outcome.envelope).ok

Around that: ``erase_specimen`` and ``rewrap_tenant`` (crypto-shredding, key rotation),
``export_certificates`` and ``export_reports`` (signed documents as files, for a reviewer
who verifies offline), ``policies_root`` (the declarative policies this installation
reads) and ``utc_now`` (the clock to pass as ``now`` at your program's edge). Retention
(the policy and its sweep) is ``enclave.retention``; every error class, by who is at
fault, is listed in ``enclave.errors``.

Every name is imported on first use: the replay worker and each command import this
package, and must not pay for the database layer or the signer they do not use.
"""

from typing import TYPE_CHECKING

from ledger.lazy import deferred

if TYPE_CHECKING:  # re-exported (``X as X``); at run time each is imported on first use
    from ._erasure import erase_specimen as erase_specimen
    from ._erasure import rewrap_tenant as rewrap_tenant
    from ._errors import AgentFailed as AgentFailed
    from ._errors import BadInput as BadInput
    from ._errors import DecryptionFailed as DecryptionFailed
    from ._errors import EnclaveError as EnclaveError
    from ._errors import GrantRefused as GrantRefused
    from ._errors import InfrastructureError as InfrastructureError
    from ._errors import IntegrityFailure as IntegrityFailure
    from ._errors import Refused as Refused
    from ._exports import export_certificates as export_certificates
    from ._exports import export_reports as export_reports
    from ._home import Home as Home
    from ._policies import policies_root as policies_root
    from ._runtime import Runtime as Runtime
    from ._runtime import utc_now as utc_now
    from ._verification import verify as verify
    from .capture import capture as capture
    from .replay import AuditOutcome as AuditOutcome
    from .replay import AuditRequest as AuditRequest
    from .replay import Intervention as Intervention
    from .replay import Strategy as Strategy
    from .replay import Tolerances as Tolerances
    from .replay import run_audit as run_audit

_FRONT = {
    "Home": "._home",
    "Runtime": "._runtime",
    "capture": ".capture",
    "run_audit": ".replay",
    "AuditRequest": ".replay",
    "AuditOutcome": ".replay",
    "Intervention": ".replay",
    "Strategy": ".replay",
    "Tolerances": ".replay",
    "verify": "._verification",
    "erase_specimen": "._erasure",
    "rewrap_tenant": "._erasure",
    "export_certificates": "._exports",
    "export_reports": "._exports",
    "policies_root": "._policies",
    "utc_now": "._runtime",
    "EnclaveError": "._errors",
    "BadInput": "._errors",
    "Refused": "._errors",
    "InfrastructureError": "._errors",
    "IntegrityFailure": "._errors",
    "AgentFailed": "._errors",
    "DecryptionFailed": "._errors",
    "GrantRefused": "._errors",
}
__getattr__ = deferred(__name__, globals(), _FRONT)
__all__ = sorted(_FRONT)
