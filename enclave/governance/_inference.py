"""A policy's inference grants against the specimen they would be used on: metadata only.

Eligibility's step 8 (``_eligibility``), in order, for each grant:

1. ``inference_boundary_unknown`` the grant's boundary is the name of some recorded step
   of the specimen (a grant of a boundary the run never crossed could only ever answer
   calls the record has no request, URL or sampling parameters to check against).
2. ``inference_not_pinned``       every recorded step of that boundary whose resolved
   identity the ledger holds in clear (a name the agent declares) carries the grant's
   model. An identity the ledger holds only as a keyed digest, or not at all (a wire
   adapter's answer names its model inside the sealed response body), cannot be compared
   here without decrypting: eligibility never decrypts, and leaves that comparison to the
   supervisor, which refuses the same code before the first ask (``InferenceBroker``).

``inference_classification`` is what Cedar is told about the data flow a grant opens:
the highest classification of the recorded fields (request and response) of the governed
boundaries' steps, read from the ledger's field records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ledger import CLASSIFICATION_RANK, Classification, SpecimenRecord

from .._errors import Refused
from ..replay.inference import InferenceGrant

__all__ = ["check_grants", "inference_classification"]

# a run-time identity the recorder sealed: the ledger holds its keyed digest
_SEALED_IDENTITY = re.compile(r"hmac-sha256:[0-9a-f]{64}")


def check_grants(record: SpecimenRecord, grants: Sequence[InferenceGrant]) -> None:
    """``Refused`` with the code of the first unmet condition (module docstring)."""
    for grant in grants:
        steps = [s for s in record.steps if s.name == grant.boundary]
        if not steps:
            raise Refused(
                "an inference grant names a boundary the specimen did not record",
                code="inference_boundary_unknown",
            )
        clear = [
            s.resolved
            for s in steps
            if s.resolved is not None and not _SEALED_IDENTITY.fullmatch(s.resolved)
        ]
        if any(identity != grant.model for identity in clear):
            raise Refused(
                "the pinned model is not the identity the record's answers carry",
                code="inference_not_pinned",
            )


def inference_classification(
    record: SpecimenRecord, grants: Sequence[InferenceGrant]
) -> Classification | None:
    """The highest classification of the governed boundaries' recorded fields; None when
    no grant is given (no inference asked). A boundary that recorded no field counts as
    restricted: what it would send is unknown, so the strictest reading holds."""
    if not grants:
        return None
    names = {g.boundary for g in grants}
    seqs = {s.seq for s in record.steps if s.name in names}
    found = [f.classification for f in record.fields if f.seq in seqs]
    if not found:
        return Classification.RESTRICTED
    return Classification(max(found, key=lambda c: CLASSIFICATION_RANK[Classification(c).value]))
