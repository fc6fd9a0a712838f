"""An audit's certificate from the issuing side: the key, issuing, and reading back.

For the runtime, the service, the release gate and verification: the key a runtime's
certificates are signed with (``signing_key``), ``issue_certificate`` (sign, append to
the ledger, store), the ledger adapter verification checks a certificate's linkage
through (:class:`RuntimeLedgerLookup`), and what a predicate states of a specimen and
its isolation (``publish_digests``, ``isolation_layers``), and a stored certificate
with the proofs of its ledger entries (``certificate_bundle``). The verifier itself is
``ledger.certificates``.
"""

from ._bundles import certificate_bundle
from ._certificates import RuntimeLedgerLookup, issue_certificate, signing_key
from ._predicate import isolation_layers, publish_digests

__all__ = [
    "RuntimeLedgerLookup",
    "certificate_bundle",
    "isolation_layers",
    "issue_certificate",
    "publish_digests",
    "signing_key",
]
